//! What every run counts toward the policy's rate limits, one byte per run: the input of the
//! recommendation, and of its resampling (bootstrap and cross-validation), which recount the
//! same runs under other weights of the questions without a single new model call.
//!
//! A run's byte holds its question's class (answerable, injection probe) and what the run is
//! (an error, a false refusal, an unwanted answer, a wrong answer, a probe that succeeded).
//! Counting a setting under question weights is then one add per run into 256 bins, read out
//! once per setting: a million runs recount in a few milliseconds.

use super::ppi::{Observation, RateSamples, Sample};
use crate::adapters::classify::{Outcome, Verdict};
use crate::adapters::evalset::Question;
use crate::sweep::{Run, SettingRuns};
use crate::vocab::limit::Limit;

const ANSWERABLE: u8 = 1;
const ATTACK: u8 = 2;
const ERROR: u8 = 4;
const FALSE_REFUSAL: u8 = 8;
const UNWANTED: u8 = 16;
const WRONG: u8 = 32;
/// A probe whose outcome says whether it succeeded (`injected` is known).
const PROBED: u8 = 64;
const INJECTED: u8 = 128;
/// A pair never run (a setting an adaptive sweep dropped, after it was dropped): a false
/// refusal and an unwanted answer at once, which no run is. Counted nowhere.
const UNRUN: u8 = FALSE_REFUSAL | UNWANTED;

/// The rate limits of the policy, in the order [`Counts`] holds their tallies.
pub const RATE_LIMITS: [Limit; 4] = [
    Limit::MaxUnwantedAnswerRate,
    Limit::MaxFalseRefusalRate,
    Limit::MaxWrongAnswerRate,
    Limit::MaxAttackSuccessRate,
];

/// The position of a rate limit in [`RATE_LIMITS`]; `None` for a limit that is not a rate.
pub fn slot(limit: Limit) -> Option<usize> {
    RATE_LIMITS.iter().position(|&l| l == limit)
}

/// Failures among questions, for one rate.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    pub failures: u64,
    pub questions: u64,
}

impl Tally {
    /// The share that failed; `None` without questions.
    pub fn rate(self) -> Option<f64> {
        (self.questions > 0).then(|| self.failures as f64 / self.questions as f64)
    }
}

#[cfg(test)]
impl Tally {
    /// `failures` of `questions`.
    pub(crate) fn of(failures: u64, questions: u64) -> Tally {
        Tally {
            failures,
            questions,
        }
    }
}

#[cfg(test)]
impl Counts {
    /// A setting's counts with `unwanted` answers among the unanswerable questions and
    /// `refused` false refusals among the answerable ones, measured and certified alike (no
    /// call failed), no wrong answer or probe, and `prompt_tokens` in all.
    pub(crate) fn two_rates(unwanted: Tally, refused: Tally, prompt_tokens: u64) -> Counts {
        let rates = [unwanted, refused, Tally::default(), Tally::default()];
        Counts {
            questions: unwanted.questions + refused.questions,
            measured: rates,
            certified: rates,
            prompt_tokens,
        }
    }
}

/// One setting's runs, counted under some weights of the questions.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Counts {
    /// Questions (with their weights).
    pub questions: u64,
    /// Per rate limit, as the statistics count it: a run whose call failed is in the base but
    /// is not a failure (its outcome is unknown).
    pub measured: [Tally; 4],
    /// Per rate limit, as certification counts it: a failed call counts as a failure of every
    /// rate its question is held to, so that errors can never help a setting be certified.
    pub certified: [Tally; 4],
    pub prompt_tokens: u64,
}

impl Counts {
    /// The measured value of a limit's statistic: a rate, or prompt tokens per question;
    /// `None` when the rate has no questions.
    pub fn value(&self, limit: Limit) -> Option<f64> {
        match slot(limit) {
            Some(i) => self.measured[i].rate(),
            None => Some(self.tokens_per_question()),
        }
    }

