//! A user's mistakes named before any model call: messages that name the field, the kind and
//! the line (no serde internals), counts and flags in plain grammar, and gate inputs checked
//! before the first call.

use crate::harness::{write_results, Record, Test, SAMPLE_SWEEP_TABLE};
use crate::http::{MockLlm, KEY_ENV};
use crate::support::{repo, Project};

/// A sweep that must fail with exactly `message` on stderr (after `error: `), status 2.
fn fails_with(p: &Project, args: &[&str], message: &str) {
    p.rageval(args).fails(message).absent("reports").run();
}

fn project_with(set: &str) -> Project {
    let p = Project::empty();
    p.write("docs/a.md", "# Fee\nThe fee is ten dollars per term.\n");
    p.write("set.yaml", set);
    p
}

#[test]
fn messages_name_the_field_the_kind_and_the_line() {
    let sweep_set = ["sweep", "--evalset", "set.yaml"];
    let p = project_with(
        "corpus: docs\nanswerable:\n  - question: What is the fee?\n    expect: {answer: 6}\n",
    );
    fails_with(
        &p,
        &sweep_set,
        "set.yaml:4:22: `answerable[0].expect.answer`: expected a string or a list of strings, found the number 6",
    );
    let p = project_with("corpus: docs\nanswerable:\n  - question: What is the fee?\n");
    p.write("rageval.yaml", "sweep: {concurrency: \"8\"}\n");
    fails_with(
        &p,
        &sweep_set,
        "rageval.yaml:1:22: `sweep.concurrency`: expected a whole number (0 or more), found the string \"8\"",
    );
    p.write("rageval.yaml", "sweep:\n  k: [1, \"2..4\"]\n");
    fails_with(
        &p,
        &sweep_set,
        "rageval.yaml:2:10: `sweep.k[1]`: expected a number, found the string \"2..4\"",
    );
    p.write("rageval.yaml", "sweep:\n\tk: 4\n");
    fails_with(
        &p,
        &sweep_set,
        "rageval.yaml:2:1: tabs are not allowed in YAML indentation: indent with spaces",
    );
    std::fs::remove_file(p.path().join("rageval.yaml")).unwrap();
    p.write(
        "set.yaml",
        "corpus: docs\nanswerable:\n  - question: What is the fee?\n\t  id: fee\n",
    );
    fails_with(
        &p,
        &sweep_set,
        "set.yaml:4:1: tabs are not allowed in YAML indentation: indent with spaces",
    );
    std::fs::write(
        p.path().join("set.yaml"),
        b"corpus: docs\nanswerable:\n  - question: caf\xe9?\n",
    )
    .unwrap();
    fails_with(
        &p,
        &sweep_set,
        "set.yaml:3:18: is not UTF-8 text: save it as UTF-8",
    );
    p.write(
        "set.yaml",
        "corpus: docs/a.md\nanswerable:\n  - question: What is the fee?\n",
    );
    fails_with(
        &p,
        &sweep_set,
        "set.yaml:1: `corpus`: `docs/a.md` is a file, not a folder: name the folder that holds the markdown documents",
    );
}

#[test]
fn sweep_in_an_empty_folder_points_at_init() {
    let p = Project::empty();
    fails_with(
        &p,
        &["sweep"],
        "no question sets: there is no rageval.yaml and no evalsets/*.yaml here; run `rageval init` to start a project, or pass `--evalset FILE`",
    );
}

#[test]
fn grammar_of_counts_and_flags() {
    let p = project_with("corpus: docs\nanswerable:\n  - question: What is the fee?\n");
    p.rageval(["validate", "set.yaml"])
        .stdout("ok    set.yaml: 1 answerable, 0 unanswerable; corpus `docs` (1 chunk)\n      at 95%, 0 unanswerable and 1 answerable questions can certify at best nothing on unwanted (no unanswerable questions) and false refusals ≤ 95% for one setting\n      plan for a chance of 80% at 95% by ordered tests (level 2.5%, for one setting), if each true rate is half its limit: unwanted 10% needs 107 unanswerable questions (this set has 0), or 17 with none answered; false refusals 25% needs 30 answerable questions (this set has 1), or 6 with none refused\n")
        .run();
    fails_with(
        &p,
        &["sweep", "--evalset", "set.yaml", "--setting", "k=1"],
        "--setting applies only with `--gate`",
    );
}

