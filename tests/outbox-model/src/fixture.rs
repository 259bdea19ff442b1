//! The model's messages, made by the real code: each outbox item becomes a DynamoDB
//! stream record in Lambda's event format, which `dynamodb_outbox::stream::classify` turns into
//! the publish path's work (or skips, as it skips the business item); a claim returns
//! what `dynamodb_outbox_core::schema::decode` reads from the same image; and the destination
//! receives what `plan` builds for it.

use crate::params::{Home, Kind, Mutation, Params, Producer};
use aws_lambda_events::event::dynamodb::EventRecord;
use dynamodb_outbox_core::home::HomeSeen;
use dynamodb_outbox_core::message::AttrValue;
use dynamodb_outbox_core::policy::{Member, Sibling};
use dynamodb_outbox_core::publish::{Work, WorkItem, plan};
use dynamodb_outbox_core::schema::{self, ItemKey, OutboxMessage, Undecodable};
use dynamodb_outbox_core::{Destination, HomeRegions, KeyNames, PublisherConfig, Routes};

/// One abstract tick of time, in milliseconds: the unit of every due time, lease,
/// visibility timeout, window and TTL in the model.
pub const TICK_MS: i64 = 60_000;

/// The routed topic.
pub const TOPIC: &str = "orders";

/// The single-region deployment's region (Lambda sets `AWS_REGION`, so the functions'
/// `HomeRegions` is `in_region(REGION)`).
pub const REGION: &str = "us-east-1";

/// What the deployment's functions know of regions (`KeyNames::regions`).
pub fn regions() -> HomeRegions {
    HomeRegions::in_region(REGION)
}

/// The `HomeRegion` attribute of an image in DynamoDB JSON, if any.
fn home_attribute(home: Home) -> Option<serde_json::Value> {
    match home {
        Home::Absent => None,
        Home::Region => Some(serde_json::json!({ "S": REGION })),
        Home::Null => Some(serde_json::json!({ "NULL": true })),
        Home::Empty => Some(serde_json::json!({ "S": "" })),
        Home::Padded => Some(serde_json::json!({ "S": format!(" {REGION} ") })),
    }
}

