//! The dimensions of the sweep grid: one enum for every place that names, parses, records or
//! shows a dimension.
//!
//! A dimension knows its name (the column, the record key, the setting-id key), its flag, its
//! config key under `sweep:`, whether records always name it, its default, how its value list
//! is parsed and whether it varies retrieval. [`Setting`](super::grid::Setting) keeps a typed
//! field per dimension for the engine; everything that loops over dimensions walks
//! [`Dim::ALL`]. Adding a dimension is a variant here, its field in `Setting` (with the two
//! arms of `Setting::get`/`Setting::set`), its flag in `SweepArgs::dim_flags` and its key in
//! `SweepConfig` (the serde and clap shapes); tests hold those to [`Dim::ALL`].
//!
//! A dimension may also be **ordered** for certification ([`Dim::trend`]): it says, per rate
//! limit, which way the rate moves as its value rises, everything else fixed. minScore is one
//! (a higher floor can only turn an answer into an early refusal); a reranker score floor would
//! be another, declared here alone. The certifier walks chains of settings along it.

use std::fmt;

use serde::Serialize;

use super::choices::{Format, Order, Rewrite};
use super::limit::Limit;
use super::values::{self as grid, Decimal, DEFAULT_PROFILE};

/// Which way a rate moves as an ordered dimension's value rises, everything else fixed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trend {
    Rises,
    Falls,
}

/// One dimension of the grid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Dim {
    MinScore,
    K,
    Order,
    Format,
    Rewrite,
    Chat,
    Temperature,
    Embedder,
    ChunkTokens,
}

/// The value types of the dimensions: the enum [`Value`], and each type into and out of it.
macro_rules! value_types {
    ($($(#[$doc:meta])* $variant:ident($t:ty)),* $(,)?) => {
        /// One value of one dimension: the type of its [`Setting`](super::grid::Setting)
        /// field. Serialized as that field is (results.json's setting maps), shown as
        /// [`Setting::values`](super::grid::Setting::values) shows it.
        #[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
        #[serde(untagged)]
        pub enum Value {
            $($(#[$doc])* $variant($t),)*
        }

        $(
            impl From<$t> for Value {
                fn from(v: $t) -> Self {
                    Value::$variant(v)
                }
            }

            impl FromValue<'_> for $t {
                fn from_value(v: &Value) -> Option<Self> {
                    match v {
                        Value::$variant(x) => Some(x.clone()),
                        _ => None,
                    }
                }
            }
        )*
    };
}

/// A typed value of some dimension, as [`Grid`](super::grid::Grid)'s accessors give it.
pub trait FromValue<'a>: Sized {
    fn from_value(v: &'a Value) -> Option<Self>;
}

value_types!(
    Decimal(Decimal),
    Whole(usize),
    Order(Order),
    Format(Format),
    Rewrite(Rewrite),
    /// A profile name.
    Name(String),
    /// A decimal, or `None`: the default (each profile's own temperature).
    OptDecimal(Option<Decimal>),
    /// A whole number, or `None`: the default (`corpus.max_chunk_tokens`).
    OptWhole(Option<usize>),
);

impl Value {
    /// The value as a number, for the ordered dimensions' chains; `None` for a name or a
    /// default.
    pub fn number(&self) -> Option<f64> {
        match self {
            Value::Decimal(d) | Value::OptDecimal(Some(d)) => Some(d.to_f64()),
            Value::Whole(n) | Value::OptWhole(Some(n)) => Some(*n as f64),
            _ => None,
        }
    }
}

impl fmt::Display for Value {
    /// The value as tables, CSV files and setting ids write it; an optional value at its
    /// default is `default`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Decimal(d) | Value::OptDecimal(Some(d)) => d.fmt(f),
            Value::Whole(n) | Value::OptWhole(Some(n)) => n.fmt(f),
            Value::Order(o) => o.fmt(f),
            Value::Format(x) => x.fmt(f),
            Value::Rewrite(r) => r.fmt(f),
            Value::Name(s) => f.write_str(s),
            Value::OptDecimal(None) | Value::OptWhole(None) => f.write_str(DEFAULT_PROFILE),
        }
    }
}

impl<'a> FromValue<'a> for &'a str {
    fn from_value(v: &'a Value) -> Option<Self> {
        match v {
            Value::Name(s) => Some(s),
            _ => None,
        }
    }
}

