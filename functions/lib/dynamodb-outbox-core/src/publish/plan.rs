//! Planning a batch, without I/O: route every item, build its entry, and place it in
//! calls within each destination's limits while keeping each aggregate's order; and
//! build the dead-letter copies of poison.

use super::{Poison, Work, WorkItem, poison_of};
use crate::config::PublisherConfig;
use crate::large_payload::{self, PayloadPointer, Placement};
use crate::message::{
    ATTR_AGGREGATE, ATTR_ERROR, ATTR_MESSAGE_ID, ATTR_PAYLOAD_ON, ATTR_SK, ATTR_TOPIC,
    PAYLOAD_ON_OUTBOX_ITEM,
};
use crate::message::{AttrValue, OutboundMessage, fifo_id};
use crate::policy::CopyForm;
use crate::policy::order_key;
use crate::route::{Destination, SQS_MAX_BATCH_ENTRIES};
use std::collections::{BTreeMap, HashMap};

/// A message placed in a call.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Position of its work item in the batch.
    pub index: usize,
    /// Its aggregate (`PK`).
    pub aggregate: String,
    /// What the destination receives.
    pub message: OutboundMessage,
    /// Where its payload must be written before it is sent, when the message
    /// carries a large-payload offload pointer instead (see [`crate::large_payload`]).
    pub offload: Option<PayloadPointer>,
}

/// One destination call: at most 10 entries within the destination's byte limit.
#[derive(Debug, Clone, Default)]
pub struct Call {
    /// The entries, in batch order.
    pub entries: Vec<Entry>,
    /// Their size as the destination counts it.
    pub bytes: usize,
}

/// The calls of one round, by destination index. Rounds run one after another; the
/// calls in a round run concurrently.
pub type Round = BTreeMap<usize, Call>;

/// The plan for a batch: destinations, rounds of calls, and the poison found while
/// routing.
#[derive(Debug, Default)]
pub struct Plan {
    /// Every destination the plan sends to; rounds refer to them by index.
    pub destinations: Vec<Destination>,
    /// The calls, round by round.
    pub rounds: Vec<Round>,
    /// Items found to be poison while routing (no route, too large), by position.
    pub poison: Vec<(usize, Poison)>,
}

impl Plan {
    /// The index of `dest` in [`Plan::destinations`], added when new.
    fn destination_index(&mut self, dest: &Destination) -> usize {
        match self.destinations.iter().position(|d| d == dest) {
            Some(d) => d,
            None => {
                self.destinations.push(dest.clone());
                self.destinations.len() - 1
            }
        }
    }

    /// Number of destination calls the plan makes.
    pub fn call_count(&self) -> usize {
        self.rounds.iter().map(BTreeMap::len).sum()
    }

    /// Number of items found to be poison while routing.
    pub fn poison_count(&self) -> usize {
        self.poison.len()
    }

    /// Every entry of every call, as the adapters would send it.
    pub fn messages(&self) -> impl Iterator<Item = &OutboundMessage> {
        self.rounds
            .iter()
            .flat_map(|r| r.values())
            .flat_map(|c| c.entries.iter().map(|e| &e.message))
    }
}

/// Routes every item, builds its entry, and places it in the earliest call that
/// keeps its aggregate's order: never before an earlier message of the same
/// aggregate; in a later round when the earlier one went to another destination or
/// to a FIFO queue (where one call may partly fail and let a later message overtake).
/// "Earlier" is the write order the sweeper uses ([`write_order`]), not stream order.
pub fn plan(config: &PublisherConfig, items: &[WorkItem]) -> Plan {
    let mut plan = Plan::default();
    // The aggregates of a batch are many, its destinations few: a seeded fast hash
    // for the one, a scan of `plan.destinations` for the other.
    let mut last_round: HashMap<&str, (usize, usize), foldhash::fast::RandomState> =
        HashMap::default();
    for index in write_order(items) {
        let item = &items[index];
        let msg = match &item.work {
            Work::Poison(p) => {
                plan.poison.push((index, p.clone()));
                continue;
            }
            Work::Publish(msg) => msg,
        };
        let Routed {
            dest,
            outbound,
            size,
            offload,
        } = match route(config, msg) {
            Ok(routed) => routed,
            Err(reason) => {
                plan.poison.push((index, poison_of(msg, reason)));
                continue;
            }
        };
        let d = plan.destination_index(dest);
        let earliest = match last_round.get(msg.aggregate()) {
            None => 0,
            Some(&(round, prev_d)) if prev_d == d && !dest.is_fifo() => round,
            Some(&(round, _)) => round + 1,
        };
        let entry = Entry {
            index,
            aggregate: msg.key.pk.clone(),
            message: outbound,
            offload,
        };
        let r = place(&mut plan.rounds, earliest, d, dest, entry, size);
        last_round.insert(msg.aggregate(), (r, d));
    }
    plan
}

