//! The judge: a second model that grades each reply against a fixed rubric, for what string
//! rules cannot see (a refusal in other words, a right answer in other words, a claim no cited
//! passage supports).
//!
//! One call per distinct (question, expected answers, passages, reply): the request is built
//! from exactly those, so equal inputs collapse to one call and the response cache keeps it.
//! The reply must be the JSON object the rubric asks for; anything else is an error for that
//! grade, never a guess.

pub mod config;

use serde::{Deserialize, Serialize};

use crate::adapters::chat::{CallError, ChatRequest, ErrorKind, ReplyFormat, Usage};
use crate::adapters::corpus::{squash, Chunk};
use crate::adapters::prompt::{Message, Role};

/// The judge's instructions, sent as the system message of every judge call (docs/judge.md
/// quotes them). Changing a word here changes every judge cache key.
pub const RUBRIC: &str = "You grade one reply of a retrieval-augmented assistant. You are given the question, \
the answers the question's author expects (any one of them is enough), the numbered passages the assistant \
was given, and the assistant's reply, which cites passages as [n].\n\
Decide three things:\n\
- refused: true when the reply declines to answer or says that the passages do not hold the answer, in any \
wording or language; false when it gives an answer.\n\
- correct: true when the reply answers the question as one of the expected answers does (the same facts, in \
any wording); false when it refused, when it states other facts, or when no expected answer is given.\n\
- supported: true when every claim of the reply is stated in a passage that the reply cites; false when it \
cites nothing or when a claim is not in the passages it cites.\n\
Reply with one JSON object and nothing else: {\"refused\": true or false, \"correct\": true or false, \
\"supported\": true or false}";

/// The judge's grade of one reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Grade {
    pub refused: bool,
    pub correct: bool,
    pub supported: bool,
}

impl Grade {
    /// How the grade contradicts the rubric, for a question that states expected answers or
    /// not (`expected`): `correct` is false for a refusal and without an expected answer.
    pub fn breach(&self, expected: bool) -> Option<Breach> {
        if self.refused && self.correct {
            Some(Breach::RefusedAndCorrect)
        } else if self.correct && !expected {
            Some(Breach::CorrectWithoutExpected)
        } else {
            None
        }
    }
}

/// How a grade contradicts the rubric. Such a grade is a judge error, never a grade: a judge
/// that says it (Gemma 3 270M called 54 of 54 replies to unanswerable questions correct) is
/// not reading the rubric, and its other words are not to be trusted either for that reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Breach {
    /// `refused` and `correct` both true.
    RefusedAndCorrect,
    /// `correct` true for a question that states no expected answer.
    CorrectWithoutExpected,
}

impl Breach {
    /// What the grade said, in words.
    pub fn words(self) -> &'static str {
        match self {
            Breach::RefusedAndCorrect => "`refused` and `correct` both true",
            Breach::CorrectWithoutExpected => "`correct` true with no expected answer given",
        }
    }

    /// The run's `judge_error` for a grade that breaks the rubric this way.
    pub fn error(self, grade: &Grade) -> String {
        format!(
            "rubric: {} (`{}`); the string rules stand",
            self.words(),
            serde_json::to_string(grade).expect("a grade serializes")
        )
    }
}

/// A judge call's outcome for one reply: the grade (or why there is none) and the call's
/// tokens (zero when it failed).
#[derive(Debug, Clone, PartialEq)]
pub struct Judged {
    pub grade: Result<Grade, CallError>,
    pub usage: Usage,
}

/// Markers of the judge's user message, in order; the mock reads them back.
const QUESTION: &str = "Question: ";
const EXPECTED: &str = "\n\nExpected answers:\n";
const PASSAGES: &str = "\n\nPassages:\n";
const REPLY: &str = "\n\nReply:\n";

/// The judge call for one reply. `passages` are in the order the model saw them, so that `[n]`
/// in the reply names the n-th.
pub fn request(
    question: &str,
    expected: &[String],
    passages: &[&Chunk],
    reply: &str,
) -> ChatRequest {
    let mut user = format!("{QUESTION}{}{EXPECTED}", squash(question));
    if expected.is_empty() {
        user.push_str("(none given)");
    } else {
        let lines: Vec<String> = expected
            .iter()
            .map(|e| format!("- {}", squash(e)))
            .collect();
        user.push_str(&lines.join("\n"));
    }
    user.push_str(PASSAGES);
    let lines: Vec<String> = passages
        .iter()
        .enumerate()
        .map(|(i, c)| format!("[{}] (source: {}) {}", i + 1, c.label(), squash(&c.text)))
        .collect();
    user.push_str(&lines.join("\n\n"));
    user.push_str(REPLY);
    user.push_str(reply.trim());
    ChatRequest {
        messages: vec![
            Message {
                role: Role::System,
                content: RUBRIC.to_string(),
            },
            Message {
                role: Role::User,
                content: user,
            },
        ],
        seed: None,
        grounded: None,
        slot: 0,
        format: Some(GRADE_FORMAT),
    }
}

