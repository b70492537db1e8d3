//! The mock generator and verifier: deterministic replies to `rageval generate`'s calls, so
//! that the tests and the sample run offline. A call is recognised by the reply format it asks
//! for (the request's [`ReplyFormat`], over HTTP its `response_format`); the mock reads the
//! passage between the `<passage>` and `</passage>` lines of the prompt (the whole message when
//! there are none), and the verifier's question and passages from its `Question:` line and
//! `[n] (source: ...)` lines, as the built-in prompts write them. Like the mock model, it counts
//! words; it does not read.
//!
//! - answerable: among the passage's sentences with at least four content words (most first,
//!   the earliest on a tie; the request's seed picks the next one), the answer is the
//!   sentence's last three words and the question asks about its first four other content
//!   words; a passage with no such sentence gets a reply that is not JSON;
//! - near-miss: a detail the passage is unlikely to give (a list, picked by the passage and
//!   the seed) about the passage's two most frequent content words;
//! - off-topic: a general-knowledge question from a list, picked the same way;
//! - false-premise: among the passage's sentences with a number (the seed picks one), the
//!   truth is the sentence and the premise the same sentence with its first number doubled
//!   (plus one), asked as `Why is it that PREMISE?`; a passage with no number gets a premise
//!   it supports (its first sentence, the truth its last three words), which the verifier
//!   then rejects;
//! - verifier: answerable exactly when one passage holds every content word of the question;
//! - premise verifier: `supported` when one passage holds every content word of the claim,
//!   `false` when one holds all but one, `unsupported` otherwise.

use std::collections::HashSet;

use super::{
    ANSWERABLE_FORMAT, FALSE_PREMISE_FORMAT, NEAR_MISS_FORMAT, OFF_TOPIC_FORMAT, PREMISE_FORMAT,
    VERDICT_FORMAT,
};
use crate::adapters::chat::ChatRequest;
use crate::base::text::{content_words, sentences};

/// Details a near-miss question asks for.
const DETAILS: [&str; 12] = [
    "late fee in euros",
    "deadline for minors",
    "discount for students",
    "maximum number of guests allowed per weekend",
    "penalty for a second offence",
    "holiday schedule",
    "exception for overseas members",
    "refund in cryptocurrency",
    "limit for pets",
    "phone number of the manager",
    "rule in leap years",
    "warranty period",
];

/// Questions an off-topic candidate asks.
const OFF_TOPIC: [&str; 16] = [
    "How tall is Mount Kilimanjaro?",
    "Who painted the ceiling of the Sistine Chapel?",
    "What is the boiling point of water at the top of Everest?",
    "How many moons does Jupiter have?",
    "What is a good recipe for banana bread?",
    "Which language has the most native speakers?",
    "How do I change a flat bicycle tyre?",
    "When did the Berlin Wall fall?",
    "What is the speed of sound in air?",
    "Who wrote the novel Moby-Dick?",
    "How long should an egg be boiled to be soft?",
    "What is the capital city of Australia?",
    "How many bones are in the human hand?",
    "Which planet has the longest day?",
    "How do tides work?",
    "What does a sommelier do?",
];