impl Dim {
    /// Every dimension, in column order: the order of CSV columns, setting ids and records,
    /// and of the grid's loops (the last varies fastest).
    pub const ALL: [Dim; 9] = [
        Dim::MinScore,
        Dim::K,
        Dim::Order,
        Dim::Format,
        Dim::Rewrite,
        Dim::Chat,
        Dim::Temperature,
        Dim::Embedder,
        Dim::ChunkTokens,
    ];

    /// How many dimensions there are.
    pub const COUNT: usize = Dim::ALL.len();

    /// Its name: the column of tables and CSV files, the key of results.json's setting maps
    /// and of setting ids (`min_score=0.3,k=4`).
    pub fn name(self) -> &'static str {
        match self {
            Dim::MinScore => "min_score",
            Dim::K => "k",
            Dim::Order => "order",
            Dim::Format => "format",
            Dim::Rewrite => "rewrite",
            Dim::Chat => "chat",
            Dim::Temperature => "temperature",
            Dim::Embedder => "embedder",
            Dim::ChunkTokens => "chunk_tokens",
        }
    }

    /// The dimension named `name`, if any.
    pub fn from_name(name: &str) -> Option<Dim> {
        Dim::ALL.into_iter().find(|d| d.name() == name)
    }

    /// Its flag of `rageval sweep`: `--min-score`.
    pub fn flag(self) -> &'static str {
        match self {
            Dim::MinScore => "--min-score",
            Dim::K => "--k",
            Dim::Order => "--order",
            Dim::Format => "--format",
            Dim::Rewrite => "--rewrite",
            Dim::Chat => "--chat",
            Dim::Temperature => "--temperature",
            Dim::Embedder => "--embedder",
            Dim::ChunkTokens => "--chunk-tokens",
        }
    }

    /// Its key under `sweep:` in `rageval.yaml`: its name.
    pub fn config_key(self) -> &'static str {
        self.name()
    }

    /// Whether records and CSV files always name it; the others only when some setting moves
    /// them off their default, so results of sweeps without them stay byte-identical.
    pub fn always_recorded(self) -> bool {
        matches!(
            self,
            Dim::MinScore | Dim::K | Dim::Order | Dim::Format | Dim::Rewrite
        )
    }

    /// Whether it varies retrieval (an index per value): the embedder and the chunk size.
    pub fn is_retrieval(self) -> bool {
        matches!(self, Dim::Embedder | Dim::ChunkTokens)
    }

    /// Which way `limit`'s rate moves as this dimension's value rises, when the pipeline
    /// makes it so; `None` for a dimension that is not ordered, or a limit it does not order.
    /// Raising minScore can only turn a sent prompt into an early refusal: answers, and with
    /// them unwanted answers, wrong answers and successful injections, can only become
    /// refusals, and false refusals can only grow.
    pub fn trend(self, limit: Limit) -> Option<Trend> {
        match (self, limit) {
            (Dim::MinScore, Limit::MaxFalseRefusalRate) => Some(Trend::Rises),
            (
                Dim::MinScore,
                Limit::MaxUnwantedAnswerRate
                | Limit::MaxWrongAnswerRate
                | Limit::MaxAttackSuccessRate,
            ) => Some(Trend::Falls),
            _ => None,
        }
    }

    /// Whether it orders some rate ([`Dim::trend`]).
    pub fn is_ordered(self) -> bool {
        Limit::ALL.into_iter().any(|l| self.trend(l).is_some())
    }

    /// Its value when neither a flag nor the config names one; `None` for minScore and k,
    /// which every grid names and every setting id shows.
    pub fn default_value(self) -> Option<Value> {
        Some(match self {
            Dim::MinScore | Dim::K => return None,
            Dim::Order => Value::Order(Order::default()),
            Dim::Format => Value::Format(Format::default()),
            Dim::Rewrite => Value::Rewrite(Rewrite::default()),
            Dim::Chat | Dim::Embedder => Value::Name(DEFAULT_PROFILE.to_string()),
            Dim::Temperature => Value::OptDecimal(None),
            Dim::ChunkTokens => Value::OptWhole(None),
        })
    }

    /// Parse a value list in the flag syntax (`0.1..0.5`, `1,2,4`, `score,edge`,
    /// `default,fast`); the error says what is wrong, without the flag.
    pub fn parse(self, spec: &str) -> Result<Vec<Value>, String> {
        fn into<T: Into<Value>>(v: Vec<T>) -> Vec<Value> {
            v.into_iter().map(Into::into).collect()
        }
        Ok(match self {
            Dim::MinScore => into(grid::parse_min_scores(spec)?),
            Dim::K => into(grid::parse_ks(spec)?),
            Dim::Order => into(grid::parse_names::<Order>(spec)?),
            Dim::Format => into(grid::parse_names::<Format>(spec)?),
            Dim::Rewrite => into(grid::parse_names::<Rewrite>(spec)?),
            Dim::Chat | Dim::Embedder => into(grid::parse_profiles(spec)?),
            Dim::Temperature => into(
                grid::parse_temperatures(spec)?
                    .into_iter()
                    .map(Some)
                    .collect(),
            ),
            Dim::ChunkTokens => into(
                grid::parse_chunk_tokens(spec)?
                    .into_iter()
                    .map(Some)
                    .collect(),
            ),
        })
    }

    /// The values of a spec that may be absent: absent, the default alone.
    pub fn values(self, spec: Option<&str>) -> Result<Vec<Value>, String> {
        match (spec, self.default_value()) {
            (Some(spec), _) => self.parse(spec),
            (None, Some(default)) => Ok(vec![default]),
            (None, None) => Err(format!("`{}` needs values", self.name())),
        }
    }

    /// One value as [`Value`]'s `Display` wrote it (a record's setting map); `default` is no
    /// value of an optional dimension here: a record writes that as `null`.
    pub fn value_from_text(self, text: &str) -> Result<Value, String> {
        let whole = || {
            text.parse::<usize>()
                .map_err(|_| format!("`{}` is `{text}`, not a whole number", self.name()))
        };
        Ok(match self {
            Dim::MinScore => Value::Decimal(text.parse()?),
            Dim::K => Value::Whole(whole()?),
            Dim::Order => Value::Order(text.parse()?),
            Dim::Format => Value::Format(text.parse()?),
            Dim::Rewrite => Value::Rewrite(text.parse()?),
            Dim::Chat | Dim::Embedder => Value::Name(text.to_string()),
            Dim::Temperature => Value::OptDecimal(Some(text.parse()?)),
            Dim::ChunkTokens => Value::OptWhole(Some(whole()?)),
        })
    }
}