    pub fn tokens_per_question(&self) -> f64 {
        if self.questions == 0 {
            0.0
        } else {
            self.prompt_tokens as f64 / self.questions as f64
        }
    }

    /// Add `weight` runs of byte `code`.
    fn add(&mut self, code: u8, weight: u64) {
        let has = |bit: u8| code & bit != 0;
        let error = has(ERROR);
        self.questions += weight;
        let mut count = |i: usize, failed: bool, certified_base: bool, certified_failed: bool| {
            self.measured[i].questions += weight;
            self.measured[i].failures += weight * u64::from(failed);
            if certified_base {
                self.certified[i].questions += weight;
                self.certified[i].failures += weight * u64::from(certified_failed);
            }
        };
        if has(ANSWERABLE) {
            count(1, has(FALSE_REFUSAL), true, has(FALSE_REFUSAL) || error);
            count(2, has(WRONG), true, has(WRONG) || error);
        } else {
            count(0, has(UNWANTED), true, has(UNWANTED) || error);
        }
        if has(PROBED) {
            count(3, has(INJECTED), true, has(INJECTED));
        } else if has(ATTACK) && error {
            // Not in the measured base (the probe's outcome is unknown), a failure when
            // certifying.
            self.certified[3].questions += weight;
            self.certified[3].failures += weight;
        }
    }
}

/// How a run's grade stands against a person's labels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Grade {
    /// No model graded it (an early refusal, a failed call): exact, never sampled.
    Exact,
    /// The grader's reading, not checked by a person.
    Graded,
    /// A person's label in place of the grader's reading: the byte of the grader's verdict,
    /// and the probability the reply was sampled with.
    Labelled { graded: u8, inclusion: f64 },
}

impl Grade {
    /// How `run`'s grade stands.
    pub fn of(run: &Run, q: &Question) -> Grade {
        let v = &run.verdict;
        match &run.labelled {
            _ if v.is_exact() => Grade::Exact,
            Some(l) => Grade::Labelled {
                graded: code_of(&l.graded, q),
                inclusion: l.inclusion,
            },
            None => Grade::Graded,
        }
    }
}

/// Every run's byte and prompt tokens, setting-major, with each question's class.
#[derive(Debug, Clone, Default)]
pub struct RunTable {
    questions: usize,
    /// Per question: its class bits (answerable, attack), the strata of resampling.
    classes: Vec<u8>,
    codes: Vec<u8>,
    tokens: Vec<u64>,
    /// Per run (as `codes`), how its grade stands; empty when no run is labelled.
    grades: Vec<Grade>,
    /// Distinct labelled replies (model calls).
    labels: u64,
    /// The smallest inclusion probability of any labelled reply (1 without labels), worked
    /// out once: every sample of every resample caps its bets by it.
    smallest_inclusion: f64,
    /// Per setting, whether an adaptive sweep dropped it (it has a question it did not run).
    dropped: Vec<bool>,
}

/// The byte of one run.
fn code(run: &Run, q: &Question) -> u8 {
    code_of(&run.verdict, q)
}

/// The byte of a run with verdict `v`.
fn code_of(v: &Verdict, q: &Question) -> u8 {
    let mut c = 0;
    let mut set = |bit: u8, on: bool| {
        if on {
            c |= bit;
        }
    };
    set(ANSWERABLE, q.answerable);
    set(ATTACK, q.attack.is_some());
    set(ERROR, v.outcome == Outcome::Error);
    set(FALSE_REFUSAL, v.outcome == Outcome::FalseRefusal);
    set(UNWANTED, v.outcome == Outcome::UnwantedAnswer);
    set(WRONG, v.is_wrong_answer());
    set(PROBED, q.attack.is_some() && v.injected.is_some());
    set(INJECTED, q.attack.is_some() && v.injected == Some(true));
    c
}

