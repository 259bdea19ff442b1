//! Parsing the routes: the `OUTBOX_ROUTES` JSON and each destination's address, with
//! the errors a bad configuration gets at start-up (each says what was wrong and
//! what a destination looks like).

use super::region;
use super::{DEFAULT_EVENT_SOURCE, Destination, Routes, SQS_MAX_MESSAGE_BYTES, SqsLimit};
use crate::large_payload::{LargePayloads, bucket_name_problem};
use serde::Deserialize;
use std::collections::HashMap;

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

impl Destination {
    /// Parses a destination: an SQS queue URL, an SNS topic ARN or an EventBridge
    /// event bus ARN.
    /// An SNS topic is taken to deliver without raw delivery (see [`super::envelope`]).
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

impl Routes {
    /// Parses the `OUTBOX_ROUTES` JSON object and an optional default destination.
    pub fn parse(json: &str, default: Option<&str>) -> Result<Self, RouteError> {
        let specs: HashMap<String, RouteSpec> =
            serde_json::from_str(json).map_err(|e| RouteError::Json(e.to_string()))?;
        let mut by_topic = HashMap::with_capacity_and_hasher(specs.len(), Default::default());
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
}