/// The mock's reply to a generation or verification call; `None` for any other request.
pub fn reply(request: &ChatRequest) -> Option<String> {
    let format = request.format?;
    let text = &request.messages.last()?.content;
    let seed = request.seed.unwrap_or(0) as usize;
    let json = |v: serde_json::Value| v.to_string();
    if format == ANSWERABLE_FORMAT {
        let passage = passage(text);
        return Some(match answerable(passage, seed) {
            Some((question, answer)) => {
                json(serde_json::json!({"question": question, "answer": answer}))
            }
            None => "This passage has no sentence to ask about.".to_string(),
        });
    }
    if format == NEAR_MISS_FORMAT {
        let passage = passage(text);
        let mut counts: Vec<(String, usize, usize)> = Vec::new();
        for (i, w) in content_words(passage).enumerate() {
            match counts.iter_mut().find(|(c, _, _)| *c == w) {
                Some(c) => c.1 += 1,
                None => counts.push((w, 1, i)),
            }
        }
        counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.2.cmp(&b.2)));
        let topic: Vec<&str> = counts.iter().take(2).map(|c| c.0.as_str()).collect();
        let detail = DETAILS[(fnv(passage) as usize + seed) % DETAILS.len()];
        let question = format!("What is the {detail} for {}?", topic.join(" "));
        return Some(json(serde_json::json!({ "question": question })));
    }
    if format == OFF_TOPIC_FORMAT {
        let q = OFF_TOPIC[(fnv(passage(text)) as usize + seed) % OFF_TOPIC.len()];
        return Some(json(serde_json::json!({ "question": q })));
    }
    if format == FALSE_PREMISE_FORMAT {
        let (question, premise, truth) = false_premise(passage(text), seed)?;
        return Some(json(
            serde_json::json!({"question": question, "premise": premise, "truth": truth}),
        ));
    }
    if format == PREMISE_FORMAT {
        let (_, passages) = verify_input(text);
        let claim = text
            .lines()
            .find_map(|l| l.strip_prefix("Claim: "))
            .unwrap_or("");
        let wanted: HashSet<String> = content_words(claim).collect();
        let missing = |p: &&str| {
            let have: HashSet<String> = content_words(p).collect();
            wanted.difference(&have).count()
        };
        let fewest = passages.iter().map(missing).min().unwrap_or(usize::MAX);
        let verdict = match fewest {
            0 if !wanted.is_empty() => "supported",
            1 => "false",
            _ => "unsupported",
        };
        return Some(json(serde_json::json!({ "premise": verdict })));
    }
    if format == VERDICT_FORMAT {
        let (question, passages) = verify_input(text);
        let wanted: HashSet<String> = content_words(question).collect();
        let answerable = !wanted.is_empty()
            && passages.iter().any(|p| {
                let have: HashSet<String> = content_words(p).collect();
                wanted.is_subset(&have)
            });
        return Some(json(serde_json::json!({ "answerable": answerable })));
    }
    None
}

/// The text between the `<passage>` and `</passage>` lines, or all of `text`.
fn passage(text: &str) -> &str {
    text.split_once("<passage>\n")
        .and_then(|(_, rest)| rest.split_once("\n</passage>"))
        .map_or(text, |(p, _)| p)
}

/// The verifier prompt's question and passage texts.
fn verify_input(text: &str) -> (&str, Vec<&str>) {
    let question = text
        .lines()
        .find_map(|l| l.strip_prefix("Question: "))
        .unwrap_or("");
    let passages = text
        .lines()
        .filter(|l| l.starts_with('['))
        .map(|l| l.split_once(") ").map_or(l, |(_, t)| t))
        .collect();
    (question, passages)
}

/// An answerable question about `passage`, and its answer; the `seed`-th candidate sentence.
fn answerable(passage: &str, seed: usize) -> Option<(String, String)> {
    let mut candidates: Vec<(usize, usize, &str)> = sentences(passage)
        .enumerate()
        .map(|(i, s)| (content_words(s).count(), i, s))
        .filter(|(n, _, _)| *n >= 4)
        .collect();
    if candidates.is_empty() {
        return None;
    }
    candidates.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let sentence = candidates[seed % candidates.len()].2;
    let trimmed = sentence.trim_end_matches(['.', '!', '?']);
    let tokens: Vec<&str> = trimmed.split_whitespace().collect();
    let cut = tokens.len().saturating_sub(3);
    let answer = tokens[cut..].join(" ");
    let answer_words: HashSet<String> = content_words(&answer).collect();
    let asked: Vec<String> = content_words(&tokens[..cut].join(" "))
        .filter(|w| !answer_words.contains(w))
        .take(4)
        .collect();
    if asked.len() < 2 {
        return None;
    }
    Some((
        format!("What do the documents say about {}?", asked.join(" ")),
        answer,
    ))
}

