//! What every run counts toward the policy's rate limits, one byte per run: the input of the
//! recommendation, and of its resampling (bootstrap and cross-validation), which recount the
//! same runs under other weights of the questions without a single new model call.
//!
//! A run's byte holds its question's class (answerable, injection probe) and what the run is
//! (an error, a false refusal, an unwanted answer, a wrong answer, a probe that succeeded).
//! Counting a setting under question weights is then one add per run into 256 bins, read out
//! once per setting: a million runs recount in a few milliseconds.

use crate::adapters::classify::Outcome;
use crate::adapters::evalset::Question;
use crate::sweep::Run;
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

/// Every run's byte and prompt tokens, setting-major, with each question's class.
#[derive(Debug, Clone, Default)]
pub struct RunTable {
    questions: usize,
    /// Per question: its class bits (answerable, attack), the strata of resampling.
    classes: Vec<u8>,
    codes: Vec<u8>,
    tokens: Vec<u64>,
}

/// The byte of one run.
fn code(run: &Run, q: &Question) -> u8 {
    let v = &run.verdict;
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
    /// From each setting's runs (one per question, in any order: a run names its question).
    pub fn new<'a>(settings: impl IntoIterator<Item = &'a [Run]>, questions: &[Question]) -> Self {
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
            t.codes.resize(start + n, 0);
            t.tokens.resize(start + n, 0);
            for run in runs {
                if let Some(q) = questions.get(run.question) {
                    t.codes[start + run.question] = code(run, q);
                    t.tokens[start + run.question] = run.prompt_tokens;
                }
            }
        }
        t
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
}
