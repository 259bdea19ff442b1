//! Idempotent consumers against the emulator: messages really sent to and received
//! from emulator queues, shaped as Lambda's SQS event, handled by the same function
//! the `orders-consumer` binary calls; the successful ones are deleted as the event
//! source mapping does, the failed ones are left for the visibility timeout and the
//! redrive policy.

mod effect_failures;
mod effects;
mod envelopes;
mod fail_writes;
mod fifo;
mod guard;
mod marker;
mod poison;

use aws_lambda_events::event::sqs::SqsEvent;
use aws_sdk_sqs::types::{MessageAttributeValue, MessageSystemAttributeName, QueueAttributeName};
use dynamodb_outbox_core::message::ATTR_MESSAGE_ID;
use dynamodb_outbox_idempotency::{
    BatchReport, Clock, Deadline, IdempotencyError, IdempotentEffects, ManualClock, PayloadHash,
};
use orders_consumer::{Config, Deps, OrderResult, handle};
use outbox_devkit::aws::Clients;
use outbox_devkit::provision::{self, QueuePair};
use outbox_tests::lambda_message;
use outbox_tests::{Item, clients, n, s, sv, unique};
use serde_json::json;

type Report = BatchReport<OrderResult, IdempotencyError>;

/// An orders table, a job queue with its dead-letter queue, and the consumer's deps.
struct Orders {
    clients: Clients,
    table: String,
    queue: QueuePair,
    queue_arn: String,
    deps: Deps,
}

impl Orders {
    /// A standard queue: 30 s visibility, to the DLQ after 3 receives.
    async fn new() -> Self {
        Self::with_queue(&unique("jobs"), 30, 3).await
    }

    async fn with_queue(name: &str, visibility_s: u32, max_receives: u32) -> Self {
        let clients = clients().await;
        let table = unique("orders");
        provision::create_keyed_table(&clients.dynamodb, &table, "id")
            .await
            .expect("create orders table");
        let queue =
            provision::create_queue_with_dlq(&clients.sqs, name, visibility_s, max_receives)
                .await
                .expect("create queue");
        let queue_arn = provision::queue_arn(&clients.sqs, &queue.url)
            .await
            .expect("queue arn");
        let config = Config::from_lookup(|_| Some(table.clone())).expect("config");
        let deps = Deps::new(clients.dynamodb.clone(), &config);
        Orders {
            clients,
            table,
            queue,
            queue_arn,
            deps,
        }
    }

    async fn send(&self, body: &str) -> String {
        self.send_with(body, None, None).await
    }

    /// Sends `body`, in FIFO group `group`, carrying an outbox message id if given.
    async fn send_with(&self, body: &str, group: Option<&str>, outbox_id: Option<&str>) -> String {
        let mut req = self
            .clients
            .sqs
            .send_message()
            .queue_url(&self.queue.url)
            .message_body(body);
        if let Some(g) = group {
            req = req
                .message_group_id(g)
                .message_deduplication_id(unique("dedup"));
        }
        if let Some(id) = outbox_id {
            req = req.message_attributes(
                ATTR_MESSAGE_ID,
                MessageAttributeValue::builder()
                    .data_type("String")
                    .string_value(id)
                    .build()
                    .unwrap(),
            );
        }
        req.send()
            .await
            .expect("send")
            .message_id
            .expect("message id")
    }

    /// What the event source mapping does: one receive (up to 10 messages), shaped as
    /// Lambda's SQS event.
    async fn receive(&self) -> SqsEvent {
        let out = self
            .clients
            .sqs
            .receive_message()
            .queue_url(&self.queue.url)
            .max_number_of_messages(10)
            .message_attribute_names("All")
            .message_system_attribute_names(MessageSystemAttributeName::All)
            .wait_time_seconds(0)
            .send()
            .await
            .expect("receive");
        let mut event = SqsEvent::default();
        event.records = out
            .messages
            .unwrap_or_default()
            .iter()
            .map(|m| lambda_message(m, &self.queue_arn, "us-east-1"))
            .collect();
        event
    }

    /// Deletes the messages the report does not name as failed, as Lambda does with a
    /// partial batch response.
    async fn acknowledge(&self, event: &SqsEvent, report: &Report) {
        let response = report.response();
        let failed: Vec<&str> = response
            .batch_item_failures
            .iter()
            .map(|f| f.item_identifier.as_str())
            .collect();
        for m in &event.records {
            if !failed.contains(&m.message_id.as_deref().unwrap()) {
                self.clients
                    .sqs
                    .delete_message()
                    .queue_url(&self.queue.url)
                    .receipt_handle(m.receipt_handle.as_deref().unwrap())
                    .send()
                    .await
                    .expect("delete");
            }
        }
    }

    /// Receive → handler → acknowledge the successes.
    async fn deliver(&self) -> (SqsEvent, Report) {
        let event = self.receive().await;
        let report = handle(&event, &self.deps).await;
        self.acknowledge(&event, &report).await;
        (event, report)
    }

    /// Delivers until a receive comes back empty; every outcome, in order.
    async fn deliver_all(&self) -> Vec<Report> {
        let mut reports = Vec::new();
        loop {
            let (event, report) = self.deliver().await;
            if event.records.is_empty() {
                return reports;
            }
            reports.push(report);
        }
    }

    async fn order(&self, id: &str) -> Option<Item> {
        self.clients
            .dynamodb
            .get_item()
            .table_name(&self.table)
            .key("id", sv(id))
            .consistent_read(true)
            .send()
            .await
            .expect("get item")
            .item
    }

    async fn items(&self) -> Vec<Item> {
        self.clients
            .dynamodb
            .scan()
            .table_name(&self.table)
            .consistent_read(true)
            .send()
            .await
            .expect("scan")
            .items
            .unwrap_or_default()
    }

    /// (visible, in flight) messages on the job queue.
    async fn queue_counts(&self) -> (u64, u64) {
        let out = self
            .clients
            .sqs
            .get_queue_attributes()
            .queue_url(&self.queue.url)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessages)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessagesNotVisible)
            .send()
            .await
            .expect("queue attributes");
        let attrs = out.attributes.unwrap_or_default();
        let count = |name| {
            attrs
                .get(&name)
                .and_then(|v| v.parse().ok())
                .unwrap_or(u64::MAX)
        };
        (
            count(QueueAttributeName::ApproximateNumberOfMessages),
            count(QueueAttributeName::ApproximateNumberOfMessagesNotVisible),
        )
    }
}

fn results(reports: &[Report]) -> Vec<&OrderResult> {
    reports
        .iter()
        .flat_map(|r| r.outcomes.iter())
        .map(|o| o.result.as_ref().expect("every message succeeded"))
        .collect()
}

fn order_of(item: &Item) -> (String, i64, i64) {
    (
        s(item, "id").unwrap(),
        n(item, "quantity").unwrap(),
        n(item, "total_cents").unwrap(),
    )
}

fn charge_hash(quantity: i64) -> PayloadHash {
    PayloadHash::of_fields(
        &json!({"id": "o-1", "quantity": quantity, "sent_at": 123}),
        &["/id", "/quantity"],
    )
}

/// A guard on the orders table reading the time from `clock`, through `client`.
fn effects_on(
    orders: &Orders,
    client: aws_sdk_dynamodb::Client,
    clock: &std::sync::Arc<ManualClock>,
) -> IdempotentEffects {
    IdempotentEffects::new(client, &orders.table).clock(clock.clone())
}

fn deadline_after(clock: &ManualClock, ms: i64) -> Deadline {
    Deadline::from_epoch_millis(u64::try_from(clock.now_ms() + ms).unwrap())
}
