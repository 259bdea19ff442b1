//! What a million published messages cost, from counted operations and item sizes:
//! the billing rules of each service as plain arithmetic, the list prices in one
//! place ([`US_EAST_1`]), and a bill per million messages.
//!
//! Billing rules used (each service's pricing page):
//! - DynamoDB on demand: a write is 1 write request unit per 1 KB of the item (the
//!   larger of before and after), 2 in a transaction; a refused conditional write is
//!   billed as a write. A read is 1 read request unit per 4 KB strongly consistent,
//!   half eventually consistent; a `Query` or `Scan` adds up the items it reads (not
//!   what its filter keeps), at least one unit's worth. A global secondary index's
//!   writes are billed like the table's (an item entering or leaving the index is one
//!   write of its projection). TTL deletes are free, and so are the stream reads
//!   Lambda makes for a DynamoDB trigger.
//! - SQS and SNS: every 64 KB chunk of a request's payload is one billed request (a
//!   batch of ten small messages is one request). EventBridge: every 64 KB chunk of
//!   each event is one billed event (a batch of ten is ten).
//! - Lambda: a price per invocation and per GB-second of billed duration at the
//!   configured memory.

use aws_sdk_dynamodb::types::AttributeValue;
use std::collections::HashMap;

/// List prices in US dollars, and where they were read.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Prices {
    /// The region the prices are for.
    pub region: &'static str,
    /// When they were read.
    pub read_on: &'static str,
    /// DynamoDB on-demand, per million write request units (standard table class).
    pub dynamodb_write_unit_per_million: f64,
    /// DynamoDB on-demand, per million read request units.
    pub dynamodb_read_unit_per_million: f64,
    /// SQS standard queue, per million requests (past the free tier).
    pub sqs_standard_per_million: f64,
    /// SQS FIFO queue, per million requests.
    pub sqs_fifo_per_million: f64,
    /// SNS standard topic, per million publish requests.
    pub sns_per_million: f64,
    /// EventBridge, per million custom events put.
    pub eventbridge_per_million: f64,
    /// Lambda, per million invocations (x86_64).
    pub lambda_request_per_million: f64,
    /// Lambda, per GB-second (x86_64, first pricing tier).
    pub lambda_gb_second: f64,
    /// EventBridge Pipes, per million requests (after its filter; each 64 KB chunk
    /// of an event one request).
    pub pipes_per_million: f64,
}

/// us-east-1 list prices, each from the service's public pricing page
/// (`aws.amazon.com/<service>/pricing`): DynamoDB on demand (after its November 2024
/// price cut), SQS, SNS, EventBridge, Lambda (x86_64, first tier). Read on the date
/// given; no free tier is subtracted.
pub const US_EAST_1: Prices = Prices {
    region: "us-east-1",
    read_on: "2024-11-15",
    dynamodb_write_unit_per_million: 0.625,
    dynamodb_read_unit_per_million: 0.125,
    sqs_standard_per_million: 0.40,
    sqs_fifo_per_million: 0.50,
    sns_per_million: 0.50,
    eventbridge_per_million: 1.00,
    lambda_request_per_million: 0.20,
    lambda_gb_second: 0.000_016_666_7,
    // Not read on the date above: added with the Pipes row, from the EventBridge
    // pricing page's Pipes section as remembered; check it before quoting the row.
    pipes_per_million: 0.40,
};

/// A DynamoDB item's size as DynamoDB counts it: attribute names plus values
/// (strings and binaries by length, numbers by about one byte per two digits plus
/// one, lists and maps with their 3-byte overhead and 1 byte per element).
pub fn item_bytes(item: &HashMap<String, AttributeValue>) -> u64 {
    item.iter()
        .map(|(name, value)| name.len() as u64 + value_bytes(value))
        .sum()
}

fn value_bytes(value: &AttributeValue) -> u64 {
    match value {
        AttributeValue::S(s) => s.len() as u64,
        AttributeValue::N(n) => number_bytes(n),
        AttributeValue::B(b) => b.as_ref().len() as u64,
        AttributeValue::Bool(_) | AttributeValue::Null(_) => 1,
        AttributeValue::Ss(v) => v.iter().map(|s| s.len() as u64).sum(),
        AttributeValue::Ns(v) => v.iter().map(|n| number_bytes(n)).sum(),
        AttributeValue::Bs(v) => v.iter().map(|b| b.as_ref().len() as u64).sum(),
        AttributeValue::L(v) => 3 + v.iter().map(|e| 1 + value_bytes(e)).sum::<u64>(),
        AttributeValue::M(m) => {
            3 + m
                .iter()
                .map(|(k, e)| 1 + k.len() as u64 + value_bytes(e))
                .sum::<u64>()
        }
        _ => 0,
    }
}

