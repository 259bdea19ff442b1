//! The attributes the lean read takes from an item image (or from `Keys`): the
//! outbox attributes by name, each as a borrowed string or number, every other
//! attribute skipped unparsed.

use super::Unsure;
use dynamodb_outbox_core::schema::ItemKey;
use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use std::borrow::Cow;
use std::fmt;

/// A JSON string, borrowed unless it had escapes to undo.
pub(super) struct Text<'a>(pub(super) Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

/// One attribute value the publisher reads.
pub(super) enum Attr<'a> {
    S(Cow<'a, str>),
    N(Cow<'a, str>),
    /// Any other type, or not one type: the owned path decides what it means.
    Other,
}

impl<'de: 'a, 'a> Deserialize<'de> for Attr<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Attr<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a DynamoDB attribute value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Attr<'de>, A::Error> {
                let first = match map.next_key::<Text<'de>>()? {
                    Some(Text(k)) if k == "S" => Attr::S(map.next_value::<Text<'de>>()?.0),
                    Some(Text(k)) if k == "N" => Attr::N(map.next_value::<Text<'de>>()?.0),
                    Some(_) => {
                        map.next_value::<IgnoredAny>()?;
                        Attr::Other
                    }
                    None => Attr::Other,
                };
                let mut extra = false;
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {
                    extra = true;
                }
                Ok(if extra { Attr::Other } else { first })
            }
        }
        d.deserialize_map(V)
    }
}

/// The outbox attributes of an item image (or of `Keys`), by name; every other
/// attribute is skipped. Each of [`OutboxItem`](dynamodb_outbox_core::schema::OutboxItem)'s attributes is listed, so that one
/// of an unexpected type is seen (and sent to the owned path, which names it).
#[derive(Default)]
pub(super) struct Image<'a> {
    pub(super) attrs: [Option<Attr<'a>>; NAMES.len()],
}

/// [`OutboxItem`](dynamodb_outbox_core::schema::OutboxItem)'s attributes, in the order of [`Image::attrs`].
pub(super) const NAMES: [&str; 22] = [
    "PK",
    "SK",
    "ItemType",
    "Topic",
    "Payload",
    "Status",
    "RetryCount",
    "MessageId",
    "CreatedAt",
    "Sequence",
    "SweepShard",
    "SweepDueAt",
    "SentAt",
    "ExpiresAt",
    "FailedAt",
    "LastError",
    "PayloadSize",
    "PayloadOn",
    "TraceParent",
    "TraceState",
    "AwsTraceHeader",
    "HomeRegion",
];
/// The index in [`NAMES`] of attribute `name` (a `match`: the compiler sorts the
/// comparisons by length, where a scan of [`NAMES`] compared each name in turn).
pub(super) fn attribute_index(name: &str) -> Option<usize> {
    Some(match name {
        "PK" => PK,
        "SK" => SK,
        "ItemType" => ITEM_TYPE,
        "Topic" => TOPIC,
        "Payload" => PAYLOAD,
        "Status" => STATUS,
        "RetryCount" => RETRY_COUNT,
        "MessageId" => MESSAGE_ID,
        "CreatedAt" => CREATED_AT,
        "Sequence" => SEQUENCE,
        "SweepShard" => SWEEP_SHARD,
        "SweepDueAt" => SWEEP_DUE_AT,
        "SentAt" => 12,
        "ExpiresAt" => 13,
        "FailedAt" => 14,
        "LastError" => 15,
        "PayloadSize" => PAYLOAD_SIZE,
        "PayloadOn" => 17,
        "TraceParent" => TRACE_PARENT,
        "TraceState" => TRACE_STATE,
        "AwsTraceHeader" => AWS_TRACE_HEADER,
        "HomeRegion" => HOME_REGION,
        _ => return None,
    })
}
pub(super) const PK: usize = 0;
pub(super) const SK: usize = 1;
pub(super) const ITEM_TYPE: usize = 2;
pub(super) const TOPIC: usize = 3;
pub(super) const PAYLOAD: usize = 4;
pub(super) const STATUS: usize = 5;
pub(super) const RETRY_COUNT: usize = 6;
pub(super) const MESSAGE_ID: usize = 7;
pub(super) const CREATED_AT: usize = 8;
pub(super) const SEQUENCE: usize = 9;
pub(super) const SWEEP_SHARD: usize = 10;
pub(super) const SWEEP_DUE_AT: usize = 11;
pub(super) const PAYLOAD_SIZE: usize = 16;
pub(super) const TRACE_PARENT: usize = 18;
pub(super) const TRACE_STATE: usize = 19;
pub(super) const AWS_TRACE_HEADER: usize = 20;
pub(super) const HOME_REGION: usize = 21;
/// Numbers the publisher does not use, read only to refuse what the owned path refuses
/// (`SentAt`, `ExpiresAt`, `FailedAt`).
pub(super) const VALIDATED_NUMBERS: [usize; 3] = [12, 13, 14];
/// Strings likewise (`LastError`, `PayloadOn`).
pub(super) const VALIDATED_STRINGS: [usize; 2] = [15, 17];

