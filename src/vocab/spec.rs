//! A dimension's values as the config file writes them: a list, one value, or the text of a
//! flag (`0.1..0.5`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A value list as YAML may write it: `"0.1..0.5"`, `0.3` or `[0.1, 0.2]`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum ValueSpec {
    Text(String),
    Number(#[schemars(with = "f64")] serde_yaml::Number),
    List(#[schemars(with = "Vec<f64>")] Vec<serde_yaml::Number>),
}

impl<'de> Deserialize<'de> for ValueSpec {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use crate::base::yaml_de::{either, Either};
        Ok(
            match either(
                d,
                "a number, a list of numbers, or a string like \"0.1..0.5\" or \"1,2,4\"",
            )? {
                Either::Text(s) => ValueSpec::Text(s),
                Either::Number(n) => ValueSpec::Number(n),
                Either::Many(v) => ValueSpec::List(v),
            },
        )
    }
}

impl ValueSpec {
    /// The spec in the flag syntax.
    pub fn to_spec(&self) -> String {
        match self {
            ValueSpec::Text(s) => s.clone(),
            ValueSpec::Number(n) => n.to_string(),
            ValueSpec::List(v) => v
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(","),
        }
    }
}

/// A list of names as YAML may write it: `"score,edge"` or `[score, edge]`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum NameSpec {
    Text(String),
    List(Vec<String>),
}

impl<'de> Deserialize<'de> for NameSpec {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use crate::base::yaml_de::{either, Either, NoNumber};
        match either::<_, _, NoNumber>(
            d,
            "a name, a comma-separated string of names, or a list of names",
        )? {
            Either::Text(s) => Ok(NameSpec::Text(s)),
            Either::Many(v) => Ok(NameSpec::List(v)),
        }
    }
}

impl NameSpec {
    /// The spec in the flag syntax.
    pub fn to_spec(&self) -> String {
        match self {
            NameSpec::Text(s) => s.clone(),
            NameSpec::List(v) => v.join(","),
        }
    }
}
