//! The `prompt` section of `rageval.yaml`, with its documented defaults.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::REFUSAL;

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct PromptConfig {
    /// The sentence the model must reply when the passages do not answer.
    pub refusal: String,
    /// Demand the exact sentence instead of forgiving case, whitespace, curly apostrophes and a
    /// missing final period.
    pub strict_refusal: bool,
    /// The system message, with `{refusal}` (and `{context}`, `{question}`); unset: the
    /// chapter's four rules.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    /// The user message, with `{context}`, `{question}` (and `{refusal}`); unset:
    /// `Context:\n{context}\n\nQuestion: {question}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// One passage of the numbered format, with `{n}`, `{source}`, `{heading}`, `{text}`;
    /// unset: `[{n}] (source: {source}#{heading}) {text}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub passage: Option<String>,
    /// Regular expressions (case-insensitive): a reply one of them matches is a refusal.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub refusal_patterns: Vec<String>,
}

impl Default for PromptConfig {
    fn default() -> Self {
        PromptConfig {
            refusal: REFUSAL.to_string(),
            strict_refusal: false,
            system: None,
            user: None,
            passage: None,
            refusal_patterns: Vec::new(),
        }
    }
}

impl PromptConfig {
    /// The section's own check: a refusal, templates that parse, refusal patterns that compile.
    pub fn check(&self) -> crate::base::problem::Checked {
        use crate::base::problem::Problem;
        if self.refusal.trim().is_empty() {
            return Err(Problem::new("refusal", "is empty"));
        }
        if let Err(e) = self.prompt() {
            return Err(Problem::new(e.field, e.error.to_string()));
        }
        if let Err((i, msg)) = crate::adapters::prompt::RefusalPatterns::new(&self.refusal_patterns)
        {
            return Err(Problem::new("refusal_patterns", msg).index(i));
        }
        Ok(())
    }

    /// The templates, parsed.
    pub fn prompt(
        &self,
    ) -> Result<crate::adapters::prompt::Prompt, crate::adapters::prompt::TemplateFieldError> {
        crate::adapters::prompt::Prompt::with_templates(
            &self.refusal,
            self.system.as_deref(),
            self.user.as_deref(),
            self.passage.as_deref(),
        )
    }
}
