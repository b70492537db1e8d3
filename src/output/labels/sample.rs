//! Which replies a person labels: a Poisson sample of the distinct model replies, each drawn
//! independently with a known probability (docs/labels.md).
//!
//! Reply r is in the sample iff `U_r < p`, where `U_r` in [0, 1) comes from sha256 of the seed
//! and the reply id. `U_r` is fixed for a seed, so a larger share draws a superset of a smaller
//! one: a file is extended by adding rows, its labels never touched. Early refusals and failed
//! calls have no reply to label: their grade is exact.
//!
//! A stratified design (`--oversample STRATUM=FACTOR`) draws the replies of a stratum (the
//! grader's outcome, [`Stratum`]) with probability `min(1, p × factor)` instead of `p`: still
//! Poisson sampling with a known probability per reply, written in its row's `inclusion`, which
//! the statistics weigh each label by. Every reply's probability grows with `p`, so a larger
//! sample at the same factors is still a superset.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::adapters::classify::{Outcome, Verdict};
use crate::results::Results;
use crate::sweep::Run;

use super::{neutralize, yes_no_text, LabelsFile, Row};

/// How many replies to sample.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Size {
    /// Each reply with this probability.
    Share(f64),
    /// Each reply with probability N / replies: N expected (the count varies around it).
    Sample(usize),
    /// Every reply.
    All,
}

impl Size {
    /// The base inclusion probability over the replies of `strata` (one per distinct reply)
    /// under `design`: [`Size::share`] when no stratum is raised.
    pub fn base(self, strata: &[Stratum], design: &Oversample) -> f64 {
        match self {
            Size::Sample(n) if !design.is_uniform() => design.base_for(n, strata),
            _ => self.share(strata.len()),
        }
    }

    /// The inclusion probability over `replies` distinct replies.
    pub fn share(self, replies: usize) -> f64 {
        match self {
            Size::Share(p) => p,
            Size::Sample(n) if replies == 0 => {
                if n == 0 {
                    0.0
                } else {
                    1.0
                }
            }
            Size::Sample(n) => (n as f64 / replies as f64).min(1.0),
            Size::All => 1.0,
        }
    }
}

/// A stratum of the replies: the grader's outcome of the run holding it (before any label),
/// with a wrong answer apart from a right (or unchecked) one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Stratum {
    /// An answer to an unanswerable question.
    UnwantedAnswer,
    /// A refusal of an unanswerable question.
    ModelRefusal,
    /// A refusal of an answerable question.
    FalseRefusal,
    /// An answer to an answerable question, graded wrong.
    WrongAnswer,
    /// An answer to an answerable question, graded right or not checked.
    Answer,
}

crate::base::text_enum!(Stratum {
    UnwantedAnswer => "unwanted_answer",
    ModelRefusal => "model_refusal",
    FalseRefusal => "false_refusal",
    WrongAnswer => "wrong_answer",
    Answer => "answer"
});

impl Stratum {
    /// The stratum of a model reply the grader read as `graded`.
    pub fn of(graded: &Verdict) -> Stratum {
        match graded.outcome {
            Outcome::UnwantedAnswer => Stratum::UnwantedAnswer,
            Outcome::ModelRefusal => Stratum::ModelRefusal,
            Outcome::FalseRefusal => Stratum::FalseRefusal,
            _ if graded.is_wrong_answer() => Stratum::WrongAnswer,
            _ => Stratum::Answer,
        }
    }
}

/// The largest factor a stratum's probability may be raised by.
pub const MAX_FACTOR: f64 = 1000.0;

/// By how much each stratum's inclusion probability is raised (1 for a stratum not named).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Oversample {
    factors: BTreeMap<Stratum, f64>,
}

impl Oversample {
    /// From `STRATUM=FACTOR` texts (the `--oversample` flags); a stratum named twice is refused.
    pub fn parse<S: AsRef<str>>(texts: &[S]) -> Result<Oversample, String> {
        let mut o = Oversample::default();
        for text in texts {
            let text = text.as_ref();
            let (name, factor) = text.split_once('=').ok_or_else(|| {
                format!("`{text}` is not STRATUM=FACTOR (e.g. unwanted_answer=4)")
            })?;
            let stratum: Stratum = name.parse()?;
            let factor = match factor.trim().parse::<f64>() {
                Ok(f) if (1.0..=MAX_FACTOR).contains(&f) => f,
                _ => {
                    return Err(format!(
                        "`{text}`: the factor must be a number from 1 to {MAX_FACTOR}"
                    ))
                }
            };
            if o.factors.insert(stratum, factor).is_some() {
                return Err(format!("`{stratum}` is oversampled twice"));
            }
        }
        Ok(o)
    }

