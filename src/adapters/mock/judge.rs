//! The mock judge: a deterministic stand-in for a judge model, served by the builtin `mock`
//! and `rageval mock-llm` when a request carries the rubric.
//!
//! It reads the request back and decides by counting, as the mock model does:
//! - `refused`: the reply cites no passage (`[n]`);
//! - `correct`: not refused, and an expected answer appears in the reply once both are
//!   lowercased, whitespace-squashed and number words up to twenty read as digits (`seven days`
//!   matches `7 days`; [`normal_answer`](crate::base::text::normal_answer), the rule of
//!   `answer_match` too, and a number stays whole), which is what the paraphrasing mode's answers need;
//! - `supported`: not refused, every `[n]` names a passage, and the reply shares at least two
//!   content words with the passages it cites.

use std::collections::HashSet;

use super::MIN_SHARED_WORDS;
use crate::adapters::chat::ChatRequest;
use crate::adapters::judge::{read_request, Grade};
use crate::adapters::prompt::citations;
use crate::base::text::{content_words, holds_answer, normal_answer as normal};

/// The grade of a judge request, or `None` when it is not one the mock can read.
pub fn grade(request: &ChatRequest) -> Option<Grade> {
    let input = read_request(request)?;
    let cited = citations(input.reply);
    let refused = cited.is_empty();
    let reply = normal(input.reply);
    let correct = !refused
        && input
            .expected
            .iter()
            .any(|e| !e.trim().is_empty() && holds_answer(&reply, &normal(e)));
    let valid = cited
        .iter()
        .all(|&n| n >= 1 && (n as usize) <= input.passages.len());
    let supported = !refused && valid && {
        let cited_words: HashSet<String> = cited
            .iter()
            .filter_map(|&n| input.passages.get(n as usize - 1))
            .flat_map(|p| content_words(&normal(p)).collect::<Vec<_>>())
            .collect();
        content_words(&reply)
            .filter(|w| cited_words.contains(w))
            .count()
            >= MIN_SHARED_WORDS
    };
    Some(Grade {
        refused,
        correct,
        supported,
    })
}

/// The mock judge's reply text: the rubric's JSON.
pub fn reply(request: &ChatRequest) -> Option<String> {
    grade(request).map(|g| serde_json::to_string(&g).expect("a grade serializes"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapters::corpus::chunk_markdown;
    use crate::adapters::judge::request;

    fn judge(reply: &str) -> Grade {
        let chunks = chunk_markdown(
            "a.md",
            "# Fee\nMembership costs 10 US dollars per term.\n# Loans\nA loan lasts 7 days.\n",
        );
        let refs: Vec<_> = chunks.iter().collect();
        grade(&request(
            "How much is it?",
            &["10 US dollars".into()],
            &refs,
            reply,
        ))
        .unwrap()
    }

    #[test]
    fn grades_by_citations_expected_texts_and_shared_words() {
        let g = |refused, correct, supported| Grade {
            refused,
            correct,
            supported,
        };
        assert_eq!(
            judge("Membership costs 10 US dollars per term. [1]"),
            g(false, true, true)
        );
        assert_eq!(
            judge("According to the passages, membership costs ten US dollars per term. [1]"),
            g(false, true, true),
            "number words read as digits"
        );
        assert_eq!(judge("A loan lasts seven days. [2]"), g(false, false, true));
        assert_eq!(
            judge("Membership costs 10 US dollars. [2]"),
            g(false, true, false),
            "the cited passage does not say it"
        );
        assert_eq!(judge("It costs 10 US dollars. [5]"), g(false, true, false));
        assert_eq!(judge("The passages do not say."), g(true, false, false));
        assert_eq!(
            reply(&request("Q?", &[], &[], "No idea.")).unwrap(),
            r#"{"refused":true,"correct":false,"supported":false}"#
        );
    }
}