/// One outbox item, as the real code sees it.
#[derive(Debug, Clone)]
pub struct Msg {
    /// Its transaction.
    pub txn: u8,
    /// Its aggregate.
    pub aggregate: u8,
    /// Its kind.
    pub kind: Kind,
    /// Its key.
    pub key: ItemKey,
    /// What `classify` made of its INSERT record.
    pub work: Work,
    /// What a claim decodes from the stored item.
    pub decoded: Result<OutboxMessage, Undecodable>,
    /// Whether the producer wrote the sweeper index keys (at commit).
    pub indexed: bool,
    /// Whether the library's producer wrote it (`MessageId`, `CreatedAt`, a UUIDv7
    /// sort key, `Follows`), with the index keys or without.
    pub library: bool,
    /// The outbox message id (written or derived).
    pub id: String,
    /// The message attributes the destination receives.
    pub attributes: Vec<(&'static str, AttrValue)>,
    /// What the order fence sees of it in a batch (none for poison).
    pub member: Option<Member>,
    /// Its `HomeRegion`, as written.
    pub home: Home,
    /// The stream shard lane its record goes to: the aggregate's shard, and under a
    /// parallelization factor above 1 one of its concurrent batches (`Params::parallelization`;
    /// a model shard is one lane: `aggregate × factor + lane`).
    pub lane: u8,
    /// Whether the publisher's `FilterCriteria` passes its `INSERT` record.
    pub streamed: bool,
}

impl Msg {
    /// What the order fence's read returns for it while it is `PENDING`: from the
    /// index, its key and due time; from its partition, its place too.
    pub fn as_sibling(&self, due_tick: Option<u8>, partition: bool) -> Option<Sibling> {
        let due = due_tick.map(|t| i64::from(t) * TICK_MS);
        if !partition {
            return due.map(|d| Sibling::indexed(self.key.clone(), d));
        }
        Some(match &self.decoded {
            Ok(m) => Sibling::read(
                self.key.clone(),
                due,
                (m.created_at > 0).then_some(m.created_at),
                Some(&m.message_id),
            ),
            Err(_) => Sibling::read(self.key.clone(), due, None, None),
        })
    }
}

/// Everything fixed about a model instance.
#[derive(Debug, Clone)]
pub struct Fixture {
    /// Every outbox item, in creation order.
    pub msgs: Vec<Msg>,
    /// Routing and dead-letter queue, as the functions are configured.
    pub config: PublisherConfig,
    /// The destination of `orders`.
    pub dest: Destination,
    /// Business items of the transactions that `classify` keeps (must be none).
    pub business_records_kept: usize,
}

fn record(key: &ItemKey, image: serde_json::Value, seq: usize) -> Option<EventRecord> {
    let value = serde_json::json!({
        "eventID": seq.to_string(), "eventName": "INSERT", "eventSource": "aws:dynamodb",
        "eventVersion": "1.1", "awsRegion": "eu-west-1",
        "eventSourceARN": "arn:aws:dynamodb:eu-west-1:123456789012:table/t/stream/x",
        "dynamodb": {
            "ApproximateCreationDateTime": 1_732_870_800, "SizeBytes": 400,
            "SequenceNumber": format!("{:021}", seq + 1), "StreamViewType": "NEW_IMAGE",
            "Keys": {"PK": {"S": key.pk}, "SK": {"S": key.sk}}, "NewImage": image
        }
    });
    serde_json::from_value(value).ok()
}

/// The publisher's `FilterCriteria` in a single-region deployment (the region's clause,
/// and the default home's for items without `HomeRegion`, as
/// `infra/terraform/modules/outbox/config.tf` renders them: `HomeRegion.S` equal to
/// the region, or `HomeRegion.S` absent — `exists` is tested on the leaf, so a `NULL`
/// passes). Lambda's filter is AWS's and the stacks' text, not a function to call: the
/// model evaluates the patterns itself.
pub fn stream_filter_passes(home: Home) -> bool {
    match home {
        Home::Absent | Home::Region | Home::Null => true,
        Home::Empty | Home::Padded => false,
    }
}

/// What the real `HomeSeen::of` reads of an item whose `HomeRegion` is `home`.
pub fn home_seen(home: Home) -> HomeSeen {
    let key = ItemKey {
        pk: "AGG#0".into(),
        sk: "MESSAGE#E#000".into(),
    };
    let mut image = serde_json::json!({"PK": {"S": key.pk}, "SK": {"S": key.sk}});
    if let (Some(o), Some(value)) = (image.as_object_mut(), home_attribute(home)) {
        o.insert("HomeRegion".into(), value);
    }
    record(&key, image, 0).map_or(HomeSeen::Absent, |r| HomeSeen::of(&r.change.new_image))
}

impl Fixture {
    /// The messages of `params`.
    pub fn new(params: &Params) -> Self {
        let url = if params.fifo {
            "https://sqs.eu-west-1.amazonaws.com/123456789012/orders.fifo"
        } else {
            "https://sqs.eu-west-1.amazonaws.com/123456789012/orders"
        };
        let dest = Destination::sqs(url);
        let config = PublisherConfig {
            table_name: "outbox".into(),
            routes: Routes::new([(TOPIC.to_owned(), dest.clone())], None),
            dead_letter: Destination::sqs("https://sqs.eu-west-1.amazonaws.com/123456789012/dlq"),
            ttl_days: 7,
            key_names: Default::default(),
        };
        let mut msgs = Vec::new();
        let mut business_records_kept = 0;
        let mut seq = 0usize;
        for (t, txn) in params.txns.iter().enumerate() {
            let pk = format!("AGG#{}", txn.aggregate);
            let business = ItemKey {
                pk: pk.clone(),
                sk: format!("ORDER#{t}"),
            };
            let image = serde_json::json!({
                "PK": {"S": business.pk}, "SK": {"S": business.sk}, "ItemType": {"S": "ORDER"}
            });
            if record(&business, image, seq)
                .is_some_and(|r| dynamodb_outbox::stream::classify(&r).is_ok())
            {
                business_records_kept += 1;
            }
            seq += 1;
            // The library names on each message the one it wrote before it of the
            // aggregate in the same transaction (`Follows`).
            let mut last_sk: Option<String> = None;
            // A sequenced transaction commits the aggregate's next version: its
            // transactions commit in order (`txn_ready`), numbered 1, 2, …
            let sequence = params.txns[..=t]
                .iter()
                .filter(|e| e.aggregate == txn.aggregate)
                .count();
            let sequence = (txn.sequenced && txn.by_library())
                .then(|| u64::try_from(sequence).unwrap_or(u64::MAX));
            for (position, kind) in txn.messages.iter().enumerate() {
                let n = msgs.len();
                let library = txn.by_library();
                // `ProducerIndexesAtCommit`: the default producer as it was before
                // issue 38, writing the index keys at commit.
                let indexed = txn.producer == Producer::LibraryIndexedAtCommit
                    || (txn.producer == Producer::Library
                        && params.has(Mutation::ProducerIndexesAtCommit));
                // The library's ids are UUIDv7 made at the write (`CreatedAt`, in
                // order); a minimal producer's sort key ends with its own counter.
                let uuid = uuid::Builder::from_unix_timestamp_millis(
                    u64::try_from(t + 1).unwrap_or(0),
                    &[u8::try_from(n).unwrap_or(u8::MAX); 10],
                )
                .into_uuid()
                .to_string();
                let position = u8::try_from(position).unwrap_or(u8::MAX);
                let key = ItemKey {
                    pk: pk.clone(),
                    sk: match sequence {
                        Some(n) => schema::sequenced_sort_key(n, position, "E", &uuid),
                        None if library => format!("MESSAGE#E#{uuid}"),
                        None => format!("MESSAGE#E#{n:03}"),
                    },
                };
                let follows = if library {
                    last_sk.replace(key.sk.clone())
                } else {
                    None
                };
                let topic = if *kind == Kind::Unroutable {
                    "nowhere"
                } else {
                    TOPIC
                };
                let mut image = serde_json::json!({
                    "PK": {"S": key.pk}, "SK": {"S": key.sk},
                    "ItemType": {"S": schema::PENDING_MESSAGE}, "Status": {"S": "PENDING"},
                    "Topic": {"S": topic}, "Payload": {"S": format!("{{\"order\":{n}}}")},
                    "RetryCount": {"N": "0"}
                });
                if let Some(o) = image.as_object_mut() {
                    if *kind == Kind::Undecodable {
                        o.remove("Topic");
                    }
                    if let Some(home) = home_attribute(txn.home) {
                        o.insert("HomeRegion".into(), home);
                    }
                    if let Some(before) = follows.filter(|_| !params.has(Mutation::NoFollows)) {
                        o.insert("Follows".into(), serde_json::json!({ "S": before }));
                    }
                    if let Some(n) = sequence {
                        o.insert(
                            schema::SEQUENCE.into(),
                            serde_json::json!({ "N": n.to_string() }),
                        );
                    }
                    if library {
                        o.insert("MessageId".into(), serde_json::json!({ "S": uuid }));
                        o.insert(
                            "CreatedAt".into(),
                            serde_json::json!({"N": (t + 1).to_string()}),
                        );
                    }
                    if indexed {
                        o.insert(
                            "SweepShard".into(),
                            serde_json::json!({"S": schema::SweepShards::default().shard_of(&key.pk)}),
                        );
                        o.insert("SweepDueAt".into(), serde_json::json!({"N": "0"}));
                    }
                }
                let Some(rec) = record(&key, image, seq) else {
                    continue;
                };
                seq += 1;
                let keys = KeyNames::default().regions(regions());
                let Ok(WorkItem { work, .. }) =
                    dynamodb_outbox::stream::classify_keyed(&rec, &keys)
                else {
                    continue;
                };
                let decoded = schema::decode(&rec.change.new_image, Some(&key));
                let id = match &work {
                    Work::Publish(m) => m.message_id.clone(),
                    Work::Poison(p) => p.message_id.clone().unwrap_or_default(),
                };
                let attributes = match &work {
                    Work::Publish(m) => {
                        dynamodb_outbox_core::message::OutboundMessage::for_destination(m, &dest)
                            .attributes
                    }
                    Work::Poison(_) => Vec::new(),
                };
                let member = match &work {
                    Work::Publish(m) => {
                        let mut member =
                            Member::of(m, dest.is_fifo(), &schema::SweepShards::default());
                        if library && params.has(Mutation::FenceReadsIndexOnly) {
                            member.library = true;
                        }
                        Some(member)
                    }
                    Work::Poison(_) => None,
                };
                let factor = params.parallelization.max(1);
                let nth = msgs
                    .iter()
                    .filter(|m: &&Msg| m.aggregate == txn.aggregate)
                    .count();
                let lane = txn.aggregate * factor + u8::try_from(nth).unwrap_or(0) % factor;
                msgs.push(Msg {
                    txn: u8::try_from(t).unwrap_or(u8::MAX),
                    home: txn.home,
                    lane,
                    streamed: stream_filter_passes(txn.home),
                    aggregate: txn.aggregate,
                    kind: *kind,
                    key,
                    work,
                    decoded,
                    indexed,
                    library,
                    id,
                    attributes,
                    member,
                });
            }
        }
        Fixture {
            msgs,
            config,
            dest,
            business_records_kept,
        }
    }

