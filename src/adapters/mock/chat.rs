//! The builtin mock model: the reference chapter's deterministic stand-in for an LLM.
//!
//! When the last message starts with `Context:`, the mock splits every passage into sentences,
//! scores each sentence by how many of its content words (repeats counted) occur among the
//! question's content words, and replies with the best sentence followed by its passage number,
//! `... [n]`. The earliest sentence wins a tie. When no sentence scores at least two, it replies
//! the refusal sentence. Any other last message is echoed back (the mock cannot rewrite).
//! It does not read and does not obey: it counts words.
//!
//! A request whose system message is the judge's rubric gets the mock judge's grade
//! ([`crate::adapters::mock::judge`]); one in a reply format a higher floor defines (the
//! question generator's) gets the replies the wiring gave the model for it ([`Formatted`]).
//! In the paraphrasing mode (`rageval mock-llm --paraphrase`) every reply is reworded
//! deterministically ([`paraphrase`]), as a real model would, so that each refusal tier can be
//! tested.

use std::collections::HashSet;

use foldhash::fast::FixedState;
use std::time::Instant;

use super::MIN_SHARED_WORDS;
use crate::adapters::chat::{
    estimate_prompt_tokens, estimate_tokens, CallError, ChatModel, ChatReply, ChatRequest, Usage,
};
use crate::adapters::prompt::REFUSAL;
use crate::base::text::{content_words, sentences};
use crate::base::BoxFuture;

/// The replies to the requests in some reply formats (`None`: not one of them), given by a
/// higher floor that defines the formats: `crate::generate::mock::reply` for the generator's.
pub type Formatted = fn(&ChatRequest) -> Option<String>;

#[derive(Debug, Clone)]
pub struct MockModel {
    refusal: String,
    paraphrase: bool,
    formatted: Option<Formatted>,
}

impl MockModel {
    pub fn new(refusal: &str) -> Self {
        MockModel {
            refusal: refusal.to_string(),
            paraphrase: false,
            formatted: None,
        }
    }

    /// The same model answering the requests `replies` answers (after the judge's).
    pub fn answering(mut self, replies: Formatted) -> Self {
        self.formatted = Some(replies);
        self
    }

    /// The same model with its answers and refusals reworded ([`paraphrase`]).
    pub fn paraphrasing(mut self, on: bool) -> Self {
        self.paraphrase = on;
        self
    }

    /// The reply text for a list of messages.
    pub fn reply(&self, request: &ChatRequest) -> String {
        if let Some(grade) = crate::adapters::mock::judge::reply(request) {
            return grade;
        }
        if let Some(formatted) = self.formatted.and_then(|replies| replies(request)) {
            return formatted;
        }
        let text = self.plain_reply(request);
        match (self.paraphrase, request.messages.last()) {
            (true, Some(last)) if last.content.starts_with("Context:") => {
                paraphrase(&text, parse_context(&last.content).1, &self.refusal)
            }
            _ => text,
        }
    }

    fn plain_reply(&self, request: &ChatRequest) -> String {
        let Some(last) = request.messages.last() else {
            return self.refusal.clone();
        };
        if !last.content.starts_with("Context:") {
            return last.content.trim().to_string();
        }
        let (passages, question) = parse_context(&last.content);
        let wanted = Wanted::new(question);
        let mut best: Option<(usize, &str, u32)> = None;
        for (n, text) in &passages {
            for sentence in sentences(text) {
                let shared = wanted.count(sentence);
                if shared >= MIN_SHARED_WORDS && best.is_none_or(|(s, _, _)| shared > s) {
                    best = Some((shared, sentence, *n));
                }
            }
        }
        match best {
            Some((_, sentence, n)) => format!("{sentence} [{n}]"),
            None => self.refusal.clone(),
        }
    }
}

/// The question's content words, and how many of them a sentence holds (repeats counted).
struct Wanted {
    words: HashSet<String, FixedState>,
    /// Bit `n` set when a wanted word is `n` bytes long (bit 63: 63 or more), so that most
    /// words of a passage are passed over without being lowercased or looked up.
    lengths: u64,
}

