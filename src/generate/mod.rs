//! Question generation (`rageval generate`, docs/generate.md), a floor above the sweep engine
//! it draws passages and retrieval from: the prompts that ask a model for an answerable
//! question about one passage, a near-miss unanswerable one, an off-topic or a false-premise
//! one, and the verifier's prompts that ask whether retrieved passages answer a question or
//! hold its premise; the one JSON object each reply must be, and the checks a candidate must
//! pass (here); the `generate:` section ([`config`]); the engine that samples passages, makes
//! the calls, verifies and deduplicates ([`engine`]); and the mock generator and verifier
//! ([`mock`]), which the wiring gives the in-process mock model (`chat.kind: mock`) and
//! `rageval mock-llm` serves.
//!
//! A reply that is not the JSON asked for is a rejected candidate with its reason, never a
//! guess.

pub mod config;
pub mod engine;
pub mod mock;

use serde::Deserialize;

use crate::adapters::chat::{unfence, ChatRequest, ReplyFormat};
use crate::adapters::corpus::{squash, Chunk};
use crate::adapters::prompt::{Message, Role};
use crate::adapters::template::{Slot, Template, TemplateError};
use crate::base::text::{holds_answer, normal_answer, words};

/// The most questions of one class a run may ask for (`--answerable`, `--unanswerable`).
pub const MAX_QUESTIONS: usize = 10_000;

/// The longest question kept, in characters: a longer "question" is a reply gone wrong.
pub const MAX_QUESTION_CHARS: usize = 500;

/// A question that shares this many consecutive words with its passage copies it (and with
/// its prompt's instructions, repeats them).
pub const COPY_RUN: usize = 8;

/// The most words an answerable candidate's answer may have. The built-in prompt states it
/// through `{max_answer_words}`, rendered from this constant, and the check holds answers to
/// it whenever the prompt states it.
pub const MAX_ANSWER_WORDS: usize = 10;

/// The most characters of a rejected reply or failed call kept for `--rejected`.
pub const REJECTED_REPLY_CHARS: usize = 300;

/// What a generated question is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// The passage answers it; it carries the answer.
    Answerable,
    /// On the passage's topic, answered by no passage.
    NearMiss,
    /// Off the corpus's topic altogether.
    OffTopic,
    /// Takes for granted a fact its passage contradicts ("Why did the fee go up to 20
    /// dollars?" when the passage says 10); it carries the premise and the passage's truth.
    FalsePremise,
}

impl Kind {
    pub const ALL: [Kind; 4] = [
        Kind::Answerable,
        Kind::NearMiss,
        Kind::OffTopic,
        Kind::FalsePremise,
    ];

    /// How the kind is named in files and messages.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Answerable => "answerable",
            Kind::NearMiss => "near-miss",
            Kind::OffTopic => "off-topic",
            Kind::FalsePremise => "false-premise",
        }
    }

    /// The reply format a generation call of this kind asks for.
    pub fn format(self) -> ReplyFormat {
        match self {
            Kind::Answerable => ANSWERABLE_FORMAT,
            Kind::NearMiss => NEAR_MISS_FORMAT,
            Kind::OffTopic => OFF_TOPIC_FORMAT,
            Kind::FalsePremise => FALSE_PREMISE_FORMAT,
        }
    }
}

/// An answerable candidate: `{"question": "...", "answer": "..."}`.
pub const ANSWERABLE_FORMAT: ReplyFormat = ReplyFormat {
    name: "rageval_answerable_question",
    schema: r#"{"type":"object","properties":{"question":{"type":"string"},"answer":{"type":"string"}},"required":["question","answer"],"additionalProperties":false}"#,
};

/// A near-miss unanswerable candidate: `{"question": "..."}`.
pub const NEAR_MISS_FORMAT: ReplyFormat = ReplyFormat {
    name: "rageval_near_miss_question",
    schema: QUESTION_SCHEMA,
};

/// An off-topic candidate: `{"question": "..."}`.
pub const OFF_TOPIC_FORMAT: ReplyFormat = ReplyFormat {
    name: "rageval_off_topic_question",
    schema: QUESTION_SCHEMA,
};

