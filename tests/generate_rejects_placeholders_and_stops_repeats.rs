//! Generation on a small model (issue 41 item 12): a question or answer that is the prompt's
//! placeholder (`...`) or holds no word is rejected before the verifier, and a later pass over
//! the passages that repeats the one before reply for reply (a server ignoring `seed` at
//! temperature 0) stops its kind, saying so, instead of paying for exact repeats.

use crate::generate::replying_server;
use crate::support::{Project, GENERATE_ONE_EACH};

const DOC: &str =
    "# Fee\nMembership of the workshop costs ten dollars per term, paid to the treasurer.\n\n\
# Rules\nMembers clean the workshop benches after every single session and put tools back.\n";

fn project(url: &str) -> Project {
    crate::generate::scripted_project_over(url, DOC)
}

#[test]
fn a_placeholder_or_a_question_without_words_is_rejected() {
    let url = replying_server(|name, prompt| {
        match (name, prompt.contains("(from a.md#Fee)")) {
            ("rageval_answerable_question", true) => {
                r#"{"question": "...", "answer": "ten dollars"}"#
            }
            ("rageval_answerable_question", false) => {
                r#"{"question": "What must members do after a session?", "answer": "..."}"#
            }
            _ => r#"{"question": "?!"}"#,
        }
        .to_string()
    });
    let p = project(&url);
    p.rageval(GENERATE_ONE_EACH)
        .args(["--rejected", "rejected.jsonl"])
        .status(2)
        .stderr_any("the calls and rounds are counted in generate.rs")
        // Each kind stops after its second pass repeated its first.
        .stderr_contains(
            "answerable: 1 asked, 4 tried, 0 kept; rejected: 4 placeholder or no words\n",
        )
        .stderr_contains(
            "near-miss: 1 asked, 4 tried, 0 kept; rejected: 4 placeholder or no words\n",
        )
        .run();
    let lines = p.read("rejected.jsonl");
    assert_eq!(
        lines
            .matches("\"reason\":\"placeholder or no words\"")
            .count(),
        8,
        "{lines}"
    );
}

#[test]
fn a_pass_that_repeats_the_one_before_stops_its_kind_and_says_so() {
    // The same question for every passage and seed: a duplicate after the first.
    let url = replying_server(|name, prompt| {
        match name {
        "rageval_answerable_question" if prompt.contains("(from a.md#Fee)") => {
            r#"{"question": "How much is the membership per term?", "answer": "ten dollars per term"}"#.into()
        }
        "rageval_answerable_question" => {
            r#"{"question": "How much is the membership per term?", "answer": "session"}"#.into()
        }
        "rageval_verdict" => r#"{"answerable": false}"#.into(),
        _ => r#"{"question": "Is the workshop open on public holidays?"}"#.into(),
    }
    });
    let p = project(&url);
    p.rageval([
        "generate", "--corpus", "docs", "--answerable", "2", "--unanswerable", "1", "--off-topic", "0", "--no-cache",
    ])
    .stdout_any("the rest of the account is generate.rs's")
    .stdout_contains("  answerable: 2 asked, 4 tried, 1 kept; rejected: 3 duplicate\n")
    .stderr_any("the calls and rounds are counted in generate.rs")
    .stderr_contains("warning: answerable: pass 2 over the passages repeated pass 1 reply for reply, so it stopped there: the model gives one reply per prompt whatever the `seed` (llama-server does at temperature 0); raise the generator's `temperature` for more candidates\n")
    .run();
}
