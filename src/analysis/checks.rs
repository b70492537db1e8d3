//! The grader checking itself: counts of the grades that real small models showed to be wrong
//! (a refusal followed by the copied prompt, a judge that contradicts its rubric or agrees with
//! `answer_match` no better than chance, replies that copy the prompt), each with a warning
//! when it fires. Every count is a pure function of the runs, so a merged or re-read record
//! counts the same.

use std::collections::HashSet;

use schemars::JsonSchema;
use serde::Serialize;

use crate::adapters::classify::{Outcome, Verdict};
use crate::adapters::judge::Breach;
use crate::adapters::prompt::RefusalTier;
use crate::base::text::excerpt;
use crate::sweep::Run;

/// Distinct graded answers the judge's agreement needs before it is warned about: below this,
/// a kappa of 0 is as likely chance as a broken judge.
pub const JUDGE_MIN_ANSWERS: usize = 20;
/// Cohen's kappa at or under which the judge agrees with `answer_match` no better than chance
/// (Landis and Koch's "slight" agreement ends at 0.2).
pub const JUDGE_MAX_KAPPA: f64 = 0.2;
/// The share of graded answers called correct from which a judge calls nearly every answer
/// correct ...
pub const JUDGE_NEARLY_ALL: f64 = 0.95;
/// ... which is a warning when `answer_match` finds the expected text in a share at least
/// this much lower (a judge and a substring rule that both find every answer right are no
/// warning: the answers may well be right).
pub const JUDGE_MATCH_GAP: f64 = 0.10;
/// Distinct replies, and the share of the runs with a model reply, that must copy the prompt
/// before the prompt is warned about: one reply quoting a long passage is no misconfiguration.
pub const COPY_MIN_REPLIES: usize = 3;
pub const COPY_MIN_SHARE: f64 = 0.10;

/// The grader's checks on its own grades, over every run of a sweep (results.json
/// `summary.grader_checks`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
pub struct GraderChecks {
    /// Runs refused by the `prefix` tier: the reply starts with the refusal sentence and goes
    /// on.
    pub prefix_refusals: usize,
    /// Distinct replies among them.
    pub prefix_replies: usize,
    /// Runs whose judge grade contradicts the rubric, set aside (`judge_breach`).
    pub judge_rubric_errors: usize,
    /// Of those, `refused` and `correct` both true.
    pub judge_refused_and_correct: usize,
    /// Of those, `correct` true for a question with no expected answer.
    pub judge_correct_without_expected: usize,
    /// Runs the judge graded within the rubric.
    pub judged: usize,
    /// Answers to questions with expected texts where the judge's `correct` decided
    /// `wrong_answer` against `answer_match`: in all, made right (no expected text found,
    /// judged correct) and made wrong (expected text found, judged not correct). Runs.
    pub judge_overrides: usize,
    pub judge_overrides_to_correct: usize,
    pub judge_overrides_to_wrong: usize,
    /// Distinct judge grades of answers to questions with expected texts (one per judge call),
    /// the base of the three below.
    pub judge_answers: usize,
    /// Of those, the judge called correct.
    pub judge_answers_correct: usize,
    /// Of those, `answer_match` found an expected text in.
    pub judge_answers_matched: usize,
    /// Cohen's kappa of the judge's `correct` and `answer_match` over those grades: 1 when
    /// they always agree, 0 when they agree as often as chance would; null when it is
    /// undefined (both say the same of every answer) or there is no grade.
    pub judge_kappa: Option<f64>,
    /// Runs with a model reply (not an early refusal, not an error).
    pub replied_runs: usize,
    /// Runs whose reply copies the prompt (`copies_prompt`), and the distinct replies among
    /// them.
    pub prompt_copies: usize,
    pub prompt_copy_replies: usize,
    /// Each check that fired, as the sweep prints it after `warning: `.
    pub warnings: Vec<String>,
}

/// The 2 x 2 table of the judge's `correct` against `answer_match`, one count per distinct
/// grade.
#[derive(Debug, Default, Clone, Copy)]
struct Agreement {
    both: usize,
    judge_only: usize,
    match_only: usize,
    neither: usize,
}

impl Agreement {
    fn add(&mut self, judge: bool, matched: bool) {
        match (judge, matched) {
            (true, true) => self.both += 1,
            (true, false) => self.judge_only += 1,
            (false, true) => self.match_only += 1,
            (false, false) => self.neither += 1,
        }
    }

