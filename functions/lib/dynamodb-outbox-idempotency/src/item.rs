//! Comparing a stored item with the one a message asked to write, as DynamoDB
//! means them: numbers by value (DynamoDB returns `4.5` for a stored `4.50`), sets
//! regardless of order.

use crate::Item;
use aws_sdk_dynamodb::types::AttributeValue;
use std::collections::BTreeSet;

/// Names of the attributes whose values differ between `stored` and `requested`
/// (present in one only, or with different values), sorted, leaving out `ignore`.
/// Empty means the two items are the same.
pub(crate) fn differing_attributes(
    stored: &Item,
    requested: &Item,
    ignore: &[String],
) -> Vec<String> {
    let names: BTreeSet<&String> = stored.keys().chain(requested.keys()).collect();
    names
        .into_iter()
        .filter(|n| !ignore.contains(n))
        .filter(|n| match (stored.get(*n), requested.get(*n)) {
            (Some(a), Some(b)) => !same_value(a, b),
            _ => true,
        })
        .cloned()
        .collect()
}

/// Whether two attribute values are equal as DynamoDB stores them.
pub(crate) fn same_value(a: &AttributeValue, b: &AttributeValue) -> bool {
    use AttributeValue as A;
    match (a, b) {
        (A::N(x), A::N(y)) => same_number(x, y),
        (A::Ns(x), A::Ns(y)) => number_set(x) == number_set(y),
        (A::Ss(x), A::Ss(y)) => x.iter().collect::<BTreeSet<_>>() == y.iter().collect(),
        (A::Bs(x), A::Bs(y)) => {
            x.iter().map(|b| b.as_ref()).collect::<BTreeSet<&[u8]>>()
                == y.iter().map(|b| b.as_ref()).collect()
        }
        (A::L(x), A::L(y)) => x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same_value(a, b)),
        (A::M(x), A::M(y)) => differing_attributes(x, y, &[]).is_empty(),
        _ => a == b,
    }
}

fn same_number(x: &str, y: &str) -> bool {
    match (canonical_number(x), canonical_number(y)) {
        (Some(a), Some(b)) => a == b,
        _ => x == y,
    }
}

fn number_set(values: &[String]) -> BTreeSet<String> {
    values
        .iter()
        .map(|v| canonical_number(v).unwrap_or_else(|| v.clone()))
        .collect()
}

/// A decimal number in one spelling: `-12.50`, `-1.25e1` and `-0012.5` all become
/// `-125e-1`; every zero becomes `0`. `None` when `text` is not a decimal number.
pub(crate) fn canonical_number(text: &str) -> Option<String> {
    let text = text.trim();
    let (negative, rest) = match text.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let (mantissa, exponent) = match rest.find(['e', 'E']) {
        Some(i) => (&rest[..i], rest[i + 1..].parse::<i64>().ok()?),
        None => (rest, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    if !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) {
        return None;
    }
    let digits = format!("{int}{frac}");
    let exponent = exponent.checked_sub(i64::try_from(frac.len()).ok()?)?;
    let trimmed_lead = digits.trim_start_matches('0');
    if trimmed_lead.is_empty() {
        return Some("0".to_owned());
    }
    let significant = trimmed_lead.trim_end_matches('0');
    let trailing = trimmed_lead.len() - significant.len();
    let exponent = exponent.checked_add(i64::try_from(trailing).ok()?)?;
    let sign = if negative { "-" } else { "" };
    Some(format!("{sign}{significant}e{exponent}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(v: &str) -> AttributeValue {
        AttributeValue::N(v.to_owned())
    }

    fn s(v: &str) -> AttributeValue {
        AttributeValue::S(v.to_owned())
    }

    fn item(pairs: &[(&str, AttributeValue)]) -> Item {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect()
    }

    #[test]
    fn numbers_compare_by_value_not_spelling() {
        assert_eq!(canonical_number("1100"), Some("11e2".into()));
        assert_eq!(canonical_number("1100.00"), canonical_number("1.1e3"));
        assert_eq!(canonical_number("-012.50"), Some("-125e-1".into()));
        assert_eq!(canonical_number("0.000"), Some("0".into()));
        assert_eq!(canonical_number("-0"), Some("0".into()));
        assert_eq!(canonical_number("+7"), Some("7e0".into()));
        assert_eq!(canonical_number(".5"), Some("5e-1".into()));
        assert_eq!(canonical_number("abc"), None);
        assert_eq!(canonical_number("."), None);
        assert_eq!(canonical_number("1e"), None);
        assert!(same_value(&n("4.50"), &n("4.5")));
        assert!(!same_value(&n("4"), &n("5")));
        assert!(!same_value(&n("4"), &s("4")), "types differ");
    }

    #[test]
    fn sets_compare_regardless_of_order_lists_in_order() {
        let a = AttributeValue::Ss(vec!["x".into(), "y".into()]);
        let b = AttributeValue::Ss(vec!["y".into(), "x".into()]);
        assert!(same_value(&a, &b));
        assert!(same_value(
            &AttributeValue::Ns(vec!["1.0".into(), "2".into()]),
            &AttributeValue::Ns(vec!["2".into(), "1".into()])
        ));
        assert!(!same_value(
            &AttributeValue::L(vec![n("1"), n("2")]),
            &AttributeValue::L(vec![n("2"), n("1")])
        ));
        let m1 = AttributeValue::M(item(&[("a", n("1")), ("b", s("x"))]));
        let m2 = AttributeValue::M(item(&[("b", s("x")), ("a", n("1.0"))]));
        assert!(same_value(&m1, &m2));
    }

    #[test]
    fn differing_attributes_lists_changed_missing_and_extra_names() {
        let stored = item(&[("id", s("o")), ("quantity", n("4")), ("total", n("1100"))]);
        let requested = item(&[("id", s("o")), ("quantity", n("5")), ("note", s("x"))]);
        assert_eq!(
            differing_attributes(&stored, &requested, &[]),
            ["note", "quantity", "total"]
        );
        assert_eq!(
            differing_attributes(&stored, &requested, &["note".into(), "total".into()]),
            ["quantity"]
        );
        assert!(differing_attributes(&stored, &stored.clone(), &[]).is_empty());
    }
}
