//! `--repeat N`: every distinct answer call made N times (for a temperature above 0 or a
//! server that is not deterministic), and what the repeats show: outcome rates over all
//! repeats with Wilson intervals, and flip rates (how often an outcome differs from the most
//! frequent one of its question at its setting).
//!
//! A repeated request carries its repeat index as OpenAI's `seed`, so each repeat is its own
//! request and cache entry. With N = 1 no seed is sent and nothing here changes any output.

use schemars::JsonSchema;
use serde::Serialize;

use crate::adapters::classify::Outcome;
use crate::adapters::evalset::Question;
use crate::analysis::insight::wilson::{rate, ratio, Interval};
use crate::sweep::Run;

/// The outcomes of a run over all its repeats, repeat 0 first.
pub fn outcomes(run: &Run) -> impl Iterator<Item = Outcome> + '_ {
    std::iter::once(run.verdict.outcome).chain(run.repeats.iter().map(|r| r.outcome))
}

/// How many of a run's repeats differ from its most frequent outcome.
pub fn flips(run: &Run) -> usize {
    let mut counts = [0usize; Outcome::ALL.len()];
    for o in outcomes(run) {
        counts[Outcome::ALL.iter().position(|a| *a == o).unwrap_or(0)] += 1;
    }
    let total: usize = counts.iter().sum();
    total - counts.iter().max().copied().unwrap_or(0)
}

/// One setting over all repeats: `stability` in results.json, present only when N > 1.
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
pub struct Stability {
    /// N of `--repeat N`.
    pub repeats: usize,
    /// Runs over all repeats: questions x N.
    pub runs: usize,
    pub answer: usize,
    pub early_refusal: usize,
    pub model_refusal: usize,
    pub false_refusal: usize,
    pub unwanted_answer: usize,
    pub error: usize,
    /// false_refusal / (answerable x N), each repeat counted as a trial.
    pub false_refusal_rate: Option<f64>,
    pub false_refusal_rate_ci: Option<Interval>,
    /// unwanted_answer / (unanswerable x N).
    pub unwanted_answer_rate: Option<f64>,
    pub unwanted_answer_rate_ci: Option<Interval>,
    /// Runs whose outcome differs from their question's most frequent one, over all runs.
    pub flip_rate: f64,
    /// Questions whose outcome is not the same in every repeat.
    pub flipped_questions: usize,
}

impl Stability {
    /// The stability of one setting's runs, or `None` when they were not repeated.
    pub fn of<'a>(runs: impl IntoIterator<Item = &'a Run>, questions: &[Question]) -> Option<Self> {
        let mut s = Stability::default();
        let (mut answerable, mut unanswerable, mut flipped) = (0, 0, 0);
        for run in runs {
            let n = 1 + run.repeats.len();
            s.repeats = s.repeats.max(n);
            s.runs += n;
            if questions[run.question].answerable {
                answerable += n;
            } else {
                unanswerable += n;
            }
            for o in outcomes(run) {
                *match o {
                    Outcome::Answer => &mut s.answer,
                    Outcome::EarlyRefusal => &mut s.early_refusal,
                    Outcome::ModelRefusal => &mut s.model_refusal,
                    Outcome::FalseRefusal => &mut s.false_refusal,
                    Outcome::UnwantedAnswer => &mut s.unwanted_answer,
                    Outcome::Error => &mut s.error,
                } += 1;
            }
            let f = flips(run);
            flipped += f;
            s.flipped_questions += usize::from(f > 0);
        }
        if s.repeats <= 1 {
            return None;
        }
        (s.false_refusal_rate, s.false_refusal_rate_ci) = rate(s.false_refusal, answerable);
        (s.unwanted_answer_rate, s.unwanted_answer_rate_ci) = rate(s.unwanted_answer, unanswerable);
        s.flip_rate = ratio(flipped, s.runs).unwrap_or(0.0);
        Some(s)
    }
}

/// Per question, its flip rate over every setting: repeats that differ from the question's
/// most frequent outcome at their setting, over all its repeats. Empty when nothing was
/// repeated.
pub fn question_flip_rates(runs: &[Run], questions: usize) -> Vec<f64> {
    if runs.iter().all(|r| r.repeats.is_empty()) {
        return Vec::new();
    }
    let mut flipped = vec![0usize; questions];
    let mut total = vec![0usize; questions];
    for run in runs {
        flipped[run.question] += flips(run);
        total[run.question] += 1 + run.repeats.len();
    }
    flipped
        .iter()
        .zip(&total)
        .map(|(&f, &t)| ratio(f, t).unwrap_or(0.0))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::repeat::Repeat;

    fn run(outcome: Outcome, repeats: &[Outcome]) -> Run {
        let mut run = crate::output::report::fixture::results().runs[0].clone();
        run.verdict.outcome = outcome;
        run.repeats = repeats
            .iter()
            .map(|&outcome| Repeat {
                call: None,
                outcome,
            })
            .collect();
        run
    }

    #[test]
    fn flips_count_the_repeats_off_the_most_frequent_outcome() {
        use Outcome::*;
        assert_eq!(flips(&run(Answer, &[])), 0);
        assert_eq!(flips(&run(Answer, &[FalseRefusal, Answer])), 1);
        // The mode need not be repeat 0's outcome.
        assert_eq!(flips(&run(FalseRefusal, &[Answer, Answer, Answer])), 1);
        assert_eq!(flips(&run(Answer, &[FalseRefusal, Error, Answer])), 2);
    }
}