    fn n(&self) -> usize {
        self.both + self.judge_only + self.match_only + self.neither
    }
}

/// Cohen's kappa of two yes/no raters from their 2 x 2 table: (observed agreement - chance
/// agreement) / (1 - chance agreement), chance from each rater's own share of yes. `None`
/// without counts, or when chance agreement is 1 (both say the same of every item).
pub fn cohen_kappa(
    both: usize,
    first_only: usize,
    second_only: usize,
    neither: usize,
) -> Option<f64> {
    let n = (both + first_only + second_only + neither) as f64;
    if n == 0.0 {
        return None;
    }
    let observed = (both + neither) as f64 / n;
    let first = (both + first_only) as f64 / n;
    let second = (both + second_only) as f64 / n;
    let chance = first * second + (1.0 - first) * (1.0 - second);
    (chance < 1.0 - 1e-12).then(|| (observed - chance) / (1.0 - chance))
}

impl GraderChecks {
    /// The checks over `runs`.
    pub fn of(runs: &[Run]) -> GraderChecks {
        let mut c = GraderChecks::default();
        let mut prefix: HashSet<Option<u32>> = HashSet::new();
        let mut copies: HashSet<Option<u32>> = HashSet::new();
        let mut graded: HashSet<u32> = HashSet::new();
        let mut table = Agreement::default();
        let (mut prefix_example, mut copy_example) = (None, None);
        for run in runs {
            let v = &run.verdict;
            if v.refusal_match == Some(RefusalTier::Prefix) {
                c.prefix_refusals += 1;
                prefix.insert(run.call);
                prefix_example.get_or_insert(run);
            }
            if run.call.is_some() && v.outcome != Outcome::Error {
                c.replied_runs += 1;
            }
            if v.copies_prompt {
                c.prompt_copies += 1;
                copies.insert(run.call);
                copy_example.get_or_insert(run);
            }
            c.add_judged(v);
            if let (Some(correct), Some(matched)) = (graded_answer(v), v.answer_match) {
                // One count per judge call: runs at many settings share a grade.
                if run.judge_call.is_none_or(|j| graded.insert(j)) {
                    table.add(correct, matched);
                }
            }
        }
        c.prefix_replies = prefix.len();
        c.prompt_copy_replies = copies.len();
        c.judge_answers = table.n();
        c.judge_answers_correct = table.both + table.judge_only;
        c.judge_answers_matched = table.both + table.match_only;
        c.judge_kappa = cohen_kappa(
            table.both,
            table.judge_only,
            table.match_only,
            table.neither,
        );
        c.warnings = [
            c.prefix_warning(prefix_example),
            c.rubric_warning(),
            c.judge_warning(),
            c.copy_warning(copy_example),
        ]
        .into_iter()
        .flatten()
        .collect();
        c
    }

    /// The run's judge grade: set aside, taken, and whether it overrode `answer_match`.
    fn add_judged(&mut self, v: &Verdict) {
        match v.judge_breach {
            Some(b) => {
                self.judge_rubric_errors += 1;
                match b {
                    Breach::RefusedAndCorrect => self.judge_refused_and_correct += 1,
                    Breach::CorrectWithoutExpected => self.judge_correct_without_expected += 1,
                }
            }
            None if v.judge_refused.is_some() => self.judged += 1,
            None => {}
        }
        if let (Some(correct), Some(matched)) = (graded_answer(v), v.answer_match) {
            if correct != matched {
                self.judge_overrides += 1;
                if correct {
                    self.judge_overrides_to_correct += 1;
                } else {
                    self.judge_overrides_to_wrong += 1;
                }
            }
        }
    }

    /// The counts in one line for the terminal and the reports, `None` when all are zero:
    /// `grader checks: 10 prefix refusals (4 replies), 20 judge grades set aside, 12 of 40
    /// replied runs copy the prompt (6 replies)`.
    pub fn line(&self) -> Option<String> {
        let mut parts = Vec::new();
        if self.prefix_refusals > 0 {
            parts.push(format!(
                "{} prefix refusals ({} replies: the refusal sentence, then more text)",
                self.prefix_refusals, self.prefix_replies
            ));
        }
        if self.judge_rubric_errors > 0 {
            parts.push(format!(
                "{} judge grades set aside (contradicting the rubric)",
                self.judge_rubric_errors
            ));
        }
        if let Some(kappa) = self.judge_kappa.filter(|_| self.judge_warned()) {
            parts.push(format!(
                "judge vs answer_match kappa {kappa:.2} over {} answers",
                self.judge_answers
            ));
        }
        if self.prompt_copies > 0 {
            parts.push(format!(
                "{} of {} replied runs copy the prompt ({} replies)",
                self.prompt_copies, self.replied_runs, self.prompt_copy_replies
            ));
        }
        (!parts.is_empty()).then(|| format!("grader checks: {}", parts.join("; ")))
    }

