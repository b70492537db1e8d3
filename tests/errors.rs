//! Bad input: one clear message naming file, line and field; exit status 2; no report written.

use crate::support::Project;

/// Run a sweep of `set.yaml` that must fail with status 2, exactly `error: {message}` on
/// stderr, nothing on stdout and no report.
fn fails(p: &Project, extra: &[&str], message: &str) {
    p.rageval(["sweep", "--evalset", "set.yaml"])
        .args(extra)
        .fails(message)
        .absent("reports")
        .run();
}

fn project(set: &str) -> Project {
    Project::one_doc(set)
}

#[test]
fn unknown_field() {
    let p = project("corpus: docs\nanswerable:\n  - question: What is the fee?\n    expected: {sources: [a.md#Fee]}\n");
    fails(
        &p,
        &[],
        "set.yaml:4:5: `answerable[0]`: unknown field `expected`, expected one of `question`, `id`, `expect`, `tags`, `note`, `history`, `attack`, `generated`, `reviewed`",
    );
}

#[test]
fn duplicate_id() {
    let p = project("corpus: docs\nanswerable:\n  - {id: fee, question: What is the fee?}\nunanswerable:\n  - id: fee\n    question: Who is the vice president?\n");
    fails(
        &p,
        &[],
        "set.yaml:5: `unanswerable[0].id`: duplicate id `fee` (also `answerable[0]`); give one of them an explicit `id`",
    );
}

#[test]
fn derived_ids_collide_too() {
    let p = project("corpus: docs\nanswerable:\n  - question: What is the fee?\n  - question: what is the FEE\n");
    fails(
        &p,
        &[],
        "set.yaml:4: `answerable[1].id`: duplicate id `what-is-the-fee` (also `answerable[0]`); give one of them an explicit `id`",
    );
}

#[test]
fn empty_question() {
    let p = project(
        "corpus: docs\nanswerable:\n  - question: What is the fee?\n  - question: \"  \"\n",
    );
    fails(&p, &[], "set.yaml:4: `answerable[1].question`: is empty");
}

#[test]
fn empty_set() {
    let p = project("corpus: docs\nanswerable: []\nunanswerable: []\n");
    fails(
        &p,
        &[],
        "set.yaml: the question set has no questions: add items under `answerable` or `unanswerable`",
    );
    let p = project("");
    fails(
        &p,
        &[],
        "set.yaml: the question set is empty: add `answerable` and `unanswerable` lists",
    );
}

#[test]
fn missing_corpus() {
    let p = project("corpus: nowhere\nanswerable:\n  - question: What is the fee?\n");
    fails(
        &p,
        &[],
        "set.yaml:1: `corpus`: folder `nowhere` does not exist (the path is relative to the question set)",
    );
}

#[test]
fn expected_source_that_names_no_chunk() {
    let p = project("corpus: docs\nanswerable:\n  - question: What is the fee?\n    expect:\n      sources:\n        - a.md#Fees\n");
    fails(
        &p,
        &[],
        "set.yaml:6: `answerable[0].expect.sources[0]`: `a.md#Fees` names no chunk of corpus `docs`; `a.md` has `a.md#Fee`, `a.md#Rules`",
    );
}

#[test]
fn an_expected_source_may_name_a_heading_as_written_in_the_markdown() {
    let p = Project::empty();
    p.write(
        "docs/GUIDE.md",
        "# The special `all` file type\nIt matches **every** file.\n\n# Other\nText.\n",
    );
    let set = |source: &str| {
        format!("corpus: docs\nanswerable:\n  - question: Which file type matches every file?\n    expect:\n      sources: [\"{source}\"]\n")
    };
    for source in [
        "GUIDE.md#The special `all` file type",
        "GUIDE.md#The special all file type",
    ] {
        p.write("set.yaml", &set(source));
        let out = p
            .sweep(["--evalset", "set.yaml"])
            .stderr(crate::support::TINY_CORPUS_WARNINGS)
            .run();
        let record = out.results();
        assert_eq!(
            record.questions[0].expect_sources,
            ["GUIDE.md#The special all file type"]
        );
        let (header, rows) = crate::support::read_csv(&p.read("reports/latest/runs.csv"));
        assert!(rows
            .iter()
            .all(|r| crate::support::col(&header, r, "expected_in_top_k") == "true"));
    }
    // A real miss still lists the file's chunks.
    p.write("set.yaml", &set("GUIDE.md#The special `any` file type"));
    p.rageval(["validate", "set.yaml"])
        .fails("set.yaml:5: `answerable[0].expect.sources[0]`: `GUIDE.md#The special `any` file type` names no chunk of corpus `docs`; `GUIDE.md` has `GUIDE.md#The special all file type`, `GUIDE.md#Other`")
        .run();
}