impl<'de: 'a, 'a> Deserialize<'de> for Image<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Image<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a DynamoDB item")
            }
            // `null` is an empty image, as for the owned type.
            fn visit_unit<E: de::Error>(self) -> Result<Image<'de>, E> {
                Ok(Image::default())
            }
            fn visit_none<E: de::Error>(self) -> Result<Image<'de>, E> {
                Ok(Image::default())
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Image<'de>, D::Error> {
                d.deserialize_map(V)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Image<'de>, A::Error> {
                let mut image = Image::default();
                while let Some(Text(name)) = map.next_key::<Text<'de>>()? {
                    match attribute_index(&name) {
                        Some(i) => image.attrs[i] = Some(map.next_value()?),
                        None => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(image)
            }
        }
        d.deserialize_option(V)
    }
}

impl<'a> Image<'a> {
    pub(super) fn string(&self, i: usize) -> Option<&str> {
        match &self.attrs[i] {
            Some(Attr::S(s)) => Some(s),
            _ => None,
        }
    }

    /// A string attribute as [`OutboxItem`](dynamodb_outbox_core::schema::OutboxItem) reads it: `Ok(None)` when absent, `Err`
    /// when of another type.
    pub(super) fn owned_string(&mut self, i: usize) -> Result<Option<String>, Unsure> {
        match self.attrs[i].take() {
            None => Ok(None),
            Some(Attr::S(s)) => Ok(Some(s.into_owned())),
            Some(_) => Err(Unsure),
        }
    }

    /// A string attribute read leniently, as [`OutboxItem`](dynamodb_outbox_core::schema::OutboxItem) reads the trace's: one of
    /// another type is none.
    pub(super) fn lenient_string(&mut self, i: usize) -> Option<String> {
        match self.attrs[i].take() {
            Some(Attr::S(s)) => Some(s.into_owned()),
            _ => None,
        }
    }

    /// A number attribute's text, when it is a plain integer (`-?[0-9]+` within
    /// `i64`): read alike by every path. Anything else is left to the owned path.
    pub(super) fn integer_text(&self, i: usize) -> Result<Option<(&str, i64)>, Unsure> {
        match &self.attrs[i] {
            None => Ok(None),
            Some(Attr::N(n)) => {
                let digits = n.strip_prefix('-').unwrap_or(n);
                if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(Unsure);
                }
                let value = n.parse::<i64>().map_err(|_| Unsure)?;
                Ok(Some((n, value)))
            }
            Some(_) => Err(Unsure),
        }
    }

    pub(super) fn key(&self) -> Option<ItemKey> {
        Some(ItemKey {
            pk: self.string(PK)?.to_owned(),
            sk: self.string(SK)?.to_owned(),
        })
    }
}

