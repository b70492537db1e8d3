//! `prompt`, `ask` and `validate`: the format is the contract, pinned by golden files.

use crate::harness::{assert_snapshot, Test};
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
        .stdout_any("compared with the snapshot below")
        .run();
    assert_snapshot(
        "commands__prompt_format_is_pinned_character_for_character",
        &out.stdout,
    );
}

#[test]
fn prompt_with_no_passing_hit_sends_nothing() {
    Test::new()
        .args(["prompt", "Who is the vice president?", "--min-score", "0.9"])
        .stdout("")
        .stderr(
            "note: no passage scored at least 0.9 (best: 0.277), so the pipeline refuses before the model; nothing is sent\n",
        )
        .run();
}

#[test]
fn ask_labels_citations_and_marks_cited_sources() {
    let out = Test::new()
        .args([
            "ask",
            "How many minutes does each team get on Showcase Day?",
        ])
        .stdout(concat!(
            "Each team has 7 minutes to present and 3 minutes for questions. [projects.md > Showcase Day]\n",
            "\n",
            "sources (* cited):\n",
            "  *[1] projects.md > Showcase Day (0.620)\n",
            "   [2] projects.md > Prizes (0.231)\n",
            "   [3] faq.md > Can my parents visit? (0.227)\n",
            "   [4] events.md > Hackathon (0.211)\n",
            "tokens: prompt 368, completion 17\n",
        ))
        .run();
    assert_snapshot(
        "commands__ask_labels_citations_and_marks_cited_sources",
        &out.stdout,
    );
}

#[test]
fn ask_refusal_shows_no_sources() {
    let text = Test::new()
        .args(["ask", "Who is the vice president?"])
        .stdout(concat!(
            "I don't know based on the provided documents.\n",
            "\n",
            "(the model refused; 1 passages were sent, none is shown as evidence)\n",
        ))
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
        .stdout(concat!(
            "The membership fee is ten dollars, see [7](?). [a.md > Fee]\n",
            "\n",
            "sources (* cited):\n",
            "  *[1] a.md > Fee (0.707)\n",
            "invalid citations: [7] (no such passage)\n",
            "tokens: prompt 138, completion 12\n",
        ))
        .run()
        .stdout;
    assert!(text.contains("[7](?)"), "{text}");
    assert!(text.contains("invalid citations: [7]"), "{text}");
}

#[test]
fn validate_reports_ok_and_errors() {
    let p = Project::sample();
    p.rageval(["validate", "evalsets/club.yaml"])
        .stdout(concat!(
            "ok    evalsets/club.yaml: 17 answerable, 9 unanswerable; corpus `evalsets/club` (23 chunks)\n",
            "      at 95%, 9 unanswerable and 17 answerable questions can certify at best unwanted ≤ 28.3% and false refusals ≤ 16.2% for one setting\n",
            "      plan for a chance of 80% at 95% by ordered tests (level 2.5%, for one setting), if each true rate is half its limit: unwanted 10% needs 107 unanswerable questions (this set has 9), or 17 with none answered; false refusals 25% needs 30 answerable questions (this set has 17), or 6 with none refused\n",
        ))
        .run();
    p.write(
        "bad.yaml",
        "corpus: evalsets/club\nanswerable:\n  - question: x\n    tags: oops\n",
    );
    p.rageval(["validate", "evalsets/club.yaml", "bad.yaml"])
        .status(2)
        .stdout(concat!(
            "ok    evalsets/club.yaml: 17 answerable, 9 unanswerable; corpus `evalsets/club` (23 chunks)\n",
            "      at 95%, 9 unanswerable and 17 answerable questions can certify at best unwanted ≤ 28.3% and false refusals ≤ 16.2% for one setting\n",
            "      plan for a chance of 80% at 95% by ordered tests (level 2.5%, for one setting), if each true rate is half its limit: unwanted 10% needs 107 unanswerable questions (this set has 9), or 17 with none answered; false refusals 25% needs 30 answerable questions (this set has 17), or 6 with none refused\n",
        ))
        .stderr(
            "error: bad.yaml:4:11: `answerable[0].tags`: expected a list, found the string \"oops\"\n",
        )
        .run();
}

#[test]
fn the_sample_config_is_valid_and_runs_offline() {
    // The repository's own rageval.yaml and question sets, as a user would run them.
    let out = run_ok(
        std::process::Command::new(assert_cmd::cargo::cargo_bin("rageval"))
            .current_dir(repo())
            .arg("validate"),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr, "", "validate warns about nothing");
    // Each set and what a set of its size can certify over the configured grid: the plan a
    // user reads before the first sweep.
    assert_snapshot(
        "commands__the_sample_config_is_valid_and_runs_offline",
        &String::from_utf8_lossy(&out.stdout),
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
