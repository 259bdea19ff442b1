//! Destinations and routing: which topic goes where.

use crate::large_payload::{LargePayloads, Offload, bucket_name_problem};
pub use crate::policy::limit::SqsLimit;
#[cfg(any(test, feature = "unstable-internals"))]
use crate::policy::limit::{QueueLimits, sqs_limit};
use serde::Deserialize;
use std::collections::HashMap;
use std::fmt;

pub mod envelope;
pub mod region;

/// SQS's largest message (body plus attributes): 1 MiB, and the default limit of an
/// SQS destination whose own `MaximumMessageSize` is not known. A queue may set a
/// lower one: the functions read it at start ([`SqsLimit`]), or the route states it.
pub const SQS_MAX_MESSAGE_BYTES: usize = 1_048_576;
/// Most entries in one `SendMessageBatch`, `PublishBatch` or `PutEvents`.
pub const SQS_MAX_BATCH_ENTRIES: usize = 10;
/// Largest `SendMessageBatch` request payload (sum of its messages): 1 MiB, whatever
/// the queue's `MaximumMessageSize`.
pub const SQS_MAX_BATCH_BYTES: usize = 1_048_576;
/// SNS's largest message, and largest `PublishBatch` (sum of its messages): 256 KiB.
pub const SNS_MAX_BYTES: usize = 262_144;
/// EventBridge's largest `PutEvents` request (sum of its entries): 256 KiB.
pub const EVENTBRIDGE_MAX_BYTES: usize = 262_144;
/// `Source` of the events the outbox puts on an EventBridge bus, unless the route says.
pub const DEFAULT_EVENT_SOURCE: &str = "dynamodb-outbox";

/// Where messages of a topic are published.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Destination {
    /// An SQS queue, by URL. FIFO when the URL ends in `.fifo`.
    Sqs {
        /// Queue URL.
        url: String,
        /// Largest message the queue accepts.
        limit: SqsLimit,
    },
    /// An SNS topic, by ARN. FIFO when the ARN ends in `.fifo`.
    Sns {
        /// Topic ARN.
        arn: String,
        /// Whether every subscription of the topic uses raw delivery (the route's
        /// `raw_delivery`): a message is then sized as SNS counts it; otherwise as the
        /// notification envelope a subscriber's queue receives ([`envelope`]).
        raw_delivery: bool,
    },
    /// An EventBridge event bus, by ARN. Each message becomes an event whose
    /// `DetailType` is the topic and whose `Detail` carries the outbox metadata and
    /// the payload.
    EventBridge {
        /// Event bus ARN.
        bus: String,
        /// The events' `Source`.
        source: String,
    },
}

impl Destination {
    /// An SQS queue whose size limit is not known yet (SQS's largest message).
    pub fn sqs(url: impl Into<String>) -> Self {
        Destination::Sqs {
            url: url.into(),
            limit: SqsLimit::Default,
        }
    }

    /// The URL of an SQS queue whose size limit the route does not set: the queue's
    /// own `MaximumMessageSize` is worth reading.
    pub fn queue_to_learn(&self) -> Option<&str> {
        match self {
            Destination::Sqs { url, limit } if limit.configured().is_none() => Some(url),
            _ => None,
        }
    }

    /// The same destination with the limit that applies once its queue's
    /// `MaximumMessageSize` has been read (`limits`, by URL): see
    /// the core's `policy::limit::sqs_limit`. A queue not in `limits` keeps its limit.
    #[cfg(any(test, feature = "unstable-internals"))]
    pub fn with_queue_limits(self, limits: &QueueLimits) -> Self {
        match self {
            Destination::Sqs { url, limit } => {
                let limit = match limits.get(&url) {
                    Some(read) => sqs_limit(limit.configured(), Some(read)),
                    None => limit,
                };
                Destination::Sqs { url, limit }
            }
            other => other,
        }
    }

