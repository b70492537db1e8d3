//! The main job: the sample sweep, its files and the invariants every setting must keep.

use crate::harness::{assert_snapshot, Test, SAMPLE_SWEEP_TABLE};
use crate::support::{col, read_csv, require_tool, run_ok, Project};

#[test]
fn sample_sweep_prints_twenty_settings_and_writes_three_files() {
    let out = Test::sweep()
        .stdout_contains("26 questions x 20 settings = 520 runs")
        .stdout_snapshot(SAMPLE_SWEEP_TABLE)
        .run();
    // One table row per setting: each starts with the minScore and k cells.
    let rows = out
        .stdout
        .lines()
        .filter(|l| l.starts_with('│') && l.contains(" ┆ ") && !l.contains("min_score"))
        .count();
    assert!(rows >= 20, "{}", out.stdout);
    let p = out.project();

    let (sh, summary) = read_csv(&p.read("reports/latest/summary.csv"));
    assert_eq!(summary.len(), 20);
    let (rh, runs) = read_csv(&p.read("reports/latest/runs.csv"));
    assert_eq!(runs.len(), 20 * 26);
    let record = out.results();
    assert_eq!(record.schema, "rageval.results/2");
    assert_eq!(record.settings.len(), 20);
    assert_eq!(record.runs.len(), 520);
    assert!(record.identity.identity.digest.starts_with("sha256:"));
    for name in [
        "min_score",
        "k",
        "questions",
        "answer",
        "early_refusal",
        "model_refusal",
        "false_refusal",
        "unwanted_answer",
        "error",
        "false_refusal_rate",
        "unwanted_answer_rate",
        "model_calls",
        "prompt_tokens",
        "prompt_tokens_per_question",
    ] {
        assert!(sh.iter().any(|h| h == name), "summary.csv lacks {name}");
    }
    for name in [
        "question_id",
        "answerable",
        "min_score",
        "k",
        "outcome",
        "best_score",
        "hits",
        "prompt_tokens",
        "answer",
    ] {
        assert!(rh.iter().any(|h| h == name), "runs.csv lacks {name}");
    }
    // Thresholds are printed as written, never as 0.30000000000000004.
    let mins: Vec<&str> = summary.iter().map(|r| col(&sh, r, "min_score")).collect();
    assert!(
        mins.iter()
            .all(|m| ["0.1", "0.2", "0.3", "0.4", "0.5"].contains(m)),
        "{mins:?}"
    );
}