impl Wanted {
    fn new(question: &str) -> Wanted {
        let words: HashSet<String, FixedState> = content_words(question).collect();
        let lengths = words.iter().fold(0, |bits, w| bits | Self::bit(w.len()));
        Wanted { words, lengths }
    }

    fn bit(len: usize) -> u64 {
        1 << len.min(63)
    }

    fn count(&self, sentence: &str) -> usize {
        let mut shared = 0;
        if sentence.is_ascii() {
            // As `each_word` splits an ASCII text, without lowercasing a word whose length no
            // wanted word has.
            let mut lower = String::new();
            for w in sentence.as_bytes().split(|b| !b.is_ascii_alphanumeric()) {
                if w.is_empty() || self.lengths & Self::bit(w.len()) == 0 {
                    continue;
                }
                lower.clear();
                lower.extend(w.iter().map(|b| char::from(b.to_ascii_lowercase())));
                shared += usize::from(self.words.contains(lower.as_str()));
            }
            return shared;
        }
        // `words` holds no stopword, so every word can be looked up as it is.
        crate::base::text::each_word(sentence, |w| shared += usize::from(self.words.contains(w)));
        shared
    }
}

impl Default for MockModel {
    fn default() -> Self {
        MockModel::new(REFUSAL)
    }
}

impl ChatModel for MockModel {
    fn model(&self) -> String {
        "mock".to_string()
    }

    fn is_mock(&self) -> bool {
        true
    }

    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatReply, CallError>> {
        Box::pin(async move {
            let started = Instant::now();
            let text = self.reply(request);
            let usage = Usage {
                prompt_tokens: estimate_prompt_tokens(&request.messages),
                completion_tokens: estimate_tokens(&text),
                cached_prompt_tokens: 0,
                estimated: false,
            };
            Ok(ChatReply {
                text,
                usage,
                latency: started.elapsed(),
                ttft: None,
                cached: false,
                batch: false,
            })
        })
    }
}

/// The paraphrasing mode's rewording of a reply to `question`, deterministic so that tests can
/// name the tier each reply needs. A refusal becomes variant `c mod 4`, where `c` is the
/// number of characters of the question:
///
/// | c mod 4 | reply | recognised by |
/// |---|---|---|
/// | 0 | the sentence as configured | `exact` |
/// | 1 | the sentence lowercased, without its final period | `lenient` |
/// | 2 | `The provided documents do not mention this.` | a pattern such as `do not mention` |
/// | 3 | `Sorry, I could not find that in what I was given.` | only a judge |
///
/// An answer becomes `According to the passages, <sentence>` with its first letter lowercased
/// and whole numbers up to twenty written as words (`7 days` -> `seven days`), citations kept,
/// so that an expected text with a digit no longer appears in it.
pub fn paraphrase(reply: &str, question: &str, refusal: &str) -> String {
    if reply == refusal {
        return match question.chars().count() % 4 {
            0 => refusal.to_string(),
            1 => refusal.trim().trim_end_matches('.').to_lowercase(),
            2 => "The provided documents do not mention this.".to_string(),
            _ => "Sorry, I could not find that in what I was given.".to_string(),
        };
    }
    let worded = crate::base::text::map_words(reply, |w| {
        w.parse::<usize>()
            .ok()
            .filter(|_| !w.starts_with('0') || w == "0")
            .and_then(|n| crate::base::text::NUMBER_WORDS.get(n))
            .map(|s| s.to_string())
    });
    // Citations are `[n]` with digits: put them back.
    let worded = restore_citations(reply, &worded);
    let mut chars = worded.chars();
    let lowered: String = match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    };
    format!("According to the passages, {lowered}")
}

/// `worded` with the `[n]` citations of `original` (in order) in place of their reworded forms.
fn restore_citations(original: &str, worded: &str) -> String {
    let mut out = worded.to_string();
    for (_, n) in crate::adapters::prompt::citation_spans(original)
        .into_iter()
        .rev()
    {
        let Some(word) = crate::base::text::NUMBER_WORDS.get(n as usize) else {
            continue;
        };
        let from = format!("[{word}]");
        if let Some(at) = out.rfind(&from) {
            out.replace_range(at..at + from.len(), &format!("[{n}]"));
        }
    }
    out
}