#[test]
fn yaml_syntax_error_has_line_and_column() {
    let p = project("corpus: docs\nanswerable:\n  - question: [unclosed\n");
    fails(
        &p,
        &[],
        "set.yaml:4:1: did not find expected ',' or ']', while parsing a flow sequence at line 3 column 15",
    );
}

#[test]
fn unreadable_set() {
    let p = Project::empty();
    fails(
        &p,
        &[],
        "set.yaml: cannot read question set: No such file or directory (os error 2)",
    );
}

#[test]
fn bad_ranges() {
    let p = project("corpus: docs\nanswerable:\n  - question: What is the fee?\n");
    fails(
        &p,
        &["--min-score", "0.5..0.1"],
        "invalid --min-score: range `0.5..0.1` runs backwards: write `0.1..0.5`",
    );
    fails(
        &p,
        &["--min-score", "0.1..0.5:0"],
        "invalid --min-score: range `0.1..0.5:0`: the step must be greater than 0",
    );
    fails(
        &p,
        &["--k", "0,2"],
        "invalid --k: k must be a whole number of at least 1, got `0`",
    );
    fails(&p, &["--k", "two"], "invalid --k: `two` is not a number");
}

#[test]
fn bad_config() {
    let p = project("corpus: docs\nanswerable:\n  - question: What is the fee?\n");
    p.write("rageval.yaml", "sweep:\n  k: \"4..2\"\n");
    fails(
        &p,
        &[],
        "rageval.yaml:2: `sweep.k`: range `4..2` runs backwards: write `2..4`",
    );
    p.write("rageval.yaml", "chat:\n  kind: gpt\n");
    fails(
        &p,
        &[],
        "rageval.yaml:2:9: `chat.kind`: unknown variant `gpt`, expected one of `mock`, `openai`, `http`",
    );
    p.rageval(["sweep", "--config", "missing.yaml"])
        .status(2)
        .stderr("error: missing.yaml: cannot read config: No such file or directory (os error 2)\n")
        .run();
}

#[test]
fn a_failed_run_leaves_the_previous_report_intact() {
    let p = project("corpus: docs\nanswerable:\n  - question: What is the fee?\n");
    p.sweep(["--evalset", "set.yaml"])
        .stderr(crate::support::TINY_CORPUS_WARNINGS)
        .run();
    let before = p.read("reports/latest/results.json");
    p.rageval(["sweep", "--evalset", "set.yaml"])
        .write("set.yaml", "corpus: docs\nanswerable: []\n")
        .status(2)
        .stderr(
            "error: set.yaml: the question set has no questions: add items under `answerable` or `unanswerable`\n",
        )
        .run();
    assert_eq!(p.read("reports/latest/results.json"), before);
}

/// A `--batch-out` file whose folder is missing is named with its folder, not a temporary
/// path, and nothing is written.
#[test]
fn a_missing_batch_out_folder_is_named() {
    // No call is made: the server is never reached.
    let p = crate::http::http_project("http://127.0.0.1:9/v1", false, "");
    crate::http::keyed(&p, &["sweep", "--batch-out", "missing/calls.jsonl"])
        .fails("cannot write `missing/calls.jsonl`: its folder `missing` does not exist")
        .absent("missing")
        .run();
}
