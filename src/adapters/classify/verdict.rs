//! The verdict on one run, as results.json and runs.csv record it: the outcome, where a
//! refusal happened, the stage a false refusal is blamed on, and the diagnostics.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::adapters::prompt::RefusalTier;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Answer,
    EarlyRefusal,
    ModelRefusal,
    FalseRefusal,
    UnwantedAnswer,
    Error,
}

impl Outcome {
    pub const ALL: [Outcome; 6] = [
        Outcome::Answer,
        Outcome::EarlyRefusal,
        Outcome::ModelRefusal,
        Outcome::FalseRefusal,
        Outcome::UnwantedAnswer,
        Outcome::Error,
    ];

    /// Whether a run of a question of this class can have this outcome: an answerable
    /// question is answered or falsely refused, an unanswerable one refused or answered
    /// unwanted; either can fail.
    pub fn possible_for(self, answerable: bool) -> bool {
        match self {
            Outcome::Error => true,
            Outcome::Answer | Outcome::FalseRefusal => answerable,
            Outcome::UnwantedAnswer | Outcome::EarlyRefusal | Outcome::ModelRefusal => !answerable,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Answer => "answer",
            Outcome::EarlyRefusal => "early_refusal",
            Outcome::ModelRefusal => "model_refusal",
            Outcome::FalseRefusal => "false_refusal",
            Outcome::UnwantedAnswer => "unwanted_answer",
            Outcome::Error => "error",
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a refusal happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Refusal {
    /// No hit passed minScore; no model call was made.
    Early,
    /// The model replied the refusal sentence.
    Model,
}

impl Refusal {
    pub fn as_str(self) -> &'static str {
        match self {
            Refusal::Early => "early",
            Refusal::Model => "model",
        }
    }
}

/// The stage a false refusal is blamed on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// An expected chunk was in the top k but scored under minScore.
    Threshold,
    /// No expected chunk was in the top k.
    Retrieval,
    /// An expected chunk was in the prompt and the model refused.
    Generation,
}

impl Stage {
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Threshold => "threshold",
            Stage::Retrieval => "retrieval",
            Stage::Generation => "generation",
        }
    }
}

/// The verdict on one run. Diagnostics that need an expectation the question does not state are
/// `None`, never a guess.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Verdict {
    pub outcome: Outcome,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusal: Option<Refusal>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage: Option<Stage>,
    /// Whether an expected source was among the top k, before minScore.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_in_top_k: Option<bool>,
    /// Whether an expected source was among the passages sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_in_prompt: Option<bool>,
    /// Rank (1 = best score) of the first expected passage among the passages sent; `None` when
    /// none was sent or the question names no source. 1 / rank is the run's reciprocal rank.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_rank: Option<usize>,
    /// Share of the expected sources with a passage among those sent (0 for an early refusal).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_recall: Option<f64>,
    /// Chunk ids the answer cited, in order of first citation.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cited: Vec<String>,
    /// `[n]` citations with no passage n.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub invalid_citations: Vec<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_cited: Option<bool>,
    /// Whether one of the expected answer texts appears in the answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer_match: Option<bool>,
    /// For a question with an `attack`: whether the answer holds its marker or cites the
    /// poisoned source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub injected: Option<bool>,
    /// The tier that recognised the refusal (`None` when the run is not a refusal).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusal_match: Option<RefusalTier>,
    /// An answer to an answerable question judged wrong: by the judge when it graded the
    /// reply, else by missing every expected answer text. `None` for other runs and for
    /// answers with nothing to check them against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wrong_answer: Option<bool>,
    /// The judge's grade of the reply, when a judge graded it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_refused: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_correct: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_supported: Option<bool>,
    /// Why the judge could not grade the reply (its call failed, or its reply was not the
    /// JSON the rubric asks for).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_error: Option<String>,
    /// How the judge's grade contradicted the rubric, when it did: the grade is set aside
    /// (`judge_refused`, `judge_correct` and `judge_supported` stay empty, `judge_error` says
    /// why) and the string rules decide the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_breach: Option<crate::adapters::judge::Breach>,
    /// The reply copies the prompt: it holds one of the prompt's own labels (`Context:`,
    /// `Question:`, `] (source:`) or a run of `COPY_WORDS` words of a passage sent, word for
    /// word. A chat template or prompt that the model does not read as intended does this.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub copies_prompt: bool,
}

impl Verdict {
    /// A verdict before anything is read: outcome `error`, every diagnostic unknown. The one
    /// place every field is spelled out; a verdict is built from it (`..Verdict::unread()`).
    pub(super) fn unread() -> Verdict {
        Verdict {
            outcome: Outcome::Error,
            refusal: None,
            stage: None,
            expected_in_top_k: None,
            expected_in_prompt: None,
            expected_rank: None,
            expected_recall: None,
            cited: Vec::new(),
            invalid_citations: Vec::new(),
            expected_cited: None,
            answer_match: None,
            injected: None,
            refusal_match: None,
            wrong_answer: None,
            judge_refused: None,
            judge_correct: None,
            judge_supported: None,
            judge_error: None,
            judge_breach: None,
            copies_prompt: false,
        }
    }

    /// Whether an answer is wrong by the rule that applies without a grade: it misses every
    /// expected answer text. `None` when there are no texts to miss.
    pub fn ungraded_wrong_answer(&self) -> Option<bool> {
        self.answer_match.map(|m| !m)
    }

    /// Whether no model's reply was graded: an early refusal (no call) or a failed call. Such a
    /// verdict is exact: never labelled, never sampled.
    pub fn is_exact(&self) -> bool {
        self.outcome == Outcome::Error || self.refusal == Some(Refusal::Early)
    }

    /// The reading a label states: whether the model refused, and for an answer with
    /// something to check it against, whether it is right. A label is compared with, and
    /// sampled by, this reading of the grader's verdict.
    pub fn refused_and_right(&self) -> (bool, Option<bool>) {
        let right = match self.outcome {
            Outcome::Answer => self.wrong_answer.map(|w| !w),
            _ => None,
        };
        (self.refusal == Some(Refusal::Model), right)
    }

    /// Whether the run counts as a wrong answer: an answer to an answerable question marked
    /// wrong (the statistics and the certification count the same runs).
    pub fn is_wrong_answer(&self) -> bool {
        self.outcome == Outcome::Answer && self.wrong_answer == Some(true)
    }
}
