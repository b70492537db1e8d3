//! The `scan` section of `rageval.yaml`, with its documented defaults.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The prompt-injection tripwire (`rageval scan`, and flagged passages in reports).
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct ScanConfig {
    /// Regular expressions, matched case-insensitively against each chunk's heading and text.
    pub patterns: Vec<String>,
}

impl Default for ScanConfig {
    fn default() -> Self {
        ScanConfig {
            patterns: crate::adapters::scan::Scanner::default_patterns(),
        }
    }
}

impl ScanConfig {
    /// The section's own check: every pattern compiles.
    pub fn check(&self) -> crate::base::problem::Checked {
        crate::adapters::scan::Scanner::new(&self.patterns)
            .map(|_| ())
            .map_err(|msg| crate::base::problem::Problem::new("patterns", msg))
    }
}