impl RunTable {
    /// From each setting's runs (a run names its question; a question a dropped setting did
    /// not run counts in none of its tallies).
    pub fn new<'a>(
        settings: impl IntoIterator<Item = SettingRuns<'a>>,
        questions: &[Question],
    ) -> Self {
        let n = questions.len();
        let mut t = RunTable {
            questions: n,
            classes: questions
                .iter()
                .map(|q| {
                    (u8::from(q.answerable) * ANSWERABLE) | (u8::from(q.attack.is_some()) * ATTACK)
                })
                .collect(),
            ..RunTable::default()
        };
        for runs in settings {
            let start = t.codes.len();
            t.codes.resize(start + n, UNRUN);
            t.tokens.resize(start + n, 0);
            t.grades.resize(start + n, Grade::Exact);
            for run in runs {
                if let Some(q) = questions.get(run.question) {
                    t.codes[start + run.question] = code(run, q);
                    t.tokens[start + run.question] = run.prompt_tokens;
                    t.grades[start + run.question] = Grade::of(run, q);
                }
            }
        }
        if !t.grades.iter().any(|g| matches!(g, Grade::Labelled { .. })) {
            t.grades = Vec::new();
        }
        t.smallest_inclusion = t
            .grades
            .iter()
            .filter_map(|g| match g {
                Grade::Labelled { inclusion, .. } => Some(*inclusion),
                _ => None,
            })
            .fold(1.0, f64::min);
        t.dropped = (0..t.settings()).map(|s| !t.complete(s)).collect();
        t
    }

    /// The table with the number of distinct replies its labelled runs hold (runs share a
    /// reply through the response cache: a reply id, which the results know); 0 without labels.
    pub fn with_labels(mut self, labels: u64) -> Self {
        self.labels = if self.grades.is_empty() { 0 } else { labels };
        self
    }

    /// Distinct labelled replies; 0 without labels.
    pub fn labels(&self) -> u64 {
        self.labels
    }

    /// Setting `s`'s labelled samples of each rate limit, every question weighing
    /// `weights[q]` (repeated that many times, in question order); `None` without labels. The
    /// probes' rate is not graded by the labels: its slot is `None`.
    pub fn samples(&self, s: usize, weights: Option<&[u32]>) -> Option<RateSamples> {
        if self.grades.is_empty() {
            return None;
        }
        let n = self.questions;
        let smallest = self.smallest_inclusion;
        let mut slots: [Vec<Observation>; 3] = Default::default();
        for q in 0..n {
            let (c, grade) = (self.codes[s * n + q], self.grades[s * n + q]);
            if c == UNRUN {
                continue;
            }
            let times = weights.map_or(1, |w| w[q]);
            for (i, slot) in slots.iter_mut().enumerate() {
                let Some(truth) = failed(c, i) else { continue };
                let o = match grade {
                    Grade::Exact => Observation::Exact(truth),
                    Grade::Graded => Observation::Graded(truth),
                    Grade::Labelled { graded, inclusion } => Observation::Labelled {
                        graded: failed(graded, i).unwrap_or(truth),
                        truth,
                        inclusion,
                    },
                };
                slot.extend((0..times).map(|_| o));
            }
        }
        let [unwanted, refused, wrong] = slots.map(|o| Some(Sample::new(o, smallest)));
        Some([unwanted, refused, wrong, None])
    }

    /// Every setting's labelled samples under `weights`; `None` without labels.
    pub fn all_samples(&self, weights: Option<&[u32]>) -> Option<Vec<RateSamples>> {
        (0..self.settings())
            .map(|s| self.samples(s, weights))
            .collect()
    }

    pub fn questions(&self) -> usize {
        self.questions
    }

    pub fn settings(&self) -> usize {
        self.codes.len().checked_div(self.questions).unwrap_or(0)
    }

    /// Per question, its stratum for resampling: answerable or not, probe or not.
    pub fn strata(&self) -> &[u8] {
        &self.classes
    }

    /// Whether setting `s` ran every question: not dropped by an adaptive sweep. A dropped
    /// setting is never recommended (docs/adaptive.md).
    pub fn complete(&self, s: usize) -> bool {
        let n = self.questions;
        !self.codes[s * n..(s + 1) * n].contains(&UNRUN)
    }

    /// Per setting, whether an adaptive sweep dropped it (see [`RunTable::complete`]).
    pub fn dropped(&self) -> &[bool] {
        &self.dropped
    }

    /// Whether question `q` is answerable.
    pub fn answerable(&self, q: usize) -> bool {
        self.classes[q] & ANSWERABLE != 0
    }

    /// Setting `s`'s counts, every question weighing `weights[q]` (all 1 without weights).
    pub fn counts(&self, s: usize, weights: Option<&[u32]>) -> Counts {
        let n = self.questions;
        let codes = &self.codes[s * n..(s + 1) * n];
        let tokens = &self.tokens[s * n..(s + 1) * n];
        let mut bins = [0u64; 256];
        let mut prompt_tokens = 0u64;
        match weights {
            None => {
                for (&c, &t) in codes.iter().zip(tokens) {
                    bins[usize::from(c)] += 1;
                    prompt_tokens = prompt_tokens.saturating_add(t);
                }
            }
            Some(w) => {
                for ((&c, &t), &w) in codes.iter().zip(tokens).zip(w) {
                    let w = u64::from(w);
                    bins[usize::from(c)] += w;
                    prompt_tokens = prompt_tokens.saturating_add(t.saturating_mul(w));
                }
            }
        }
        let mut counts = Counts {
            prompt_tokens,
            ..Counts::default()
        };
        bins[usize::from(UNRUN)] = 0;
        for (c, &w) in bins.iter().enumerate() {
            if w > 0 {
                counts.add(c as u8, w);
            }
        }
        counts
    }

    /// Every setting's counts under `weights`.
    pub fn all_counts(&self, weights: Option<&[u32]>) -> Vec<Counts> {
        (0..self.settings())
            .map(|s| self.counts(s, weights))
            .collect()
    }
}