/// Split a `Context:` message into numbered passage texts and the question.
fn parse_context(content: &str) -> (Vec<(u32, &str)>, &str) {
    let body = content.strip_prefix("Context:").unwrap_or(content);
    let (context, question) = match body.rfind("\nQuestion:") {
        Some(at) => (&body[..at], body[at + "\nQuestion:".len()..].trim()),
        None => (body, ""),
    };
    let passages = if context.trim_start().starts_with("<passage") {
        parse_tagged(context)
    } else {
        context
            .split("\n\n")
            .filter_map(|block| parse_passage(block.trim()))
            .collect()
    };
    (passages, question)
}

/// `<passage n="1" ...>text</passage>` blocks -> (n, text).
fn parse_tagged(context: &str) -> Vec<(u32, &str)> {
    let mut out = Vec::new();
    let mut rest = context;
    while let Some(open) = rest.find("<passage") {
        let Some(gt) = rest[open..].find('>') else {
            break;
        };
        let tag = &rest[open..open + gt];
        let body_start = open + gt + 1;
        let Some(close) = rest[body_start..].find("</passage>") else {
            break;
        };
        let n = tag
            .split_once("n=\"")
            .and_then(|(_, v)| v.split('"').next())
            .and_then(|v| v.parse().ok());
        if let Some(n) = n {
            out.push((n, rest[body_start..body_start + close].trim()));
        }
        rest = &rest[body_start + close + "</passage>".len()..];
    }
    out
}

