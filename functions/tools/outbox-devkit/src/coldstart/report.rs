//! The cold-start table.

use super::{ColdStart, ColdStartError, FUNCTIONS, LocalAws, empty_event, function_env, measure};
use std::path::Path;
use std::time::Duration;

fn header() -> String {
    format!(
        "{:<18} {:>12} {:>18} {:>14} {:>12}\n",
        "function", "init ms", "first invoke ms", "peak RSS MiB", "size MiB"
    )
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / 1_048_576.0
}

/// Measures every function under `dir` (`<dir>/<name>/bootstrap`), `runs` times each,
/// its AWS calls going to `aws`, and prints a table: the medians of init and first
/// invocation, the highest peak memory, the size. Without a local AWS, only the sizes:
/// the other figures would time calls nothing answers.
pub fn report(dir: &Path, runs: usize, aws: Option<&LocalAws>) -> Result<String, ColdStartError> {
    let Some(aws) = aws else {
        return Ok(sizes_only(dir));
    };
    let runs = runs.max(1);
    let mut out = format!(
        "cold start per function ({runs} runs each; medians; Runtime API on loopback, event: an empty batch;\n\
         AWS calls to the local AWS at {}, {})\n{}",
        aws.endpoint,
        aws.resources,
        header()
    );
    for name in FUNCTIONS {
        let binary = dir.join(name).join("bootstrap");
        if !binary.exists() {
            out.push_str(&format!("{name:<18} (no {})\n", binary.display()));
            continue;
        }
        let mut all = Vec::with_capacity(runs);
        for _ in 0..runs {
            all.push(measure(&binary, &function_env(name, aws), empty_event())?);
        }
        out.push_str(&measured_row(name, &all));
    }
    Ok(out)
}

/// The table without a local AWS: why no time is printed, and each binary's size.
fn sizes_only(dir: &Path) -> String {
    let mut out = String::from(
        "cold start per function: NOT MEASURED — no local AWS (pass --endpoint or set OUTBOX_ENDPOINT):\n\
         the functions call AWS in their first invocation (the publisher and the sweeper read their\n\
         queues' attributes, the sweeper queries its index); with nothing to answer, the times\n\
         would be the SDK's retries against an unreachable endpoint. Sizes only:\n",
    );
    out.push_str(&header());
    for name in FUNCTIONS {
        let binary = dir.join(name).join("bootstrap");
        match std::fs::metadata(&binary) {
            Ok(m) => out.push_str(&format!(
                "{name:<18} {:>12} {:>18} {:>14} {:>12.1}\n",
                "-",
                "-",
                "-",
                mib(m.len())
            )),
            Err(_) => out.push_str(&format!("{name:<18} (no {})\n", binary.display())),
        }
    }
    out
}

/// One function's row from its runs (at least one): medians of the times, the
/// highest peak memory, the size, and how many first invocations answered an error.
fn measured_row(name: &str, all: &[ColdStart]) -> String {
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or_default()
    };
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let mut row = format!(
        "{name:<18} {:>12.1} {:>18.1} {:>14.1} {:>12.1}",
        median(all.iter().map(|c| ms(c.init)).collect()),
        median(all.iter().map(|c| ms(c.first_invocation)).collect()),
        mib(all.iter().map(|c| c.peak_rss_kib).max().unwrap_or(0) * 1024),
        mib(all.first().map_or(0, |c| c.binary_bytes)),
    );
    let errors = all.iter().filter(|c| !c.first_invocation_ok).count();
    if errors > 0 {
        row.push_str(&format!(
            "  (the first invocation answered an error in {errors} of {} runs)",
            all.len()
        ));
    }
    row.push('\n');
    row
}
