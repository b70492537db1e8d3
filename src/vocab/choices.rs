//! The named values of the sweep dimensions that are choices rather than numbers: the
//! passage order, the passage format and the follow-up rewrite. Their behaviour lives with
//! the adapters that use them (`prompt`, `rewrite`); the names live here, below everything
//! that reads or writes a setting.

use serde::{Deserialize, Serialize};

use crate::base::text_enum;

/// The order in which the retrieved passages are sent (and numbered).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Order {
    /// Best first.
    #[default]
    Score,
    /// Best first, second best last, weakest in the middle ("lost in the middle").
    Edge,
}

/// How passages are written in the `Context:` block.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// `[n] (source: file.md#Heading) text`
    #[default]
    Numbered,
    /// `<passage n="n" source="file.md#Heading" trust="untrusted">text</passage>`, with any
    /// passage tag removed from the text so a document cannot close its own tag.
    Tagged,
}

/// How a follow-up question is made standalone before retrieval.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Rewrite {
    #[default]
    None,
    Heuristic,
    Model,
}

text_enum!(Order { Score => "score", Edge => "edge" });
text_enum!(Format { Numbered => "numbered", Tagged => "tagged" });
text_enum!(Rewrite { None => "none", Heuristic => "heuristic", Model => "model" });
