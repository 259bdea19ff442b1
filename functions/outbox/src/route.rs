//! Destinations and routing: which topic goes where.

use serde::Deserialize;
use std::collections::HashMap;
use std::fmt;

/// SQS's largest message (body plus attributes): 1 MiB. A queue may set a lower
/// `MaximumMessageSize`; say so in the route.
pub const SQS_MAX_MESSAGE_BYTES: usize = 1_048_576;
/// Most entries in one `SendMessageBatch`.
pub const SQS_MAX_BATCH_ENTRIES: usize = 10;
/// Largest `SendMessageBatch` request payload (sum of its messages): 1 MiB.
pub const SQS_MAX_BATCH_BYTES: usize = 1_048_576;

/// Where messages of a topic are published.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Destination {
    /// An SQS queue, by URL. FIFO when the URL ends in `.fifo`.
    Sqs {
        /// Queue URL.
        url: String,
        /// Largest message the queue accepts, in bytes.
        max_message_bytes: usize,
    },
}

impl Destination {
    /// An SQS queue with the service's default size limit.
    pub fn sqs(url: impl Into<String>) -> Self {
        Destination::Sqs {
            url: url.into(),
            max_message_bytes: SQS_MAX_MESSAGE_BYTES,
        }
    }

    /// Whether the destination keeps order per group and deduplicates (FIFO).
    pub fn is_fifo(&self) -> bool {
        match self {
            Destination::Sqs { url, .. } => url.ends_with(".fifo"),
        }
    }

    /// Largest message the destination accepts.
    pub fn max_message_bytes(&self) -> usize {
        match self {
            Destination::Sqs {
                max_message_bytes, ..
            } => *max_message_bytes,
        }
    }

    /// Parses a destination string: an SQS queue URL.
    pub fn parse(text: &str, max_message_bytes: Option<usize>) -> Result<Self, RouteError> {
        let text = text.trim();
        if text.starts_with("https://") || text.starts_with("http://") {
            let max = max_message_bytes.unwrap_or(SQS_MAX_MESSAGE_BYTES);
            if max == 0 || max > SQS_MAX_MESSAGE_BYTES {
                return Err(RouteError::BadLimit {
                    destination: text.to_owned(),
                    max,
                });
            }
            return Ok(Destination::Sqs {
                url: text.to_owned(),
                max_message_bytes: max,
            });
        }
        if text.starts_with("arn:aws:sns:") || text.starts_with("arn:aws:events:") {
            return Err(RouteError::Unsupported(text.to_owned()));
        }
        Err(RouteError::Unrecognised(text.to_owned()))
    }
}

impl fmt::Display for Destination {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Destination::Sqs { url, .. } => write!(f, "sqs:{url}"),
        }
    }
}

/// A routing configuration problem, found at start-up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RouteError {
    /// The routes text is not the expected JSON.
    #[error(
        "routes must be a JSON object mapping a topic to a queue URL, or to {{\"destination\": URL, \"max_message_bytes\": N}}: {0}"
    )]
    Json(String),
    /// The destination is not a queue URL.
    #[error(
        "`{0}` is not a destination: use an SQS queue URL such as https://sqs.eu-west-1.amazonaws.com/123456789012/orders"
    )]
    Unrecognised(String),
    /// SNS / EventBridge destinations are recognised but not built yet.
    #[error(
        "`{0}`: SNS and EventBridge destinations are not supported yet; route this topic to an SQS queue"
    )]
    Unsupported(String),
    /// A size limit outside what SQS allows.
    #[error(
        "max_message_bytes {max} for `{destination}` must be between 1 and {SQS_MAX_MESSAGE_BYTES}"
    )]
    BadLimit {
        /// The destination concerned.
        destination: String,
        /// The rejected limit.
        max: usize,
    },
    /// A topic name that is empty.
    #[error("a route has an empty topic name")]
    EmptyTopic,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RouteSpec {
    Url(String),
    Detailed {
        destination: String,
        #[serde(default)]
        max_message_bytes: Option<usize>,
    },
}

/// Topic → destination, with an optional default for unrouted topics.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Routes {
    by_topic: HashMap<String, Destination>,
    default: Option<Destination>,
}

impl Routes {
    /// Routes from explicit pairs.
    pub fn new(
        pairs: impl IntoIterator<Item = (String, Destination)>,
        default: Option<Destination>,
    ) -> Self {
        Routes {
            by_topic: pairs.into_iter().collect(),
            default,
        }
    }

    /// Parses the `OUTBOX_ROUTES` JSON object and an optional default destination.
    pub fn parse(json: &str, default: Option<&str>) -> Result<Self, RouteError> {
        let specs: HashMap<String, RouteSpec> =
            serde_json::from_str(json).map_err(|e| RouteError::Json(e.to_string()))?;
        let mut by_topic = HashMap::with_capacity(specs.len());
        for (topic, spec) in specs {
            if topic.trim().is_empty() {
                return Err(RouteError::EmptyTopic);
            }
            let dest = match spec {
                RouteSpec::Url(url) => Destination::parse(&url, None)?,
                RouteSpec::Detailed {
                    destination,
                    max_message_bytes,
                } => Destination::parse(&destination, max_message_bytes)?,
            };
            by_topic.insert(topic, dest);
        }
        let default = match default.map(str::trim) {
            Some(d) if !d.is_empty() => Some(Destination::parse(d, None)?),
            _ => None,
        };
        Ok(Routes { by_topic, default })
    }

    /// The destination of a topic, if any.
    pub fn resolve(&self, topic: &str) -> Option<&Destination> {
        self.by_topic.get(topic).or(self.default.as_ref())
    }

    /// Every destination that can be routed to (for permission checks and docs).
    pub fn destinations(&self) -> impl Iterator<Item = &Destination> {
        self.by_topic.values().chain(self.default.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_plain_and_detailed_routes_and_default() {
        let routes = Routes::parse(
            r#"{"orders":"https://sqs.x/1/orders.fifo","mail":{"destination":"https://sqs.x/1/mail","max_message_bytes":262144}}"#,
            Some("https://sqs.x/1/other"),
        )
        .expect("valid");
        let orders = routes.resolve("orders").expect("routed");
        assert!(orders.is_fifo());
        assert_eq!(
            routes.resolve("mail").expect("routed").max_message_bytes(),
            262_144
        );
        assert_eq!(
            routes.resolve("anything"),
            Some(&Destination::sqs("https://sqs.x/1/other"))
        );
    }

    #[test]
    fn unknown_topic_without_default_has_no_route() {
        let routes = Routes::parse(r#"{"orders":"https://sqs.x/1/orders"}"#, None).expect("valid");
        assert!(routes.resolve("nope").is_none());
    }

    #[test]
    fn rejects_what_is_not_a_destination_with_a_hint() {
        let err = Routes::parse(r#"{"orders":"orders-queue"}"#, None).expect_err("not a URL");
        assert!(err.to_string().contains("SQS queue URL"), "{err}");
        let err = Routes::parse("[1,2]", None).expect_err("not an object");
        assert!(matches!(err, RouteError::Json(_)));
        let err = Routes::parse(
            r#"{"o":{"destination":"https://q","max_message_bytes":2000000}}"#,
            None,
        )
        .expect_err("too big");
        assert!(matches!(err, RouteError::BadLimit { .. }));
    }
}