/// The positions of `items` in the order they are planned: each aggregate's messages
/// take the places its records had in the batch, earliest written first
/// ([`order_key`]: `CreatedAt`, then `MessageId`, as the sweeper orders them). AWS
/// delivers one transaction's records in any order, so stream order is no order
/// between them (docs/protocol.md). Poison keeps its place.
pub fn write_order(items: &[WorkItem]) -> Vec<usize> {
    let mut places: HashMap<&str, Vec<usize>, foldhash::fast::RandomState> = HashMap::default();
    for (index, item) in items.iter().enumerate() {
        if let Work::Publish(msg) = &item.work {
            places.entry(msg.aggregate()).or_default().push(index);
        }
    }
    let mut order: Vec<usize> = (0..items.len()).collect();
    for slots in places.values() {
        let mut by_write = slots.clone();
        by_write.sort_by_cached_key(|&i| match &items[i].work {
            Work::Publish(m) => Some(order_key(&m.key, m.created_at, &m.message_id)),
            Work::Poison(_) => None,
        });
        for (&slot, &index) in slots.iter().zip(&by_write) {
            order[slot] = index;
        }
    }
    order
}

/// A message routed: where it goes, what it sends, its size there, and the payload's
/// large-payload offload pointer when the payload goes to S3 first.
struct Routed<'c> {
    dest: &'c Destination,
    outbound: OutboundMessage,
    size: usize,
    offload: Option<PayloadPointer>,
}

/// Routes a message and decides where its payload goes ([`large_payload::place`]); or says
/// why it cannot be sent.
fn route<'c>(
    config: &'c PublisherConfig,
    msg: &crate::schema::OutboxMessage,
) -> Result<Routed<'c>, String> {
    let Some(dest) = config.routes.resolve(&msg.topic) else {
        return Err(format!(
            "no route for topic `{}`: add it to OUTBOX_ROUTES or set OUTBOX_DEFAULT_DESTINATION, then redrive the message",
            msg.topic
        ));
    };
    let max = dest.max_message_bytes();
    let mut outbound = OutboundMessage::for_destination(msg, dest);
    let mut size = dest.message_size(&outbound);
    // A trace never costs a message its delivery: what its attributes push over the
    // limit goes without them (the X-Ray header, a system attribute, stays).
    if size > max && msg.trace.is_some() {
        outbound = outbound.without_trace_attributes();
        size = dest.message_size(&outbound);
    }
    let is_pointer = PayloadPointer::decode(&msg.payload).is_some();
    let check = config.routes.offload(&msg.topic);
    match large_payload::place(
        msg.payload.len(),
        size,
        max,
        is_pointer,
        check,
        &msg.message_id,
    ) {
        Placement::Inline => Ok(Routed {
            dest,
            outbound,
            size,
            offload: None,
        }),
        // A pointer over the limit cannot shrink by offloading: say so, not how to enable it.
        Placement::TooLarge => Err(too_large(size, dest, !is_pointer && check.bucket.is_none())),
        Placement::Offload(pointer) => {
            let outbound = outbound.offloaded(&pointer, msg.payload.len());
            let size = dest.message_size(&outbound);
            if size > max {
                return Err(too_large(size, dest, false));
            }
            Ok(Routed {
                dest,
                outbound,
                size,
                offload: Some(pointer),
            })
        }
    }
}

/// Why a message of `size` bytes is not sent to `dest`, and what to do: without a
/// bucket, how to enable the large-payload offload.
fn too_large(size: usize, dest: &Destination, no_bucket: bool) -> String {
    let advice = if no_bucket {
        "shrink the payload, or enable the large-payload offload (off by default) — large_payloads = true in the Terraform module, largePayloads: true in the CDK construct, or OUTBOX_LARGE_PAYLOAD_BUCKET (or large_payload_bucket on the route in OUTBOX_ROUTES) set to a bucket the function may s3:PutObject to under outbox/, so that large payloads go to S3 and the message carries a pointer — then redrive the message"
    } else {
        "even its large-payload offload pointer does not fit: raise the destination's limit"
    };
    format!(
        "message is {size} bytes (payload plus attributes) but {dest} accepts at most {} bytes ({}): {advice}",
        dest.max_message_bytes(),
        dest.limit_source()
    )
}