    /// The AWS region the destination is in, when its address names one (see
    /// [`region`]): the adapters send to it through a client of that region.
    /// `None` for a queue URL whose host names no region (a local endpoint).
    pub fn region(&self) -> Option<&str> {
        match self {
            Destination::Sqs { url, .. } => region::queue_url_region(url),
            Destination::Sns { arn, .. } => region::arn_region(arn),
            Destination::EventBridge { bus, .. } => region::arn_region(bus),
        }
    }

    /// Whether the destination keeps order per group and deduplicates (FIFO).
    pub fn is_fifo(&self) -> bool {
        match self {
            Destination::Sqs { url, .. } => url.ends_with(".fifo"),
            Destination::Sns { arn, .. } => arn.ends_with(".fifo"),
            Destination::EventBridge { .. } => false,
        }
    }

    /// Largest message the destination accepts, as [`Destination::message_size`] counts.
    pub fn max_message_bytes(&self) -> usize {
        match self {
            Destination::Sqs { limit, .. } => limit.bytes(),
            Destination::Sns { .. } => SNS_MAX_BYTES,
            Destination::EventBridge { .. } => EVENTBRIDGE_MAX_BYTES,
        }
    }

    /// Where [`Destination::max_message_bytes`] comes from, for reasons an operator
    /// reads.
    pub fn limit_source(&self) -> &'static str {
        match self {
            Destination::Sqs { limit, .. } => limit.source(),
            Destination::Sns {
                raw_delivery: true, ..
            } => "SNS's largest message",
            Destination::Sns { .. } => {
                "a subscriber queue's 256 KiB, counting SNS's notification envelope; set raw_delivery on the route when its subscriptions use raw delivery"
            }
            Destination::EventBridge { .. } => "EventBridge's largest request",
        }
    }

    /// Largest sum of message sizes in one batch call: for SQS 1 MiB whatever the
    /// queue's own message limit.
    pub fn max_batch_bytes(&self) -> usize {
        match self {
            Destination::Sqs { .. } => SQS_MAX_BATCH_BYTES,
            Destination::Sns { .. } => SNS_MAX_BYTES,
            Destination::EventBridge { .. } => EVENTBRIDGE_MAX_BYTES,
        }
    }

    /// The size of `m` as this destination counts it against its limits.
    pub fn message_size(&self, m: &crate::message::OutboundMessage) -> usize {
        match self {
            Destination::Sns {
                arn,
                raw_delivery: false,
            } => envelope::sns_envelope_bytes(arn, m),
            Destination::Sqs { .. } | Destination::Sns { .. } => m.size(),
            Destination::EventBridge { source, .. } => {
                let topic = m
                    .attributes
                    .iter()
                    .find(|(n, _)| *n == crate::message::ATTR_TOPIC)
                    .map(|(_, v)| v.text().len())
                    .unwrap_or(0);
                source.len() + topic + crate::message::event_detail(m).len()
            }
        }
    }

    /// Parses a destination: an SQS queue URL, an SNS topic ARN or an EventBridge
    /// event bus ARN.
    /// An SNS topic is taken to deliver without raw delivery (see [`envelope`]).
    pub fn parse(text: &str, max_message_bytes: Option<usize>) -> Result<Self, RouteError> {
        Self::parse_with(text, max_message_bytes, None, None)
    }

    fn parse_with(
        text: &str,
        max_message_bytes: Option<usize>,
        source: Option<String>,
        raw_delivery: Option<bool>,
    ) -> Result<Self, RouteError> {
        let text = text.trim();
        let d = Self::parse_kind(
            text,
            max_message_bytes,
            source,
            raw_delivery.unwrap_or(false),
        )?;
        if raw_delivery.is_some() && !matches!(d, Destination::Sns { .. }) {
            return Err(RouteError::RawDeliveryNotSupported(text.to_owned()));
        }
        Ok(d)
    }

    fn parse_kind(
        text: &str,
        max_message_bytes: Option<usize>,
        source: Option<String>,
        raw_delivery: bool,
    ) -> Result<Self, RouteError> {
        if text.starts_with("https://") || text.starts_with("http://") {
            let limit = match max_message_bytes {
                None => SqsLimit::Default,
                Some(max) if max == 0 || max > SQS_MAX_MESSAGE_BYTES => {
                    return Err(RouteError::BadLimit {
                        destination: text.to_owned(),
                        max,
                    });
                }
                Some(max) => SqsLimit::Route(max),
            };
            return Ok(Destination::Sqs {
                url: text.to_owned(),
                limit,
            });
        }
        let parts: Vec<&str> = text.split(':').collect();
        if parts.len() >= 6 && parts[0] == "arn" {
            let limited = |d: Destination| match (max_message_bytes, region::arn_problem(text)) {
                (_, Some(reason)) => Err(RouteError::BadArn {
                    destination: text.to_owned(),
                    reason,
                }),
                (Some(_), None) => Err(RouteError::LimitNotSupported(text.to_owned())),
                (None, None) => Ok(d),
            };
            match parts[2] {
                "sns" if !parts[5].is_empty() => {
                    return limited(Destination::Sns {
                        arn: text.to_owned(),
                        raw_delivery,
                    });
                }
                "events" if parts[5].starts_with("event-bus/") && parts[5].len() > 10 => {
                    return limited(Destination::EventBridge {
                        bus: text.to_owned(),
                        source: source.unwrap_or_else(|| DEFAULT_EVENT_SOURCE.to_owned()),
                    });
                }
                _ => {}
            }
        }
        Err(RouteError::Unrecognised(text.to_owned()))
    }
}