fn number_bytes(n: &str) -> u64 {
    let digits = n.chars().filter(char::is_ascii_digit).count() as u64;
    digits.div_ceil(2) + 1
}

/// Write request units of one write of an item of `bytes` (the larger of before and
/// after): 1 per started KB, at least 1.
pub fn write_units(bytes: u64) -> u64 {
    bytes.div_ceil(1024).max(1)
}

/// Write request units of one item written in a transaction: twice a plain write.
pub fn transactional_write_units(bytes: u64) -> u64 {
    2 * write_units(bytes)
}

/// Read request units of a read of `bytes` in all (a `Query` or `Scan` page adds up
/// the items it read), eventually consistent: half a unit per started 4 KB, at least
/// half a unit.
pub fn eventual_read_units(bytes: u64) -> f64 {
    bytes.div_ceil(4096).max(1) as f64 * 0.5
}

/// Billed requests of one SQS or SNS request (or EventBridge event) carrying `bytes`:
/// one per started 64 KB.
pub fn billed_chunks(bytes: u64) -> u64 {
    bytes.div_ceil(64 * 1024).max(1)
}

/// Index write units one message costs a producer that indexes it at commit
/// (`OutboxWriter::index_at_commit(true)`): its projection of `projection_bytes`
/// enters the sweeper index at commit and leaves it at the `SENT` mark, one write
/// each; the default producer's happy path writes none.
pub fn index_at_commit_write_units(projection_bytes: u64) -> u64 {
    2 * write_units(projection_bytes)
}

/// GB-seconds of `billed_ms` milliseconds at `memory_mb`.
pub fn gb_seconds(billed_ms: f64, memory_mb: u32) -> f64 {
    billed_ms / 1000.0 * f64::from(memory_mb) / 1024.0
}

/// What a workload used, in billed units.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Usage {
    /// DynamoDB write request units: the producer's transaction (the outbox item).
    pub producer_write_units: f64,
    /// DynamoDB write request units: `SENT` / `FAILED` marks.
    pub mark_write_units: f64,
    /// DynamoDB write request units of a secondary index: the sweeper index's, an item
    /// entering it (adopted by the stream path, or at commit when the producer indexes
    /// there), moved by a claim, and leaving it at its mark. None on the happy path.
    pub index_write_units: f64,
    /// DynamoDB read request units of the worker that finds what is pending (the
    /// sweeper's index queries, or a polling worker's scans).
    pub finder_read_units: f64,
    /// SQS standard billed requests.
    pub sqs_standard_requests: f64,
    /// SQS FIFO billed requests.
    pub sqs_fifo_requests: f64,
    /// SNS billed requests.
    pub sns_requests: f64,
    /// EventBridge billed events.
    pub eventbridge_events: f64,
    /// Lambda invocations.
    pub lambda_invocations: f64,
    /// Lambda GB-seconds.
    pub lambda_gb_seconds: f64,
    /// DynamoDB read request units of the order fence: its index reads of the
    /// aggregates' pending siblings and its consistent confirms (FIFO routes only).
    pub fence_read_units: f64,
    /// EventBridge Pipes billed requests (a pipe in place of the publisher).
    pub pipes_requests: f64,
}

impl Usage {
    /// The same usage scaled by `factor` (e.g. from a run of n messages to a million).
    pub fn scaled(self, factor: f64) -> Usage {
        Usage {
            producer_write_units: self.producer_write_units * factor,
            mark_write_units: self.mark_write_units * factor,
            index_write_units: self.index_write_units * factor,
            finder_read_units: self.finder_read_units * factor,
            sqs_standard_requests: self.sqs_standard_requests * factor,
            sqs_fifo_requests: self.sqs_fifo_requests * factor,
            sns_requests: self.sns_requests * factor,
            eventbridge_events: self.eventbridge_events * factor,
            lambda_invocations: self.lambda_invocations * factor,
            lambda_gb_seconds: self.lambda_gb_seconds * factor,
            fence_read_units: self.fence_read_units * factor,
            pipes_requests: self.pipes_requests * factor,
        }
    }

