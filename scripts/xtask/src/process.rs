//! Running programs: in the foreground with the output shown, captured, or in the
//! background with the output in a log file (a [`Job`], waited for later). Every
//! failure names the command and says where its output went.

use crate::Result;
use std::ffi::OsStr;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A command to run, with the text it is shown as in errors.
#[derive(Debug)]
pub struct Cmd {
    inner: Command,
    shown: String,
    words: Vec<String>,
}

impl Cmd {
    /// `program`, found on `PATH` or by path.
    pub fn new(program: impl AsRef<OsStr>) -> Self {
        let program = program.as_ref();
        let shown = program.to_string_lossy().into_owned();
        Self {
            inner: Command::new(program),
            words: vec![shown.clone()],
            shown,
        }
    }

    /// `program` at a lower CPU priority (`nice -n LEVEL`): work that should take
    /// only the CPU the rest of the run leaves idle.
    pub fn niced(level: u8, program: impl AsRef<OsStr>) -> Self {
        Self::new("nice")
            .args(["-n", &level.to_string()])
            .arg(program)
    }

    /// Appends one argument.
    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        let arg = arg.as_ref();
        self.shown.push(' ');
        self.shown.push_str(&arg.to_string_lossy());
        self.words.push(arg.to_string_lossy().into_owned());
        self.inner.arg(arg);
        self
    }

    /// Appends arguments.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        for arg in args {
            self = self.arg(arg);
        }
        self
    }

    /// The program and its arguments.
    pub fn words(&self) -> &[String] {
        &self.words
    }

    /// Sets one environment variable for the command.
    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.inner.env(key, value);
        self
    }

    /// Sets environment variables for the command.
    pub fn envs<'a>(mut self, vars: impl IntoIterator<Item = &'a (String, String)>) -> Self {
        for (key, value) in vars {
            self.inner.env(key, value);
        }
        self
    }

    /// Removes a variable from the command's environment.
    pub fn env_remove(mut self, key: impl AsRef<OsStr>) -> Self {
        self.inner.env_remove(key);
        self
    }

    /// Runs it in `dir`.
    pub fn dir(mut self, dir: impl AsRef<Path>) -> Self {
        self.inner.current_dir(dir);
        self
    }

    /// Runs it with the output shown; fails unless it exits 0.
    pub fn run(mut self) -> Result {
        let status = self.inner.status().map_err(|e| self.cannot_start(&e))?;
        if status.success() {
            Ok(())
        } else {
            Err(format!("`{}` failed ({status})", self.shown))
        }
    }

    /// Runs it with stdout captured (stderr shown); fails unless it exits 0.
    pub fn read(mut self) -> Result<String> {
        let out = self
            .inner
            .stderr(Stdio::inherit())
            .output()
            .map_err(|e| self.cannot_start(&e))?;
        if !out.status.success() {
            return Err(format!("`{}` failed ({})", self.shown, out.status));
        }
        String::from_utf8(out.stdout)
            .map_err(|_| format!("`{}` printed something that is not UTF-8", self.shown))
    }

    /// Whether it runs and exits 0, its output discarded.
    pub fn succeeds(mut self) -> bool {
        self.inner
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }

    /// Runs it with its output into `log`; on failure, prints the log's last
    /// `tail` lines and fails naming the log.
    pub fn run_logged(self, log: &Path, tail: usize) -> Result {
        let name = self.shown.clone();
        self.spawn_logged(&name, log)?.wait(tail)
    }

    /// Starts it in the background with stdout and stderr into `log`.
    pub fn spawn_logged(mut self, name: &str, log: &Path) -> Result<Job> {
        let file =
            File::create(log).map_err(|e| format!("cannot create {}: {e}", log.display()))?;
        let err = file
            .try_clone()
            .map_err(|e| format!("cannot reopen {}: {e}", log.display()))?;
        let child = self
            .inner
            .stdin(Stdio::null())
            .stdout(file)
            .stderr(err)
            .spawn()
            .map_err(|e| self.cannot_start(&e))?;
        Ok(Job {
            child: Some(child),
            name: name.to_owned(),
            log: log.to_owned(),
        })
    }

    /// Starts it detached from this run: stdin closed, output into `log`; it outlives
    /// this process (an emulator that `cargo xtask emulator start` leaves running).
    pub fn spawn_daemon(mut self, log: &Path) -> Result<u32> {
        let file =
            File::create(log).map_err(|e| format!("cannot create {}: {e}", log.display()))?;
        let err = file
            .try_clone()
            .map_err(|e| format!("cannot reopen {}: {e}", log.display()))?;
        let child = self
            .inner
            .stdin(Stdio::null())
            .stdout(file)
            .stderr(err)
            .spawn()
            .map_err(|e| self.cannot_start(&e))?;
        Ok(child.id())
    }

    fn cannot_start(&self, e: &std::io::Error) -> String {
        let program = self.inner.get_program().to_string_lossy();
        format!(
            "cannot run `{}`: {e} (is `{program}` installed and on PATH?)",
            self.shown
        )
    }
}

/// A command running in the background, its output in a log. Dropped before it was
/// waited for (the run failed elsewhere), it is stopped with everything it started.
#[derive(Debug)]
pub struct Job {
    child: Option<Child>,
    name: String,
    log: PathBuf,
}