/// A false-premise question about `passage`: (question, premise, truth), from the `seed`-th
/// sentence with a number; with none, a premise the passage supports.
fn false_premise(passage: &str, seed: usize) -> Option<(String, String, String)> {
    let all: Vec<&str> = sentences(passage)
        .map(|s| s.trim_end_matches(['.', '!', '?']))
        .filter(|s| content_words(s).count() >= 3)
        .collect();
    let numbered: Vec<&str> = all
        .iter()
        .copied()
        .filter(|s| s.bytes().any(|b| b.is_ascii_digit()))
        .collect();
    let Some(&truth) = numbered.get(seed % numbered.len().max(1)) else {
        // No number to change: a premise the passage supports, for the verifier to reject.
        let sentence = *all.first()?;
        let words: Vec<&str> = sentence.split_whitespace().collect();
        let truth = words[words.len().saturating_sub(3)..].join(" ");
        let premise = lower_first(sentence);
        return Some((format!("Why is it that {premise}?"), premise, truth));
    };
    // The first number, doubled plus one: 10 -> 21, never the same.
    let start = truth.find(|c: char| c.is_ascii_digit())?;
    let len = truth[start..]
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(truth.len() - start);
    let n: u64 = truth[start..start + len].parse().ok()?;
    let changed = format!(
        "{}{}{}",
        &truth[..start],
        n.saturating_mul(2).saturating_add(1),
        &truth[start + len..]
    );
    let premise = lower_first(&changed);
    Some((
        format!("Why is it that {premise}?"),
        premise,
        truth.to_string(),
    ))
}