/// Puts `entry` in the first call to destination `d` from round `earliest` on that
/// has room, and returns that round.
fn place(
    rounds: &mut Vec<Round>,
    earliest: usize,
    d: usize,
    dest: &Destination,
    entry: Entry,
    size: usize,
) -> usize {
    let mut r = earliest;
    loop {
        if r == rounds.len() {
            rounds.push(Round::new());
        }
        let call = rounds[r].entry(d).or_default();
        if call.entries.len() < SQS_MAX_BATCH_ENTRIES && call.bytes + size <= dest.max_batch_bytes()
        {
            call.bytes += size;
            call.entries.push(entry);
            return r;
        }
        r += 1;
    }
}

/// The dead-letter copy of a poison item: its body, the reason and where it came from.
pub fn dead_letter_message(p: &Poison, dlq: &Destination) -> OutboundMessage {
    let mut attributes = Vec::new();
    if let Some(id) = &p.message_id {
        attributes.push((ATTR_MESSAGE_ID, AttrValue::String(id.clone())));
    }
    if let Some(topic) = &p.topic {
        attributes.push((ATTR_TOPIC, AttrValue::String(topic.clone())));
    }
    if let Some(key) = &p.key {
        attributes.push((ATTR_AGGREGATE, AttrValue::String(key.pk.clone())));
        attributes.push((ATTR_SK, AttrValue::String(key.sk.clone())));
    }
    // Attribute values are limited only by the message size; keep the reason short.
    let reason: String = p.reason.chars().take(1000).collect();
    attributes.push((ATTR_ERROR, AttrValue::String(reason)));
    let fifo = dlq.is_fifo();
    let group = p
        .key
        .as_ref()
        .map(|k| k.pk.as_str())
        .unwrap_or("outbox-poison");
    let dedup = p.message_id.as_deref().unwrap_or(&p.body);
    OutboundMessage {
        body: if p.body.is_empty() {
            "(empty payload)".to_owned()
        } else {
            p.body.clone()
        },
        attributes,
        group_id: fifo.then(|| fifo_id(group)),
        dedup_id: fifo.then(|| fifo_id(dedup)),
        trace_header: None,
    }
    .traced(p.trace.as_ref())
}

/// Poison to mark `FAILED`: its position in the batch, itself (with the reason to
/// record), and whether the dead-letter queue holds its payload (its copy, or a
/// pointer to it).
pub type ToFail = (usize, Poison, bool);

/// The dead-letter copy of poison in `form` (see [`crate::policy::copy_forms`]): the
/// copy itself, the copy pointing to its body in the claim-check bucket, or a record
/// without the body.
pub fn dead_letter_copy(p: &Poison, dlq: &Destination, form: &CopyForm) -> OutboundMessage {
    let copy = dead_letter_message(p, dlq);
    match form {
        CopyForm::Whole => copy,
        CopyForm::ClaimCheck(pointer) => copy.offloaded(pointer, p.body.len()),
        CopyForm::Record => {
            // Short, so that the record fits the smallest queue SQS allows (1 KiB): no
            // trace attributes either (its X-Ray header, not counted, stays).
            let copy = copy.without_trace_attributes();
            let mut attributes: Vec<_> = copy
                .attributes
                .into_iter()
                .filter(|(name, _)| *name != ATTR_ERROR)
                .collect();
            let reason: String = p.reason.chars().take(RECORD_REASON_CHARS).collect();
            attributes.push((ATTR_ERROR, AttrValue::String(reason)));
            attributes.push((
                ATTR_PAYLOAD_ON,
                AttrValue::String(PAYLOAD_ON_OUTBOX_ITEM.to_owned()),
            ));
            let body = serde_json::json!({
                "payload_omitted": format!(
                    "the payload ({} bytes) is too large for this queue and is kept on the outbox item named by the {ATTR_AGGREGATE} and {ATTR_SK} attributes",
                    p.body.len()
                ),
            });
            OutboundMessage {
                body: body.to_string(),
                attributes,
                ..copy
            }
        }
    }
}

/// The longest reason a dead-letter record carries.
const RECORD_REASON_CHARS: usize = 300;

/// Groups items into chunks within `dest`'s batch limits (10 entries, its byte limit).
pub fn chunk_by_limits<'a, T>(
    dest: &Destination,
    items: &'a [T],
    build: impl Fn(&T) -> OutboundMessage,
) -> Vec<Vec<(&'a T, OutboundMessage)>> {
    let mut chunks: Vec<Vec<(&T, OutboundMessage)>> = Vec::new();
    let mut bytes = 0;
    for item in items {
        let m = build(item);
        let size = dest.message_size(&m);
        let full = chunks.last().is_none_or(|c| {
            c.len() >= SQS_MAX_BATCH_ENTRIES || bytes + size > dest.max_batch_bytes()
        });
        if full {
            chunks.push(Vec::new());
            bytes = 0;
        }
        bytes += size;
        if let Some(c) = chunks.last_mut() {
            c.push((item, m));
        }
    }
    chunks
}
