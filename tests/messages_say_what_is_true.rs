//! Messages and reports that said less than the truth (issue 41 item 9, the parts outside the
//! batch engine): a missing `--batch-out` folder is named, not a random temporary path; a
//! confidence that is neither 0 nor 1 never reads as `0%` or `100%`; report.md's table by tag
//! stays well inside a pull-request comment (65,536 characters) however many tags there are.

use crate::harness::Test;
use crate::http::http_project;
use crate::support::Project;

#[test]
fn a_missing_batch_out_folder_is_named() {
    // No call is made: the server is never reached.
    let p = http_project("http://127.0.0.1:9/v1", false, "");
    crate::http::keyed(&p, &["sweep", "--batch-out", "missing/calls.jsonl"])
        .fails("cannot write `missing/calls.jsonl`: its folder `missing` does not exist")
        .absent("missing")
        .run();
}

#[test]
fn a_confidence_near_1_or_near_0_is_printed_apart_from_the_bounds() {
    for (confidence, shown) in [
        ("0.9999999999999999", "99.99999999999999%"),
        ("1e-300", "1.0e-298%"),
    ] {
        let p = Project::sample();
        p.write(
            "rageval.yaml",
            &format!("evalsets: [evalsets/club.yaml]\nrecommend:\n  confidence: {confidence}\n"),
        );
        Test::at(&p)
            .args(["sweep", "--min-score", "0.1..0.5", "--k", "1,2"])
            .stdout_any("the table is the sample sweep's; this test reads the certificate's words")
            .stdout_contains(format!(" at {shown} by ordered tests"))
            .stdout_lacks(" at 100% by")
            .stdout_lacks(" at 0% by")
            .run();
        let md = p.read("reports/latest/report.md");
        assert!(
            md.contains(&format!(" at {shown} by ordered tests")),
            "{md}"
        );
    }
}

#[test]
fn report_md_lists_the_worst_tags_and_counts_the_rest() {
    // Two questions with 5,000 tags each: 10,000 tags.
    let tags = |prefix: &str| -> String {
        (0..5000)
            .map(|i| format!("{prefix}-{i:04}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let set = format!(
        "corpus: docs\nanswerable:\n  - question: What is the fee?\n    expect: {{sources: [\"a.md#Fee\"]}}\n    tags: [{}]\nunanswerable:\n  - question: Who founded the club?\n    tags: [{}]\n",
        tags("a"),
        tags("u")
    );
    let p = Project::one_doc(&set);
    // Nothing certified on two questions: choose on the measured rates, so the table shows.
    p.write(
        "rageval.yaml",
        "evalsets: [set.yaml]\nrecommend:\n  confidence: 0\n  max_false_refusal_rate: 1\n",
    );
    // One relevant section over the default minScores: they change nothing, and it says so.
    Test::at(&p)
        .args(["sweep", "-q", "--k", "1"])
        .stderr(
            crate::support::TINY_CORPUS_WARNINGS
                .split_inclusive('\n')
                .next()
                .unwrap(),
        )
        .run();
    let md = p.read("reports/latest/report.md");
    assert!(
        md.chars().count() < 32_768,
        "report.md holds {} characters",
        md.chars().count()
    );
    let rows = md
        .lines()
        .filter(|l| l.starts_with("| a-") || l.starts_with("| u-"))
        .count();
    assert_eq!(rows, 30);
    assert!(
        md.contains(
            "The 30 tags furthest above the setting's rates are shown; 9970 more are in tags.csv."
        ),
        "{md}"
    );
    // tags.csv keeps every one.
    let csv = p.read("reports/latest/tags.csv");
    assert!(csv.contains(",u-4999,") && csv.contains(",a-0000,"));
}
