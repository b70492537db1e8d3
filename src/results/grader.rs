//! The grader's error, measured against a person's labels (docs/labels.md): per grader (the
//! whole grader whose readings the counts used before the labels, the string tiers together and
//! each alone, the judge, `answer_match`), how often it read a labelled refusal as an answer,
//! an answer as a refusal, a wrong answer as right and a right one as wrong, over the distinct
//! labelled replies, each share with its 95% Wilson interval.
//!
//! A label that leaves a field empty agrees with the grader on it (the corrected verdict keeps
//! the grader's reading there), so only what a person said can count as an error.

use std::collections::HashSet;

use schemars::JsonSchema;
use serde::Serialize;

use crate::adapters::classify::Verdict;
use crate::adapters::prompt::RefusalTier;
use crate::analysis::insight::wilson::{wilson, Interval};

use super::Results;

/// A grader that disagrees with the labels on more than this share of the labelled replies
/// gets a warning.
pub const WARN_DISAGREEMENT: f64 = 0.1;

/// Errors of one kind: `errors` of `of` readings, their share and its 95% Wilson interval.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, JsonSchema)]
pub struct ErrorRate {
    pub errors: usize,
    pub of: usize,
    pub rate: Option<f64>,
    pub ci: Option<Interval>,
}

impl ErrorRate {
    fn add(&mut self, error: bool) {
        self.of += 1;
        self.errors += usize::from(error);
    }

    fn finish(&mut self) {
        self.rate = (self.of > 0).then(|| self.errors as f64 / self.of as f64);
        self.ci = wilson(self.errors, self.of);
    }
}

/// One grader's confusion matrix against the labels.
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
pub struct Confusion {
    /// `grader` (the readings the counts used), `string tiers`, `exact`, `lenient`,
    /// `pattern`, `judge` or `answer_match`.
    pub grader: String,
    /// Of labelled refusals (for one tier: those no earlier tier caught), read as answers.
    pub refusals_read_as_answers: ErrorRate,
    /// Of labelled answers, read as refusals.
    pub answers_read_as_refusals: ErrorRate,
    /// Of labelled wrong answers (to answerable questions), read as right.
    pub wrong_read_as_right: ErrorRate,
    /// Of labelled right answers, read as wrong.
    pub right_read_as_wrong: ErrorRate,
}

impl Confusion {
    fn named(grader: &str) -> Confusion {
        Confusion {
            grader: grader.into(),
            ..Default::default()
        }
    }

    /// Compare a refusal reading with the label's.
    fn refusal(&mut self, read: bool, truth: bool) {
        if truth {
            self.refusals_read_as_answers.add(!read);
        } else {
            self.answers_read_as_refusals.add(read);
        }
    }

    /// Compare a reading of right or wrong with the label's.
    fn right(&mut self, read: bool, truth: bool) {
        if truth {
            self.right_read_as_wrong.add(!read);
        } else {
            self.wrong_read_as_right.add(read);
        }
    }

    fn finish(mut self) -> Confusion {
        for e in self.rates_mut() {
            e.finish();
        }
        self
    }

    fn rates_mut(&mut self) -> [&mut ErrorRate; 4] {
        [
            &mut self.refusals_read_as_answers,
            &mut self.answers_read_as_refusals,
            &mut self.wrong_read_as_right,
            &mut self.right_read_as_wrong,
        ]
    }

