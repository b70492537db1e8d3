//! Deserializers for the "one value or a list" fields of our YAML files.
//!
//! serde's `untagged` enums buffer the value and, when no variant fits, report "data did not
//! match any variant" at the parent field. This visitor takes the value as it comes, so a wrong
//! kind is reported at the field itself (or at the list item) with the kind expected in words.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserializer, SeqAccess, Unexpected, Visitor};

/// A field's value: one scalar, or a list of `L`.
pub enum Either<L> {
    Text(String),
    Number(serde_yaml::Number),
    Many(Vec<L>),
}

struct EitherVisitor<L> {
    expecting: &'static str,
    numbers: bool,
    _item: PhantomData<L>,
}

impl<L> EitherVisitor<L> {
    fn number<E: de::Error>(
        &self,
        n: serde_yaml::Number,
        shown: Unexpected<'_>,
    ) -> Result<Either<L>, E> {
        if self.numbers {
            Ok(Either::Number(n))
        } else {
            Err(E::invalid_type(shown, &self.expecting))
        }
    }
}

impl<'de, L: de::Deserialize<'de>> Visitor<'de> for EitherVisitor<L> {
    type Value = Either<L>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.expecting)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Either::Text(v.to_string()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        self.number(v.into(), Unexpected::Unsigned(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        self.number(v.into(), Unexpected::Signed(v))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        self.number(v.into(), Unexpected::Float(v))
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

/// Read a field that is a string (or, with `numbers`, a number) or a list of `L`; `expecting`
/// names what is accepted, in words.
pub fn either<'de, D, L>(
    d: D,
    expecting: &'static str,
    numbers: bool,
) -> Result<Either<L>, D::Error>
where
    D: Deserializer<'de>,
    L: de::Deserialize<'de>,
{
    d.deserialize_any(EitherVisitor {
        expecting,
        numbers,
        _item: PhantomData,
    })
}
