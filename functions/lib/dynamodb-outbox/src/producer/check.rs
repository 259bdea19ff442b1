//! Everything DynamoDB would refuse in a transaction, refused here first: over 100
//! actions or 4 MB, an item over 400 KB, two actions on one item.

use super::error::ProducerError;
use aws_sdk_dynamodb::types::{AttributeValue, TransactWriteItem};
use dynamodb_outbox_core::__private::schema::{ITEM_TYPE, PENDING_MESSAGE, TOPIC};
use dynamodb_outbox_core::KeyNames;
use dynamodb_outbox_core::producer::{MAX_ITEM_BYTES, MAX_TRANSACTION_BYTES};
use std::collections::HashMap;

/// The limit checks, on a built transaction.
pub(super) fn check(
    actions: &[TransactWriteItem],
    outbox_table: &str,
    outbox_keys: &KeyNames,
    key_schemas: &HashMap<String, Vec<String>>,
) -> Result<(), ProducerError> {
    let mut total = 0usize;
    let mut seen: HashMap<(String, String), usize> = HashMap::new();
    for (index, action) in actions.iter().enumerate() {
        let (table, key, bytes) = match (
            &action.put,
            &action.update,
            &action.delete,
            &action.condition_check,
        ) {
            (Some(p), _, _, _) => {
                let keys: Vec<String> = if p.table_name() == outbox_table {
                    vec![
                        outbox_keys.partition_key.clone(),
                        outbox_keys.sort_key.clone(),
                    ]
                } else {
                    key_schemas.get(p.table_name()).cloned().unwrap_or_default()
                };
                let key = (!keys.is_empty()).then(|| render_key(p.item(), Some(&keys)));
                (p.table_name().to_owned(), key, item_size(p.item()))
            }
            (_, Some(u), _, _) => (
                u.table_name().to_owned(),
                Some(render_key(u.key(), None)),
                item_size(u.key()),
            ),
            (_, _, Some(d), _) => (
                d.table_name().to_owned(),
                Some(render_key(d.key(), None)),
                item_size(d.key()),
            ),
            (_, _, _, Some(c)) => (
                c.table_name().to_owned(),
                Some(render_key(c.key(), None)),
                item_size(c.key()),
            ),
            _ => return Err(ProducerError::EmptyAction { index }),
        };
        if bytes > MAX_ITEM_BYTES {
            return Err(ProducerError::ItemTooLarge {
                index,
                action: describe(action, outbox_table),
                bytes,
            });
        }
        total += bytes;
        if let Some(key) = key {
            if let Some(&first) = seen.get(&(table.clone(), key.clone())) {
                return Err(ProducerError::DuplicateItem {
                    first,
                    second: index,
                    table,
                    key,
                });
            }
            seen.insert((table, key), index);
        }
    }
    if total > MAX_TRANSACTION_BYTES {
        return Err(ProducerError::TransactionTooLarge { bytes: total });
    }
    Ok(())
}

/// DynamoDB's item size rules: attribute names plus values (strings and binaries by
/// length, numbers by digits, containers with their overhead).
pub fn item_size(item: &HashMap<String, AttributeValue>) -> usize {
    item.iter().map(|(k, v)| k.len() + value_size(v)).sum()
}

fn value_size(v: &AttributeValue) -> usize {
    match v {
        AttributeValue::S(s) => s.len(),
        AttributeValue::N(n) => n.len().div_ceil(2) + 1,
        AttributeValue::B(b) => b.as_ref().len(),
        AttributeValue::Bool(_) | AttributeValue::Null(_) => 1,
        AttributeValue::Ss(v) => v.iter().map(String::len).sum(),
        AttributeValue::Ns(v) => v.iter().map(|n| n.len().div_ceil(2) + 1).sum(),
        AttributeValue::Bs(v) => v.iter().map(|b| b.as_ref().len()).sum(),
        AttributeValue::L(l) => 3 + l.iter().map(|x| 1 + value_size(x)).sum::<usize>(),
        AttributeValue::M(m) => {
            3 + m
                .iter()
                .map(|(k, x)| 1 + k.len() + value_size(x))
                .sum::<usize>()
        }
        _ => 0,
    }
}

fn render_key(item: &HashMap<String, AttributeValue>, names: Option<&[String]>) -> String {
    let mut parts: Vec<String> = match names {
        Some(names) => names
            .iter()
            .map(|n| format!("{n}={}", item.get(n).map(render_value).unwrap_or_default()))
            .collect(),
        None => item
            .iter()
            .map(|(n, v)| format!("{n}={}", render_value(v)))
            .collect(),
    };
    parts.sort();
    parts.join(",")
}

fn render_value(v: &AttributeValue) -> String {
    match v {
        AttributeValue::S(s) => s.clone(),
        AttributeValue::N(n) => n.clone(),
        AttributeValue::B(b) => format!("{:?}", b.as_ref()),
        other => format!("{other:?}"),
    }
}

/// A short description of an action for error messages (no attribute values).
pub(super) fn describe(action: &TransactWriteItem, outbox_table: &str) -> String {
    if let Some(p) = &action.put {
        if p.table_name() == outbox_table
            && matches!(p.item().get(ITEM_TYPE), Some(AttributeValue::S(t)) if t == PENDING_MESSAGE)
        {
            let topic = match p.item().get(TOPIC) {
                Some(AttributeValue::S(t)) => t.as_str(),
                _ => "?",
            };
            return format!("Put of the outbox message for topic `{topic}`");
        }
        return format!("Put on {}", p.table_name());
    }
    if let Some(u) = &action.update {
        return format!("Update on {}", u.table_name());
    }
    if let Some(d) = &action.delete {
        return format!("Delete on {}", d.table_name());
    }
    if let Some(c) = &action.condition_check {
        return format!("ConditionCheck on {}", c.table_name());
    }
    "empty action".to_owned()
}
