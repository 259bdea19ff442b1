//! A stream event read straight from its JSON bytes, borrowing from them: only the
//! fields the publisher uses (`eventName`, the sequence number, `Keys` and the image's
//! outbox attributes) are read, every other attribute is skipped unparsed.
//!
//! Why: parsing into the owned `aws_lambda_events` types builds a map of owned strings
//! for every attribute of every record, and decoding clones the image once more; most
//! of the handler's time went there and into malloc/free.
//!
//! The lean read is a fast path, never a second definition of the schema: it decides
//! only what it can decide as the owned path would — the same skip decision
//! ([`super::skip_reason`]), the same validation ([`OutboxItem::into_message`]) — and
//! hands every record it is not sure of (an attribute of an unexpected type, a number
//! that is not a plain integer, an item that does not decode) to the owned path
//! ([`super::classify_keyed`]) on the owned event, so poison and its reason come out
//! exactly as they always did.

use super::{Skip, classify_keyed, owned_work, skip_reason};
use aws_lambda_events::event::dynamodb::Event;
use dynamodb_outbox_core::KeyNames;
use dynamodb_outbox_core::publish::{Work, WorkItem};
use dynamodb_outbox_core::schema::number::integer;
use dynamodb_outbox_core::schema::{ItemKey, OutboxItem, SeenIndex};
use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::borrow::Cow;
use std::fmt;

/// The event, each record read lean and decided as soon as it is read.
#[derive(Deserialize)]
struct LeanEvent {
    #[serde(rename = "Records")]
    records: Decided,
}

/// A record's decision, or [`Unsure`] when the owned path is to decide it.
type Decision = Result<Result<WorkItem, Skip>, Unsure>;

/// The decisions of the records, in their order. No record is kept once decided:
/// a lean [`Record`] is over a kilobyte (two [`Image`]s), and a `Vec` of them, grown
/// as the batch was read, cost more in copies than the parse of the strings did.
struct Decided(Vec<Decision>);

/// What a batch's decisions are given room for before the first record is read
/// (the event source mapping's default batch size).
const USUAL_BATCH: usize = 100;

impl<'de> Deserialize<'de> for Decided {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Decided;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a list of stream records")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Decided, A::Error> {
                let mut decided = Vec::with_capacity(seq.size_hint().unwrap_or(USUAL_BATCH));
                while let Some(record) = seq.next_element::<Record<'de>>()? {
                    decided.push(lean(record));
                }
                Ok(Decided(decided))
            }
        }
        d.deserialize_seq(V)
    }
}

/// The record fields the publisher reads. The fields the owned type requires
/// (`awsRegion`, `eventID`, `SizeBytes`) are required here too, so a record the owned
/// parse would refuse is not published by this one.
#[derive(Deserialize)]
struct Record<'a> {
    #[serde(rename = "eventName", borrow)]
    event_name: Text<'a>,
    #[serde(rename = "eventID", borrow)]
    event_id: Text<'a>,
    #[serde(rename = "awsRegion")]
    _aws_region: IgnoredAny,
    #[serde(rename = "dynamodb", borrow)]
    change: Change<'a>,
}

#[derive(Deserialize)]
struct Change<'a> {
    #[serde(rename = "SequenceNumber", borrow, default)]
    sequence_number: Option<Text<'a>>,
    #[serde(rename = "SizeBytes")]
    _size_bytes: IgnoredAny,
    #[serde(rename = "Keys", borrow, default)]
    keys: Image<'a>,
    #[serde(rename = "NewImage", borrow, default)]
    new_image: Image<'a>,
}

/// A JSON string, borrowed unless it had escapes to undo.
struct Text<'a>(Cow<'a, str>);

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
enum Attr<'a> {
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
/// attribute is skipped. Each of [`OutboxItem`]'s attributes is listed, so that one
/// of an unexpected type is seen (and sent to the owned path, which names it).
#[derive(Default)]
struct Image<'a> {
    attrs: [Option<Attr<'a>>; NAMES.len()],
}

