//! `cargo run --release -p outbox-model -- [--deep] [--threads N] [--only TEXT]`: checks the CI
//! instances (or the deep ones), single-region and two-region, and prints, for each, the states explored, the unique
//! states, the longest path, the time, and any counterexample one line per action.

use outbox_model::{OutboxModel, check, global, presets};
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let deep = args.iter().any(|a| a == "--deep");
    let threads = args
        .iter()
        .position(|a| a == "--threads")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(2);
    let only = args
        .iter()
        .position(|a| a == "--only")
        .and_then(|i| args.get(i + 1));
    if args.iter().any(|a| a == "--help" || a == "-h") {
        println!("usage: outbox-model [--deep] [--threads N] [--only TEXT]");
        return ExitCode::SUCCESS;
    }
    let instances = if deep { presets::deep() } else { presets::ci() };
    let mut failed = false;
    for (name, params) in instances {
        if only.is_some_and(|o| !name.contains(o.as_str())) {
            continue;
        }
        let report = check(OutboxModel::new(params), threads);
        println!(
            "{name}: {} states explored, {} unique, max depth {}, {:.1?}",
            report.states, report.unique, report.max_depth, report.elapsed
        );
        for f in report.failures() {
            failed = true;
            println!("  VIOLATED {f}");
        }
    }
    let global = if deep {
        presets::global_deep()
    } else {
        presets::global_ci()
    };
    for (name, params) in global {
        if only.is_some_and(|o| !name.contains(o.as_str())) {
            continue;
        }
        let report = global::check(global::GlobalModel::new(params), threads);
        println!(
            "{name}: {} states explored, {} unique, max depth {}, {:.1?}",
            report.states, report.unique, report.max_depth, report.elapsed
        );
        for f in report.failures() {
            failed = true;
            println!("  VIOLATED {f}");
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
