//! The `history:` section of `rageval.yaml`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::base::problem::{Checked, Problem};

/// Where every sweep appends its line (docs/history.md).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct HistoryConfig {
    /// The history file, relative to the config file. Default: `reports/history.jsonl`.
    pub file: String,
    /// Append a line for every sweep (`sweep --no-history` turns it off for one). Default: true.
    pub enabled: bool,
}

/// The default history file.
pub const DEFAULT_FILE: &str = "reports/history.jsonl";

impl Default for HistoryConfig {
    fn default() -> Self {
        HistoryConfig {
            file: DEFAULT_FILE.to_string(),
            enabled: true,
        }
    }
}

impl HistoryConfig {
    /// A file name that is not empty, when sweeps append to it.
    pub fn check(&self) -> Checked {
        if self.enabled && self.file.trim().is_empty() {
            return Err(Problem::new(
                "file",
                "is empty: name a file, or set `enabled: false`",
            ));
        }
        Ok(())
    }
}