/// A sample project whose embedder and model are `server`, so its counters see every call.
fn counted(server: &MockLlm, gate: &str) -> Project {
    let p = Project::sample();
    p.write(
        "rageval.yaml",
        &format!(
            "evalsets: [evalsets/club.yaml]\nembedder:\n  kind: openai\n  base_url: {url}\n  model: hash-1024\n  api_key_env: {KEY_ENV}\nchat:\n  kind: openai\n  base_url: {url}\n  model: mock\n  api_key_env: {KEY_ENV}\n{gate}",
            url = server.url
        ),
    );
    p
}

fn no_calls(server: &MockLlm) {
    let stats = server.stats();
    assert_eq!(stats["chat_requests"].as_u64(), Some(0), "{stats}");
    assert_eq!(stats["embedding_requests"].as_u64(), Some(0), "{stats}");
}

#[test]
fn gate_inputs_are_checked_before_the_first_call() {
    let server = MockLlm::start(&[]);
    let p = counted(&server, "");
    let refused = |args: &[&str], message: &str| {
        p.sample_sweep()
            .args(args)
            .env(KEY_ENV, "test-key")
            .status(2)
            .stderr(format!("error: {message}\n"))
            .run();
    };
    refused(
        &["--gate", "--setting", "min_score=0.9,k=2"],
        "cannot gate `--setting min_score=0.9,k=2`: no setting is `min_score=0.9,k=2`; the settings are `min_score=0.1,k=1`, `min_score=0.1,k=2`, `min_score=0.1,k=4`, `min_score=0.1,k=8`, `min_score=0.2,k=1`, `min_score=0.2,k=2`, `min_score=0.2,k=4`, `min_score=0.2,k=8` and 12 more; nothing was run",
    );
    no_calls(&server);
    assert!(!p.path().join("reports").exists());

    p.write(
        "broken.json",
        "{\"schema\": \"rageval.results/1\", \"settings\": [",
    );
    refused(
        &[
            "--gate",
            "--setting",
            "min_score=0.2,k=4",
            "--baseline",
            "broken.json",
        ],
        "`broken.json` is not a rageval results file: EOF while parsing a list at line 1 column 45",
    );
    refused(
        &["--gate", "--baseline", "missing.json"],
        "baseline `missing.json` does not exist: create it on purpose with `--update-baseline`, which copies the current results",
    );
    // A baseline swept over another grid cannot be compared at the gated setting.
    let mut baseline = Record::load(&repo().join("reports/baseline.json")).unwrap();
    baseline.settings.retain(|id, _| id == "min_score=0.2,k=4");
    baseline.runs.retain(|r| r.setting == "min_score=0.2,k=4");
    write_results(&p, "small.json", &baseline);
    refused(
        &[
            "--gate",
            "--setting",
            "min_score=0.1,k=2",
            "--baseline",
            "small.json",
        ],
        "the baseline `small.json` cannot be compared at `min_score=0.1,k=2`: no setting is `min_score=0.1,k=2`; the settings are `min_score=0.2,k=4`; nothing was run",
    );
    no_calls(&server);
    assert!(!p.path().join("reports").exists());
}

#[test]
fn a_gate_without_limits_says_so() {
    let p = Test::sweep().stdout_snapshot(SAMPLE_SWEEP_TABLE).run();
    let text = p
        .project()
        .rageval(["gate", "--setting", "min_score=0.2,k=4"])
        .stdout(concat!(
            "warning: no limits configured and no baseline: the gate checks only failed calls; set `gate.max_unwanted_answer_rate` and `gate.max_false_refusal_rate` (or pass `--max-unwanted-answer-rate` and `--max-false-refusal-rate`), see docs/ci.md\n",
            "gate: setting min_score=0.2,k=4 of reports/latest/results.json (26 questions)\n",
            "PASS  error_runs 0 <= limit 0\n",
            "gate: PASS (1 check)\n",
        ))
        .run()
        .stdout;
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("warning: no limits configured and no baseline: the gate checks only failed calls; set `gate.max_unwanted_answer_rate` and `gate.max_false_refusal_rate` (or pass `--max-unwanted-answer-rate` and `--max-false-refusal-rate`), see docs/ci.md")
    );
    assert!(text.lines().any(|l| l == "gate: PASS (1 check)"), "{text}");
}
