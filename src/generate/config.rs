//! The `generate` section of `rageval.yaml`, with its documented defaults (docs/generate.md).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{
    ANSWERABLE_PROMPT, FALSE_PREMISE_PROMPT, OFF_TOPIC_PROMPT, PREMISE_PROMPT, UNANSWERABLE_PROMPT,
    VERIFY_PROMPT,
};

/// How `rageval generate` writes and verifies questions.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct GenerateConfig {
    /// The chat model that writes and verifies the questions: a key of `models:`. Unset (or
    /// `default`): the `chat:` section.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Passages the configured retriever gives the verifier for each unanswerable candidate.
    pub verify_k: usize,
    /// A candidate whose embedding is at least this close (cosine) to a kept question, or to a
    /// question of the existing sets, is a duplicate.
    pub max_similarity: f64,
    /// Candidates tried at most per class (answerable, near-miss, off-topic, false-premise). Unset: four
    /// times the number asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_candidates: Option<usize>,
    /// Send each reply's JSON Schema as `response_format` (structured output). `false` for a
    /// server that rejects it.
    pub structured_output: bool,
    /// One user message asking for an answerable question and its answer, with `{passage}`
    /// and `{source}`. Unset: the built-in prompt (docs/generate.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answerable_prompt: Option<String>,
    /// One user message asking for a near-miss unanswerable question, with `{passage}` and
    /// `{source}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unanswerable_prompt: Option<String>,
    /// One user message asking for an off-topic question, with `{passage}` and `{source}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub off_topic_prompt: Option<String>,
    /// One user message asking for a question that takes for granted a fact the passage
    /// contradicts, with the premise and the passage's truth, with `{passage}` and `{source}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub false_premise_prompt: Option<String>,
    /// One user message asking whether retrieved passages support the premise of a
    /// false-premise question, with `{question}`, `{premise}` and `{passages}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub premise_prompt: Option<String>,
    /// One user message asking whether retrieved passages answer a question, with
    /// `{question}` and `{passages}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verify_prompt: Option<String>,
}

/// The default `generate.verify_k`.
pub const VERIFY_K: usize = 8;

/// The default `generate.max_similarity`.
pub const MAX_SIMILARITY: f64 = 0.95;

/// The most `generate.verify_k` may be.
pub const MAX_VERIFY_K: usize = 100;

impl Default for GenerateConfig {
    fn default() -> Self {
        GenerateConfig {
            model: None,
            verify_k: VERIFY_K,
            max_similarity: MAX_SIMILARITY,
            max_candidates: None,
            structured_output: true,
            answerable_prompt: None,
            unanswerable_prompt: None,
            off_topic_prompt: None,
            false_premise_prompt: None,
            premise_prompt: None,
            verify_prompt: None,
        }
    }
}

impl GenerateConfig {
    /// The four templates, parsed; an unknown placeholder names its field.
    pub fn prompts(&self) -> Result<super::Prompts, super::PromptFieldError> {
        use crate::adapters::template::{Template, GENERATE_SLOTS, PREMISE_SLOTS, VERIFY_SLOTS};
        let parse = |field: &'static str, text: &Option<String>, default: &str, slots| {
            Template::parse(text.as_deref().unwrap_or(default), slots)
                .map_err(|error| super::PromptFieldError { field, error })
        };
        Ok(super::Prompts {
            answerable: parse(
                "answerable_prompt",
                &self.answerable_prompt,
                ANSWERABLE_PROMPT,
                GENERATE_SLOTS,
            )?,
            near_miss: parse(
                "unanswerable_prompt",
                &self.unanswerable_prompt,
                UNANSWERABLE_PROMPT,
                GENERATE_SLOTS,
            )?,
            off_topic: parse(
                "off_topic_prompt",
                &self.off_topic_prompt,
                OFF_TOPIC_PROMPT,
                GENERATE_SLOTS,
            )?,
            false_premise: parse(
                "false_premise_prompt",
                &self.false_premise_prompt,
                FALSE_PREMISE_PROMPT,
                GENERATE_SLOTS,
            )?,
            premise: parse(
                "premise_prompt",
                &self.premise_prompt,
                PREMISE_PROMPT,
                PREMISE_SLOTS,
            )?,
            verify: parse(
                "verify_prompt",
                &self.verify_prompt,
                VERIFY_PROMPT,
                VERIFY_SLOTS,
            )?,
        })
    }

    /// The section's own check: the templates parse and the numbers are in range.
    pub fn check(&self) -> crate::base::problem::Checked {
        use crate::base::problem::Problem;
        if let Err(e) = self.prompts() {
            return Err(Problem::new(e.field, e.error.to_string()));
        }
        if self.verify_k == 0 || self.verify_k > MAX_VERIFY_K {
            return Err(Problem::new(
                "verify_k",
                format!(
                    "must be from 1 to {MAX_VERIFY_K} passages, got {}",
                    self.verify_k
                ),
            ));
        }
        if !(self.max_similarity > 0.0 && self.max_similarity <= 1.0) {
            return Err(Problem::new(
                "max_similarity",
                format!(
                    "must be a cosine above 0 and at most 1, got {}",
                    self.max_similarity
                ),
            ));
        }
        if let Some(n) = self.max_candidates {
            if n == 0 || n > super::MAX_QUESTIONS * 4 {
                return Err(Problem::new(
                    "max_candidates",
                    format!(
                        "must be from 1 to {} candidates, got {n}",
                        super::MAX_QUESTIONS * 4
                    ),
                ));
            }
        }
        Ok(())
    }
}
