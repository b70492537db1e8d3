//! Deserializers for the "one value or a list" fields of our YAML files.
//!
//! serde's `untagged` enums buffer the value and, when no variant fits, report "data did not
//! match any variant" at the parent field. This visitor takes the value as it comes, so a wrong
//! kind is reported at the field itself (or at the list item) with the kind expected in words.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserializer, SeqAccess, Unexpected, Visitor};

/// A field's value: one scalar, or a list of `L`. A field that takes no number reads with
/// `N` = [`NoNumber`], so that its `Number` variant cannot be built and needs no match arm.
pub enum Either<L, N = serde_yaml::Number> {
    Text(String),
    Number(N),
    Many(Vec<L>),
}

/// What a field does with a number: keep it (`serde_yaml::Number`) or refuse it
/// ([`NoNumber`]).
pub trait Numbers: Sized {
    fn number<E: de::Error>(
        n: serde_yaml::Number,
        shown: Unexpected<'_>,
        expecting: &'static str,
    ) -> Result<Self, E>;
}

impl Numbers for serde_yaml::Number {
    fn number<E: de::Error>(
        n: serde_yaml::Number,
        _: Unexpected<'_>,
        _: &'static str,
    ) -> Result<Self, E> {
        Ok(n)
    }
}

/// The number of a field that takes none: there is no value of this type, so a number is an
/// error naming what the field takes.
pub enum NoNumber {}

impl Numbers for NoNumber {
    fn number<E: de::Error>(
        _: serde_yaml::Number,
        shown: Unexpected<'_>,
        expecting: &'static str,
    ) -> Result<Self, E> {
        Err(E::invalid_type(shown, &expecting))
    }
}

struct EitherVisitor<L, N> {
    expecting: &'static str,
    _item: PhantomData<(L, N)>,
}

impl<'de, L: de::Deserialize<'de>, N: Numbers> Visitor<'de> for EitherVisitor<L, N> {
    type Value = Either<L, N>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.expecting)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Either::Text(v.to_string()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        N::number(v.into(), Unexpected::Unsigned(v), self.expecting).map(Either::Number)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        N::number(v.into(), Unexpected::Signed(v), self.expecting).map(Either::Number)
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        N::number(v.into(), Unexpected::Float(v), self.expecting).map(Either::Number)
    }

    /// `field: ~` or `field:` with nothing: an empty list, as if the field were left out.
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Either::Many(Vec::new()))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Either::Many(items))
    }
}

/// Read a field that is a string (or, with `N` = `serde_yaml::Number`, a number) or a list of
/// `L`; `expecting` names what is accepted, in words.
pub fn either<'de, D, L, N>(d: D, expecting: &'static str) -> Result<Either<L, N>, D::Error>
where
    D: Deserializer<'de>,
    L: de::Deserialize<'de>,
    N: Numbers,
{
    d.deserialize_any(EitherVisitor {
        expecting,
        _item: PhantomData,
    })
}

/// An optional whole number from `min` to `max`: a number outside it, of any size (past
/// `u64` too), or a fraction is refused with the range (`must be from 1 to 1000000{hint}, got
/// 1000000000000`), not with the Rust type it did not fit.
pub fn whole_in<'de, D: Deserializer<'de>>(
    d: D,
    min: u64,
    max: u64,
    hint: &'static str,
) -> Result<Option<u64>, D::Error> {
    struct Whole {
        min: u64,
        max: u64,
        hint: &'static str,
    }
    impl Whole {
        fn out<E: de::Error>(&self, got: impl fmt::Display) -> E {
            E::custom(format!(
                "must be from {} to {}{}, got {got}",
                self.min, self.max, self.hint
            ))
        }
        fn check<E: de::Error>(&self, v: i128) -> Result<Option<u64>, E> {
            match u64::try_from(v) {
                Ok(n) if (self.min..=self.max).contains(&n) => Ok(Some(n)),
                _ => Err(self.out(v)),
            }
        }
    }
    impl<'de> Visitor<'de> for Whole {
        type Value = Option<u64>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "a whole number from {} to {}", self.min, self.max)
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
            self.check(i128::from(v))
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
            self.check(i128::from(v))
        }
        fn visit_u128<E: de::Error>(self, v: u128) -> Result<Self::Value, E> {
            Err(self.out(v))
        }
        fn visit_i128<E: de::Error>(self, v: i128) -> Result<Self::Value, E> {
            self.check(v)
        }
        fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
            Err(self.out(v))
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_any(self)
        }
    }
    d.deserialize_any(Whole { min, max, hint })
}

#[cfg(test)]
mod tests {
    use crate::adapters::http::config::BaseUrls;

    /// Every kind of YAML value a `base_url` can be given: a URL or a list of them reads,
    /// anything else is one error naming the field's kinds, never a panic.
    #[test]
    fn base_urls_read_any_yaml_without_a_panic() {
        let read = |yaml: &str| serde_yaml::from_str::<BaseUrls>(yaml).map_err(|e| e.to_string());
        let many = |urls: &[&str]| Ok(BaseUrls::Many(urls.iter().map(|u| u.to_string()).collect()));
        assert_eq!(read("http://a/v1"), Ok(BaseUrls::One("http://a/v1".into())));
        assert_eq!(
            read("[http://a/v1, 'http://b/v1']"),
            many(&["http://a/v1", "http://b/v1"])
        );
        assert_eq!(read("~"), many(&[]), "null: as if left out");
        assert_eq!(read("''"), Ok(BaseUrls::One(String::new())));
        // serde_yaml reads a scalar list item as its text; the config check then refuses
        // each for not starting with http:// (tests/server_lists_and_rate_limits.rs).
        assert_eq!(read("[1, ~]"), many(&["1", "~"]));
        let expected = "expected a URL or a list of URLs";
        for (yaml, error) in [
            ("8787", "integer `8787`"),
            ("-1", "integer `-1`"),
            ("1.5", "floating point `1.5`"),
            (".nan", "floating point `NaN`"),
            (
                "99999999999999999999999",
                "integer `99999999999999999999999` as u128",
            ),
            ("true", "boolean `true`"),
            ("{a: b}", "map"),
            ("!tag x", "enum"),
        ] {
            assert_eq!(
                read(yaml),
                Err(format!("invalid type: {error}, {expected}")),
                "{yaml}"
            );
        }
        assert_eq!(
            read("[[http://a]]"),
            Err(".[0]: invalid type: sequence, expected a string at line 1 column 2".into())
        );
    }
}