impl fmt::Display for Destination {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Destination::Sqs { url, .. } => write!(f, "sqs:{url}"),
            Destination::Sns { arn, .. } => write!(f, "{arn}"),
            Destination::EventBridge { bus, .. } => write!(f, "{bus}"),
        }
    }
}

/// A routing configuration problem, found at start-up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RouteError {
    /// The routes text is not the expected JSON.
    #[error(
        "routes must be a JSON object mapping a topic to a destination (SQS queue URL, SNS topic ARN, EventBridge bus ARN), or to {{\"destination\": ..., \"max_message_bytes\": N, \"source\": S, \"large_payload_bucket\": B, \"raw_delivery\": true}}: {0}"
    )]
    Json(String),
    /// The destination is not a queue URL, topic ARN or event bus ARN.
    #[error(
        "`{0}` is not a destination: use an SQS queue URL (https://sqs.eu-west-1.amazonaws.com/123456789012/orders), an SNS topic ARN (arn:aws:sns:eu-west-1:123456789012:orders) or an EventBridge bus ARN (arn:aws:events:eu-west-1:123456789012:event-bus/orders)"
    )]
    Unrecognised(String),
    /// `max_message_bytes` on a destination whose limit is fixed.
    #[error(
        "`{0}`: max_message_bytes applies to SQS queues only (SNS and EventBridge limits are fixed at 256 KiB)"
    )]
    LimitNotSupported(String),
    /// `raw_delivery` on a destination that is not an SNS topic.
    #[error("`{0}`: raw_delivery applies to SNS topics only")]
    RawDeliveryNotSupported(String),
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
    /// A topic or bus ARN that names no usable partition, region or account.
    #[error("`{destination}` is not a usable ARN: {reason}")]
    BadArn {
        /// The destination concerned.
        destination: String,
        /// What is wrong.
        reason: String,
    },
    /// A topic name that is empty.
    #[error("a route has an empty topic name")]
    EmptyTopic,
    /// A `large_payload_bucket` that cannot be a bucket's name.
    #[error("route `{topic}`: large_payload_bucket {reason}")]
    BadBucket {
        /// The route's topic.
        topic: String,
        /// What is wrong.
        reason: String,
    },
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RouteSpec {
    Url(String),
    Detailed {
        destination: String,
        #[serde(default)]
        max_message_bytes: Option<usize>,
        #[serde(default)]
        source: Option<String>,
        #[serde(default)]
        large_payload_bucket: Option<String>,
        #[serde(default)]
        raw_delivery: Option<bool>,
    },
}