/// [`OutboxItem`]'s attributes, in the order of [`Image::attrs`].
const NAMES: [&str; 22] = [
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
fn attribute_index(name: &str) -> Option<usize> {
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
const PK: usize = 0;
const SK: usize = 1;
const ITEM_TYPE: usize = 2;
const TOPIC: usize = 3;
const PAYLOAD: usize = 4;
const STATUS: usize = 5;
const RETRY_COUNT: usize = 6;
const MESSAGE_ID: usize = 7;
const CREATED_AT: usize = 8;
const SEQUENCE: usize = 9;
const SWEEP_SHARD: usize = 10;
const SWEEP_DUE_AT: usize = 11;
const PAYLOAD_SIZE: usize = 16;
const TRACE_PARENT: usize = 18;
const TRACE_STATE: usize = 19;
const AWS_TRACE_HEADER: usize = 20;
const HOME_REGION: usize = 21;
/// Numbers the publisher does not use, read only to refuse what the owned path refuses
/// (`SentAt`, `ExpiresAt`, `FailedAt`).
const VALIDATED_NUMBERS: [usize; 3] = [12, 13, 14];
/// Strings likewise (`LastError`, `PayloadOn`).
const VALIDATED_STRINGS: [usize; 2] = [15, 17];

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
    fn string(&self, i: usize) -> Option<&str> {
        match &self.attrs[i] {
            Some(Attr::S(s)) => Some(s),
            _ => None,
        }
    }

    /// A string attribute as [`OutboxItem`] reads it: `Ok(None)` when absent, `Err`
    /// when of another type.
    fn owned_string(&mut self, i: usize) -> Result<Option<String>, Unsure> {
        match self.attrs[i].take() {
            None => Ok(None),
            Some(Attr::S(s)) => Ok(Some(s.into_owned())),
            Some(_) => Err(Unsure),
        }
    }

    /// A string attribute read leniently, as [`OutboxItem`] reads the trace's: one of
    /// another type is none.
    fn lenient_string(&mut self, i: usize) -> Option<String> {
        match self.attrs[i].take() {
            Some(Attr::S(s)) => Some(s.into_owned()),
            _ => None,
        }
    }

    /// A number attribute's text, when it is a plain integer (`-?[0-9]+` within
    /// `i64`): read alike by every path. Anything else is left to the owned path.
    fn integer_text(&self, i: usize) -> Result<Option<(&str, i64)>, Unsure> {
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

    fn key(&self) -> Option<ItemKey> {
        Some(ItemKey {
            pk: self.string(PK)?.to_owned(),
            sk: self.string(SK)?.to_owned(),
        })
    }
}

/// The lean read cannot decide a record as the owned path would: it asks that path.
struct Unsure;

/// The work of every record of an event given as JSON text, and how many records
/// were skipped; the same as [`classify_keyed`] on each record of the parsed
/// [`Event`]. An event that is not a stream event (or a record the owned type refuses)
/// is an error, as its parse would be.
///
/// One pass over the text reads every record lean. The owned [`Event`] is parsed
/// only when needed, once: for a record the lean read is unsure of, for an event it
/// refuses, and for a table with key names of its own (which the owned path
/// translates).
pub fn classify_json(
    json: impl AsRef<[u8]>,
    keys: &KeyNames,
) -> Result<(Vec<WorkItem>, usize), serde_json::Error> {
    // Validated as UTF-8 once, here, rather than string by string as it is parsed.
    let json = std::str::from_utf8(json.as_ref()).map_err(|e| {
        de::Error::custom(format!("the event is not UTF-8 text ({e}): Lambda sends JSON"))
    })?;
    // A table keyed otherwise is the owned path's (which translates the names); so is
    // an event the lean read refuses, for the owned parse to name what is wrong.
    let lean_event = match keys
        .is_default()
        .then(|| serde_json::from_str::<LeanEvent>(json))
    {
        Some(Ok(event)) => event,
        _ => {
            let event: Event = serde_json::from_str(json)?;
            return Ok(tally(event.records.iter().map(|r| classify_keyed(r, keys))));
        }
    };
    let mut owned: Option<Event> = None;
    let mut decided = Vec::with_capacity(lean_event.records.0.len());
    for (i, decision) in lean_event.records.0.into_iter().enumerate() {
        match decision {
            // The home is read here, where the deployment's regions are known.
            Ok(d) => decided.push(d.and_then(|work| owned_work(work, keys))),
            Err(Unsure) => {
                if owned.is_none() {
                    owned = Some(serde_json::from_str(json)?);
                }
                let record = owned
                    .as_ref()
                    .and_then(|e| e.records.get(i))
                    .ok_or_else(|| de::Error::custom("the event's records changed count"))?;
                decided.push(classify_keyed(record, keys));
            }
        }
    }
    Ok(tally(decided))
}

/// The work of decided records, and how many were skipped.
fn tally(decided: impl IntoIterator<Item = Result<WorkItem, Skip>>) -> (Vec<WorkItem>, usize) {
    let decided = decided.into_iter();
    let (mut work, mut skipped) = (Vec::with_capacity(decided.size_hint().0), 0usize);
    for d in decided {
        match d {
            Ok(item) => work.push(item),
            Err(_) => skipped += 1,
        }
    }
    (work, skipped)
}

/// One record decided from its lean read, for a table keyed `PK`/`SK`.
fn lean(record: Record<'_>) -> Result<Result<WorkItem, Skip>, Unsure> {
    let Change {
        sequence_number,
        keys,
        mut new_image,
        ..
    } = record.change;
    if let Some(skip) = skip_reason(
        &record.event_name.0,
        new_image.string(ITEM_TYPE),
        new_image.string(STATUS),
    ) {
        return Ok(Err(skip));
    }
    // What `OutboxItem::from_item` would refuse as malformed is the owned path's to name.
    for i in VALIDATED_NUMBERS {
        new_image.integer_text(i)?;
    }
    for i in VALIDATED_STRINGS {
        if matches!(new_image.attrs[i], Some(Attr::N(_) | Attr::Other)) {
            return Err(Unsure);
        }
    }
    let retry_count = new_image
        .integer_text(RETRY_COUNT)?
        .map(|(_, v)| u32::try_from(v.max(0)).unwrap_or(u32::MAX));
    let created_at = new_image.integer_text(CREATED_AT)?.map(|(_, v)| v);
    let sequence = new_image
        .integer_text(SEQUENCE)?
        .and_then(|(text, _)| integer(text))
        .and_then(|i| u64::try_from(i).ok());
    let payload_size = new_image
        .integer_text(PAYLOAD_SIZE)?
        .and_then(|(_, v)| u64::try_from(v).ok());
    let due = new_image.integer_text(SWEEP_DUE_AT)?.map(|(t, _)| t.to_owned());
    // The record's `Keys` stand in for a key the image lacks; built only then.
    let key = match (new_image.string(PK), new_image.string(SK)) {
        (Some(_), Some(_)) => None,
        _ => keys.key().or_else(|| new_image.key()),
    };
    let index = SeenIndex {
        shard: new_image.owned_string(SWEEP_SHARD)?,
        due,
    };
    let item = OutboxItem {
        pk: new_image.owned_string(PK)?,
        sk: new_image.owned_string(SK)?,
        topic: new_image.owned_string(TOPIC)?,
        payload: new_image.owned_string(PAYLOAD)?,
        message_id: new_image.owned_string(MESSAGE_ID)?,
        retry_count,
        created_at,
        sequence,
        payload_size,
        trace_parent: new_image.lenient_string(TRACE_PARENT),
        trace_state: new_image.lenient_string(TRACE_STATE),
        aws_trace_header: new_image.lenient_string(AWS_TRACE_HEADER),
        home_region: new_image.lenient_string(HOME_REGION),
        ..OutboxItem::default()
    };
    // An item that does not decode is poison: the owned path builds it, raw image and all.
    let msg = item.into_message(key.as_ref(), index).map_err(|_| Unsure)?;
    let id = match sequence_number {
        Some(Text(s)) => s.into_owned(),
        None => record.event_id.0.into_owned(),
    };
    Ok(Ok(WorkItem {
        id,
        work: Work::Publish(msg),
    }))
}

#[cfg(test)]
mod tests;
