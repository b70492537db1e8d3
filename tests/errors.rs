//! Bad input: one clear message naming file, line and field; exit status 2; no report written.

use crate::support::{stderr, Project};

/// Run a sweep of `set.yaml` that must fail with status 2 and a message holding every `needle`.
fn fails(p: &Project, extra: &[&str], needles: &[&str]) {
    let mut args = vec!["sweep", "--evalset", "set.yaml"];
    args.extend_from_slice(extra);
    let out = p.cmd(&args).output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "stderr: {err}");
    for n in needles {
        assert!(err.contains(n), "expected {n:?} in: {err}");
    }
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(err.lines().count(), 1, "one message: {err}");
    assert!(
        !p.path().join("reports").exists(),
        "no report may be written"
    );
}

fn project(set: &str) -> Project {
    let p = Project::empty();
    p.write(
        "docs/a.md",
        "# Fee\nThe fee is ten dollars per term.\n\n# Rules\nBe kind.\n",
    );
    p.write("set.yaml", set);
    p
}

#[test]
fn unknown_field() {
    let p = project("corpus: docs\nanswerable:\n  - question: What is the fee?\n    expected: {sources: [a.md#Fee]}\n");
    fails(
        &p,
        &[],
        &["set.yaml:4:", "answerable[0]", "unknown field `expected`"],
    );
}

#[test]
fn duplicate_id() {
    let p = project("corpus: docs\nanswerable:\n  - {id: fee, question: What is the fee?}\nunanswerable:\n  - id: fee\n    question: Who is the vice president?\n");
    fails(
        &p,
        &[],
        &["set.yaml:5:", "unanswerable[0].id", "duplicate id `fee`"],
    );
}

#[test]
fn derived_ids_collide_too() {
    let p = project("corpus: docs\nanswerable:\n  - question: What is the fee?\n  - question: what is the FEE\n");
    fails(
        &p,
        &[],
        &[
            "set.yaml:4:",
            "answerable[1].id",
            "duplicate id `what-is-the-fee`",
        ],
    );
}

#[test]
fn empty_question() {
    let p = project(
        "corpus: docs\nanswerable:\n  - question: What is the fee?\n  - question: \"  \"\n",
    );
    fails(
        &p,
        &[],
        &["set.yaml:4:", "answerable[1].question", "is empty"],
    );
}

#[test]
fn empty_set() {
    let p = project("corpus: docs\nanswerable: []\nunanswerable: []\n");
    fails(&p, &[], &["set.yaml", "no questions"]);
    let p = project("");
    fails(&p, &[], &["set.yaml", "empty"]);
}

#[test]
fn missing_corpus() {
    let p = project("corpus: nowhere\nanswerable:\n  - question: What is the fee?\n");
    fails(
        &p,
        &[],
        &["set.yaml:1:", "`corpus`", "nowhere", "does not exist"],
    );
}

#[test]
fn expected_source_that_names_no_chunk() {
    let p = project("corpus: docs\nanswerable:\n  - question: What is the fee?\n    expect:\n      sources:\n        - a.md#Fees\n");
    fails(
        &p,
        &[],
        &[
            "set.yaml:6:",
            "answerable[0].expect.sources[0]",
            "`a.md#Fees` names no chunk",
            "`a.md#Fee`",
        ],
    );
}

#[test]
fn yaml_syntax_error_has_line_and_column() {
    let p = project("corpus: docs\nanswerable:\n  - question: [unclosed\n");
    fails(&p, &[], &["set.yaml:"]);
}

#[test]
fn unreadable_set() {
    let p = Project::empty();
    fails(&p, &[], &["set.yaml", "cannot read question set"]);
}

#[test]
fn bad_ranges() {
    let p = project("corpus: docs\nanswerable:\n  - question: What is the fee?\n");
    fails(
        &p,
        &["--min-score", "0.5..0.1"],
        &["--min-score", "backwards"],
    );
    fails(&p, &["--min-score", "0.1..0.5:0"], &["--min-score", "step"]);
    fails(&p, &["--k", "0,2"], &["--k", "at least 1"]);
    fails(&p, &["--k", "two"], &["--k", "not a number"]);
}

#[test]
fn bad_config() {
    let p = project("corpus: docs\nanswerable:\n  - question: What is the fee?\n");
    p.write("rageval.yaml", "sweep:\n  k: \"4..2\"\n");
    fails(&p, &[], &["rageval.yaml:2:", "sweep.k", "backwards"]);
    p.write("rageval.yaml", "chat:\n  kind: gpt\n");
    fails(&p, &[], &["rageval.yaml:2:", "unknown variant `gpt`"]);
    let out = p
        .cmd(&["sweep", "--config", "missing.yaml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("missing.yaml: cannot read config"));
}

#[test]
fn a_failed_run_leaves_the_previous_report_intact() {
    let p = project("corpus: docs\nanswerable:\n  - question: What is the fee?\n");
    p.cmd(&["sweep", "--evalset", "set.yaml", "-q"])
        .assert()
        .success();
    let before = p.read("reports/latest/results.json");
    p.write("set.yaml", "corpus: docs\nanswerable: []\n");
    let out = p.cmd(&["sweep", "--evalset", "set.yaml"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(p.read("reports/latest/results.json"), before);
}