/// The judge's reply as a JSON Schema: the three booleans and nothing else.
pub const GRADE_FORMAT: ReplyFormat = ReplyFormat {
    name: "rageval_grade",
    schema: r#"{"type":"object","properties":{"refused":{"type":"boolean"},"correct":{"type":"boolean"},"supported":{"type":"boolean"}},"required":["refused","correct","supported"],"additionalProperties":false}"#,
};

/// Whether `request` is a judge call (its system message is the rubric).
pub fn is_judge_request(request: &ChatRequest) -> bool {
    request
        .messages
        .first()
        .is_some_and(|m| m.role == Role::System && m.content == RUBRIC)
}

/// The parts of a judge request, read back: (question, expected answers, passages by number,
/// reply).
pub struct JudgeInput<'a> {
    pub question: &'a str,
    pub expected: Vec<&'a str>,
    pub passages: Vec<&'a str>,
    pub reply: &'a str,
}

/// Read a judge request built by [`request`]; `None` for anything else.
pub fn read_request(request: &ChatRequest) -> Option<JudgeInput<'_>> {
    let user = &request.messages.get(1)?.content;
    let rest = user.strip_prefix(QUESTION)?;
    let (question, rest) = rest.split_once(EXPECTED)?;
    let (expected, rest) = rest.split_once(PASSAGES)?;
    let (passages, reply) = rest.split_once(REPLY)?;
    let expected = match expected {
        "(none given)" => Vec::new(),
        list => list.lines().filter_map(|l| l.strip_prefix("- ")).collect(),
    };
    let passages = passages
        .split("\n\n")
        .filter(|p| !p.is_empty())
        .map(|p| p.split_once(") ").map_or(p, |(_, text)| text))
        .collect();
    Some(JudgeInput {
        question,
        expected,
        passages,
        reply,
    })
}

/// The grade in a judge's reply: one JSON object with the three booleans, optionally inside a
/// ```json fence. Anything else is a `malformed` error.
pub fn parse(reply: &str) -> Result<Grade, CallError> {
    serde_json::from_str::<Grade>(crate::adapters::chat::unfence(reply)).map_err(|e| CallError {
        kind: ErrorKind::Malformed,
        message: format!(
            "the judge's reply is not the rubric's JSON ({e}): `{}`",
            crate::base::text::excerpt(reply, 80)
        ),
        deferred: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapters::corpus::chunk_markdown;

    #[test]
    fn a_request_reads_back_to_its_parts() {
        let chunks = chunk_markdown("a.md", "# Fee\nTen\ndollars.\n# Refunds\nHalf back.\n");
        let refs: Vec<_> = chunks.iter().collect();
        let r = request(
            " How much? ",
            &["10 US dollars".into(), "ten".into()],
            &refs,
            " Ten. [1]\n",
        );
        assert!(is_judge_request(&r));
        assert_eq!(
            r.messages[1].content,
            "Question: How much?\n\nExpected answers:\n- 10 US dollars\n- ten\n\nPassages:\n[1] (source: a.md#Fee) Ten dollars.\n\n[2] (source: a.md#Refunds) Half back.\n\nReply:\nTen. [1]"
        );
        let input = read_request(&r).unwrap();
        assert_eq!(input.question, "How much?");
        assert_eq!(input.expected, ["10 US dollars", "ten"]);
        assert_eq!(input.passages, ["Ten dollars.", "Half back."]);
        assert_eq!(input.reply, "Ten. [1]");
        let none = request("Q?", &[], &[], "No.");
        let input = read_request(&none).unwrap();
        assert!(input.expected.is_empty() && input.passages.is_empty());
    }

    #[test]
    fn a_grade_breaks_the_rubric_when_correct_cannot_be_true() {
        let g = |refused, correct| Grade {
            refused,
            correct,
            supported: false,
        };
        assert_eq!(g(true, true).breach(true), Some(Breach::RefusedAndCorrect));
        assert_eq!(g(true, true).breach(false), Some(Breach::RefusedAndCorrect));
        assert_eq!(
            g(false, true).breach(false),
            Some(Breach::CorrectWithoutExpected)
        );
        for (refused, correct, expected) in [
            (false, true, true),
            (false, false, false),
            (true, false, false),
            (true, false, true),
        ] {
            assert_eq!(g(refused, correct).breach(expected), None);
        }
    }

    #[test]
    fn only_the_rubric_json_is_a_grade() {
        let g = Grade {
            refused: false,
            correct: true,
            supported: false,
        };
        assert_eq!(
            parse(r#" {"refused": false, "correct": true, "supported": false} "#),
            Ok(g)
        );
        assert_eq!(
            parse("```json\n{\"refused\":false,\"correct\":true,\"supported\":false}\n```"),
            Ok(g)
        );
        for bad in [
            "yes",
            r#"{"refused": false, "correct": true}"#,
            r#"{"refused": "no", "correct": true, "supported": true}"#,
            r#"{"refused": false, "correct": true, "supported": true, "why": "x"}"#,
            r#"Sure! {"refused": false, "correct": true, "supported": true}"#,
        ] {
            let e = parse(bad).unwrap_err();
            assert_eq!(e.kind, ErrorKind::Malformed, "{bad}");
        }
        assert_eq!(
            parse("yes").unwrap_err().message,
            "the judge's reply is not the rubric's JSON (expected value at line 1 column 1): `yes`"
        );
    }
}