    /// Two usages added.
    pub fn plus(self, other: Usage) -> Usage {
        Usage {
            producer_write_units: self.producer_write_units + other.producer_write_units,
            mark_write_units: self.mark_write_units + other.mark_write_units,
            index_write_units: self.index_write_units + other.index_write_units,
            finder_read_units: self.finder_read_units + other.finder_read_units,
            sqs_standard_requests: self.sqs_standard_requests + other.sqs_standard_requests,
            sqs_fifo_requests: self.sqs_fifo_requests + other.sqs_fifo_requests,
            sns_requests: self.sns_requests + other.sns_requests,
            eventbridge_events: self.eventbridge_events + other.eventbridge_events,
            lambda_invocations: self.lambda_invocations + other.lambda_invocations,
            lambda_gb_seconds: self.lambda_gb_seconds + other.lambda_gb_seconds,
            fence_read_units: self.fence_read_units + other.fence_read_units,
            pipes_requests: self.pipes_requests + other.pipes_requests,
        }
    }
}

/// One line of a bill.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// What is billed.
    pub item: &'static str,
    /// How much of it.
    pub quantity: f64,
    /// In what unit.
    pub unit: &'static str,
    /// What it costs, US dollars.
    pub dollars: f64,
}

/// A usage priced line by line; [`bill_total`] adds it up.
pub fn bill(usage: &Usage, prices: &Prices) -> Vec<Line> {
    let per_million = |quantity: f64, price: f64| quantity / 1e6 * price;
    let dynamodb_write = prices.dynamodb_write_unit_per_million;
    let line = |item, quantity, unit, dollars| Line {
        item,
        quantity,
        unit,
        dollars,
    };
    vec![
        line(
            "DynamoDB writes: producer transaction (outbox item)",
            usage.producer_write_units,
            "WRU",
            per_million(usage.producer_write_units, dynamodb_write),
        ),
        line(
            "DynamoDB writes: SENT/FAILED marks",
            usage.mark_write_units,
            "WRU",
            per_million(usage.mark_write_units, dynamodb_write),
        ),
        line(
            "DynamoDB writes: sweeper index (enter, move, leave)",
            usage.index_write_units,
            "WRU",
            per_million(usage.index_write_units, dynamodb_write),
        ),
        line(
            "DynamoDB reads: finding pending items",
            usage.finder_read_units,
            "RRU",
            per_million(
                usage.finder_read_units,
                prices.dynamodb_read_unit_per_million,
            ),
        ),
        line(
            "SQS standard",
            usage.sqs_standard_requests,
            "requests",
            per_million(usage.sqs_standard_requests, prices.sqs_standard_per_million),
        ),
        line(
            "SQS FIFO",
            usage.sqs_fifo_requests,
            "requests",
            per_million(usage.sqs_fifo_requests, prices.sqs_fifo_per_million),
        ),
        line(
            "SNS",
            usage.sns_requests,
            "requests",
            per_million(usage.sns_requests, prices.sns_per_million),
        ),
        line(
            "EventBridge",
            usage.eventbridge_events,
            "events",
            per_million(usage.eventbridge_events, prices.eventbridge_per_million),
        ),
        line(
            "Lambda invocations",
            usage.lambda_invocations,
            "invocations",
            per_million(usage.lambda_invocations, prices.lambda_request_per_million),
        ),
        line(
            "Lambda duration",
            usage.lambda_gb_seconds,
            "GB-s",
            usage.lambda_gb_seconds * prices.lambda_gb_second,
        ),
        line(
            "DynamoDB reads: order fence (FIFO routes)",
            usage.fence_read_units,
            "RRU",
            per_million(
                usage.fence_read_units,
                prices.dynamodb_read_unit_per_million,
            ),
        ),
        line(
            "EventBridge Pipes",
            usage.pipes_requests,
            "requests",
            per_million(usage.pipes_requests, prices.pipes_per_million),
        ),
    ]
}

/// One message through an EventBridge-Pipes-style design: the stream's records go
/// through a pipe (its filter keeps new `PENDING` items) straight to an SQS queue,
/// with no function and no `SENT` mark, so no marks, no sweeper index and no
/// recovery of what the pipe drops. `item_bytes`: the producer's outbox item (no
/// index attributes). Each message is one pipe request and one `SendMessage`: a pipe
/// to SQS sends per event, not in batches of ten (assumed; the conservative side).
pub fn pipes_per_message(item_bytes: u64) -> Usage {
    Usage {
        producer_write_units: transactional_write_units(item_bytes) as f64,
        pipes_requests: billed_chunks(item_bytes) as f64,
        sqs_standard_requests: billed_chunks(item_bytes) as f64,
        ..Usage::default()
    }
}