/// report.html's `<body>` as a reader sees it: each chart's `<svg>` drawing is cut to its
/// opening tag (plotters' geometry; the points are checked against results.json by
/// insight::chart_values_match_results_json and drawn in a browser by browser.rs) and the
/// chart-data JSON to a mark (checked by the same test).
fn report_body(html: &str) -> String {
    let start = html.find("<body>").expect("report.html has a <body>");
    let end = html.find("</body>").expect("report.html closes its <body>") + "</body>".len();
    let svg = regex::Regex::new(r"(?s)(<svg[^>]*>).*?</svg>").unwrap();
    let data =
        regex::Regex::new(r#"(?s)(<script type="application/json" id="chart-data">).*?</script>"#)
            .unwrap();
    let body = svg.replace_all(&html[start..end], "$1[drawing]</svg>");
    data.replace_all(&body, "$1[chart data]</script>")
        .into_owned()
}

#[test]
fn the_sample_reports_are_pinned() {
    let out = Test::sweep().stdout_snapshot(SAMPLE_SWEEP_TABLE).run();
    let html = out.read("reports/latest/report.html");
    let body = report_body(&html);
    // The cuts keep every chart: four drawings and the data block.
    assert_eq!(body.matches("[drawing]</svg>").count(), 4, "{body}");
    assert_eq!(body.matches("[chart data]</script>").count(), 1);
    assert_snapshot("sweep__the_sample_reports_are_pinned", &body);
    assert_snapshot(
        "sweep__the_sample_reports_are_pinned_2",
        &out.read("reports/latest/report.md"),
    );
}

#[test]
fn every_setting_keeps_the_outcome_invariants() {
    let p = Test::sweep().stdout_snapshot(SAMPLE_SWEEP_TABLE).run();
    let (h, rows) = read_csv(&p.read("reports/latest/summary.csv"));
    let n = |r: &[String], c: &str| col(&h, r, c).parse::<usize>().unwrap();
    for r in &rows {
        assert_eq!(n(r, "answer") + n(r, "false_refusal"), n(r, "answerable"));
        assert_eq!(
            n(r, "early_refusal") + n(r, "model_refusal") + n(r, "unwanted_answer"),
            n(r, "unanswerable")
        );
        assert_eq!(n(r, "answerable"), 17);
        assert_eq!(n(r, "unanswerable"), 9);
        // Early refusals make no call: calls are the runs where a hit passed.
        let early = n(r, "early_refusal") + n(r, "false_refusal_early");
        assert_eq!(n(r, "model_calls") + early, n(r, "questions"));
    }
    // At fixed k, early refusals never fall as minScore rises.
    for k in ["1", "2", "4", "8"] {
        let early: Vec<usize> = rows
            .iter()
            .filter(|r| col(&h, r, "k") == k)
            .map(|r| n(r, "early_refusal") + n(r, "false_refusal_early"))
            .collect();
        assert_eq!(early.len(), 5);
        assert!(early.windows(2).all(|w| w[0] <= w[1]), "k={k}: {early:?}");
    }
}

#[test]
fn runs_agree_with_the_summary_and_the_chapter() {
    let p = Test::sweep().stdout_snapshot(SAMPLE_SWEEP_TABLE).run();
    let (h, runs) = read_csv(&p.read("reports/latest/runs.csv"));
    let find = |id: &str, min: &str, k: &str| {
        runs.iter()
            .find(|r| {
                col(&h, r, "question_id") == id
                    && col(&h, r, "min_score") == min
                    && col(&h, r, "k") == k
            })
            .unwrap_or_else(|| panic!("no run {id} {min} {k}"))
    };
    let fee = find("fee-per-term", "0.1", "4");
    assert_eq!(col(&h, fee, "outcome"), "answer");
    assert_eq!(
        col(&h, fee, "answer"),
        "Membership costs 10 US dollars per term. [1]"
    );
    assert_eq!(col(&h, fee, "cited"), "membership.md#1");
    assert_eq!(col(&h, fee, "expected_cited"), "true");
    assert_eq!(col(&h, fee, "answer_match"), "true");
    // The vice president is refused early at a high threshold, at no cost.
    let vp = find("vice-president", "0.5", "4");
    assert_eq!(col(&h, vp, "outcome"), "early_refusal");
    assert_eq!(col(&h, vp, "prompt_tokens"), "0");
    assert_eq!(col(&h, vp, "hits"), "0");
    // Prompt tokens grow with k at a fixed threshold.
    let tokens = |k| {
        col(&h, find("fee-per-term", "0.1", k), "prompt_tokens")
            .parse::<u64>()
            .unwrap()
    };
    assert!(tokens("1") < tokens("2") && tokens("2") < tokens("4"));
}

#[test]
fn python_csv_module_reads_both_files() {
    if !require_tool("python3", "python3") {
        return;
    }
    let p = Test::sweep().stdout_snapshot(SAMPLE_SWEEP_TABLE).run();
    let script = "import csv,sys\nfor name, want in (('summary.csv', 20), ('runs.csv', 520)):\n    with open('reports/latest/' + name, newline='', encoding='utf-8') as f:\n        rows = list(csv.DictReader(f))\n    assert len(rows) == want, (name, len(rows))\n    assert all(None not in r for r in rows), name\nprint('ok')\n";
    run_ok(
        std::process::Command::new("python3")
            .arg("-c")
            .arg(script)
            .current_dir(p.path()),
    );
}

#[test]
fn a_formula_in_a_document_reaches_runs_csv_neutralized() {
    let p = Project::empty();
    p.write(
        "docs/evil.md",
        "# Fees\n=HYPERLINK(\"http://x\") the membership fee costs ten dollars.\n",
    );
    p.write(
        "set.yaml",
        "corpus: docs\nanswerable:\n  - id: fee\n    question: What does the membership fee cost?\n    expect: {sources: [evil.md#Fees], answer: [ten dollars]}\n",
    );
    let out = p
        .rageval([
            "sweep",
            "--evalset",
            "set.yaml",
            "--min-score",
            "0.1",
            "--k",
            "1",
        ])
        .stdout_snapshot("sweep__a_formula_in_a_document_reaches_runs_csv_neutralized")
        .run();
    let (h, runs) = read_csv(&p.read("reports/latest/runs.csv"));
    let answer = col(&h, &runs[0], "answer");
    assert!(answer.starts_with("'=HYPERLINK"), "{answer}");
    // The JSON keeps the text as it is: it is data, not a spreadsheet.
    let record = out.results();
    let call = record.runs[0].call.as_ref().unwrap();
    assert!(record.calls[call].reply.starts_with("=HYPERLINK"));
}

#[test]
fn config_supplies_defaults_and_flags_win() {
    let p = Project::sample();
    p.write(
        "rageval.yaml",
        "evalsets: [evalsets/club.yaml]\nsweep:\n  min_score: [0.2, 0.3]\n  k: 2\nout: out/here\n",
    );
    p.rageval(["sweep", "-q"]).stdout("").run();
    let (_, rows) = read_csv(&p.read("out/here/summary.csv"));
    assert_eq!(rows.len(), 2);
    p.rageval(["sweep", "-q", "--k", "1..3"]).run();
    let (_, rows) = read_csv(&p.read("out/here/summary.csv"));
    assert_eq!(rows.len(), 6);
}

#[test]
fn json_output_keeps_stdout_machine_readable() {
    let out = Test::new()
        .args([
            "sweep",
            "--evalset",
            "evalsets/club.yaml",
            "--k",
            "2",
            "--min-score",
            "0.3",
            "--output",
            "json",
        ])
        .stdout_any("results.json itself, compared with the file below")
        .run();
    assert_eq!(out.stdout, out.read("reports/latest/results.json"));
    let v = out.stdout_json();
    let ids: Vec<&String> = v["settings"].as_object().unwrap().keys().collect();
    assert_eq!(ids, ["min_score=0.3,k=2"]);
}

/// `--format` names passage formats in `sweep` as in `ask`: the `json` and `table` it once
/// also took are refused with the flag that chooses the output, before any work.
#[test]
fn format_names_passage_formats_only() {
    for (format, output) in [("json", "json"), ("tagged,table", "table")] {
        Test::new()
            .args(["sweep", "--evalset", "evalsets/club.yaml", "--format", format])
            .fails(&format!("invalid --format: `{output}` is not a passage format (`numbered`, `tagged`); what goes to stdout is `--output {output}`"))
            .stdout("")
            .absent("reports")
            .run();
    }
}
