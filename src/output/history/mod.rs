//! The history of sweeps: one JSON line per sweep appended to `reports/history.jsonl`
//! (docs/history.md), what `rageval history` charts and the gate's trend alarm tests.
//!
//! [`Entry`] is the line, written and read by the same type; [`file`] appends a line in one
//! write and reads the file as a stream, keeping only what its caller asks for; [`view`] and
//! [`page`] render entries for people and programs. Nothing here rewrites the file.

pub mod config;
pub mod file;
pub mod page;
pub mod view;

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

use crate::base::git::Checkout;
use crate::output::report::Results;
use crate::vocab::call::{CallRecord, Pricing};

/// The schema of a line; a reader skips (with a warning) a line of any other.
pub const SCHEMA: &str = "rageval.history/1";

/// One sweep, as one line of the history file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// [`SCHEMA`].
    pub schema: String,
    /// When the sweep finished: UTC, RFC 3339, whole seconds.
    pub time: String,
    /// `HEAD` of the repository the config is in; null outside one or without `git`.
    pub commit: Option<String>,
    /// Whether tracked files differed from `commit`; null when `commit` is.
    pub dirty: Option<bool>,
    pub tool_version: String,
    /// results.json's `identity.config_digest`: equal digests, the same effective settings.
    pub config_digest: String,
    /// sha256 over the questions asked, in order: id, text, class, expectations, earlier turns
    /// and attack (not tags). Equal digests: the same questions, graded the same way.
    pub questions_digest: String,
    /// sha256 of the results.json the sweep wrote, byte for byte: which results these are.
    pub results_digest: String,
    /// Where that results.json was written, as the sweep named it.
    pub results: String,
    /// Questions in the sweep, and of them answerable and unanswerable.
    pub questions: usize,
    pub answerable: usize,
    pub unanswerable: usize,
    /// The recommended setting's id; null when none met the limits.
    pub recommended: Option<String>,
    /// Whether the recommended setting is certified at `confidence`.
    pub certified: bool,
    /// `recommend.confidence`; 0: no certification.
    pub confidence: f64,
    /// Tokens of the calls this sweep made (the response cache's answers cost nothing).
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// What those calls cost at the configured prices, in `currency`.
    pub cost: f64,
    pub currency: String,
    /// Every setting by id (`min_score=0.3,k=1`), in grid order.
    pub settings: IndexMap<String, SettingEntry>,
}

/// One setting's counts and rates in a sweep, as `results.json`'s statistics count them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SettingEntry {
    pub answerable: usize,
    pub unanswerable: usize,
    pub answer: usize,
    pub early_refusal: usize,
    pub model_refusal: usize,
    pub false_refusal: usize,
    pub unwanted_answer: usize,
    pub wrong_answer: usize,
    pub error: usize,
    /// false_refusal / answerable, unwanted_answer / unanswerable, wrong_answer / answerable;
    /// null without a question to divide by.
    pub false_refusal_rate: Option<f64>,
    pub unwanted_answer_rate: Option<f64>,
    pub wrong_answer_rate: Option<f64>,
    /// What a production system would spend at this setting, per question and in all.
    pub prompt_tokens_per_question: f64,
    pub cost: f64,
}

/// The rates a history follows: each with its count and the count it is a share of.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Rate {
    UnwantedAnswerRate,
    FalseRefusalRate,
    WrongAnswerRate,
}

crate::base::text_enum!(Rate {
    UnwantedAnswerRate => "unwanted_answer_rate",
    FalseRefusalRate => "false_refusal_rate",
    WrongAnswerRate => "wrong_answer_rate"
});

impl Rate {
    pub const ALL: [Rate; 3] = [
        Rate::UnwantedAnswerRate,
        Rate::FalseRefusalRate,
        Rate::WrongAnswerRate,
    ];

    /// A short label for narrow columns and legends.
    pub fn label(self) -> &'static str {
        match self {
            Rate::UnwantedAnswerRate => "unwanted",
            Rate::FalseRefusalRate => "false refusals",
            Rate::WrongAnswerRate => "wrong answers",
        }
    }
}

