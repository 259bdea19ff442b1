//! DynamoDB numbers as they are stored: decimal text of up to 38 significant digits.
//! The serde path (`serde_dynamo`) reads a number as `i64`, `u64` or, for anything
//! else, `f64` — which loses digits above 2^53 and cannot say whether a value was an
//! integer. What must be exact (a `Sequence`, a `SweepDueAt` that a condition compares)
//! is read from the text here instead.

/// The value of decimal `text` (`-12`, `7.000`, `1.5E3`) when it is an integer that
/// fits an `i128`; `None` for a fraction, an overflow or anything that is not a number.
pub fn integer(text: &str) -> Option<i128> {
    let d = Decimal::parse(text)?;
    let (whole, fraction) = d.split();
    if fraction.bytes().any(|b| b != b'0') {
        return None;
    }
    d.value_of(whole)
}

/// The integer part of decimal `text` (towards zero), saturated to `i64`: for values
/// that only order or age things, where a fraction does not matter.
pub fn whole_part(text: &str) -> Option<i64> {
    let d = Decimal::parse(text)?;
    let (whole, _) = d.split();
    let saturated = if d.negative { i64::MIN } else { i64::MAX };
    Some(
        d.value_of(whole)
            .map_or(saturated, |v| i64::try_from(v).unwrap_or(saturated)),
    )
}

/// A decimal as sign, digits (without the point) and a power of ten.
struct Decimal {
    negative: bool,
    digits: String,
    exponent: i64,
}

impl Decimal {
    fn parse(text: &str) -> Option<Decimal> {
        let text = text.trim();
        let (negative, rest) = match text.as_bytes().first()? {
            b'-' => (true, &text[1..]),
            b'+' => (false, &text[1..]),
            _ => (false, text),
        };
        let (mantissa, exp) = match rest.find(['e', 'E']) {
            Some(i) => (&rest[..i], rest[i + 1..].parse::<i64>().ok()?),
            None => (rest, 0),
        };
        let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        let all_digits = int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit());
        if (int.is_empty() && frac.is_empty()) || !all_digits {
            return None;
        }
        // Exponents beyond any i128 are overflows; keep the arithmetic below small.
        if !(-1000..=1000).contains(&exp) {
            return None;
        }
        Some(Decimal {
            negative,
            digits: format!("{int}{frac}"),
            exponent: exp - i64::try_from(frac.len()).ok()?,
        })
    }

    /// The digits before the point and those after it.
    fn split(&self) -> (&str, &str) {
        let after = usize::try_from(-self.exponent.min(0)).unwrap_or(usize::MAX);
        let cut = self.digits.len().saturating_sub(after);
        self.digits.split_at(cut)
    }

    /// `whole` × 10^max(exponent, 0), with the sign, if it fits.
    fn value_of(&self, whole: &str) -> Option<i128> {
        let mut value: i128 = 0;
        for b in whole.bytes() {
            value = value.checked_mul(10)?.checked_add(i128::from(b - b'0'))?;
        }
        for _ in 0..self.exponent.max(0) {
            if value == 0 {
                break;
            }
            value = value.checked_mul(10)?;
        }
        Some(if self.negative { -value } else { value })
    }
}

/// Numbers a producer may have written with a fraction (`Decimal(time.time()*1000)`)
/// are read leniently, so that optional metadata never turns a good message into
/// poison: integers exactly, fractions truncated, out-of-range values saturated.
/// (What must be exact is read from the text: [`integer`].)
pub(super) mod lenient {
    use serde::de::{Deserialize, Deserializer, Error, Visitor};
    use std::fmt;

    enum Number {
        Int(i64),
        UInt(u64),
        Float(f64),
    }

    impl<'de> Deserialize<'de> for Number {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V;
            impl Visitor<'_> for V {
                type Value = Number;
                fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    f.write_str("a number")
                }
                fn visit_i64<E: Error>(self, v: i64) -> Result<Number, E> {
                    Ok(Number::Int(v))
                }
                fn visit_u64<E: Error>(self, v: u64) -> Result<Number, E> {
                    Ok(Number::UInt(v))
                }
                fn visit_f64<E: Error>(self, v: f64) -> Result<Number, E> {
                    Ok(Number::Float(v))
                }
            }
            d.deserialize_any(V)
        }
    }

    pub(in crate::schema) fn i64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
        Ok(Option::<Number>::deserialize(d)?.map(|n| match n {
            Number::Int(i) => i,
            Number::UInt(u) => i64::try_from(u).unwrap_or(i64::MAX),
            Number::Float(f) => f as i64,
        }))
    }

    pub(in crate::schema) fn u32<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
        Ok(Option::<Number>::deserialize(d)?.map(|n| match n {
            Number::Int(i) => u32::try_from(i.max(0)).unwrap_or(u32::MAX),
            Number::UInt(u) => u32::try_from(u).unwrap_or(u32::MAX),
            Number::Float(f) => f.max(0.0) as u32,
        }))
    }

    /// A string attribute, or none when the attribute is of another type: for
    /// metadata no message should fail over (its trace context).
    pub(in crate::schema) fn text<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<String>, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Option<String>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any attribute value")
            }
            fn visit_str<E: Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Some(v.to_owned()))
            }
            fn visit_string<E: Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Some(v))
            }
            fn visit_bool<E: Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_i64<E: Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_u64<E: Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_f64<E: Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_bytes<E: Error>(self, _: &[u8]) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_unit<E: Error>(self) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_none<E: Error>(self) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
                d.deserialize_any(V)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Self::Value, A::Error> {
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(None)
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Self::Value, A::Error> {
                while map
                    .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
                    .is_some()
                {}
                Ok(None)
            }
        }
        d.deserialize_any(V)
    }

    /// Only what `serde` alone can read; [`super::integer`] reads `Sequence` exactly
    /// from its text (`OutboxItem::from_item`). Negative values mean "no sequence".
    pub(in crate::schema) fn u64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
        Ok(Option::<Number>::deserialize(d)?.and_then(|n| match n {
            Number::Int(i) => u64::try_from(i).ok(),
            Number::UInt(u) => Some(u),
            Number::Float(_) => None,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_are_read_exactly_in_every_notation_dynamodb_producers_use() {
        assert_eq!(integer("9007199254740993"), Some(9_007_199_254_740_993));
        assert_eq!(integer("9007199254740993.000"), Some(9_007_199_254_740_993));
        assert_eq!(integer("9.007199254740993E15"), Some(9_007_199_254_740_993));
        assert_eq!(integer("-12"), Some(-12));
        assert_eq!(integer("1.5E3"), Some(1500));
        assert_eq!(integer("0.0"), Some(0));
        assert_eq!(integer("0E+900"), Some(0));
        assert_eq!(
            integer("18446744073709551616"),
            Some(18_446_744_073_709_551_616)
        );
    }

    #[test]
    fn fractions_overflows_and_non_numbers_are_not_integers() {
        for text in [
            "1.5",
            "1700000000000.5",
            "1E-3",
            "1E+200",
            "",
            ".",
            "1x",
            "--1",
        ] {
            assert_eq!(integer(text), None, "{text}");
        }
    }

    #[test]
    fn the_whole_part_truncates_towards_zero_and_saturates() {
        assert_eq!(whole_part("1700000000000.5"), Some(1_700_000_000_000));
        assert_eq!(whole_part("-2.9"), Some(-2));
        assert_eq!(whole_part("0.25"), Some(0));
        assert_eq!(whole_part("1E+30"), Some(i64::MAX));
        assert_eq!(whole_part("-1E+30"), Some(i64::MIN));
        assert_eq!(whole_part("abc"), None);
    }
}