    /// The message whose key is `key`.
    pub fn by_key(&self, key: &ItemKey) -> Option<u8> {
        self.msgs
            .iter()
            .position(|m| &m.key == key)
            .and_then(|i| u8::try_from(i).ok())
    }

    /// The rounds `plan` makes of these work items (positions per round) and the
    /// positions it finds poison while routing.
    pub fn plan(&self, items: &[WorkItem]) -> (Vec<Vec<u8>>, Vec<u8>) {
        let p = plan(&self.config, items);
        let pos = |i: usize| u8::try_from(i).unwrap_or(u8::MAX);
        let rounds = p
            .rounds
            .iter()
            .map(|round| {
                round
                    .values()
                    .flat_map(|call| call.entries.iter().map(|e| pos(e.index)))
                    .collect()
            })
            .collect();
        let poison = p.poison.iter().map(|(i, _)| pos(*i)).collect();
        (rounds, poison)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::Txn;

    #[test]
    fn the_fixture_is_what_the_real_code_makes_of_the_records() {
        let params = Params {
            txns: vec![
                Txn::library_indexed(0, 1),
                Txn::minimal(1, 1),
                Txn::library(2, 2).kinds(&[Kind::Undecodable, Kind::Unroutable]),
                Txn::library(3, 1),
            ],
            ..Params::default()
        };
        let f = Fixture::new(&params);
        assert_eq!(f.business_records_kept, 0, "classify skips business items");
        assert_eq!(f.msgs.len(), 5);
        assert!(f.msgs[0].indexed && !f.msgs[1].indexed && !f.msgs[4].indexed);
        assert!(f.msgs[0].library && !f.msgs[1].library && f.msgs[4].library);
        // The library's messages indexed at commit are ordered by their sort keys'
        // UUIDv7 in the index; a minimal producer's aggregate, and the default library
        // producer's (nothing in the index at commit), are read from their partitions.
        let library = |i: usize| f.msgs[i].member.as_ref().map(|m| m.library);
        assert_eq!(
            (library(0), library(1), library(4)),
            (Some(true), Some(false), Some(false))
        );
        assert!(dynamodb_outbox_core::policy::key_position(&f.msgs[4].key).is_some());
        assert!(dynamodb_outbox_core::policy::key_position(&f.msgs[0].key).is_some());
        assert_eq!(f.msgs[1].id, schema::derive_message_id(&f.msgs[1].key));
        assert!(
            matches!(f.msgs[2].work, Work::Poison(_)),
            "no Topic: poison"
        );
        assert!(f.msgs[2].decoded.is_err());
        // The unroutable one is poison only once routed: `plan` finds it.
        let items: Vec<WorkItem> = [0, 3]
            .iter()
            .map(|&i| WorkItem {
                id: i.to_string(),
                work: f.msgs[i].work.clone(),
            })
            .collect();
        let (rounds, poison) = f.plan(&items);
        assert_eq!((rounds, poison), (vec![vec![0]], vec![1]));
    }

    #[test]
    fn sequenced_keys_follow_commit_order_and_the_fence_reads_their_range() {
        use dynamodb_outbox_core::policy::{Scope, fence_reads};
        let params = Params {
            txns: vec![
                Txn::library(0, 2).sequenced(),
                Txn::library(1, 1).sequenced(),
                Txn::library(0, 1).sequenced(),
            ],
            fifo: true,
            ..Params::default()
        };
        let f = Fixture::new(&params);
        let places: Vec<_> = f
            .msgs
            .iter()
            .map(|m| schema::sequence_place(&m.key.sk).map(|p| (p.sequence, p.position)))
            .collect();
        assert_eq!(
            places,
            [Some((1, 0)), Some((1, 1)), Some((1, 0)), Some((2, 0))],
            "each aggregate's transactions numbered in commit order, positions within one"
        );
        assert!(f.msgs[0].key.sk < f.msgs[1].key.sk && f.msgs[1].key.sk < f.msgs[3].key.sk);
        let Work::Publish(last) = &f.msgs[3].work else {
            panic!("a good message is published");
        };
        assert_eq!(last.sequence, Some(2), "the Sequence attribute is written");
        let members: Vec<_> = [1, 3]
            .iter()
            .filter_map(|&i| f.msgs[i].member.clone())
            .collect();
        let reads = fence_reads(&members);
        let expected = Scope::Sequence {
            aggregate: "AGG#0".into(),
            lowest: f.msgs[1].key.sk.clone(),
            highest: f.msgs[3].key.sk.clone(),
            members: 2,
        };
        assert_eq!(reads.len(), 1);
        assert_eq!(reads[0].scope, expected);
    }
}