/// The floor of any outbox that keeps the mission's promise, for one message: its
/// item written inside the producer's `TransactWriteItems` and one conditional `SENT`
/// mark (billed on the item's size). Sends and Lambda time are the caller's to add,
/// as they are the same for every design that publishes through a function.
pub fn floor_per_message(item_bytes: u64) -> Usage {
    Usage {
        producer_write_units: transactional_write_units(item_bytes) as f64,
        mark_write_units: write_units(item_bytes) as f64,
        ..Usage::default()
    }
}

/// Where a route's messages go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// An SQS standard queue (`SendMessageBatch`, ten a request).
    SqsStandard,
    /// An SQS FIFO queue (the same batches at the FIFO price).
    SqsFifo,
    /// An SNS topic (`PublishBatch`, ten a request, as SQS).
    Sns,
    /// An EventBridge bus (billed per event, not per request).
    EventBridge,
}

impl Usage {
    /// The same usage with its standard-queue sends made to `route` instead; `events`
    /// is what EventBridge would bill for the same messages (one per message per
    /// started 64 KB), as it bills each event, not each request.
    pub fn sent_to(self, route: Route, events: f64) -> Usage {
        let requests = self.sqs_standard_requests;
        let without = Usage {
            sqs_standard_requests: 0.0,
            ..self
        };
        match route {
            Route::SqsStandard => self,
            Route::SqsFifo => Usage {
                sqs_fifo_requests: self.sqs_fifo_requests + requests,
                ..without
            },
            Route::Sns => Usage {
                sns_requests: self.sns_requests + requests,
                ..without
            },
            Route::EventBridge => Usage {
                eventbridge_events: self.eventbridge_events + events,
                ..without
            },
        }
    }
}

/// Read units of the order fence's index reads: each read request is billed for the
/// keys-only projections it read (`index_bytes`, eventually consistent), at least
/// half a unit; `confirms` consistent reads of one small item each are one unit.
pub fn fence_read_units(requests: u64, index_bytes: u64, confirms: u64) -> f64 {
    let reads = eventual_read_units(index_bytes).max(requests as f64 * 0.5);
    reads + confirms as f64
}