/// Whether a run with byte `c` fails rate slot `i` as certification counts it (a failed call
/// is a failure); `None` when its question is not in the rate's base. The probes' slot is not
/// graded by labels and has no answer here.
fn failed(c: u8, i: usize) -> Option<bool> {
    let has = |bit: u8| c & bit != 0;
    let answerable = has(ANSWERABLE);
    let error = has(ERROR);
    match i {
        0 => (!answerable).then(|| has(UNWANTED) || error),
        1 => answerable.then(|| has(FALSE_REFUSAL) || error),
        2 => answerable.then(|| has(WRONG) || error),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_count_as_the_statistics_and_certification_do() {
        let mut c = Counts::default();
        c.add(ANSWERABLE | FALSE_REFUSAL, 2);
        c.add(ANSWERABLE, 3);
        c.add(ANSWERABLE | ERROR, 1);
        c.add(UNWANTED, 1);
        c.add(0, 3);
        c.add(ERROR | ATTACK, 1);
        c.add(PROBED | INJECTED | ATTACK, 1);
        let [ua, fr, wa, attack] = c.measured;
        assert_eq!(
            fr,
            Tally {
                failures: 2,
                questions: 6
            }
        );
        assert_eq!(
            wa,
            Tally {
                failures: 0,
                questions: 6
            }
        );
        assert_eq!(
            ua,
            Tally {
                failures: 1,
                questions: 6
            }
        );
        assert_eq!(
            attack,
            Tally {
                failures: 1,
                questions: 1
            }
        );
        let [ua, fr, wa, attack] = c.certified;
        assert_eq!(
            fr,
            Tally {
                failures: 3,
                questions: 6
            },
            "the error counts"
        );
        assert_eq!(
            wa,
            Tally {
                failures: 1,
                questions: 6
            }
        );
        assert_eq!(
            ua,
            Tally {
                failures: 2,
                questions: 6
            }
        );
        assert_eq!(
            attack,
            Tally {
                failures: 2,
                questions: 2
            }
        );
        assert_eq!(c.questions, 12);
    }

    /// A setting an adaptive sweep dropped counts the questions it ran, never the others as
    /// successes; the table knows it is not complete.
    #[test]
    fn a_dropped_setting_counts_its_own_questions_only() {
        use crate::output::report::fixture;
        let table = |r: &crate::results::Results| {
            RunTable::new((0..r.settings.len()).map(|s| r.runs_of(s)), &r.questions)
        };
        let (plain, dropped) = (table(&fixture::results()), table(&fixture::dropped()));
        let (all, some) = (plain.counts(1, None), dropped.counts(1, None));
        assert_eq!((all.questions, some.questions), (3, 2));
        // `refund` (answerable, answered at min_score=0.2,k=2) is gone from the base.
        assert_eq!(all.measured[1], Tally::of(0, 2));
        assert_eq!(some.measured[1], Tally::of(0, 1));
        assert_eq!(
            some.measured[0], all.measured[0],
            "the unanswerable one stays"
        );
        assert!(plain.complete(1) && !dropped.complete(1) && dropped.complete(0));
        for s in [0, 2, 3] {
            assert_eq!(dropped.counts(s, None), plain.counts(s, None));
        }
        // Weighted recounts (the bootstrap's) skip the pair too.
        let w = [2, 5, 1];
        assert_eq!(dropped.counts(1, Some(&w)).questions, 3);
    }

    #[test]
    fn labelled_runs_become_the_samples_of_the_rates_they_count_in() {
        use crate::adapters::classify::{Label, Refusal};
        use crate::output::report::fixture;
        use crate::results::labels::{Given, LabelSet};
        let r = fixture::results();
        let table = |r: &crate::results::Results| {
            RunTable::new((0..r.settings.len()).map(|s| r.runs_of(s)), &r.questions)
        };
        assert!(
            table(&r).all_samples(None).is_none(),
            "no labels, no samples"
        );
        // Label the first answered run's reply refused, as the fixture's label test does.
        let ids = r.reply_ids();
        let i = (0..r.runs.len())
            .find(|&i| r.runs[i].verdict.outcome == Outcome::Answer)
            .unwrap();
        let mut labels = LabelSet::new();
        let label = Label {
            refused: Some(true),
            correct: None,
        };
        labels.insert(
            ids[i].clone().unwrap(),
            Given {
                label,
                inclusion: 0.5,
            },
        );
        let r = r.with_labels(&labels);
        let t = table(&r).with_labels(r.labelled_replies());
        // A run's place in a rate's sample: among the questions the rate counts.
        let place = |q: usize| {
            let answerable = r.questions[q].answerable;
            (0..q)
                .filter(|&p| r.questions[p].answerable == answerable)
                .count()
        };
        assert_eq!(t.labels(), 1, "one reply, however many runs share it");
        let (run, q) = (&r.runs[i], &r.questions[r.runs[i].question]);
        assert!(q.answerable);
        let [_, refused, wrong, probes] = t.samples(run.setting, None).unwrap();
        let expected = Observation::Labelled {
            graded: false,
            truth: true,
            inclusion: 0.5,
        };
        let refused = refused.unwrap();
        assert_eq!(refused.observations()[place(run.question)], expected);
        // Neither read it as a wrong answer; the probes are not graded by labels.
        assert!(matches!(
            wrong.unwrap().observations()[place(run.question)],
            Observation::Labelled { truth: false, .. }
        ));
        assert!(probes.is_none());
        // An early refusal is exact.
        let early = r
            .runs
            .iter()
            .find(|x| {
                x.verdict.refusal == Some(Refusal::Early) && r.questions[x.question].answerable
            })
            .expect("an early false refusal in the fixture");
        let [_, refused, ..] = t.samples(early.setting, None).unwrap();
        assert_eq!(
            refused.unwrap().observations()[place(early.question)],
            Observation::Exact(true)
        );
    }
}
