//! Destinations and routing: which topic goes where.

use crate::large_payload::{LargePayloads, Offload};
pub use crate::policy::limit::SqsLimit;
use crate::policy::{QueueLimits, sqs_limit};
use std::collections::HashMap;
use std::fmt;

pub mod envelope;
mod parse;
pub mod region;

pub use parse::RouteError;

/// SQS's largest message (body plus attributes): 1 MiB, and the default limit of an
/// SQS destination whose own `MaximumMessageSize` is not known. A queue may set a
/// lower one: the functions read it on their first invocation ([`SqsLimit`]), or the route states it.
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
    /// the core's `policy::sqs_limit`. A queue not in `limits` keeps its limit.
    // Hidden, not API: for dynamodb-outbox's functions (`QueueLimits` is the engine's).
    #[doc(hidden)]
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
    /// Looked up once per message: hashed with foldhash, not SipHash.
    by_topic: HashMap<String, Destination, foldhash::fast::RandomState>,
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

    /// The same routes with `topic`'s large payloads going to `bucket`, whatever the
    /// default bucket.
    ///
    /// ```
    /// use dynamodb_outbox_core::{Destination, Routes};
    ///
    /// let queue = Destination::sqs("https://sqs.eu-west-1.amazonaws.com/123456789012/orders");
    /// let routes = Routes::new([("orders".to_owned(), queue.clone())], Some(queue))
    ///     .with_large_payloads(Some("shared-payloads".to_owned()), Some(200_000))
    ///     .with_route_bucket("orders", "orders-payloads");
    /// assert_eq!(routes.offload("orders").bucket, Some("orders-payloads"));
    /// assert_eq!(routes.offload("audit").bucket, Some("shared-payloads"));
    /// assert_eq!(routes.offload("orders").threshold, Some(200_000));
    /// ```
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
    // Hidden, not API: for dynamodb-outbox's functions (`QueueLimits` is the engine's).
    #[doc(hidden)]
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
