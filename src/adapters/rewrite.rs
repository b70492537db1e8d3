//! Follow-up questions: a question that leans on the conversation ("How long can I keep it?")
//! is rewritten into a standalone one before retrieval, and the rewritten text is also the
//! `Question:` of the prompt. Three strategies, a sweep dimension:
//!
//! - `none`: the question as asked;
//! - `heuristic`: when the question holds a pronoun (it, that, they, them, those, this), the last
//!   user turn is attached: `QUESTION (about: LAST USER TURN)`;
//! - `model`: the chat model is asked to rewrite it (one extra call per follow-up, counted in
//!   calls and tokens); an empty or overlong reply falls back to the question as asked.
//!
//! Questions without history are never rewritten and cost no call.

use crate::adapters::chat::ChatRequest;
use crate::adapters::corpus::squash;
use crate::adapters::prompt::{Message, Role};
pub use crate::vocab::choices::Rewrite;

/// The instruction of a `model` rewrite.
pub const INSTRUCTION: &str =
    "Rewrite the user's last question so it can be understood without the conversation. \
Reply with the question only.";

/// Earlier turns sent with a `model` rewrite: the last few are enough.
pub const MAX_TURNS: usize = 4;

const VAGUE: &[&str] = &["it", "that", "they", "them", "those", "this"];

/// The `heuristic` rewrite.
pub fn heuristic(question: &str, history: &[Message]) -> String {
    let last_user = history
        .iter()
        .rev()
        .find(|m| m.role == Role::User)
        .map(|m| m.content.trim());
    let vague = crate::base::text::words(question).any(|w| VAGUE.contains(&w.as_str()));
    match last_user {
        Some(topic) if vague && !topic.is_empty() => {
            format!("{} (about: {})", question.trim(), squash(topic))
        }
        _ => question.to_string(),
    }
}

/// The request of a `model` rewrite: the instruction, the last turns, the question.
pub fn request(question: &str, history: &[Message]) -> ChatRequest {
    let mut messages = vec![Message {
        role: Role::System,
        content: INSTRUCTION.to_string(),
    }];
    let from = history.len().saturating_sub(MAX_TURNS);
    messages.extend(history[from..].iter().cloned());
    messages.push(Message {
        role: Role::User,
        content: question.trim().to_string(),
    });
    ChatRequest::of(messages)
}

/// Whether `request` is a `model` rewrite ([`request`] made it).
pub fn is_rewrite(request: &ChatRequest) -> bool {
    request
        .messages
        .first()
        .is_some_and(|m| m.role == Role::System && m.content == INSTRUCTION)
}

/// A `model` rewrite's reply as a question, or why it is not used.
pub fn accept(reply: &str, question: &str) -> Result<String, String> {
    let text = squash(reply);
    if text.is_empty() {
        return Err("the rewrite reply was empty".into());
    }
    let limit = (4 * question.chars().count()).max(300);
    if text.chars().count() > limit {
        return Err(format!(
            "the rewrite reply was overlong ({} characters, limit {limit})",
            text.chars().count()
        ));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn history() -> Vec<Message> {
        vec![
            Message {
                role: Role::User,
                content: "What is the laptop loan policy?".into(),
            },
            Message {
                role: Role::Assistant,
                content: "Paid members can borrow a club laptop. [1]".into(),
            },
        ]
    }

    #[test]
    fn heuristic_attaches_the_last_user_turn_to_vague_questions() {
        assert_eq!(
            heuristic("How long can I keep it?", &history()),
            "How long can I keep it? (about: What is the laptop loan policy?)"
        );
        assert_eq!(
            heuristic("How much is the fee?", &history()),
            "How much is the fee?"
        );
        assert_eq!(
            heuristic("How long can I keep it?", &[]),
            "How long can I keep it?"
        );
        // "item" holds "it" but is not the word "it".
        assert_eq!(heuristic("Which item?", &history()), "Which item?");
    }

    #[test]
    fn model_requests_keep_the_last_turns_and_end_with_the_question() {
        let long: Vec<Message> = (0..10)
            .map(|i| Message {
                role: Role::User,
                content: format!("turn {i}"),
            })
            .collect();
        let r = request("And then?", &long);
        assert_eq!(r.messages.len(), 1 + MAX_TURNS + 1);
        assert_eq!(r.messages[0].content, INSTRUCTION);
        assert_eq!(r.messages[1].content, "turn 6");
        assert_eq!(r.messages.last().unwrap().content, "And then?");
    }

    #[test]
    fn empty_and_overlong_replies_are_refused() {
        assert!(accept("  \n", "q?").unwrap_err().contains("empty"));
        assert!(accept(&"word ".repeat(200), "How long?")
            .unwrap_err()
            .contains("overlong"));
        assert_eq!(
            accept(" How long can I keep\n a laptop? ", "q").unwrap(),
            "How long can I keep a laptop?"
        );
    }
}
