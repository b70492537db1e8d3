//! A person's grade of a reply (docs/labels.md): whether it refused and whether an answer is
//! right. A label replaces the grader's reading in every run that shares the reply; the run
//! keeps what the grader said beside it, so that the grader's error can be measured.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{settle, Refusal, Verdict};
use crate::adapters::evalset::Question;
use crate::adapters::prompt::RefusalTier;

/// A labelled run: what the grader said before the label replaced it, and the probability with
/// which the reply was drawn into the labelled sample.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Labelled {
    /// The grader's verdict (string tiers, `answer_match`, the judge) before the label.
    pub graded: Verdict,
    /// The reply's inclusion probability in the sample (0 < p <= 1).
    pub inclusion: f64,
}

/// A person's grade of one reply; `None` where the person left the field empty.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Label {
    /// `yes`: the reply refuses (in whatever words); `no`: it answers.
    pub refused: Option<bool>,
    /// For an answer: `yes` it is right, `no` it is wrong. Ignored for a refusal.
    pub correct: Option<bool>,
}

impl Label {
    /// Whether the person gave anything: an empty label changes nothing.
    pub fn is_given(&self) -> bool {
        self.refused.is_some() || self.correct.is_some()
    }
}

/// The stable id of a reply: a digest of the text asked, the passages as the model saw them
/// (in prompt order) and the reply. Runs that share a reply through the response cache share
/// it; the first 16 hex digits, as call digests are.
pub fn reply_id<'a>(
    asked: &'a str,
    passages: impl Iterator<Item = &'a str>,
    reply: &'a str,
) -> String {
    let mut parts: Vec<&[u8]> = vec![b"rageval.reply/1", asked.as_bytes()];
    parts.extend(passages.map(str::as_bytes));
    parts.push(b"reply");
    parts.push(reply.as_bytes());
    let digest = crate::base::digest::digest(&parts);
    digest["sha256:".len()..][..16].to_string()
}

/// `graded` (a run whose model replied) as `label` reads it, for `question`. A refusal the
/// grader missed gets tier `label`; one it caught keeps its tier. An answer's correctness is the
/// label's when given, else the grader's (nothing, for a reply the grader read as a refusal).
/// Early refusals and failed calls are exact and never labelled: they come back unchanged.
pub fn relabel(graded: &Verdict, label: &Label, question: &Question) -> Verdict {
    let mut v = graded.clone();
    if graded.is_exact() {
        return v;
    }
    let graded_refused = graded.refusal == Some(Refusal::Model);
    let refused = label.refused.unwrap_or(graded_refused);
    if refused {
        if !graded_refused {
            v.refusal_match = Some(RefusalTier::Label);
        }
        v.wrong_answer = None;
        settle(&mut v, question.answerable, Some(Refusal::Model));
    } else {
        v.refusal_match = None;
        v.wrong_answer = if question.answerable {
            match label.correct {
                Some(correct) => Some(!correct),
                None if graded_refused => None,
                None => graded.wrong_answer,
            }
        } else {
            None
        };
        settle(&mut v, question.answerable, None);
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapters::classify::{Outcome, Stage};

    fn verdict(outcome: Outcome, refusal: Option<Refusal>, tier: Option<RefusalTier>) -> Verdict {
        Verdict {
            outcome,
            refusal,
            expected_in_top_k: Some(true),
            expected_in_prompt: Some(true),
            expected_rank: Some(1),
            expected_recall: Some(1.0),
            refusal_match: tier,
            ..Verdict::unread()
        }
    }

    fn question(answerable: bool) -> Question {
        Question {
            id: "q".into(),
            question: "How much is the fee?".into(),
            answerable,
            expect: crate::adapters::evalset::Expect {
                sources: Vec::new(),
                answers: if answerable {
                    vec!["ten".into()]
                } else {
                    Vec::new()
                },
            },
            tags: vec![],
            history: vec![],
            attack: None,
            origin: None,
            corpus: 0,
        }
    }

    const REFUSED: Label = Label {
        refused: Some(true),
        correct: None,
    };

    #[test]
    fn a_refusal_the_grader_missed_becomes_a_false_refusal_by_label() {
        let mut graded = verdict(Outcome::Answer, None, None);
        graded.wrong_answer = Some(false);
        let v = relabel(&graded, &REFUSED, &question(true));
        assert_eq!(v.outcome, Outcome::FalseRefusal);
        assert_eq!(v.refusal, Some(Refusal::Model));
        assert_eq!(v.refusal_match, Some(RefusalTier::Label));
        assert_eq!(v.stage, Some(Stage::Generation));
        assert_eq!(v.wrong_answer, None);
        let v = relabel(
            &verdict(Outcome::UnwantedAnswer, None, None),
            &REFUSED,
            &question(false),
        );
        assert_eq!(v.outcome, Outcome::ModelRefusal);
    }

    #[test]
    fn an_agreeing_label_keeps_the_graders_tier_and_an_answer_takes_its_correctness() {
        let graded = verdict(
            Outcome::FalseRefusal,
            Some(Refusal::Model),
            Some(RefusalTier::Pattern),
        );
        let v = relabel(&graded, &REFUSED, &question(true));
        assert_eq!(v.refusal_match, Some(RefusalTier::Pattern));
        assert_eq!(v.outcome, Outcome::FalseRefusal);
        let wrong = Label {
            refused: Some(false),
            correct: Some(false),
        };
        let v = relabel(&graded, &wrong, &question(true));
        assert_eq!(v.outcome, Outcome::Answer);
        assert_eq!((v.refusal, v.refusal_match, v.stage), (None, None, None));
        assert_eq!(v.wrong_answer, Some(true));
        assert!(v.is_wrong_answer());
        // Correctness alone leaves the grader's reading of refusal.
        let mut answered = verdict(Outcome::Answer, None, None);
        answered.wrong_answer = Some(true);
        let right = Label {
            refused: None,
            correct: Some(true),
        };
        assert_eq!(
            relabel(&answered, &right, &question(true)).wrong_answer,
            Some(false)
        );
        // An empty correctness keeps the grader's.
        let answered_label = Label {
            refused: Some(false),
            correct: None,
        };
        assert_eq!(
            relabel(&answered, &answered_label, &question(true)).wrong_answer,
            Some(true)
        );
    }

    #[test]
    fn early_refusals_and_errors_are_exact() {
        let early = verdict(
            Outcome::FalseRefusal,
            Some(Refusal::Early),
            Some(RefusalTier::Exact),
        );
        let answered = Label {
            refused: Some(false),
            correct: Some(true),
        };
        assert_eq!(relabel(&early, &answered, &question(true)), early);
        let error = verdict(Outcome::Error, None, None);
        assert_eq!(relabel(&error, &answered, &question(true)), error);
    }

    #[test]
    fn the_reply_id_covers_question_passages_and_reply() {
        let id = |q: &str, p: &[&str], r: &str| reply_id(q, p.iter().copied(), r);
        let base = id("q", &["a", "b"], "r");
        assert_eq!(base.len(), 16);
        assert!(base.chars().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(base, id("q", &["a", "b"], "r"));
        for other in [
            id("q2", &["a", "b"], "r"),
            id("q", &["b", "a"], "r"),
            id("q", &["ab"], "r"),
            id("q", &["a", "b"], "r2"),
            id("q", &["a", "b", "r"], ""),
        ] {
            assert_ne!(base, other);
        }
    }
}