#[cfg(test)]
impl Dim {
    /// A spec of one value off the default, for tests that move every dimension.
    pub fn example(self) -> &'static str {
        match self {
            Dim::MinScore | Dim::Temperature => "0.5",
            Dim::K | Dim::ChunkTokens => "7",
            Dim::Order => "edge",
            Dim::Format => "tagged",
            Dim::Rewrite => "model",
            Dim::Chat | Dim::Embedder => "fast",
        }
    }
}

impl fmt::Display for Dim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocab::grid::Setting;

    #[test]
    fn all_is_every_variant_once_in_declaration_order() {
        for (i, d) in Dim::ALL.into_iter().enumerate() {
            assert_eq!(d as usize, i, "{d:?}");
            assert_eq!(Dim::from_name(d.name()), Some(d));
        }
    }

    #[test]
    fn name_flag_and_key_say_the_same() {
        for d in Dim::ALL {
            assert_eq!(
                d.flag(),
                format!("--{}", d.name().replace('_', "-")),
                "{d:?}"
            );
            assert_eq!(d.config_key(), d.name());
        }
    }

    #[test]
    fn values_round_trip_through_their_text_and_a_setting() {
        let mut s = Setting::new("0.3".parse().unwrap(), 4);
        for d in Dim::ALL {
            if let Some(default) = d.default_value() {
                assert!(d.is_default_in(&s), "{d:?}");
                assert_eq!(d.values(None).unwrap(), [default]);
            }
            let spec = d.example();
            let [v] = <[Value; 1]>::try_from(d.parse(spec).unwrap()).unwrap();
            assert_eq!(v.to_string(), spec);
            assert_eq!(d.value_from_text(spec).unwrap(), v);
            s.set(d, v.clone());
            assert_eq!(s.get(d), v);
            assert!(!d.is_default_in(&s), "{d:?}");
        }
        assert_eq!(
            s.id(),
            "min_score=0.5,k=7,order=edge,format=tagged,rewrite=model,chat=fast,temperature=0.5,embedder=fast,chunk_tokens=7"
        );
        assert!(Dim::K.values(None).is_err());
        assert_eq!(
            Dim::ChunkTokens.value_from_text("x").unwrap_err(),
            "`chunk_tokens` is `x`, not a whole number"
        );
    }
}
