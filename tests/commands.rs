//! `prompt`, `ask` and `validate`: the format is the contract, pinned by golden files.

use crate::harness::Test;
use crate::support::{repo, run_ok, Project};

#[test]
fn prompt_format_is_pinned_character_for_character() {
    let out = Test::new()
        .args([
            "prompt",
            "How much does membership cost per term?",
            "--k",
            "3",
            "--min-score",
            "0.1",
        ])
        .run();
    insta::assert_snapshot!("prompt_fee_k3", out.stdout);
}

#[test]
fn prompt_with_no_passing_hit_sends_nothing() {
    Test::new()
        .args(["prompt", "Who is the vice president?", "--min-score", "0.9"])
        .stdout("")
        .stderr_contains("refuses before the model")
        .run();
}

#[test]
fn ask_labels_citations_and_marks_cited_sources() {
    let out = Test::new()
        .args([
            "ask",
            "How many minutes does each team get on Showcase Day?",
        ])
        .run();
    insta::assert_snapshot!("ask_showcase", out.stdout);
}

#[test]
fn ask_refusal_shows_no_sources() {
    let text = Test::new()
        .args(["ask", "Who is the vice president?"])
        .any_status()
        .run()
        .stdout;
    assert!(
        text.starts_with("I don't know based on the provided documents."),
        "{text}"
    );
    assert!(!text.contains("sources"), "{text}");
}

#[test]
fn ask_flags_an_invalid_citation() {
    // A passage that itself contains "[7]" makes the mock copy an invalid citation.
    let p = Project::empty();
    p.write(
        "docs/a.md",
        "# Fee\nThe membership fee is ten dollars, see [7].\n",
    );
    let text = p
        .rageval(["ask", "What is the membership fee?", "--corpus", "docs"])
        .any_status()
        .run()
        .stdout;
    assert!(text.contains("[7](?)"), "{text}");
    assert!(text.contains("invalid citations: [7]"), "{text}");
}

#[test]
fn validate_reports_ok_and_errors() {
    let p = Project::sample();
    p.rageval(["validate", "evalsets/club.yaml"])
        .stdout_contains("17 answerable, 9 unanswerable")
        .run();
    p.write(
        "bad.yaml",
        "corpus: evalsets/club\nanswerable:\n  - question: x\n    tags: oops\n",
    );
    p.rageval(["validate", "evalsets/club.yaml", "bad.yaml"])
        .status(2)
        .stderr_contains("bad.yaml:4:")
        .run();
}

#[test]
fn the_sample_config_is_valid_and_runs_offline() {
    // The repository's own rageval.yaml and question sets, as a user would run them.
    run_ok(
        std::process::Command::new(assert_cmd::cargo::cargo_bin("rageval"))
            .current_dir(repo())
            .arg("validate"),
    );
}

#[test]
fn broken_pipe_is_not_an_error() {
    use std::process::Stdio;
    let p = Project::sample();
    let mut child = p
        .process()
        .args([
            "sweep",
            "--evalset",
            "evalsets/club.yaml",
            "--output",
            "json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