    /// A stratum's factor.
    pub fn factor(&self, s: Stratum) -> f64 {
        self.factors.get(&s).copied().unwrap_or(1.0)
    }

    /// Whether no stratum is raised.
    pub fn is_uniform(&self) -> bool {
        self.factors.values().all(|&f| f == 1.0)
    }

    /// The inclusion probability of a reply in `s` when the base probability is `base`.
    pub fn inclusion(&self, base: f64, s: Stratum) -> f64 {
        (base * self.factor(s)).min(1.0)
    }

    /// `, unwanted_answer x4`: what the sampling line says of the design (empty when uniform).
    pub fn describe(&self) -> String {
        self.factors
            .iter()
            .filter(|(_, &f)| f != 1.0)
            .map(|(s, f)| format!(", {s} x{f}"))
            .collect()
    }

    /// The base probability at which the replies of `strata` are expected to give `n` rows:
    /// `sum min(1, p × factor) = n` (every reply once `n` reaches their number). The sum grows
    /// with `p`, so a larger `n` gives a larger `p`.
    fn base_for(&self, n: usize, strata: &[Stratum]) -> f64 {
        let expected = |p: f64| -> f64 { strata.iter().map(|&s| self.inclusion(p, s)).sum() };
        if strata.is_empty() || n >= strata.len() {
            return 1.0;
        }
        let (mut lo, mut hi) = (0.0_f64, 1.0_f64);
        for _ in 0..64 {
            let mid = (lo + hi) / 2.0;
            if expected(mid) >= n as f64 {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        hi
    }
}

/// `U_r`: a uniform number in [0, 1) fixed by the seed and the reply id.
pub fn uniform(seed: u64, reply_id: &str) -> f64 {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(b"rageval.sample/1");
    h.update(seed.to_le_bytes());
    h.update(reply_id.as_bytes());
    let bytes: [u8; 8] = h.finalize()[..8].try_into().expect("sha256 has 32 bytes");
    // The top 53 bits: every value is an exact double below 1.
    (u64::from_be_bytes(bytes) >> 11) as f64 / (1u64 << 53) as f64
}

/// Every distinct model reply of `r`, each with the first run that holds it, in run order.
pub fn distinct_replies(r: &Results) -> Vec<(String, usize)> {
    let mut seen = HashSet::new();
    r.reply_ids()
        .into_iter()
        .enumerate()
        .filter_map(|(i, id)| id.map(|id| (id, i)))
        .filter(|(id, _)| seen.insert(id.clone()))
        .collect()
}

/// What a sampling did.
#[derive(Debug)]
pub struct Sampled {
    pub file: LabelsFile,
    /// Distinct model replies in the results.
    pub replies: usize,
    /// The inclusion probability of the sample now: every row's with a uniform design, the
    /// base one (of the strata not raised) with an oversampled one.
    pub share: f64,
    /// Rows added by this sampling.
    pub added: usize,
    /// Rows drawn before whose inclusion rose to the new share.
    pub raised: usize,
}

/// `existing` (or a new file) extended to the sample `size` asks for with `seed` under
/// `design`: rows whose reply the sample draws and the file lacks are added after the others; a
/// row whose inclusion is below its reply's new probability gets that probability (it is in
/// the larger sample too); nothing else of a row changes. A smaller sample than the file's adds
/// nothing and lowers nothing.
pub fn extend(
    r: &Results,
    existing: LabelsFile,
    size: Size,
    seed: u64,
    design: &Oversample,
) -> Sampled {
    let replies = distinct_replies(r);
    let strata: Vec<Stratum> = replies
        .iter()
        .map(|(_, run)| {
            let run = &r.runs[*run];
            Stratum::of(run.labelled.as_ref().map_or(&run.verdict, |l| &l.graded))
        })
        .collect();
    let share = size.base(&strata, design);
    let inclusion: HashMap<&str, f64> = replies
        .iter()
        .zip(&strata)
        .map(|((id, _), &s)| (id.as_str(), design.inclusion(share, s)))
        .collect();
    let mut file = existing;
    file.seed = Some(seed);
    let have: HashSet<String> = file.rows.iter().map(|row| row.reply_id.clone()).collect();
    let mut raised = 0;
    for row in &mut file.rows {
        let Some(&p) = inclusion.get(row.reply_id.as_str()) else {
            continue;
        };
        if super::inclusion(&row.inclusion).is_ok_and(|had| had < p) {
            row.inclusion = super::probability(p);
            raised += 1;
        }
    }
    let mut added = 0;
    for (id, run) in &replies {
        let p = inclusion[id.as_str()];
        if uniform(seed, id) < p && !have.contains(id) {
            let text = super::probability(p);
            file.rows.push(row(r, &r.runs[*run], id, &text, seed));
            added += 1;
        }
    }
    let share = if design.is_uniform() {
        file.rows
            .iter()
            .filter_map(|row| super::inclusion(&row.inclusion).ok())
            .fold(share, f64::max)
    } else {
        share
    };
    Sampled {
        file,
        replies: replies.len(),
        share,
        added,
        raised,
    }
}

/// The row of reply `id`, held by `run`.
fn row(r: &Results, run: &Run, id: &str, inclusion: &str, seed: u64) -> Row {
    let q = &r.questions[run.question];
    let texts = r.chunk_texts.get(q.corpus);
    let passages: Vec<String> = run
        .passages
        .iter()
        .enumerate()
        .map(|(n, h)| {
            let text = texts
                .and_then(|t| t.get(h.chunk))
                .map_or("", String::as_str);
            format!(
                "[{}] ({}) {text}",
                n + 1,
                r.chunk_label(run.question, h.chunk)
            )
        })
        .collect();
    let graded = run.labelled.as_ref().map_or(&run.verdict, |l| &l.graded);
    let (refused, correct, by) = reading(graded);
    Row {
        reply_id: id.to_string(),
        question_id: neutralize(&q.id),
        answerable: yes_no_text(Some(q.answerable)).into(),
        question: neutralize(&run.asked),
        expected_answers: neutralize(&q.expect.answers.join("\n")),
        passages: neutralize(&passages.join("\n\n")),
        reply: neutralize(&run.answer),
        graded_refused: yes_no_text(Some(refused)).into(),
        graded_correct: yes_no_text(correct).into(),
        graded_by: by,
        inclusion: inclusion.to_string(),
        seed: seed.to_string(),
        refused: String::new(),
        correct: String::new(),
    }
}

/// The grader's reading of a reply: refused, right (for an answer with something to check it
/// against), and what decided (the refusal's tier, or `answer_match` / `judge`).
pub fn reading(v: &Verdict) -> (bool, Option<bool>, String) {
    let (refused, correct) = v.refused_and_right();
    if refused {
        let tier = v.refusal_match.map(|t| t.as_str()).unwrap_or_default();
        return (true, None, tier.to_string());
    }
    let by = match (correct, v.judge_correct) {
        (None, _) => "",
        (Some(_), Some(_)) => "judge",
        (Some(_), None) => "answer_match",
    };
    (false, correct, by.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniforms_are_uniform_and_fixed_by_seed_and_reply() {
        assert_eq!(uniform(0, "a"), uniform(0, "a"));
        assert_ne!(uniform(0, "a"), uniform(1, "a"));
        let n = 20_000;
        let below = (0..n)
            .filter(|i| uniform(7, &format!("{i:016x}")) < 0.3)
            .count();
        // Binomial(20000, 0.3): sd 65; 5 sd either side.
        assert!((5675..=6325).contains(&below), "{below}");
        assert!((0..n).all(|i| (0.0..1.0).contains(&uniform(3, &i.to_string()))));
    }

    #[test]
    fn sizes_give_shares() {
        assert_eq!(Size::Share(0.25).share(10), 0.25);
        assert_eq!(Size::Sample(5).share(20), 0.25);
        assert_eq!(Size::Sample(50).share(20), 1.0);
        assert_eq!(Size::All.share(3), 1.0);
    }
}