    /// The judge's `answer_match` overrides for its summary line: `; it overrode answer_match
    /// on 4 answers (3 to correct, 1 to wrong; kappa 0.41 over 18 distinct answers)`.
    pub fn overrides(&self) -> String {
        let kappa = self
            .judge_kappa
            .map(|k| {
                format!(
                    "; Cohen's kappa {k:.2} over {} distinct answers",
                    self.judge_answers
                )
            })
            .unwrap_or_default();
        format!(
            "; it overrode answer_match on {} answers ({} to correct, {} to wrong{kappa})",
            self.judge_overrides, self.judge_overrides_to_correct, self.judge_overrides_to_wrong
        )
    }

    fn prefix_warning(&self, example: Option<&Run>) -> Option<String> {
        let run = example?;
        Some(format!(
            "{} of {} replied runs ({} replies) start with the refusal sentence and go on, e.g. `{}`; they count as refusals (tier `prefix`), but rule 3 asks for the sentence alone: check the model's chat template and stop sequences",
            self.prefix_refusals,
            self.replied_runs,
            self.prefix_replies,
            excerpt(&run.answer, 80)
        ))
    }

    fn rubric_warning(&self) -> Option<String> {
        (self.judge_rubric_errors > 0).then(|| {
            let graded = self.judged + self.judge_rubric_errors;
            let cases: Vec<String> = [
                (self.judge_refused_and_correct, Breach::RefusedAndCorrect),
                (self.judge_correct_without_expected, Breach::CorrectWithoutExpected),
            ]
            .into_iter()
            .filter(|(n, _)| *n > 0)
            .map(|(n, b)| format!("{n} {}", b.words()))
            .collect();
            format!(
                "the judge contradicted its rubric in {} of {graded} grades ({}); those grades were set aside and the string rules decide those runs",
                self.judge_rubric_errors,
                cases.join(", ")
            )
        })
    }

    /// Whether the judge calls nearly every graded answer correct while `answer_match` finds
    /// far fewer, or agrees with it no better than chance (each over enough answers).
    fn judge_warned(&self) -> bool {
        self.nearly_all_correct() || self.chance_agreement()
    }

    fn nearly_all_correct(&self) -> bool {
        let n = self.judge_answers as f64;
        self.judge_answers >= JUDGE_MIN_ANSWERS
            && self.judge_answers_correct as f64 >= JUDGE_NEARLY_ALL * n
            && (self.judge_answers_correct
                - self.judge_answers_matched.min(self.judge_answers_correct)) as f64
                >= JUDGE_MATCH_GAP * n
    }

    fn chance_agreement(&self) -> bool {
        self.judge_answers >= JUDGE_MIN_ANSWERS
            && self.judge_kappa.is_some_and(|k| k <= JUDGE_MAX_KAPPA)
    }

    fn judge_warning(&self) -> Option<String> {
        if !self.judge_warned() {
            return None;
        }
        let mut why = Vec::new();
        if self.nearly_all_correct() {
            why.push(format!(
                "it calls {} of {} graded answers correct where answer_match finds the expected text in {}",
                self.judge_answers_correct, self.judge_answers, self.judge_answers_matched
            ));
        }
        if let Some(kappa) = self.judge_kappa.filter(|_| self.chance_agreement()) {
            why.push(format!(
                "it agrees with answer_match no better than chance (Cohen's kappa {kappa:.2} over {} distinct answers, at most {JUDGE_MAX_KAPPA} warns)",
                self.judge_answers
            ));
        }
        Some(format!(
            "the judge's grades of answers look unreliable: {}; its `correct` decides wrong answers, so read some replies before trusting them (docs/judge.md)",
            why.join(", and ")
        ))
    }