/// The bill's total, US dollars.
pub fn bill_total(lines: &[Line]) -> f64 {
    lines.iter().map(|l| l.dollars).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn writes_are_billed_per_started_kilobyte_and_doubled_in_a_transaction() {
        assert_eq!(write_units(1), 1);
        assert_eq!(write_units(1024), 1);
        assert_eq!(write_units(1025), 2);
        assert_eq!(
            write_units(0),
            1,
            "a refused or empty write is still one unit"
        );
        assert_eq!(transactional_write_units(400), 2);
        assert_eq!(transactional_write_units(3000), 6);
    }

    #[test]
    fn indexing_at_commit_costs_two_index_writes_a_message_a_dollar_twenty_five_per_million() {
        let units = index_at_commit_write_units(90);
        assert_eq!(units, 2);
        let per_million = units as f64 * US_EAST_1.dynamodb_write_unit_per_million;
        assert!(close(per_million, 1.25), "{per_million}");
    }

    #[test]
    fn eventual_reads_are_half_a_unit_per_started_four_kilobytes() {
        assert!(close(eventual_read_units(0), 0.5), "an empty query");
        assert!(close(eventual_read_units(4096), 0.5));
        assert!(close(eventual_read_units(4097), 1.0));
        // A scan of 10,000 items of 400 bytes: 4,000,000 bytes = 977 started 4 KB.
        assert!(close(eventual_read_units(4_000_000), 488.5));
    }

    #[test]
    fn requests_are_billed_per_started_64_kb_chunk() {
        assert_eq!(billed_chunks(300), 1);
        assert_eq!(billed_chunks(10 * 300), 1, "a batch of ten small messages");
        assert_eq!(billed_chunks(65_536), 1);
        assert_eq!(billed_chunks(65_537), 2);
        assert_eq!(billed_chunks(256 * 1024), 4);
    }

    #[test]
    fn gb_seconds_are_billed_duration_times_memory() {
        assert!(close(gb_seconds(1000.0, 1024), 1.0));
        assert!(close(gb_seconds(100.0, 256), 0.025));
    }

    #[test]
    fn item_sizes_count_names_and_values_as_dynamodb_does() {
        let item = HashMap::from([
            ("PK".to_owned(), AttributeValue::S("USER#123".into())),
            ("RetryCount".to_owned(), AttributeValue::N("0".into())),
            (
                "CreatedAt".to_owned(),
                AttributeValue::N("1732870800123".into()),
            ),
        ]);
        // 2+8, 10+(1 digit: 1+1), 9+(13 digits: 7+1)
        assert_eq!(item_bytes(&item), 10 + 12 + 17);
    }

    #[test]
    fn a_bill_prices_each_unit_at_its_list_price_and_adds_up() {
        let usage = Usage {
            producer_write_units: 2e6,
            mark_write_units: 1e6,
            index_write_units: 2e6,
            finder_read_units: 1e6,
            sqs_standard_requests: 1e5,
            sqs_fifo_requests: 1e5,
            sns_requests: 0.0,
            eventbridge_events: 0.0,
            lambda_invocations: 1e4,
            lambda_gb_seconds: 1000.0,
            ..Usage::default()
        };
        let lines = bill(&usage, &US_EAST_1);
        assert!(close(lines[0].dollars, 1.25));
        assert!(close(lines[1].dollars, 0.625));
        assert!(close(lines[2].dollars, 1.25), "the index's writes");
        assert!(close(lines[3].dollars, 0.125));
        assert!(close(lines[4].dollars, 0.04));
        assert!(close(lines[5].dollars, 0.05));
        assert!(close(lines[8].dollars, 0.002));
        assert!(close(lines[9].dollars, 0.016_666_7));
        assert!(close(
            bill_total(&lines),
            1.25 + 0.625 + 1.25 + 0.125 + 0.04 + 0.05 + 0.002 + 0.016_666_7
        ));
    }

    #[test]
    fn a_pipe_costs_a_transaction_a_pipe_request_and_a_send_per_message_and_no_mark() {
        let u = pipes_per_message(300);
        assert!(close(u.producer_write_units, 2.0));
        assert!(close(u.pipes_requests, 1.0));
        assert!(close(u.sqs_standard_requests, 1.0));
        assert!(close(u.mark_write_units + u.index_write_units, 0.0));
        assert!(close(u.lambda_invocations, 0.0));
        let lines = bill(&u.scaled(1e6), &US_EAST_1);
        assert_eq!(lines[11].item, "EventBridge Pipes");
        assert!(close(lines[11].dollars, 0.40));
    }

    #[test]
    fn fence_reads_are_billed_for_what_they_read_at_least_half_a_unit_each() {
        assert!(close(fence_read_units(10, 0, 0), 5.0), "ten empty reads");
        // One read of 100 projections of 100 B: 10,000 B = 3 started 4 KB.
        assert!(close(fence_read_units(1, 10_000, 0), 1.5));
        assert!(
            close(fence_read_units(1, 10_000, 4), 5.5),
            "plus 4 confirms"
        );
        let lines = bill(
            &Usage {
                fence_read_units: 1e6,
                ..Usage::default()
            },
            &US_EAST_1,
        );
        assert!(close(lines[10].dollars, 0.125));
    }

    #[test]
    fn usage_scales_and_adds_field_by_field() {
        let one = Usage {
            mark_write_units: 4.0,
            lambda_invocations: 1.0,
            ..Usage::default()
        };
        let total = one.scaled(250.0).plus(one);
        assert!(close(total.mark_write_units, 1004.0));
        assert!(close(total.lambda_invocations, 251.0));
    }

    #[test]
    fn the_floor_is_the_transaction_and_one_mark() {
        let floor = floor_per_message(300);
        assert_eq!(floor.producer_write_units, 2.0);
        assert_eq!(floor.mark_write_units, 1.0);
        assert_eq!(floor.index_write_units + floor.finder_read_units, 0.0);
        // a 1.5 KB item: two units a write, twice in a transaction
        assert_eq!(floor_per_message(1536).producer_write_units, 4.0);
        assert_eq!(floor_per_message(1536).mark_write_units, 2.0);
    }

    #[test]
    fn a_route_moves_the_sends_and_eventbridge_bills_each_event() {
        let sqs = Usage {
            sqs_standard_requests: 100_000.0,
            mark_write_units: 7.0,
            ..Usage::default()
        };
        let sns = sqs.sent_to(Route::Sns, 1e6);
        assert_eq!(
            (sns.sns_requests, sns.sqs_standard_requests),
            (100_000.0, 0.0)
        );
        assert_eq!(sns.mark_write_units, 7.0);
        let bus = sqs.sent_to(Route::EventBridge, 1e6);
        assert_eq!(
            (bus.eventbridge_events, bus.sqs_standard_requests),
            (1e6, 0.0)
        );
        assert_eq!(
            sqs.sent_to(Route::SqsFifo, 1e6).sqs_fifo_requests,
            100_000.0
        );
        assert_eq!(sqs.sent_to(Route::SqsStandard, 1e6), sqs);
    }
}
