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
    /// Their sum, ms: what a message costs in compute is this over the messages.
    pub total_ms: f64,
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
    let total_ms = durations.iter().sum::<f64>();
    Billed {
        invocations: durations.len(),
        total_ms,
        mean_ms: if durations.is_empty() {
            0.0
        } else {
            total_ms / durations.len() as f64
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
    // Every message of the loads (the warm-up's and the raw burst's too) is the
    // publisher's: the stuck item is the sweeper's and the raw PutItems go to a table
    // without a stream.
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
        "billed duration (REPORT lines): publisher {:.1} ms mean over {} invocations; sweeper {:.1} ms over {}\n{}",
        publisher.mean_ms,
        publisher.invocations,
        sweeper.mean_ms,
        sweeper.invocations,
        per_message_line(&publisher, published)
    );
    let json = serde_json::json!({
        "publisher": {
            "billed_ms_mean": publisher.mean_ms,
            "invocations": publisher.invocations,
            "messages_per_invocation": published as f64 / publisher.invocations.max(1) as f64,
            "billed_ms_total": publisher.total_ms,
            "messages_published": published,
            "billed_ms_per_message": billed_ms_per_message(&publisher, published),
        },
        "sweeper": { "billed_ms_mean": sweeper.mean_ms, "invocations": sweeper.invocations },
    });
    Ok((line, json))
}

/// The publisher's billed milliseconds per message published: its total billed
/// duration over the messages. None without messages (nothing to divide among).
pub fn billed_ms_per_message(publisher: &Billed, published: usize) -> Option<f64> {
    (published > 0).then(|| publisher.total_ms / published as f64)
}

/// The report's line for [`billed_ms_per_message`].
pub fn per_message_line(publisher: &Billed, published: usize) -> String {
    match billed_ms_per_message(publisher, published) {
        Some(ms) => format!(
            "billed duration per message: publisher {ms:.3} ms ({:.0} ms billed in total / {published} messages published)\n",
            publisher.total_ms
        ),
        None => "billed duration per message: no messages published\n".to_owned(),
    }
}
