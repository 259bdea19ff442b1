//! SNS topics and EventBridge buses that deliver into an SQS queue the test reads: how
//! a test sees what the publisher sent to a destination that is not a queue.

use crate::unique;
use outbox_devkit::aws::Clients;
use outbox_devkit::provision;

/// A queue the test reads: its URL and ARN.
#[derive(Debug, Clone)]
pub struct Subscriber {
    pub url: String,
    pub arn: String,
}

impl Subscriber {
    /// An existing queue (its ARN looked up).
    pub async fn of(clients: &Clients, url: &str) -> Self {
        let arn = provision::queue_arn(&clients.sqs, url).await.expect("arn");
        Subscriber {
            url: url.to_owned(),
            arn,
        }
    }
}

/// A new standard queue (30 s visibility) named after `prefix`.
pub async fn subscriber(clients: &Clients, prefix: &str) -> Subscriber {
    let url = provision::create_queue(&clients.sqs, &unique(prefix), 30)
        .await
        .expect("queue");
    Subscriber::of(clients, &url).await
}

/// How SNS hands a message to a queue subscribed to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SnsDelivery {
    /// Body and attributes as published (`RawMessageDelivery`).
    Raw,
    /// Wrapped in an SNS notification, which the consumer opens.
    Notification,
}

/// A new SNS topic named after `prefix` with the queue `queue_arn` subscribed; the
/// topic's ARN.
pub async fn topic_into(
    clients: &Clients,
    prefix: &str,
    queue_arn: &str,
    delivery: SnsDelivery,
) -> String {
    let topic_arn = clients
        .sns
        .create_topic()
        .name(unique(prefix))
        .send()
        .await
        .expect("topic")
        .topic_arn
        .expect("arn");
    let mut subscribe = clients
        .sns
        .subscribe()
        .topic_arn(&topic_arn)
        .protocol("sqs")
        .endpoint(queue_arn);
    if delivery == SnsDelivery::Raw {
        subscribe = subscribe.attributes("RawMessageDelivery", "true");
    }
    subscribe.send().await.expect("subscribe");
    allow_delivery(clients, queue_arn, "sns.amazonaws.com", &topic_arn).await;
    topic_arn
}

/// `allow_delivery` for the queue `queue_arn`, found by its name.
async fn allow_delivery(clients: &Clients, queue_arn: &str, service: &str, source_arn: &str) {
    let name = queue_arn.rsplit(':').next().expect("queue name");
    let url = clients
        .sqs
        .get_queue_url()
        .queue_name(name)
        .send()
        .await
        .expect("queue url")
        .queue_url
        .expect("url");
    provision::allow_delivery(&clients.sqs, &url, queue_arn, service, source_arn)
        .await
        .expect("queue policy");
}

/// A new EventBridge bus named after `prefix` whose rule sends the events of `source`
/// to the queue `queue_arn`; the bus's ARN.
pub async fn bus_into(clients: &Clients, prefix: &str, source: &str, queue_arn: &str) -> String {
    let bus = unique(prefix);
    let bus_arn = clients
        .eventbridge
        .create_event_bus()
        .name(&bus)
        .send()
        .await
        .expect("bus")
        .event_bus_arn
        .expect("arn");
    clients
        .eventbridge
        .put_rule()
        .name("outbox-to-queue")
        .event_bus_name(&bus)
        .event_pattern(serde_json::json!({ "source": [source] }).to_string())
        .send()
        .await
        .expect("rule");
    let target = aws_sdk_eventbridge::types::Target::builder()
        .id("queue")
        .arn(queue_arn)
        .build()
        .expect("target");
    clients
        .eventbridge
        .put_targets()
        .rule("outbox-to-queue")
        .event_bus_name(&bus)
        .targets(target)
        .send()
        .await
        .expect("targets");
    let rule_arn = clients
        .eventbridge
        .describe_rule()
        .name("outbox-to-queue")
        .event_bus_name(&bus)
        .send()
        .await
        .expect("rule")
        .arn
        .expect("rule arn");
    allow_delivery(clients, queue_arn, "events.amazonaws.com", &rule_arn).await;
    bus_arn
}
