//! AWS requests the publisher makes per published message on the happy path, counted
//! by an SDK interceptor on the publisher's own clients (the stream reads are done by
//! Lambda's event source mapping in AWS and are not the function's requests).
//!
//! `scripts/bench` (starts the emulator), or with one running:
//! `OUTBOX_ENDPOINT=http://127.0.0.1:PORT cargo bench -p outbox-tests --bench requests_per_message`
#![allow(clippy::expect_used, clippy::unwrap_used, missing_docs)]

use dynamodb_outbox::stream::handle_stream_event;
use dynamodb_outbox::{AwsPublisher, FromSdkConfig, NewMessage};
use outbox_tests::stream::event_of;
use outbox_tests::{Outbox, clients};

#[tokio::main]
async fn main() {
    // The library's messages as most producers write them, then the same workload
    // with each aggregate's version as its sequence (the fence's sequenced read).
    run(false).await;
    run(true).await;
}

async fn run(sequenced: bool) {
    let messages = 1000usize;
    let batch_size = 100usize; // the event source mapping's default
    let mut ob = Outbox::new().await;
    let writer = ob.writer();
    let mut versions = [0u64; 97];
    for chunk in (0..messages).collect::<Vec<_>>().chunks(25) {
        let msgs: Vec<NewMessage> = chunk
            .iter()
            .map(|i| {
                let message = NewMessage::new(
                    format!("ORDER#{}", i % 97),
                    if i % 2 == 0 { "orders" } else { "ledger" },
                    format!("{{\"n\":{i}}}"),
                );
                if !sequenced {
                    return message;
                }
                versions[i % 97] += 1;
                message.sequence(versions[i % 97])
            })
            .collect();
        writer.commit(vec![], &msgs).await.expect("commit");
    }
    let event = ob.filtered_event().await;
    assert_eq!(event.records.len(), messages);

    let own = clients().await;
    let publisher = AwsPublisher::with_sink(ob.config(), own.dynamodb.clone(), own.sink());
    let mut sent = 0;
    let start = std::time::Instant::now();
    for chunk in event.records.chunks(batch_size) {
        let (response, summary) = handle_stream_event(&publisher, &event_of(chunk.to_vec())).await;
        assert!(response.batch_item_failures.is_empty());
        sent += summary.sent;
    }
    let elapsed = start.elapsed();
    let total = own.counter.total();
    let kind = if sequenced {
        "each with its aggregate's version as its sequence"
    } else {
        "without a sequence"
    };
    println!(
        "published {sent} messages {kind} in batches of {batch_size} (half standard queue, half FIFO, 97 aggregates)"
    );
    for (op, count) in own.counter.by_operation() {
        println!(
            "  {op:<28} {count:>6}  ({:.3} per message)",
            count as f64 / sent as f64
        );
    }
    println!(
        "AWS requests per published message: {:.3}",
        total as f64 / sent as f64
    );
    println!(
        "emulator wall time: {:.0} ms ({:.0} messages/s; the emulator, not the handler, dominates)",
        elapsed.as_secs_f64() * 1000.0,
        sent as f64 / elapsed.as_secs_f64()
    );
}
