//! Which replies a person labels: a Poisson sample of the distinct model replies, each drawn
//! independently with a known probability (docs/labels.md).
//!
//! Reply r is in the sample iff `U_r < p`, where `U_r` in [0, 1) comes from sha256 of the seed
//! and the reply id. `U_r` is fixed for a seed, so a larger share draws a superset of a smaller
//! one: a file is extended by adding rows, its labels never touched. Early refusals and failed
//! calls have no reply to label: their grade is exact.

use std::collections::HashSet;

use crate::adapters::classify::Verdict;
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
    /// The inclusion probability of the sample now.
    pub share: f64,
    /// Rows added by this sampling.
    pub added: usize,
    /// Rows drawn before whose inclusion rose to the new share.
    pub raised: usize,
}

/// `existing` (or a new file) extended to the sample `size` asks for with `seed`: rows whose
/// reply the sample draws and the file lacks are added after the others; a row whose inclusion
/// is below the new share gets the new share (it is in the larger sample too); nothing else of
/// a row changes. A smaller share than the file's adds nothing and lowers nothing.
pub fn extend(r: &Results, existing: LabelsFile, size: Size, seed: u64) -> Sampled {
    let replies = distinct_replies(r);
    let share = size.share(replies.len());
    let mut file = existing;
    file.seed = Some(seed);
    let have: HashSet<String> = file.rows.iter().map(|row| row.reply_id.clone()).collect();
    let text = super::probability(share);
    let mut raised = 0;
    for row in &mut file.rows {
        if super::inclusion(&row.inclusion).is_ok_and(|p| p < share) {
            row.inclusion = text.clone();
            raised += 1;
        }
    }
    let mut added = 0;
    for (id, run) in &replies {
        if uniform(seed, id) < share && !have.contains(id) {
            file.rows.push(row(r, &r.runs[*run], id, &text, seed));
            added += 1;
        }
    }
    let share = file
        .rows
        .iter()
        .filter_map(|row| super::inclusion(&row.inclusion).ok())
        .fold(share, f64::max);
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
