//! What to inject, where and how often: parsed from one line of configuration, drawn
//! per request. Pure: no I/O, so the parsing and the drawing are unit tested.

use std::fmt;
use std::str::FromStr;

/// One kind of failure, as the AWS SDK would meet it in the world.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The service throttles the request (HTTP 400, `ThrottlingException`, or
    /// `ProvisionedThroughputExceededException` from DynamoDB). Nothing happened.
    Throttle,
    /// The service fails (HTTP 500, `InternalFailure`). Nothing happened.
    ServerError,
    /// The request times out before it is sent. Nothing happened.
    Timeout,
    /// The connection is reset before the request is sent. Nothing happened.
    Reset,
    /// The request is sent and takes effect, but the caller sees a timeout: the
    /// dangerous one (a retry repeats what already happened).
    LostResponse,
    /// The process dies before the request is sent (a Lambda crash, timeout or
    /// out-of-memory between two steps).
    CrashBefore,
    /// The process dies after the service accepted the call: it took effect, nothing
    /// after it ran. A refused call (a failed condition, a throttle) is answered
    /// normally: it changed nothing, so a crash after it is `CrashBefore`'s case.
    CrashAfter,
    /// The request is sent whole and takes effect, but its answer never comes (a
    /// connection that died after the request, a black-holed answer): only the SDK's
    /// own timeouts end the call. (Sent whole: a request whose body is never read is
    /// a stalled upload, which the SDK's stalled-stream protection already catches.)
    Hang,
    /// A read of a global secondary index (the first page of a `Query` or a PartiQL
    /// `SELECT` naming an index, never a consistent read, never a table read) still
    /// lists what the index listed up to [`INDEX_LAG_MAX_MS`] before for the same
    /// partition values and no longer does: an item marked `SENT` since. The request
    /// is sent and answered; the items are added to its answer. Any other request
    /// ignores the rule.
    IndexLag,
}

/// How long an item that left an index may still be listed by a lagging read. AWS
/// says its indexes follow the table within a fraction of a second under normal
/// conditions; the local AWS starts a process for every invocation, so two reads of
/// the same shards come seconds apart, and a window shorter than that never shows.
/// The fault only adds items that left the index (it never hides one), so a longer
/// window is no kinder: it lists more of what is no longer there.
pub const INDEX_LAG_MAX_MS: u64 = 10_000;

impl Fault {
    /// Its name in the configuration.
    pub fn name(self) -> &'static str {
        match self {
            Fault::Throttle => "throttle",
            Fault::ServerError => "server_error",
            Fault::Timeout => "timeout",
            Fault::Reset => "reset",
            Fault::LostResponse => "lost_response",
            Fault::CrashBefore => "crash_before",
            Fault::CrashAfter => "crash_after",
            Fault::Hang => "hang",
            Fault::IndexLag => "index_lag",
        }
    }

    const ALL: [Fault; 9] = [
        Fault::Throttle,
        Fault::ServerError,
        Fault::Timeout,
        Fault::Reset,
        Fault::LostResponse,
        Fault::CrashBefore,
        Fault::CrashAfter,
        Fault::Hang,
        Fault::IndexLag,
    ];
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One line of the plan: `operation:fault:probability`.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    /// The AWS operation (`SendMessageBatch`, `UpdateItem`, ...), or `None` for any.
    pub operation: Option<String>,
    /// What happens.
    pub fault: Fault,
    /// How often, from 0 to 1.
    pub probability: f64,
}

/// The configuration could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "OUTBOX_FAULTS: `{rule}`: {reason}. Write rules as `operation:fault:probability` separated by `;`, e.g. `SendMessageBatch:crash_after:0.3;*:throttle:0.05`; faults: throttle, server_error, timeout, reset, lost_response, crash_before, crash_after, hang, index_lag"
)]
pub struct PlanError {
    rule: String,
    reason: String,
}

/// Every rule, in order; the first rule that fires wins.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FaultPlan {
    rules: Vec<Rule>,
}

impl FromStr for FaultPlan {
    type Err = PlanError;

    fn from_str(text: &str) -> Result<Self, PlanError> {
        let rules = text
            .split(';')
            .map(str::trim)
            .filter(|r| !r.is_empty())
            .map(parse_rule)
            .collect::<Result<_, _>>()?;
        Ok(FaultPlan { rules })
    }
}