/// A false-premise candidate: `{"question": "...", "premise": "...", "truth": "..."}`.
pub const FALSE_PREMISE_FORMAT: ReplyFormat = ReplyFormat {
    name: "rageval_false_premise_question",
    schema: r#"{"type":"object","properties":{"question":{"type":"string"},"premise":{"type":"string"},"truth":{"type":"string"}},"required":["question","premise","truth"],"additionalProperties":false}"#,
};

/// The premise verifier's verdict: `{"premise": "supported"|"false"|"unsupported"}`.
pub const PREMISE_FORMAT: ReplyFormat = ReplyFormat {
    name: "rageval_premise_verdict",
    schema: r#"{"type":"object","properties":{"premise":{"type":"string","enum":["supported","false","unsupported"]}},"required":["premise"],"additionalProperties":false}"#,
};

const QUESTION_SCHEMA: &str = r#"{"type":"object","properties":{"question":{"type":"string"}},"required":["question"],"additionalProperties":false}"#;

/// The verifier's verdict: `{"answerable": true|false}`.
pub const VERDICT_FORMAT: ReplyFormat = ReplyFormat {
    name: "rageval_verdict",
    schema: r#"{"type":"object","properties":{"answerable":{"type":"boolean"}},"required":["answerable"],"additionalProperties":false}"#,
};

/// Every reply format `rageval generate` asks for: the four kinds' and the two verifiers'.
pub const FORMATS: [ReplyFormat; 6] = [
    ANSWERABLE_FORMAT,
    NEAR_MISS_FORMAT,
    OFF_TOPIC_FORMAT,
    FALSE_PREMISE_FORMAT,
    VERDICT_FORMAT,
    PREMISE_FORMAT,
];

/// The built-in `generate.answerable_prompt`.
pub const ANSWERABLE_PROMPT: &str = r#"You write test questions for a search assistant that answers from a collection of documents.

Passage (from {source}):
<passage>
{passage}
</passage>

Write one question that a user of these documents might ask and that this passage answers, and its answer.
- The answer is a short phrase of at most {max_answer_words} words, copied word for word from the passage.
- The question is in your own words and makes sense without the passage: do not copy a sentence of the passage.
Reply with one JSON object and nothing else: {"question": "...", "answer": "..."}"#;

/// The built-in `generate.unanswerable_prompt`.
pub const UNANSWERABLE_PROMPT: &str = r#"You write test questions for a search assistant that answers from a collection of documents and must refuse what they do not answer.

Passage (from {source}):
<passage>
{passage}
</passage>

Write one question on the same topic as this passage that the passage does not answer: ask for a detail it does not give (a number, a date, a condition, an exception, a comparison), as a real user would. Do not ask about anything the passage states.
Reply with one JSON object and nothing else: {"question": "..."}"#;

/// The built-in `generate.off_topic_prompt`.
pub const OFF_TOPIC_PROMPT: &str = r#"You write test questions for a search assistant that answers from a collection of documents and must refuse what they do not answer.

One passage of the documents, so that you know what they are about (from {source}):
<passage>
{passage}
</passage>

Write one question a user might type into this assistant that has nothing to do with the topic of these documents (general knowledge, another product, everyday life).
Reply with one JSON object and nothing else: {"question": "..."}"#;

/// The built-in `generate.false_premise_prompt`.
pub const FALSE_PREMISE_PROMPT: &str = r#"You write test questions for a search assistant that answers from a collection of documents and must not go along with a claim the documents contradict.

Passage (from {source}):
<passage>
{passage}
</passage>

Write one question that takes for granted a fact this passage contradicts: change one detail the passage states (a number, a date, a name, a condition) and ask about it as a real user would, as if the changed detail were true (for example "Why did the fee go up to 20 dollars?" when the passage says the fee is 10 dollars).
- premise: the changed fact the question takes for granted, as a short statement.
- truth: what the passage says instead, copied word for word from the passage.
Reply with one JSON object and nothing else: {"question": "...", "premise": "...", "truth": "..."}"#;

