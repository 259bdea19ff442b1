//! The `==>` lines: each step with the seconds since the start and the CPU-seconds the
//! machine has been busy since then (all processes, all cores: how much of the
//! machine the run took, beside how long it took).

use std::time::Instant;

/// The start of a run.
#[derive(Debug)]
pub struct Clock {
    start: Instant,
    busy_start: u64,
}

impl Clock {
    /// Starts counting now.
    pub fn start() -> Self {
        Self {
            start: Instant::now(),
            busy_start: busy_seconds(),
        }
    }

    /// Prints `==> what (Ns, M CPU-s)` on stderr.
    pub fn step(&self, what: &str) {
        eprintln!("\n==> {what} ({})", self.so_far());
    }

    /// `Ns, M CPU-s` since the start.
    pub fn so_far(&self) -> String {
        let cpu = busy_seconds().saturating_sub(self.busy_start);
        format!("{}s, {cpu} CPU-s", self.start.elapsed().as_secs())
    }
}

/// CPU-seconds the machine has been busy since boot (user, nice, system, irq and
/// softirq of /proc/stat's `cpu` line, in 1/100 s), 0 where there is no /proc.
fn busy_seconds() -> u64 {
    std::fs::read_to_string("/proc/stat")
        .ok()
        .and_then(|s| busy_from_stat(&s))
        .unwrap_or(0)
}

fn busy_from_stat(stat: &str) -> Option<u64> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let ticks: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|f| f.parse().unwrap_or(0))
        .collect();
    let busy = [0, 1, 2, 5, 6]
        .iter()
        .map(|&i| ticks.get(i).copied().unwrap_or(0))
        .sum::<u64>();
    Some(busy / 100)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_counts_user_nice_system_irq_softirq_but_not_idle_or_iowait() {
        // user nice system idle iowait irq softirq steal
        let stat = "cpu  1000 200 300 999999 888 40 60 7\ncpu0 1 2 3 4 5 6 7 8\n";
        assert_eq!(busy_from_stat(stat), Some(16));
    }
}
