//! The functions' billed durations, from the `REPORT` line Lambda prints after
//! each invocation.

use crate::aws::Clients;
use crate::deployment::{Deployment, LogLine};

/// Billed duration per invocation from Lambda `REPORT` lines.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Billed {
    /// Invocations reported.
    pub invocations: usize,
    /// Mean `Billed Duration`, ms.
    pub mean_ms: f64,
}

/// Reads `Billed Duration: N ms` from `REPORT` lines.
pub fn billed(lines: &[LogLine]) -> Billed {
    let durations: Vec<f64> = lines
        .iter()
        .filter(|l| l.message.starts_with("REPORT"))
        .filter_map(|l| {
            let rest = l.message.split("Billed Duration:").nth(1)?;
            rest.split_whitespace().next()?.parse().ok()
        })
        .collect();
    Billed {
        invocations: durations.len(),
        mean_ms: if durations.is_empty() {
            0.0
        } else {
            durations.iter().sum::<f64>() / durations.len() as f64
        },
    }
}

/// The publisher's and the sweeper's billed durations since `since_ms`: the report's
/// line and the JSON the cost bench reads (with messages per publisher invocation,
/// from the `published` messages of the run).
pub(super) async fn billed_summary(
    clients: &Clients,
    deployment: &Deployment,
    since_ms: i64,
    published: usize,
) -> Result<(String, serde_json::Value), String> {
    let publisher = billed(
        &deployment
            .logs(clients, &deployment.publisher, since_ms)
            .await
            .map_err(|e| e.to_string())?,
    );
    let sweeper = billed(
        &deployment
            .logs(clients, &deployment.sweeper, since_ms)
            .await
            .map_err(|e| e.to_string())?,
    );
    let line = format!(
        "billed duration (REPORT lines): publisher {:.1} ms mean over {} invocations; sweeper {:.1} ms over {}\n",
        publisher.mean_ms, publisher.invocations, sweeper.mean_ms, sweeper.invocations
    );
    let json = serde_json::json!({
        "publisher": {
            "billed_ms_mean": publisher.mean_ms,
            "invocations": publisher.invocations,
            "messages_per_invocation": published as f64 / publisher.invocations.max(1) as f64,
        },
        "sweeper": { "billed_ms_mean": sweeper.mean_ms, "invocations": sweeper.invocations },
    });
    Ok((line, json))
}