/// The built-in `generate.premise_prompt`.
pub const PREMISE_PROMPT: &str = r#"A question takes a claim for granted. Decide whether the passages below support the claim. Say "supported" only when a passage states it; say "false" when a passage contradicts it; say "unsupported" when no passage says either.

Question: {question}
Claim: {premise}

Passages:
{passages}

Reply with one JSON object and nothing else: {"premise": "supported"}, {"premise": "false"} or {"premise": "unsupported"}"#;

/// The built-in `generate.verify_prompt`.
pub const VERIFY_PROMPT: &str = r#"Decide whether the passages below answer the question. Say true only when a passage states the answer; say false when the passages are on the topic but do not give it.

Question: {question}

Passages:
{passages}

Reply with one JSON object and nothing else: {"answerable": true} or {"answerable": false}"#;

/// A template of the `generate:` section that did not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptFieldError {
    /// `answerable_prompt`, `unanswerable_prompt`, `off_topic_prompt` or `verify_prompt`.
    pub field: &'static str,
    pub error: TemplateError,
}

/// The generator's and the verifier's prompts, parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct Prompts {
    pub answerable: Template,
    pub near_miss: Template,
    pub off_topic: Template,
    pub false_premise: Template,
    pub verify: Template,
    pub premise: Template,
}

impl Prompts {
    /// The generation call of `kind` for `chunk`. `seed` asks again about a passage already
    /// asked about (a second pass over the corpus): a distinct request, cached apart.
    pub fn request(&self, kind: Kind, chunk: &Chunk, seed: Option<u32>) -> ChatRequest {
        let template = self.template(kind);
        let passage = squash(&chunk.text);
        let source = chunk.label();
        let limit = max_answer_words_text();
        let text = template.render(|slot| match slot {
            Slot::Passage => &passage,
            Slot::Source => &source,
            Slot::MaxAnswerWords => &limit,
            _ => "",
        });
        user_request(text, seed, kind.format())
    }

    fn template(&self, kind: Kind) -> &Template {
        match kind {
            Kind::Answerable => &self.answerable,
            Kind::NearMiss => &self.near_miss,
            Kind::OffTopic => &self.off_topic,
            Kind::FalsePremise => &self.false_premise,
        }
    }

    /// The instructions of `kind`'s prompt: the template without its passage and source, what
    /// a question must not repeat (see [`echoes_prompt`]).
    pub fn instructions(&self, kind: Kind) -> String {
        let limit = max_answer_words_text();
        self.template(kind).render(|slot| match slot {
            Slot::MaxAnswerWords => &limit,
            _ => "",
        })
    }

    /// The most words an answer may have: [`MAX_ANSWER_WORDS`] when the answerable prompt
    /// states it (holds `{max_answer_words}`, as the built-in one does), else no limit.
    pub fn answer_limit(&self) -> Option<usize> {
        self.answerable
            .uses(Slot::MaxAnswerWords)
            .then_some(MAX_ANSWER_WORDS)
    }

    /// The verifier's call: does any of `passages` (the retriever's top, best first) answer
    /// `question`?
    pub fn verify(&self, question: &str, passages: &[&Chunk]) -> ChatRequest {
        let listed = listed(passages);
        let question = squash(question);
        let text = self.verify.render(|slot| match slot {
            Slot::Question => &question,
            Slot::Passages => &listed,
            _ => "",
        });
        user_request(text, None, VERDICT_FORMAT)
    }

    /// The premise verifier's call: do `passages` support the claim `premise` that
    /// `question` takes for granted?
    pub fn verify_premise(
        &self,
        question: &str,
        premise: &str,
        passages: &[&Chunk],
    ) -> ChatRequest {
        let listed = listed(passages);
        let (question, premise) = (squash(question), squash(premise));
        let text = self.premise.render(|slot| match slot {
            Slot::Question => &question,
            Slot::Premise => &premise,
            Slot::Passages => &listed,
            _ => "",
        });
        user_request(text, None, PREMISE_FORMAT)
    }
}