impl SettingEntry {
    /// The events and trials of `rate`: (unwanted answers, unanswerable questions), ...
    pub fn counts(&self, rate: Rate) -> (u64, u64) {
        let (x, n) = match rate {
            Rate::UnwantedAnswerRate => (self.unwanted_answer, self.unanswerable),
            Rate::FalseRefusalRate => (self.false_refusal, self.answerable),
            Rate::WrongAnswerRate => (self.wrong_answer, self.answerable),
        };
        (x as u64, n as u64)
    }

    pub fn of(s: &crate::analysis::stats::SettingStats) -> SettingEntry {
        SettingEntry {
            answerable: s.answerable,
            unanswerable: s.unanswerable,
            answer: s.answer,
            early_refusal: s.early_refusal,
            model_refusal: s.model_refusal,
            false_refusal: s.false_refusal,
            unwanted_answer: s.unwanted_answer,
            wrong_answer: s.wrong_answer,
            error: s.error,
            false_refusal_rate: s.false_refusal_rate,
            unwanted_answer_rate: s.unwanted_answer_rate,
            wrong_answer_rate: s.wrong_answer_rate,
            prompt_tokens_per_question: s.prompt_tokens_per_question,
            cost: s.cost,
        }
    }
}

/// Where and when a sweep ran, and which results file it wrote: what the results value does
/// not hold.
pub struct Provenance {
    pub time: String,
    pub checkout: Checkout,
    /// results.json as the sweep named it, and the sha256 of its bytes.
    pub results: String,
    pub results_digest: String,
}

impl Entry {
    /// The line of a sweep whose results are `r`.
    pub fn of(r: &Results, p: Provenance) -> Entry {
        let pricing = &r.meta.pricing;
        let made = r.call_log.values().filter(|c| !c.cached);
        let (mut prompt, mut completion, mut cost) = (0u64, 0u64, 0.0);
        for call in made {
            prompt += call.usage.prompt_tokens;
            completion += call.usage.completion_tokens;
            cost += call_cost(pricing, call);
        }
        let rec = &r.insight.recommendation;
        Entry {
            schema: SCHEMA.to_string(),
            time: p.time,
            commit: p.checkout.commit,
            dirty: p.checkout.dirty,
            tool_version: r.meta.identity.tool_version.clone(),
            config_digest: r.meta.identity.digest.clone(),
            questions_digest: questions_digest(&r.questions),
            results_digest: p.results_digest,
            results: p.results,
            questions: r.questions.len(),
            answerable: r.questions.iter().filter(|q| q.answerable).count(),
            unanswerable: r.questions.iter().filter(|q| !q.answerable).count(),
            recommended: rec.setting.clone(),
            certified: rec.certified,
            confidence: rec.confidence,
            prompt_tokens: prompt,
            completion_tokens: completion,
            cost,
            currency: r.meta.currency.clone(),
            settings: (0..r.settings.len())
                .map(|i| (r.setting_id(i).to_string(), SettingEntry::of(&r.stats[i])))
                .collect(),
        }
    }

    /// The line as written: compact JSON and a newline.
    pub fn line(&self) -> String {
        let mut line = serde_json::to_string(self).expect("an entry serializes");
        line.push('\n');
        line
    }
}

/// What one call of the sweep cost: its role's prices, less the batch discount for a call a
/// batch engine answered.
fn call_cost(pricing: &Pricing, call: &CallRecord) -> f64 {
    if call.batch {
        pricing.batch_cost(call)
    } else {
        pricing.full_cost(call)
    }
}

/// sha256 over what decides each question's outcome, in order (see [`Entry::questions_digest`]).
pub fn questions_digest(questions: &[crate::adapters::evalset::Question]) -> String {
    let parts: Vec<String> = questions
        .iter()
        .map(|q| {
            serde_json::json!([
                q.id,
                q.question,
                q.answerable,
                q.expect,
                q.history,
                q.attack
            ])
            .to_string()
        })
        .collect();
    let bytes: Vec<&[u8]> = parts.iter().map(|p| p.as_bytes()).collect();
    crate::base::digest::digest(&bytes)
}

#[cfg(test)]
mod tests;
