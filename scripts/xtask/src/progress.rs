//! The `==>` lines: each step with the seconds since the start, the CPU-seconds the
//! machine has been busy since then (all processes, all cores: how much of the
//! machine the run took, beside how long it took) and the CPU-seconds of this run's own
//! commands that have ended (this process and the children it waited for: the run's
//! share of a machine other work shares too).

use std::time::Instant;

/// The start of a run.
#[derive(Debug)]
pub struct Clock {
    start: Instant,
    busy_start: u64,
    ours_start: f64,
}

impl Clock {
    /// Starts counting now.
    pub fn start() -> Self {
        Self {
            start: Instant::now(),
            busy_start: busy_seconds(),
            ours_start: process_cpu_seconds("self").unwrap_or(0.0),
        }
    }

    /// Prints `==> what (Ns, M CPU-s, K CPU-s ours)` on stderr.
    pub fn step(&self, what: &str) {
        eprintln!("\n==> {what} ({})", self.so_far());
    }

    /// `Ns, M CPU-s, K CPU-s ours` since the start.
    pub fn so_far(&self) -> String {
        let cpu = busy_seconds().saturating_sub(self.busy_start);
        let ours = process_cpu_seconds("self").unwrap_or(0.0) - self.ours_start;
        format!(
            "{}s, {cpu} CPU-s, {ours:.0} CPU-s ours",
            self.start.elapsed().as_secs()
        )
    }
}

/// CPU-seconds of process `pid` (`self` for this one) and of the children it has
/// waited for (utime, stime, cutime and cstime of /proc/PID/stat, in 1/100 s); None
/// where there is no such process or no /proc.
pub fn process_cpu_seconds(pid: &str) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    cpu_from_pid_stat(&stat)
}

/// CPU-seconds of child `pid` and of everything it waited for, read once it has exited
/// and before it is reaped (a zombie's /proc/PID/stat still holds its times): exact
/// whatever else this process reaps meanwhile, as a difference of our own children's
/// times is not when a thread waits beside others. Polls until then; None without /proc.
pub fn exited_cpu_seconds(pid: u32) -> Option<f64> {
    loop {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        if state_of(&stat) == Some('Z') {
            return cpu_from_pid_stat(&stat);
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

/// The state letter of a /proc/PID/stat line (`R`, `S`, `Z`...).
fn state_of(stat: &str) -> Option<char> {
    stat[stat.rfind(')')? + 1..].trim_start().chars().next()
}

fn cpu_from_pid_stat(stat: &str) -> Option<f64> {
    // After the command name (in parentheses, which may hold spaces): the state is
    // field 3, utime to cstime fields 14 to 17.
    let rest = &stat[stat.rfind(')')? + 1..];
    let ticks: Vec<u64> = rest
        .split_whitespace()
        .skip(11)
        .take(4)
        .map(|f| f.parse().unwrap_or(0))
        .collect();
    (ticks.len() == 4).then(|| ticks.iter().sum::<u64>() as f64 / 100.0)
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

    #[test]
    fn a_process_counts_its_own_time_and_its_waited_childrens() {
        // pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt
        // cmajflt utime stime cutime cstime priority ...
        let stat = "42 (a (b) c) S 1 42 42 0 -1 0 10 0 0 0 150 50 1000 300 20 0 1";
        assert_eq!(cpu_from_pid_stat(stat), Some(15.0));
        assert_eq!(state_of(stat), Some('S'));
        assert_eq!(state_of(&stat.replace(") S ", ") Z ")), Some('Z'));
    }

    #[test]
    fn an_exited_childs_time_is_read_before_it_is_reaped() {
        let mut child = std::process::Command::new("sh")
            .args(["-c", "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done"])
            .spawn()
            .unwrap();
        let cpu = exited_cpu_seconds(child.id());
        assert!(child.wait().unwrap().success());
        assert!(cpu.is_some_and(|c| c >= 0.0), "{cpu:?}");
    }
}
