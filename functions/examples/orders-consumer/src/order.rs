//! The order job and the stored order: strict validation at the boundary, the price
//! rule, and nothing else.

use serde::{Deserialize, Serialize};

/// Unit price in cents.
pub const UNIT_PRICE_CENTS: u32 = 250;
/// Fixed handling fee in cents.
pub const HANDLING_CENTS: u32 = 100;
/// DynamoDB's limit for a partition key value.
pub const MAX_ID_BYTES: usize = 2048;
/// Prefix reserved for processed-message markers in the orders table.
pub const RESERVED_PREFIX: &str = "MSG#";

/// The message body. Anything else is refused: unknown or duplicate fields, wrong
/// types (a boolean or float is not a quantity, a number is not an id), values out of
/// range.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OrderJob {
    /// The business key.
    pub id: OrderId,
    /// How many, 1 to 10.
    pub quantity: Quantity,
}

/// An order id: non-empty, within DynamoDB's key size, not a marker's key.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub struct OrderId(String);

impl TryFrom<String> for OrderId {
    type Error = String;

    fn try_from(id: String) -> Result<Self, String> {
        if id.is_empty() {
            return Err("id must not be empty".into());
        }
        if id.len() > MAX_ID_BYTES {
            return Err(format!(
                "id is {} bytes; DynamoDB keys hold at most {MAX_ID_BYTES}",
                id.len()
            ));
        }
        if id.starts_with(RESERVED_PREFIX) {
            return Err(format!(
                "id must not start with {RESERVED_PREFIX}, which is reserved for processed-message markers"
            ));
        }
        Ok(OrderId(id))
    }
}

impl OrderId {
    /// The id text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A quantity from 1 to 10. Deserialised from a JSON integer only: serde_json refuses
/// `true`, `4.0` and `"4"` for an `i64`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "i64")]
pub struct Quantity(u8);

impl TryFrom<i64> for Quantity {
    type Error = String;

    fn try_from(q: i64) -> Result<Self, String> {
        match u8::try_from(q) {
            Ok(q @ 1..=10) => Ok(Quantity(q)),
            _ => Err(format!("quantity must be an integer from 1 to 10, got {q}")),
        }
    }
}

impl Quantity {
    /// The value.
    pub fn get(self) -> u8 {
        self.0
    }
}

/// The stored order, exactly the item the lab's worker writes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Order {
    /// The business key (the table's hash key).
    pub id: String,
    /// How many.
    pub quantity: u8,
    /// `quantity × 250 + 100`.
    pub total_cents: u32,
}

impl From<OrderJob> for Order {
    fn from(job: OrderJob) -> Self {
        let quantity = job.quantity.get();
        Order {
            id: job.id.0,
            quantity,
            total_cents: total_cents(quantity),
        }
    }
}

/// The price rule.
pub fn total_cents(quantity: u8) -> u32 {
    u32::from(quantity) * UNIT_PRICE_CENTS + HANDLING_CENTS
}

#[cfg(test)]
mod tests {
    use super::*;
    use dynamodb_outbox_idempotency::{Delivery, IdempotencyError, SqsMessage};

    /// The body as the worker reads it: the payload of an SQS message.
    fn parse(body: &str) -> Result<Order, String> {
        let mut message = SqsMessage::default();
        message.body = Some(body.to_owned());
        Delivery::open(&message)
            .parse::<OrderJob>()
            .map(Order::from)
            .map_err(|e| match e {
                IdempotencyError::MalformedBody { reason } => reason,
                other => panic!("unexpected {other}"),
            })
    }

    #[test]
    fn the_total_is_250_cents_a_unit_plus_100() {
        assert_eq!(total_cents(1), 350);
        assert_eq!(total_cents(4), 1100);
        assert_eq!(total_cents(10), 2600);
    }

    #[test]
    fn a_valid_job_becomes_the_order_item() {
        assert_eq!(
            parse(r#"{"id":"dedup-order","quantity":4}"#),
            Ok(Order {
                id: "dedup-order".into(),
                quantity: 4,
                total_cents: 1100
            })
        );
        assert!(parse(r#"{"quantity":10,"id":"x"}"#).is_ok());
    }

    #[test]
    fn extra_missing_and_duplicate_fields_are_refused() {
        let e = parse(r#"{"id":"a","quantity":1,"note":"x"}"#).expect_err("extra");
        assert!(e.contains("unknown field `note`"), "{e}");
        let e = parse(r#"{"id":"a"}"#).expect_err("missing");
        assert!(e.contains("missing field `quantity`"), "{e}");
        let e = parse(r#"{"id":"a","quantity":1,"quantity":2}"#).expect_err("dup");
        assert!(e.contains("duplicate field `quantity`"), "{e}");
    }

    #[test]
    fn a_quantity_must_be_a_json_integer_from_1_to_10() {
        for bad in [
            "true",
            "4.0",
            "\"4\"",
            "null",
            "0",
            "11",
            "-1",
            "1e1",
            "99999999999999999999",
        ] {
            let body = format!(r#"{{"id":"a","quantity":{bad}}}"#);
            let e = parse(&body).expect_err(bad);
            assert!(e.starts_with("quantity: "), "{bad}: {e}");
        }
        let e = parse(r#"{"id":"a","quantity":11}"#).expect_err("11");
        assert!(e.contains("from 1 to 10"), "{e}");
    }

    #[test]
    fn an_id_must_be_a_non_empty_string_that_is_not_a_marker_key() {
        for bad in ["1", "true", "null", "\"\"", "\"MSG#abc\"", "[\"a\"]"] {
            let body = format!(r#"{{"id":{bad},"quantity":1}}"#);
            let e = parse(&body).expect_err(bad);
            assert!(e.starts_with("id: "), "{bad}: {e}");
        }
        let long = "x".repeat(MAX_ID_BYTES + 1);
        assert!(parse(&format!(r#"{{"id":"{long}","quantity":1}}"#)).is_err());
    }

    #[test]
    fn a_body_that_is_not_one_json_object_is_refused() {
        for bad in ["", "[]", "\"order\"", "{", r#"{"id":"a","quantity":1} {}"#] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }
}