/// `[n] (source: label) text` -> (n, text). The label may itself hold balanced parentheses.
fn parse_passage(block: &str) -> Option<(u32, &str)> {
    let rest = block.strip_prefix('[')?;
    let close = rest.find(']')?;
    let n: u32 = rest[..close].parse().ok()?;
    let mut text = rest[close + 1..].trim_start();
    if let Some(after) = text.strip_prefix("(source:") {
        let mut depth = 1usize;
        let mut end = None;
        for (i, c) in after.char_indices() {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        end = Some(i);
                        break;
                    }
                }
                _ => {}
            }
        }
        text = after[end? + 1..].trim_start();
    }
    Some((n, text))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapters::corpus::chunk_markdown;
    use crate::adapters::prompt::{build, Format};

    fn ask(question: &str, doc: &str) -> String {
        let chunks = chunk_markdown("club.md", doc);
        let refs: Vec<_> = chunks.iter().collect();
        let numbered = MockModel::default().reply(&ChatRequest {
            messages: build(question, &refs, REFUSAL, Format::Numbered),
            seed: None,
            grounded: None,
            slot: 0,
            format: None,
        });
        let tagged = MockModel::default().reply(&ChatRequest {
            messages: build(question, &refs, REFUSAL, Format::Tagged),
            seed: None,
            grounded: None,
            slot: 0,
            format: None,
        });
        assert_eq!(numbered, tagged, "the mock reads both formats alike");
        numbered
    }

    const DOC: &str = "# Membership fee\nMembership costs 10 US dollars per term. A term lasts\nabout four months.\n\n# Showcase Day (finals)\nEach team has 7 minutes to present. The club club meets.\n";

    #[test]
    fn wanted_words_are_counted_as_each_word_and_a_set_count_them() {
        let long = "x".repeat(70);
        let question = format!("When is the Membership FEE due, café {long}?");
        let wanted = Wanted::new(&question);
        let set: HashSet<String> = content_words(&question).collect();
        for sentence in [
            "The membership fee is due in March; the fee doubles late.",
            "FEE fee Fee fees feed",
            "Café au lait, café! Membership.",
            &format!("a {long} and {}", "x".repeat(71)),
            "",
            "nothing shared here",
        ] {
            let mut expected = 0;
            crate::base::text::each_word(sentence, |w| expected += usize::from(set.contains(w)));
            assert_eq!(wanted.count(sentence), expected, "{sentence:?}");
        }
        assert_eq!(
            wanted.count("The membership fee is due; the fee doubles."),
            4
        );
    }

    #[test]
    fn picks_the_sentence_sharing_most_words_and_cites_it() {
        assert_eq!(
            ask("How much does membership cost per term?", DOC),
            "Membership costs 10 US dollars per term. [1]"
        );
        assert_eq!(
            ask("How many minutes does each team get to present?", DOC),
            "Each team has 7 minutes to present. [2]"
        );
    }

    #[test]
    fn repeated_words_count_so_club_twice_is_enough() {
        assert_eq!(
            ask("Does the club teach Rust?", DOC),
            "The club club meets. [2]"
        );
    }

    #[test]
    fn refuses_below_two_shared_words() {
        assert_eq!(ask("Who is the vice president?", DOC), REFUSAL);
        assert_eq!(ask("What about the term?", DOC), REFUSAL);
    }

    #[test]
    fn ties_go_to_the_earliest_sentence() {
        let doc = "# A\nRed apples grow. Red apples fall.\n# B\nRed apples shine.\n";
        assert_eq!(ask("red apples?", doc), "Red apples grow. [1]");
    }

    #[test]
    fn non_context_messages_are_echoed() {
        let messages = vec![crate::adapters::prompt::Message {
            role: crate::adapters::prompt::Role::User,
            content: " rewrite this ".into(),
        }];
        assert_eq!(
            MockModel::default().reply(&ChatRequest {
                messages,
                seed: None,
                grounded: None,
                slot: 0,
                format: None,
            }),
            "rewrite this"
        );
    }

    #[test]
    fn sentence_split_keeps_decimals_and_abbreviations_together_when_unspaced() {
        let s: Vec<_> = sentences("It costs 2.50 dollars. Really?Yes! End").collect();
        assert_eq!(s, ["It costs 2.50 dollars.", "Really?Yes!", "End"]);
        // Unicode whitespace ends a sentence too; a terminator inside other text does not.
        let s: Vec<_> = sentences("Café ouvert.\u{a0}Prix 3€. Fin…? «Oui!»").collect();
        assert_eq!(s, ["Café ouvert.", "Prix 3€.", "Fin…?", "«Oui!»"]);
        assert_eq!(sentences("  ").count(), 0);
        assert_eq!(sentences("...").collect::<Vec<_>>(), ["..."]);
    }

    #[test]
    fn paraphrases_are_deterministic_by_question_length() {
        let refusal = |q: &str| paraphrase(REFUSAL, q, REFUSAL);
        assert_eq!(refusal("abcd"), REFUSAL);
        assert_eq!(
            refusal("abcde"),
            "i don't know based on the provided documents"
        );
        assert_eq!(
            refusal("abcdef"),
            "The provided documents do not mention this."
        );
        assert_eq!(
            refusal("abcdefg"),
            "Sorry, I could not find that in what I was given."
        );
        assert_eq!(
            paraphrase(
                "Each team has 7 minutes, 9 to 12 in B2. [1] [2]",
                "q",
                REFUSAL
            ),
            "According to the passages, each team has seven minutes, nine to twelve in B2. [1] [2]"
        );
        let m = MockModel::default().paraphrasing(true);
        let chunks = chunk_markdown("club.md", DOC);
        let refs: Vec<_> = chunks.iter().collect();
        let ask = |q: &str| {
            m.reply(&ChatRequest {
                messages: build(q, &refs, REFUSAL, Format::Numbered),
                seed: None,
                grounded: None,
                slot: 0,
                format: None,
            })
        };
        assert_eq!(
            ask("How many minutes does each team get to present?"),
            "According to the passages, each team has seven minutes to present. [2]"
        );
        // 26 characters: variant 2.
        assert_eq!(
            ask("Who is the vice president?"),
            "The provided documents do not mention this."
        );
    }

    #[test]
    fn headings_with_parentheses_do_not_leak_into_text() {
        assert_eq!(
            parse_passage("[3] (source: a.md#Fees (2024)) Text here."),
            Some((3, "Text here."))
        );
    }
}
