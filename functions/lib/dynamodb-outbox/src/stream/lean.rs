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

mod image;

use self::image::{
    AWS_TRACE_HEADER, Attr, CREATED_AT, HOME_REGION, ITEM_TYPE, Image, MESSAGE_ID, PAYLOAD,
    PAYLOAD_SIZE, PK, RETRY_COUNT, SEQUENCE, SK, STATUS, SWEEP_DUE_AT, SWEEP_SHARD, TOPIC,
    TRACE_PARENT, TRACE_STATE, Text, VALIDATED_NUMBERS, VALIDATED_STRINGS,
};
use super::{Skip, classify_keyed, owned_work, skip_reason};
use aws_lambda_events::event::dynamodb::Event;
use dynamodb_outbox_core::KeyNames;
use dynamodb_outbox_core::publish::{Work, WorkItem};
use dynamodb_outbox_core::schema::number::integer;
use dynamodb_outbox_core::schema::{OutboxItem, SeenIndex};
use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, SeqAccess, Visitor};
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