/// Passages as a verifier reads them: `[n] (source: file.md#Heading) text`, blank lines
/// between, `(none)` for none.
fn listed(passages: &[&Chunk]) -> String {
    if passages.is_empty() {
        return "(none)".to_string();
    }
    passages
        .iter()
        .enumerate()
        .map(|(i, c)| format!("[{}] (source: {}) {}", i + 1, c.label(), squash(&c.text)))
        .collect::<Vec<_>>()
        .join("\n\n")
}

fn user_request(text: String, seed: Option<u32>, format: ReplyFormat) -> ChatRequest {
    ChatRequest {
        seed,
        format: Some(format),
        ..ChatRequest::of(vec![Message {
            role: Role::User,
            content: text,
        }])
    }
}

/// Why a candidate was not kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Reject {
    /// The answer is not in its passage, word for word (after the answer match's
    /// normalisation).
    AnswerNotInPassage,
    /// The answer has more words than the prompt allows ([`MAX_ANSWER_WORDS`]).
    AnswerTooLong,
    /// The question repeats the passage's words.
    CopiesPassage,
    /// The question repeats the prompt's own instructions (a small model echoing "a short
    /// phrase of at most ten words") rather than asking about the passage.
    EchoesPrompt,
    /// The question or answer is a placeholder of the prompt's reply example (`...` in
    /// `{"question": "..."}`, which a small model copies), or holds no letter or digit.
    Placeholder,
    /// The verifier found a passage that answers the unanswerable candidate.
    VerifierSaidAnswerable,
    /// The same question as a kept one or an existing one, or too close to one.
    Duplicate,
    /// The reply is not the JSON object asked for (or the verifier's is not).
    Malformed,
    /// The generation or the verification call failed.
    CallFailed,
    /// A false-premise candidate's truth is not in its passage, word for word.
    TruthNotInPassage,
    /// The verifier found the false-premise candidate's premise supported by a passage.
    PremiseSupported,
}

impl Reject {
    pub const ALL: [Reject; 11] = [
        Reject::AnswerNotInPassage,
        Reject::AnswerTooLong,
        Reject::TruthNotInPassage,
        Reject::CopiesPassage,
        Reject::EchoesPrompt,
        Reject::Placeholder,
        Reject::VerifierSaidAnswerable,
        Reject::PremiseSupported,
        Reject::Duplicate,
        Reject::Malformed,
        Reject::CallFailed,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Reject::AnswerNotInPassage => "answer not in passage",
            Reject::AnswerTooLong => "answer too long",
            Reject::CopiesPassage => "copies the passage",
            Reject::EchoesPrompt => "repeats the prompt",
            Reject::Placeholder => "placeholder or no words",
            Reject::VerifierSaidAnswerable => "verifier said answerable",
            Reject::Duplicate => "duplicate",
            Reject::Malformed => "malformed reply",
            Reject::CallFailed => "call failed",
            Reject::TruthNotInPassage => "truth not in passage",
            Reject::PremiseSupported => "verifier said the premise holds",
        }
    }
}