fn parse_rule(text: &str) -> Result<Rule, PlanError> {
    let bad = |reason: &str| PlanError {
        rule: text.to_owned(),
        reason: reason.to_owned(),
    };
    let parts: Vec<&str> = text.split(':').map(str::trim).collect();
    let [operation, fault, probability] = parts[..] else {
        return Err(bad("expected three parts"));
    };
    let fault = Fault::ALL
        .into_iter()
        .find(|f| f.name() == fault)
        .ok_or_else(|| bad("unknown fault"))?;
    let probability: f64 = probability
        .parse()
        .map_err(|_| bad("the probability is not a number"))?;
    if !(0.0..=1.0).contains(&probability) {
        return Err(bad("the probability must be between 0 and 1"));
    }
    if operation.is_empty()
        || !operation
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '*')
    {
        return Err(bad("the operation must be an AWS operation name or `*`"));
    }
    Ok(Rule {
        operation: (operation != "*").then(|| operation.to_owned()),
        fault,
        probability,
    })
}

impl FaultPlan {
    /// Whether the plan injects anything.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The rules.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// Whether some rule injects `fault`.
    pub fn injects(&self, fault: Fault) -> bool {
        self.rules.iter().any(|r| r.fault == fault)
    }

    /// The fault for one request to `operation` that is not an index read (see
    /// [`FaultPlan::pick_for`]).
    pub fn pick(&self, operation: &str, draw: impl FnMut() -> f64) -> Option<Fault> {
        self.pick_for(operation, false, draw)
    }

    /// The fault for one request to `operation`, given one uniform draw in `[0, 1)`
    /// per rule (`draw` is called once for each rule that applies). An
    /// [`Fault::IndexLag`] rule applies only when `index_read` (the request is an
    /// eventually consistent read of an index): on any other request it cannot fire.
    pub fn pick_for(
        &self,
        operation: &str,
        index_read: bool,
        mut draw: impl FnMut() -> f64,
    ) -> Option<Fault> {
        self.rules
            .iter()
            .filter(|r| r.operation.as_deref().is_none_or(|o| o == operation))
            .filter(|r| index_read || r.fault != Fault::IndexLag)
            .find(|r| draw() < r.probability)
            .map(|r| r.fault)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_reads_operation_fault_and_probability_per_rule() {
        let plan: FaultPlan = "SendMessageBatch:crash_after:0.3; *:throttle:0.05;"
            .parse()
            .unwrap_or_default();
        assert_eq!(
            plan.rules(),
            &[
                Rule {
                    operation: Some("SendMessageBatch".into()),
                    fault: Fault::CrashAfter,
                    probability: 0.3
                },
                Rule {
                    operation: None,
                    fault: Fault::Throttle,
                    probability: 0.05
                },
            ]
        );
        assert!("".parse::<FaultPlan>().is_ok_and(|p| p.is_empty()));
        let hang: FaultPlan = "SendMessageBatch:hang:1".parse().unwrap_or_default();
        assert_eq!(hang.pick("SendMessageBatch", || 0.5), Some(Fault::Hang));
    }

    #[test]
    fn a_bad_rule_is_refused_naming_it_and_how_to_write_one() {
        for (text, why) in [
            ("UpdateItem:explode:0.1", "unknown fault"),
            ("UpdateItem:throttle", "three parts"),
            ("UpdateItem:throttle:1.5", "between 0 and 1"),
            ("UpdateItem:throttle:often", "not a number"),
            ("Update Item:throttle:0.1", "operation"),
        ] {
            let err = text.parse::<FaultPlan>().err().map(|e| e.to_string());
            let err = err.unwrap_or_default();
            assert!(err.contains(text) && err.contains(why), "{text}: {err}");
            assert!(err.contains("operation:fault:probability"), "{err}");
        }
    }

    #[test]
    fn the_first_rule_that_names_the_operation_and_fires_wins() {
        let plan: FaultPlan = "UpdateItem:lost_response:0.5;*:server_error:0.5"
            .parse()
            .unwrap_or_default();
        assert_eq!(plan.pick("UpdateItem", || 0.1), Some(Fault::LostResponse));
        let mut draws = [0.9, 0.2].into_iter();
        assert_eq!(
            plan.pick("UpdateItem", || draws.next().unwrap_or(1.0)),
            Some(Fault::ServerError),
            "the first did not fire, the second did"
        );
        assert_eq!(plan.pick("SendMessageBatch", || 0.6), None);
        assert_eq!(plan.pick("Query", || 0.4), Some(Fault::ServerError));
    }

    #[test]
    fn an_index_lag_rule_fires_only_on_an_index_read() {
        let plan: FaultPlan = "*:index_lag:0.5;*:throttle:0.5".parse().unwrap_or_default();
        assert!(plan.injects(Fault::IndexLag) && !plan.injects(Fault::Hang));
        assert_eq!(plan.pick_for("Query", true, || 0.1), Some(Fault::IndexLag));
        assert_eq!(
            plan.pick_for("Query", false, || 0.1),
            Some(Fault::Throttle),
            "a table read: the lag rule is skipped, the next one draws"
        );
        assert_eq!(plan.pick("PutItem", || 0.1), Some(Fault::Throttle));
    }
}