    fn copy_warning(&self, example: Option<&Run>) -> Option<String> {
        let run = example?;
        let many = self.prompt_copy_replies >= COPY_MIN_REPLIES
            && self.prompt_copies as f64 >= COPY_MIN_SHARE * self.replied_runs as f64;
        many.then(|| format!(
            "{} of {} replied runs ({} replies) copy the prompt back (its labels such as `Context:`, or passages word for word), e.g. `{}`: the chat template or the prompt is probably misconfigured (a base model, a template the server does not apply, no stop sequence)",
            self.prompt_copies,
            self.replied_runs,
            self.prompt_copy_replies,
            excerpt(&run.answer, 80)
        ))
    }
}

/// The judge's `correct` for an answer to a question with expected texts, when a grade within
/// the rubric decided it.
fn graded_answer(v: &Verdict) -> Option<bool> {
    (v.outcome == Outcome::Answer && v.answer_match.is_some())
        .then_some(v.judge_correct)
        .flatten()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    /// A run of call `call` (`None`: an early refusal) with the verdict `json` describes.
    fn run(call: Option<u32>, judge_call: Option<u32>, json: serde_json::Value) -> Run {
        let verdict: Verdict = serde_json::from_value(json).unwrap();
        let mut r = Run::new(0, 0, Arc::from("q"), verdict, Arc::from("reply text"));
        r.call = call;
        r.judge_call = judge_call;
        r
    }

    /// An answer graded by judge call `j` with `correct`, `answer_match` `matched`.
    fn graded(j: u32, correct: bool, matched: bool) -> Run {
        run(
            Some(j),
            Some(j),
            serde_json::json!({"outcome": "answer", "answer_match": matched, "judge_refused": false, "judge_correct": correct, "judge_supported": true}),
        )
    }

    #[test]
    fn kappa_is_agreement_beyond_chance() {
        // 50 items: agreement 0.7, chance 0.5 * 0.6 + 0.5 * 0.4 = 0.5.
        assert!((cohen_kappa(20, 5, 10, 15).unwrap() - 0.4).abs() < 1e-12);
        assert_eq!(cohen_kappa(10, 0, 0, 10), Some(1.0));
        assert_eq!(cohen_kappa(0, 10, 10, 0), Some(-1.0));
        assert_eq!(
            cohen_kappa(30, 10, 0, 0),
            Some(0.0),
            "a judge that always says yes"
        );
        assert_eq!(cohen_kappa(7, 0, 0, 0), None, "both say yes to every item");
        assert_eq!(cohen_kappa(0, 0, 0, 0), None);
    }

    /// The claim of docs/outcomes.md: with answers matched half the time, a judge whose
    /// `correct` is a coin toss independent of them is warned about in most sweeps of 20
    /// distinct answers, and in nearly every sweep of 60; a judge that agrees with
    /// answer_match on 90% of answers almost never.
    #[test]
    fn a_chance_judge_is_warned_about_and_a_good_one_is_not() {
        let share_warned = |n: usize, agree: f64, seed: u64| {
            let mut rng = fastrand::Rng::with_seed(seed);
            let sweeps = 2000;
            let warned = (0..sweeps)
                .filter(|_| {
                    let runs: Vec<Run> = (0..n as u32)
                        .map(|j| {
                            let matched = rng.bool();
                            let correct = if agree < 0.0 {
                                rng.bool()
                            } else if rng.f64() < agree {
                                matched
                            } else {
                                !matched
                            };
                            graded(j, correct, matched)
                        })
                        .collect();
                    GraderChecks::of(&runs).chance_agreement()
                })
                .count();
            warned as f64 / sweeps as f64
        };
        let chance_20 = share_warned(20, -1.0, 1);
        let chance_60 = share_warned(60, -1.0, 2);
        let good_20 = share_warned(20, 0.9, 3);
        assert!((0.75..0.90).contains(&chance_20), "{chance_20}");
        assert!(chance_60 > 0.90, "{chance_60}");
        assert!(good_20 < 0.01, "{good_20}");
        assert_eq!(share_warned(19, -1.0, 4), 0.0, "too few answers to tell");
    }

    #[test]
    fn the_counts_and_warnings_of_each_check() {
        let mut runs = vec![
            // A prefix refusal shared by two settings.
            run(
                Some(0),
                None,
                serde_json::json!({"outcome": "false_refusal", "refusal": "model", "refusal_match": "prefix", "copies_prompt": true}),
            ),
            run(
                Some(0),
                None,
                serde_json::json!({"outcome": "false_refusal", "refusal": "model", "refusal_match": "prefix", "copies_prompt": true}),
            ),
            // Grades set aside.
            run(
                Some(1),
                Some(9),
                serde_json::json!({"outcome": "unwanted_answer", "judge_breach": "correct_without_expected", "judge_error": "rubric: x"}),
            ),
            run(
                Some(2),
                Some(8),
                serde_json::json!({"outcome": "answer", "answer_match": true, "judge_breach": "refused_and_correct", "judge_error": "rubric: x"}),
            ),
            // Early refusals and errors have no reply.
            run(
                None,
                None,
                serde_json::json!({"outcome": "early_refusal", "refusal": "early", "refusal_match": "exact"}),
            ),
            run(Some(3), None, serde_json::json!({"outcome": "error"})),
        ];
        // 20 distinct answers: the judge calls every one correct, answer_match finds 12.
        runs.extend((0..20).map(|j| graded(100 + j, true, j < 12)));
        let c = GraderChecks::of(&runs);
        assert_eq!((c.prefix_refusals, c.prefix_replies), (2, 1));
        assert_eq!(
            (
                c.judge_rubric_errors,
                c.judge_refused_and_correct,
                c.judge_correct_without_expected
            ),
            (2, 1, 1)
        );
        assert_eq!(c.judged, 20);
        assert_eq!(
            (
                c.judge_overrides,
                c.judge_overrides_to_correct,
                c.judge_overrides_to_wrong
            ),
            (8, 8, 0)
        );
        assert_eq!(
            (
                c.judge_answers,
                c.judge_answers_correct,
                c.judge_answers_matched,
                c.judge_kappa
            ),
            (20, 20, 12, Some(0.0))
        );
        assert_eq!(
            (c.replied_runs, c.prompt_copies, c.prompt_copy_replies),
            (24, 2, 1)
        );
        assert_eq!(c.warnings, [
            "2 of 24 replied runs (1 replies) start with the refusal sentence and go on, e.g. `reply text`; they count as refusals (tier `prefix`), but rule 3 asks for the sentence alone: check the model's chat template and stop sequences",
            "the judge contradicted its rubric in 2 of 22 grades (1 `refused` and `correct` both true, 1 `correct` true with no expected answer given); those grades were set aside and the string rules decide those runs",
            "the judge's grades of answers look unreliable: it calls 20 of 20 graded answers correct where answer_match finds the expected text in 12, and it agrees with answer_match no better than chance (Cohen's kappa 0.00 over 20 distinct answers, at most 0.2 warns); its `correct` decides wrong answers, so read some replies before trusting them (docs/judge.md)",
        ], "one reply copying the prompt is no warning");
        assert_eq!(
            c.line().unwrap(),
            "grader checks: 2 prefix refusals (1 replies: the refusal sentence, then more text); 2 judge grades set aside (contradicting the rubric); judge vs answer_match kappa 0.00 over 20 answers; 2 of 24 replied runs copy the prompt (1 replies)"
        );
        assert_eq!(
            c.overrides(),
            "; it overrode answer_match on 8 answers (8 to correct, 0 to wrong; Cohen's kappa 0.00 over 20 distinct answers)"
        );
        // Three distinct replies copying the prompt in at least a tenth of the runs: warned.
        runs.push(run(
            Some(4),
            None,
            serde_json::json!({"outcome": "answer", "copies_prompt": true}),
        ));
        runs.push(run(
            Some(5),
            None,
            serde_json::json!({"outcome": "answer", "copies_prompt": true}),
        ));
        let c = GraderChecks::of(&runs);
        assert_eq!(
            (c.prompt_copies, c.prompt_copy_replies, c.replied_runs),
            (4, 3, 26)
        );
        assert!(
            c.warnings
                .last()
                .unwrap()
                .starts_with("4 of 26 replied runs (3 replies) copy the prompt back"),
            "{:?}",
            c.warnings
        );
        // Nothing to report: no line, no warning.
        let clean = GraderChecks::of(&[graded(1, true, true), graded(2, false, false)]);
        assert_eq!((clean.line(), clean.warnings.len()), (None, 0));
        assert_eq!(clean.judge_kappa, Some(1.0));
    }
}