fn lower_first(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) => c.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// FNV-1a: a hash that is the same on every machine and in every version.
fn fnv(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapters::corpus::chunk_markdown;
    use crate::generate::{
        answer_in_passage, config::GenerateConfig, copies_passage, parse_candidate, parse_verdict,
        Kind,
    };

    const DOC: &str =
        "# Guests\nMembers may bring two guests to the clubhouse on weekday evenings. \
Guests sign the visitor book at the front desk.\n";

    #[test]
    fn its_answerable_candidate_passes_the_checks() {
        let chunks = chunk_markdown("club.md", DOC);
        let prompts = GenerateConfig::default().prompts().unwrap();
        let r = prompts.request(Kind::Answerable, &chunks[0], None);
        let c = parse_candidate(Kind::Answerable, &reply(&r).unwrap()).unwrap();
        assert_eq!(
            c.question,
            "What do the documents say about members may bring two?"
        );
        assert_eq!(c.answer.as_deref(), Some("on weekday evenings"));
        assert!(answer_in_passage(
            c.answer.as_deref().unwrap(),
            &chunks[0].text
        ));
        assert!(!copies_passage(&c.question, &chunks[0].text));
        // The seed picks the next sentence.
        let again = prompts.request(Kind::Answerable, &chunks[0], Some(1));
        let c2 = parse_candidate(Kind::Answerable, &reply(&again).unwrap()).unwrap();
        assert_eq!(c2.answer.as_deref(), Some("the front desk"));
        // No sentence to ask about: not JSON.
        let short = chunk_markdown("a.md", "# A\nYes.\n");
        let r = prompts.request(Kind::Answerable, &short[0], None);
        assert!(parse_candidate(Kind::Answerable, &reply(&r).unwrap()).is_err());
    }

    #[test]
    fn its_near_miss_is_on_topic_and_its_verifier_says_it_is_not_answered() {
        let chunks = chunk_markdown("club.md", DOC);
        let prompts = GenerateConfig::default().prompts().unwrap();
        let r = prompts.request(Kind::NearMiss, &chunks[0], None);
        let c = parse_candidate(Kind::NearMiss, &reply(&r).unwrap()).unwrap();
        assert!(
            c.question.ends_with("for guests members?"),
            "{}",
            c.question
        );
        let v = prompts.verify(&c.question, &[&chunks[0]]);
        assert_eq!(parse_verdict(&reply(&v).unwrap()), Ok(false));
        let v = prompts.verify("Where do guests sign the visitor book?", &[&chunks[0]]);
        assert_eq!(parse_verdict(&reply(&v).unwrap()), Ok(true));
        let v = prompts.verify("Where do guests sign the visitor book?", &[]);
        assert_eq!(parse_verdict(&reply(&v).unwrap()), Ok(false));
        let r = prompts.request(Kind::OffTopic, &chunks[0], None);
        let c = parse_candidate(Kind::OffTopic, &reply(&r).unwrap()).unwrap();
        assert!(OFF_TOPIC.contains(&c.question.as_str()));
        // Another seed, another question.
        let r2 = prompts.request(Kind::OffTopic, &chunks[0], Some(1));
        assert_ne!(reply(&r), reply(&r2));
    }

    #[test]
    fn its_false_premise_contradicts_a_number_and_a_supported_premise_is_caught() {
        use crate::generate::{parse_premise_verdict, PremiseVerdict};
        let doc = "# Fees\nMembership costs 10 dollars per term. Guests pay nothing.\n";
        let chunks = chunk_markdown("club.md", doc);
        let prompts = GenerateConfig::default().prompts().unwrap();
        let r = prompts.request(Kind::FalsePremise, &chunks[0], None);
        let c = parse_candidate(Kind::FalsePremise, &reply(&r).unwrap()).unwrap();
        assert_eq!(
            c.question,
            "Why is it that membership costs 21 dollars per term?"
        );
        let (premise, truth) = c.premise.unwrap();
        assert_eq!(truth, "Membership costs 10 dollars per term");
        assert!(answer_in_passage(&truth, &chunks[0].text));
        let v = prompts.verify_premise(&c.question, &premise, &[&chunks[0]]);
        assert_eq!(
            parse_premise_verdict(&reply(&v).unwrap()),
            Ok(PremiseVerdict::False)
        );
        let v = prompts.verify_premise(&c.question, &premise, &[]);
        assert_eq!(
            parse_premise_verdict(&reply(&v).unwrap()),
            Ok(PremiseVerdict::Unsupported)
        );
        // No number: a premise the passage supports, which its verifier says so of.
        let plain = chunk_markdown("club.md", DOC);
        let r = prompts.request(Kind::FalsePremise, &plain[0], None);
        let c = parse_candidate(Kind::FalsePremise, &reply(&r).unwrap()).unwrap();
        let (premise, _) = c.premise.unwrap();
        let v = prompts.verify_premise(&c.question, &premise, &[&plain[0]]);
        assert_eq!(
            parse_premise_verdict(&reply(&v).unwrap()),
            Ok(PremiseVerdict::Supported)
        );
    }

    /// The in-process mock model answers the generator's formats only with the replies it is
    /// given (as the wiring gives them): the generator is not its import.
    #[test]
    fn the_mock_model_answers_the_generators_formats_with_the_replies_it_is_given() {
        use crate::adapters::mock::MockModel;
        let chunks = chunk_markdown("club.md", DOC);
        let prompts = GenerateConfig::default().prompts().unwrap();
        let r = prompts.request(Kind::Answerable, &chunks[0], None);
        let given = MockModel::default().answering(reply).reply(&r);
        assert_eq!(Some(given), reply(&r));
        let plain = MockModel::default().reply(&r);
        assert!(
            parse_candidate(Kind::Answerable, &plain).is_err(),
            "{plain}"
        );
    }

    #[test]
    fn other_requests_are_not_answered() {
        let plain = ChatRequest::of(Vec::new());
        assert_eq!(reply(&plain), None);
        let graded = ChatRequest {
            format: Some(crate::adapters::judge::GRADE_FORMAT),
            ..ChatRequest::of(Vec::new())
        };
        assert_eq!(reply(&graded), None);
    }
}