/// A parsed generation reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub question: String,
    /// The answer span (answerable candidates only).
    pub answer: Option<String>,
    /// The premise taken for granted and the passage's truth (false-premise candidates only).
    pub premise: Option<(String, String)>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAnswerable {
    question: String,
    answer: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawQuestion {
    question: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFalsePremise {
    question: String,
    premise: String,
    truth: String,
}

/// What the premise verifier said of a claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PremiseVerdict {
    /// A passage states it: the question is answerable as asked.
    Supported,
    /// A passage contradicts it.
    False,
    /// No passage says either.
    Unsupported,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPremiseVerdict {
    premise: PremiseVerdict,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawVerdict {
    answerable: bool,
}

fn malformed(what: &str, reply: &str, why: impl std::fmt::Display) -> String {
    format!(
        "the reply is not the {what} JSON ({why}): `{}`",
        crate::base::text::excerpt(reply, 80)
    )
}

/// Read a generation reply of `kind`: its one JSON object (optionally in a ```json fence),
/// with a non-empty question of at most [`MAX_QUESTION_CHARS`] and, for an answerable one, a
/// non-empty answer. `Err` says why it is malformed.
pub fn parse_candidate(kind: Kind, reply: &str) -> Result<Candidate, String> {
    let body = unfence(reply);
    let what = kind.name();
    let mut premise = None;
    let (question, answer) = match kind {
        Kind::Answerable => {
            let raw: RawAnswerable =
                serde_json::from_str(body).map_err(|e| malformed(what, reply, e))?;
            (raw.question, Some(raw.answer))
        }
        Kind::FalsePremise => {
            let raw: RawFalsePremise =
                serde_json::from_str(body).map_err(|e| malformed(what, reply, e))?;
            let (claim, truth) = (squash(&raw.premise), squash(&raw.truth));
            if claim.is_empty() || truth.is_empty() {
                return Err(malformed(what, reply, "the premise or the truth is empty"));
            }
            if normal_answer(&claim) == normal_answer(&truth) {
                return Err(malformed(what, reply, "the premise is the truth"));
            }
            premise = Some((claim, truth));
            (raw.question, None)
        }
        Kind::NearMiss | Kind::OffTopic => {
            let raw: RawQuestion =
                serde_json::from_str(body).map_err(|e| malformed(what, reply, e))?;
            (raw.question, None)
        }
    };
    let question = squash(&question);
    if question.is_empty() {
        return Err(malformed(what, reply, "the question is empty"));
    }
    if question.chars().count() > MAX_QUESTION_CHARS {
        return Err(malformed(
            what,
            reply,
            format!("the question is longer than {MAX_QUESTION_CHARS} characters"),
        ));
    }
    let answer = answer.map(|a| squash(&a));
    if answer.as_deref().is_some_and(str::is_empty) {
        return Err(malformed(what, reply, "the answer is empty"));
    }
    Ok(Candidate {
        question,
        answer,
        premise,
    })
}

/// Read a premise verifier's reply: `{"premise": "supported"|"false"|"unsupported"}`,
/// optionally fenced.
pub fn parse_premise_verdict(reply: &str) -> Result<PremiseVerdict, String> {
    serde_json::from_str::<RawPremiseVerdict>(unfence(reply))
        .map(|v| v.premise)
        .map_err(|e| malformed("premise verifier's", reply, e))
}

/// Read a verifier's reply: `{"answerable": true|false}`, optionally fenced.
pub fn parse_verdict(reply: &str) -> Result<bool, String> {
    serde_json::from_str::<RawVerdict>(unfence(reply))
        .map(|v| v.answerable)
        .map_err(|e| malformed("verifier's", reply, e))
}

/// Whether `answer` appears in `passage` word for word, as the answer match reads both (case,
/// whitespace runs and number words up to twenty forgiven; a number stays whole).
pub fn answer_in_passage(answer: &str, passage: &str) -> bool {
    let answer = normal_answer(answer);
    !answer.trim().is_empty() && holds_answer(&normal_answer(passage), &answer)
}

/// Whether `question` copies `passage`: it holds a run of [`COPY_RUN`] consecutive words of
/// the passage, or a whole sentence of it of three words or more.
pub fn copies_passage(question: &str, passage: &str) -> bool {
    let q: Vec<String> = words(question).collect();
    let p: Vec<String> = words(passage).collect();
    let holds = |run: &[String]| !run.is_empty() && q.windows(run.len()).any(|w| w == run);
    if p.windows(COPY_RUN).any(holds) {
        return true;
    }
    crate::base::text::sentences(passage).any(|s| {
        let run: Vec<String> = words(s).collect();
        run.len() >= 3 && holds(&run)
    })
}

/// Whether `question` repeats the instructions of its prompt rather than its passage: it
/// holds a run of [`COPY_RUN`] consecutive words of `instructions`, or a whole sentence of
/// them of three words or more, that `passage` does not hold. Number words count as their
/// digits (`ten` is `10`).
pub fn echoes_prompt(question: &str, instructions: &str, passage: &str) -> bool {
    let norm = |text: &str| words(&normal_answer(text)).collect::<Vec<String>>();
    let holds = |hay: &[String], run: &[String]| {
        !run.is_empty() && hay.windows(run.len()).any(|w| w == run)
    };
    let (q, p) = (norm(question), norm(passage));
    let echoed = |run: &[String]| holds(&q, run) && !holds(&p, run);
    norm(instructions).windows(COPY_RUN).any(echoed)
        || crate::base::text::sentences(instructions).any(|s| {
            let run = norm(s);
            run.len() >= 3 && echoed(&run)
        })
}

/// The placeholders of a prompt: the values of its reply example (`...` in the built-in
/// `{"question": "...", "answer": "..."}`, `<your question>` in a prompt that writes so).
pub fn placeholders(instructions: &str) -> Vec<String> {
    static EXAMPLE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r#""(?:question|answer|premise|truth)"\s*:\s*"([^"]*)""#)
            .expect("a valid regex")
    });
    let mut out: Vec<String> = Vec::new();
    for c in EXAMPLE.captures_iter(instructions) {
        let value = normal_answer(&c[1]);
        if !out.contains(&value) {
            out.push(value);
        }
    }
    out
}

/// Whether `text` is no question or answer at all: it holds no letter or digit (`...`, `?`),
/// or it is one of the prompt's `placeholders` (compared as the answer match reads text).
pub fn is_placeholder(text: &str, placeholders: &[String]) -> bool {
    !text.chars().any(char::is_alphanumeric) || placeholders.contains(&normal_answer(text))
}

/// Whether `answer` has more words than `limit`.
pub fn answer_too_long(answer: &str, limit: Option<usize>) -> bool {
    limit.is_some_and(|n| words(answer).count() > n)
}

/// [`MAX_ANSWER_WORDS`] as the prompt writes it: a word up to twenty (`ten`), else digits.
pub fn max_answer_words_text() -> String {
    crate::base::text::NUMBER_WORDS
        .get(MAX_ANSWER_WORDS)
        .map_or_else(|| MAX_ANSWER_WORDS.to_string(), |w| (*w).to_string())
}

/// A question as the exact-duplicate check compares it: its words, lowercased, one space apart.
pub fn normal_question(question: &str) -> String {
    words(question).collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapters::corpus::chunk_markdown;

    fn prompts() -> Prompts {
        config::GenerateConfig::default().prompts().unwrap()
    }

    #[test]
    fn placeholders_are_the_reply_examples_values_and_wordless_text_is_one() {
        let p = prompts();
        let answerable = placeholders(&p.instructions(Kind::Answerable));
        assert_eq!(answerable, ["..."]);
        assert!(is_placeholder("...", &answerable));
        assert!(is_placeholder(" … ?! ", &answerable));
        assert!(!is_placeholder("What is the fee?", &answerable));
        let custom =
            placeholders(r#"Reply: {"question": "<your question>", "answer": "<its answer>"}"#);
        assert_eq!(custom, ["<your question>", "<its answer>"]);
        assert!(is_placeholder("<Your  question>", &custom));
        assert!(!is_placeholder("your question", &custom));
    }

    #[test]
    fn the_prompts_carry_the_passage_its_source_and_the_reply_format() {
        let chunks = chunk_markdown("club.md", "# Fees\nMembership costs\n40 euros a year.\n");
        let r = prompts().request(Kind::Answerable, &chunks[0], None);
        assert_eq!(r.format, Some(ANSWERABLE_FORMAT));
        assert_eq!(r.messages.len(), 1);
        let text = &r.messages[0].content;
        assert!(
            text.contains("Passage (from club.md#Fees):\n<passage>\nMembership costs 40 euros a year.\n</passage>"),
            "{text}"
        );
        assert!(
            text.ends_with(r#"{"question": "...", "answer": "..."}"#),
            "{text}"
        );
        assert_eq!(
            prompts().request(Kind::OffTopic, &chunks[0], Some(2)).seed,
            Some(2)
        );
        let v = prompts().verify(" Late  fee? ", &[&chunks[0]]);
        assert_eq!(v.format, Some(VERDICT_FORMAT));
        assert!(v.messages[0].content.contains(
            "Question: Late fee?\n\nPassages:\n[1] (source: club.md#Fees) Membership costs 40 euros a year.\n\nReply"
        ));
        assert!(prompts().verify("Q?", &[]).messages[0]
            .content
            .contains("Passages:\n(none)\n"));
    }

    #[test]
    fn every_schema_is_json_and_names_the_fields_the_parser_reads() {
        for f in FORMATS {
            let rf = f.response_format();
            assert_eq!(rf["type"], "json_schema");
            assert_eq!(rf["json_schema"]["name"], f.name);
            assert_eq!(rf["json_schema"]["schema"]["additionalProperties"], false);
        }
        let names: std::collections::HashSet<_> =
            Kind::ALL.iter().map(|k| k.format().name).collect();
        assert_eq!(names.len(), 4, "each kind has its own format name");
    }

    #[test]
    fn only_the_json_asked_for_is_a_candidate() {
        assert_eq!(
            parse_candidate(
                Kind::Answerable,
                "```json\n{\"question\": \" How much is  it? \", \"answer\": \"40 euros\"}\n```"
            ),
            Ok(Candidate {
                question: "How much is it?".into(),
                answer: Some("40 euros".into()),
                premise: None,
            })
        );
        assert_eq!(
            parse_candidate(Kind::NearMiss, r#"{"question": "When?"}"#),
            Ok(Candidate {
                question: "When?".into(),
                answer: None,
                premise: None,
            })
        );
        assert_eq!(
            parse_candidate(
                Kind::FalsePremise,
                r#"{"question": "Why is the fee 20 euros?", "premise": "the fee is 20 euros", "truth": "40 euros a year"}"#
            ),
            Ok(Candidate {
                question: "Why is the fee 20 euros?".into(),
                answer: None,
                premise: Some(("the fee is 20 euros".into(), "40 euros a year".into())),
            })
        );
        for bad in [
            r#"{"question": "Why?", "premise": "x is 2"}"#,
            r#"{"question": "Why?", "premise": " ", "truth": "x is 1"}"#,
            r#"{"question": "Why?", "premise": "X is  two", "truth": "x is 2"}"#,
        ] {
            assert!(parse_candidate(Kind::FalsePremise, bad).is_err(), "{bad}");
        }
        assert_eq!(
            parse_premise_verdict(r#"{"premise": "false"}"#),
            Ok(PremiseVerdict::False)
        );
        assert_eq!(
            parse_premise_verdict("```json\n{\"premise\":\"supported\"}\n```"),
            Ok(PremiseVerdict::Supported)
        );
        assert!(parse_premise_verdict(r#"{"premise": "maybe"}"#).is_err());
        assert!(parse_premise_verdict(r#"{"answerable": false}"#).is_err());
        for (kind, bad) in [
            (Kind::Answerable, r#"{"question": "When?"}"#),
            (Kind::Answerable, r#"{"question": "When?", "answer": ""}"#),
            (
                Kind::Answerable,
                r#"{"question": "When?", "answer": "now", "why": "x"}"#,
            ),
            (Kind::NearMiss, r#"{"question": "  "}"#),
            (Kind::NearMiss, r#"Sure! {"question": "When?"}"#),
            (Kind::OffTopic, r#"{"question": 3}"#),
            (Kind::OffTopic, "What is the capital of France?"),
        ] {
            assert!(parse_candidate(kind, bad).is_err(), "{bad}");
        }
        let long = format!(r#"{{"question": "{}"}}"#, "why ".repeat(200));
        assert!(parse_candidate(Kind::NearMiss, &long)
            .unwrap_err()
            .contains("longer than 500 characters"));
        assert_eq!(
            parse_candidate(Kind::NearMiss, "yes").unwrap_err(),
            "the reply is not the near-miss JSON (expected value at line 1 column 1): `yes`"
        );
        assert_eq!(parse_verdict(r#" {"answerable": false} "#), Ok(false));
        assert_eq!(
            parse_verdict("```json\n{\"answerable\":true}\n```"),
            Ok(true)
        );
        assert!(parse_verdict(r#"{"answerable": "no"}"#).is_err());
        assert!(parse_verdict("No.").is_err());
    }

    #[test]
    fn an_answer_must_be_in_its_passage_as_the_answer_match_reads_it() {
        let passage = "Refunds are paid within  Seven days of the request.";
        assert!(answer_in_passage("within 7 days", passage));
        assert!(answer_in_passage("seven DAYS", passage));
        assert!(!answer_in_passage("within a week", passage));
        assert!(!answer_in_passage("  ", passage));
        // A number stays whole: 17 is not in "7 days".
        assert!(!answer_in_passage("17 days", "within 7 days"));
    }

    #[test]
    fn the_answer_limit_is_rendered_from_its_constant_and_held_when_the_prompt_states_it() {
        let chunks = chunk_markdown("club.md", "# Fees\nMembership costs\n40 euros a year.\n");
        let r = prompts().request(Kind::Answerable, &chunks[0], None);
        assert!(r.messages[0].content.contains(
            "\n- The answer is a short phrase of at most ten words, copied word for word from the passage.\n"
        ));
        assert_eq!(max_answer_words_text(), "ten");
        assert_eq!(prompts().answer_limit(), Some(MAX_ANSWER_WORDS));
        let own = |text: &str| {
            config::GenerateConfig {
                answerable_prompt: Some(text.into()),
                ..Default::default()
            }
            .prompts()
            .unwrap()
        };
        // A prompt of the user's own that states no limit sets none.
        assert_eq!(own("Ask about {passage}.").answer_limit(), None);
        let stated = own("Answer in at most {max_answer_words} words: {passage}");
        assert_eq!(stated.answer_limit(), Some(MAX_ANSWER_WORDS));
        assert_eq!(
            stated.request(Kind::Answerable, &chunks[0], None).messages[0].content,
            "Answer in at most ten words: Membership costs 40 euros a year."
        );
        let eleven = "one two three four five six seven eight nine ten eleven";
        assert!(answer_too_long(eleven, Some(10)));
        let six = "forty euros, paid yearly (by card)";
        assert!(!answer_too_long(six, Some(6)));
        assert!(answer_too_long(six, Some(5)));
        assert!(!answer_too_long(eleven, None));
    }

    #[test]
    fn a_question_repeating_its_prompts_instructions_echoes_them() {
        let p = prompts();
        let ins = p.instructions(Kind::Answerable);
        assert!(ins.contains("at most ten words,"), "{ins}");
        assert!(!ins.contains("Membership"));
        let passage = "Membership costs 40 euros a year, paid to the treasurer.";
        for echo in [
            // SmolLM2-135M's one kept question of 80.
            "This is a short phrase of at most ten words, copied word for word from the passage.",
            "A short phrase of at most 10 words?",
            "Reply with one JSON object and nothing else?",
        ] {
            assert!(echoes_prompt(echo, &ins, passage), "{echo}");
        }
        let near = p.instructions(Kind::NearMiss);
        assert!(echoes_prompt(
            "Write one question on the same topic as this passage?",
            &near,
            passage
        ));
        for fine in [
            "How much does membership cost?",
            "Who is the membership fee paid to?",
            "What is the answer to the question about fees?",
            "Is the passage about membership?",
        ] {
            assert!(!echoes_prompt(fine, &ins, passage), "{fine}");
            assert!(!echoes_prompt(fine, &near, passage), "{fine}");
        }
        // Words the passage itself holds are the passage's, not the prompt's.
        let about = "The answer is a short phrase of at most ten words, copied word for word from the passage.";
        assert!(!echoes_prompt(
            "Is the answer a short phrase of at most ten words, copied word for word?",
            &ins,
            about
        ));
    }

    #[test]
    fn a_question_that_repeats_the_passage_copies_it() {
        let passage =
            "Members may bring two guests to any event held on a weekday evening. Guests pay.";
        assert!(copies_passage(
            "Can members bring two guests to any event held on a weekday evening?",
            passage
        ));
        // A whole short sentence repeated.
        assert!(copies_passage(
            "Do guests pay extra?",
            "Tea is free. Guests pay extra."
        ));
        assert!(!copies_passage(
            "How many guests may a member bring?",
            passage
        ));
        // Seven words in a row are not a copy.
        assert!(!copies_passage(
            "may bring two guests to any event, or not?",
            passage
        ));
        assert_eq!(normal_question(" How MANY guests?! "), "how many guests");
    }
}
