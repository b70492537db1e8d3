//! The gate's outputs for CI systems: JUnit XML that parses and counts failures right,
//! Markdown tables, and the GitHub step summary appended to, never overwritten.

use crate::gate::{gate_now, regressed, regressed_failure};

#[test]
fn junit_is_well_formed_with_one_failure_per_failed_check() {
    let p = regressed();
    let out = gate_now(
        &p,
        &[
            "--max-unwanted-answer-rate",
            "0.5",
            "--junit",
            "ci/gate.xml",
        ],
    )
    .status(1)
    .stdout_snapshot("gate_output__junit_is_well_formed_with_one_failure_per_failed_check")
    .file_snapshot(
        "ci/gate.xml",
        "gate_output__junit_is_well_formed_with_one_failure_per_failed_check_2",
    )
    .run();
    let failed_lines = out
        .stdout
        .lines()
        .filter(|l| l.starts_with("FAIL  "))
        .count();
    assert_eq!(failed_lines, 3, "{}", out.stdout);
    let xml = p.read("ci/gate.xml");
    let doc = roxmltree::Document::parse(&xml).unwrap_or_else(|e| panic!("{e}\n{xml}"));
    let suites: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("testsuite"))
        .collect();
    assert_eq!(suites.len(), 1);
    let cases: Vec<_> = suites[0]
        .children()
        .filter(|n| n.has_tag_name("testcase"))
        .collect();
    let fails = |class: &str| {
        cases
            .iter()
            .filter(|c| c.attribute("classname") == Some(class))
            .filter(|c| c.children().any(|n| n.has_tag_name("failure")))
            .map(|c| c.attribute("name").unwrap_or_default().to_string())
            .collect::<Vec<_>>()
    };
    // 6 checks (error_runs, the unwanted limit, 4 baseline rates) and 1 flipped question.
    assert_eq!(cases.len(), 7, "{xml}");
    let checks = fails("rageval.gate");
    assert_eq!(checks.len(), failed_lines, "{xml}");
    assert!(
        checks
            .iter()
            .any(|n| n.starts_with("unwanted_answer_rate at")),
        "{checks:?}"
    );
    assert_eq!(fails("rageval.gate.flipped"), ["fee-per-term"]);
    assert_eq!(suites[0].attribute("failures"), Some("4"));
    assert_eq!(suites[0].attribute("tests"), Some("7"));
    let msg = cases
        .iter()
        .find_map(|c| c.children().find(|n| n.has_tag_name("failure")))
        .and_then(|f| f.attribute("message"))
        .unwrap();
    // The escaped `>` comes back as itself.
    assert!(msg.contains(" > "), "{msg}");
}

#[test]
fn markdown_tables_and_the_github_step_summary() {
    let p = regressed();
    p.write("summary.md", "previous step\n");
    let summary = p.path().join("summary.md");
    let run = || {
        gate_now(&p, &["--markdown", "gate.md"])
            .env("GITHUB_STEP_SUMMARY", summary.to_str().unwrap())
            .status(1)
            .file_snapshot(
                "gate.md",
                "gate_output__markdown_tables_and_the_github_step_summary",
            )
            .stdout(regressed_failure("base/results.json"))
            .run()
    };
    run();
    let md = p.read("gate.md");
    let lines: Vec<&str> = md.lines().collect();
    let header = lines
        .iter()
        .position(|l| *l == "| Check | Result | Figures |")
        .expect(&md);
    assert_eq!(lines[header + 1], "|---|---|---|");
    let rows = lines[header + 2..]
        .iter()
        .take_while(|l| l.starts_with('|'))
        .count();
    assert_eq!(rows, 5, "{md}");
    assert!(
        md.contains(
            "| false_refusal_rate vs baseline | **FAIL** | 0.235 > 0.176 + tolerance 0.000 |"
        ),
        "{md}"
    );
    assert!(md.contains("| Question | Before | After |\n|---|---|---|\n| `fee-per-term` | answer | false_refusal |"), "{md}");
    // Appended, never overwritten: a second run adds a second report after the first.
    let first = std::fs::read_to_string(&summary).unwrap();
    assert!(
        first.starts_with("previous step\n## rageval gate: FAIL"),
        "{first}"
    );
    assert!(first.contains(&md));
    // The step summary gets exactly the --markdown file and a blank line, after what was there.
    assert_eq!(first, format!("previous step\n{md}\n"));
    run();
    let second = std::fs::read_to_string(&summary).unwrap();
    assert_eq!(second.matches("## rageval gate: FAIL").count(), 2);
    assert!(second.starts_with(&first));
    assert_eq!(second, format!("{first}{md}\n"));
}