    /// The four kinds with their names, in the order reports show them.
    pub fn rates(&self) -> [(&'static str, &ErrorRate); 4] {
        [
            ("refusals read as answers", &self.refusals_read_as_answers),
            ("answers read as refusals", &self.answers_read_as_refusals),
            ("wrong read as right", &self.wrong_read_as_right),
            ("right read as wrong", &self.right_read_as_wrong),
        ]
    }

    /// Whether this grader read anything that was labelled.
    pub fn read_any(&self) -> bool {
        self.rates().iter().any(|(_, e)| e.of > 0)
    }
}

/// The grader's error over a sweep's labelled replies.
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
pub struct GraderError {
    /// Distinct replies with a label, and the runs that share them.
    pub replies: usize,
    pub runs: usize,
    /// Labelled replies the grader read otherwise than the person (refused or not, or right
    /// or wrong), and their share.
    pub disagreements: usize,
    pub disagreement: f64,
    /// Per grader that read some labelled reply: `grader` first.
    pub graders: Vec<Confusion>,
}

impl GraderError {
    /// Whether the grader disagrees with the labels on more than [`WARN_DISAGREEMENT`].
    pub fn warns(&self) -> bool {
        self.disagreement > WARN_DISAGREEMENT
    }
}

const TIERS: [RefusalTier; 3] = [
    RefusalTier::Exact,
    RefusalTier::Lenient,
    RefusalTier::Pattern,
];

impl Results {
    /// The grader's error against the labels; `None` when no run is labelled.
    pub fn grader_error(&self) -> Option<GraderError> {
        let ids = self.labelled_reply_ids();
        let mut seen = HashSet::new();
        let mut graders: Vec<Confusion> = [
            "grader",
            "string tiers",
            "exact",
            "lenient",
            "pattern",
            "judge",
            "answer_match",
        ]
        .into_iter()
        .map(Confusion::named)
        .collect();
        let (mut replies, mut runs, mut disagreements) = (0, 0, 0);
        for (run, id) in self.runs.iter().zip(&ids) {
            let Some(labelled) = &run.labelled else {
                continue;
            };
            runs += 1;
            if !id.as_ref().is_some_and(|id| seen.insert(id.clone())) {
                continue;
            }
            replies += 1;
            let (g, v) = (&labelled.graded, &run.verdict);
            let (refused, right) = v.refused_and_right();
            let (g_refused, g_right) = g.refused_and_right();
            graders[0].refusal(g_refused, refused);
            let mut differs = g_refused != refused;
            if let (Some(read), Some(truth)) = (g_right, right) {
                graders[0].right(read, truth);
                differs |= read != truth;
            }
            disagreements += usize::from(differs);
            read_by_tiers(&mut graders[1..5], g, refused);
            if let Some(judge_refused) = g.judge_refused {
                graders[5].refusal(judge_refused, refused);
                if let (Some(read), Some(truth)) =
                    (g.judge_correct.filter(|_| g_right.is_some()), right)
                {
                    graders[5].right(read, truth);
                }
            }
            if let (Some(read), Some(truth)) = (g.answer_match.filter(|_| !g_refused), right) {
                graders[6].right(read, truth);
            }
        }
        if replies == 0 {
            return None;
        }
        Some(GraderError {
            replies,
            runs,
            disagreements,
            disagreement: disagreements as f64 / replies as f64,
            graders: graders
                .into_iter()
                .map(Confusion::finish)
                .filter(Confusion::read_any)
                .collect(),
        })
    }
}

/// The string tiers' readings of one labelled reply: together, and each tier alone (a refusal
/// reaches a tier when no earlier tier caught it).
fn read_by_tiers(graders: &mut [Confusion], g: &Verdict, refused: bool) {
    let tier = g.refusal_match.filter(|t| TIERS.contains(t));
    graders[0].refusal(tier.is_some(), refused);
    let caught_at = tier.and_then(|t| TIERS.iter().position(|&x| x == t));
    for (i, &t) in TIERS.iter().enumerate() {
        if refused {
            if caught_at.is_none_or(|c| c >= i) {
                graders[1 + i].refusals_read_as_answers.add(tier != Some(t));
            }
        } else {
            graders[1 + i].answers_read_as_refusals.add(tier == Some(t));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapters::classify::{Label, Refusal};
    use crate::output::report::fixture;
    use crate::results::labels::{Given, LabelSet};

    /// The fixture with every answered reply labelled refused and every model refusal
    /// labelled answered and right.
    #[test]
    fn every_relabelled_reply_is_one_error_of_its_kind() {
        let r = fixture::results();
        assert!(r.grader_error().is_none(), "no labels, no matrix");
        let ids = r.reply_ids();
        let mut labels = LabelSet::new();
        let (mut answers, mut refusals) = (HashSet::new(), HashSet::new());
        for (run, id) in r.runs.iter().zip(&ids) {
            let Some(id) = id else { continue };
            let refused = run.verdict.refusal == Some(Refusal::Model);
            if refused {
                refusals.insert(id.clone())
            } else {
                answers.insert(id.clone())
            };
            let label = Label {
                refused: Some(!refused),
                correct: Some(true),
            };
            labels.insert(
                id.clone(),
                Given {
                    label,
                    inclusion: 1.0,
                },
            );
        }
        let r = r.with_labels(&labels);
        let g = r.grader_error().unwrap();
        assert_eq!(g.replies, answers.len() + refusals.len());
        assert_eq!(g.disagreements, g.replies);
        assert!(g.warns());
        let all = &g.graders[0];
        assert_eq!(all.grader, "grader");
        assert_eq!(
            (
                all.refusals_read_as_answers.errors,
                all.refusals_read_as_answers.of
            ),
            (answers.len(), answers.len())
        );
        assert_eq!(
            (
                all.answers_read_as_refusals.errors,
                all.answers_read_as_refusals.of
            ),
            (refusals.len(), refusals.len())
        );
        let ci = all.refusals_read_as_answers.ci.unwrap();
        assert!(ci.lo > 0.0 && ci.hi == 1.0, "{ci:?}");
        // Labels that agree make no error.
        let agree: LabelSet = labels
            .into_iter()
            .map(|(id, mut g)| {
                g.label.refused = Some(refusals.contains(&id));
                g.label.correct = None;
                (id, g)
            })
            .collect();
        let g = r.with_labels(&agree).grader_error().unwrap();
        assert_eq!(g.disagreements, 0);
        assert!(!g.warns());
        assert!(g
            .graders
            .iter()
            .all(|c| c.rates().iter().all(|(_, e)| e.errors == 0)));
    }
}