/// Topic → destination, with an optional default for unrouted topics, and where
/// each route's large payloads go (the large-payload offload).
///
/// ```
/// use dynamodb_outbox_core::{Destination, Routes};
///
/// let routes = Routes::new(
///     [(
///         "payments".to_owned(),
///         Destination::parse("arn:aws:sns:eu-west-1:123456789012:payments", None)?,
///     )],
///     Some(Destination::sqs("https://sqs.eu-west-1.amazonaws.com/123456789012/everything-else")),
/// );
/// assert!(matches!(routes.resolve("payments"), Some(Destination::Sns { .. })));
/// assert!(matches!(routes.resolve("audit"), Some(Destination::Sqs { .. })));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Routes {
    by_topic: HashMap<String, Destination>,
    default: Option<Destination>,
    large: LargePayloads,
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
            large: LargePayloads::default(),
        }
    }

    /// The same routes with `default_bucket` for every route that names none, and
    /// the offload threshold.
    pub fn with_large_payloads(
        mut self,
        default_bucket: Option<String>,
        threshold: Option<usize>,
    ) -> Self {
        self.large.default_bucket = default_bucket;
        self.large.threshold = threshold;
        self
    }

    /// The same routes with `topic`'s large payloads going to `bucket`.
    pub fn with_route_bucket(
        mut self,
        topic: impl Into<String>,
        bucket: impl Into<String>,
    ) -> Self {
        self.large.by_topic.insert(topic.into(), bucket.into());
        self
    }

    /// Where `topic`'s payloads too large for its destination go, if anywhere.
    pub fn offload(&self, topic: &str) -> Offload<'_> {
        self.large.check(topic)
    }

    /// The large-payload offload's configuration.
    pub fn large_payloads(&self) -> &LargePayloads {
        &self.large
    }

    /// Parses the `OUTBOX_ROUTES` JSON object and an optional default destination.
    pub fn parse(json: &str, default: Option<&str>) -> Result<Self, RouteError> {
        let specs: HashMap<String, RouteSpec> =
            serde_json::from_str(json).map_err(|e| RouteError::Json(e.to_string()))?;
        let mut by_topic = HashMap::with_capacity(specs.len());
        let mut large = LargePayloads::default();
        for (topic, spec) in specs {
            if topic.trim().is_empty() {
                return Err(RouteError::EmptyTopic);
            }
            let dest = match spec {
                RouteSpec::Url(url) => Destination::parse(&url, None)?,
                RouteSpec::Detailed {
                    destination,
                    max_message_bytes,
                    source,
                    large_payload_bucket,
                    raw_delivery,
                } => {
                    if let Some(bucket) = large_payload_bucket {
                        if let Some(reason) = bucket_name_problem(&bucket) {
                            return Err(RouteError::BadBucket { topic, reason });
                        }
                        large.by_topic.insert(topic.clone(), bucket);
                    }
                    Destination::parse_with(&destination, max_message_bytes, source, raw_delivery)?
                }
            };
            by_topic.insert(topic, dest);
        }
        let default = match default.map(str::trim) {
            Some(d) if !d.is_empty() => Some(Destination::parse(d, None)?),
            _ => None,
        };
        Ok(Routes {
            by_topic,
            default,
            large,
        })
    }

    /// The destination of a topic, if any.
    pub fn resolve(&self, topic: &str) -> Option<&Destination> {
        self.by_topic.get(topic).or(self.default.as_ref())
    }

    /// Every destination that can be routed to (for permission checks and docs).
    pub fn destinations(&self) -> impl Iterator<Item = &Destination> {
        self.by_topic.values().chain(self.default.iter())
    }

    /// Every destination with the limits read from the queues (see
    /// `Destination::with_queue_limits`).
    #[cfg(any(test, feature = "unstable-internals"))]
    pub fn with_queue_limits(self, limits: &QueueLimits) -> Self {
        Routes {
            by_topic: self
                .by_topic
                .into_iter()
                .map(|(topic, d)| (topic, d.with_queue_limits(limits)))
                .collect(),
            default: self.default.map(|d| d.with_queue_limits(limits)),
            large: self.large,
        }
    }
}

#[cfg(test)]
mod tests;