impl Job {
    /// What it is, as shown in messages.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Waits for it; on failure prints the last `tail` lines of its log and fails.
    pub fn wait(mut self, tail: usize) -> Result {
        let Some(mut child) = self.child.take() else {
            return Ok(());
        };
        let cpu = crate::progress::exited_cpu_seconds(child.id());
        let status = child
            .wait()
            .map_err(|e| format!("{}: cannot wait: {e}", self.name))?;
        if let Some(cpu) = cpu {
            eprintln!("{}: {cpu:.0} CPU-s", self.name);
        }
        if status.success() {
            return Ok(());
        }
        eprintln!("{}", tail_of(&self.log, tail));
        Err(format!(
            "{} failed ({status}; log above: {})",
            self.name,
            self.log.display()
        ))
    }

    /// Waits for it as [`Job::wait`] does, then prints the last `max` lines of its log
    /// that start with one of `prefixes` (a test run's summary, a deployment's outputs),
    /// whether it passed or not.
    pub fn wait_showing(self, tail: usize, prefixes: &[&str], max: usize) -> Result {
        let log = self.log.clone();
        let result = self.wait(tail);
        for line in lines_starting(&log, prefixes, max) {
            eprintln!("{line}");
        }
        result
    }

    /// Whether it has ended (without waiting).
    pub fn finished(&mut self) -> bool {
        self.child
            .as_mut()
            .is_none_or(|c| c.try_wait().ok().flatten().is_some())
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            stop_tree(child.id(), Duration::from_secs(5));
            let _ = child.wait();
        }
    }
}

/// The last `lines` lines of a log file.
pub fn tail_of(log: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// The last `max` lines of a log file that start with one of `prefixes`.
pub fn lines_starting(log: &Path, prefixes: &[&str], max: usize) -> Vec<String> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| prefixes.iter().any(|p| l.starts_with(p)))
        .collect();
    lines[lines.len().saturating_sub(max)..]
        .iter()
        .map(|l| (*l).to_owned())
        .collect()
}

/// Stops `pid` and every process it started (TERM, then KILL after `grace`): the
/// terraform providers, node processes and Lambda workers a job leaves behind.
pub fn stop_tree(pid: u32, grace: Duration) {
    let tree = descendants(pid)
        .into_iter()
        .chain([pid])
        .collect::<Vec<_>>();
    signal(&tree, "TERM");
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline && tree.iter().any(|&p| alive(p)) {
        std::thread::sleep(Duration::from_millis(200));
    }
    let left: Vec<u32> = tree.into_iter().filter(|&p| alive(p)).collect();
    if !left.is_empty() {
        signal(&left, "KILL");
    }
}

/// Sends `sig` (a name: TERM, KILL) to each of `pids`.
pub fn signal(pids: &[u32], sig: &str) {
    if pids.is_empty() {
        return;
    }
    let _ = Cmd::new("kill")
        .arg(format!("-{sig}"))
        .args(pids.iter().map(u32::to_string))
        .succeeds();
}

/// Whether `pid` runs (a zombie, ended but not yet reaped, does not).
pub fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|stat| stat_fields(&stat).is_some_and(|(state, _)| state != "Z"))
}

/// Every process below `pid`, children before their own children.
pub fn descendants(pid: u32) -> Vec<u32> {
    let parents = process_parents();
    let mut found = vec![pid];
    let mut i = 0;
    while i < found.len() {
        let parent = found[i];
        found.extend(
            parents
                .iter()
                .filter(|&&(_, pp)| pp == parent)
                .map(|&(p, _)| p),
        );
        i += 1;
    }
    found.remove(0);
    found
}

/// (pid, parent pid) of every process, from /proc.
fn process_parents() -> Vec<(u32, u32)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let (_, ppid) = stat_fields(&stat)?;
            Some((pid, ppid))
        })
        .collect()
}

/// The state and parent pid from a /proc/<pid>/stat line (after the command name,
/// which is in parentheses and may itself hold spaces and parentheses).
fn stat_fields(stat: &str) -> Option<(&str, u32)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?;
    let ppid = fields.next()?.parse().ok()?;
    Some((state, ppid))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_reads_past_a_command_name_with_parentheses() {
        let stat = "4242 (python3 (x) y) S 17 4242 4242 0 -1";
        assert_eq!(stat_fields(stat), Some(("S", 17)));
    }

    /// A log holding `text`, in a directory of its own (`name`, this process's id).
    fn log_holding(name: &str, text: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("xtask-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join("log");
        std::fs::write(&log, text).unwrap();
        log
    }

    #[test]
    fn tail_of_keeps_the_last_lines() {
        let log = log_holding("tail", "a\nb\nc\n");
        assert_eq!(tail_of(&log, 2), "b\nc");
        assert_eq!(tail_of(&log, 9), "a\nb\nc");
        std::fs::remove_dir_all(log.parent().unwrap()).unwrap();
    }

    #[test]
    fn lines_starting_keeps_the_last_lines_with_a_prefix() {
        let log = log_holding("lines", "x: 1\nother\ny: 2\nx: 3\n");
        assert_eq!(lines_starting(&log, &["x:", "y:"], 2), ["y: 2", "x: 3"]);
        assert_eq!(lines_starting(&log, &["z:"], 2), Vec::<String>::new());
        std::fs::remove_dir_all(log.parent().unwrap()).unwrap();
    }

    #[test]
    fn a_background_job_that_fails_is_reported_with_its_log() {
        let dir = std::env::temp_dir().join(format!("xtask-job-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join("job.log");
        let job = Cmd::new("sh")
            .args(["-c", "echo broke; exit 3"])
            .spawn_logged("the job", &log)
            .unwrap();
        let err = job.wait(5).unwrap_err();
        assert!(err.starts_with("the job failed"), "{err}");
        assert_eq!(tail_of(&log, 1), "broke");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
