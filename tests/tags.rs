//! Every rate by tag: tags.csv counts what runs.csv holds, question by question, and the gate
//! holds a tag to its own limits.

use std::collections::BTreeMap;

use serde_yaml::Value as Yaml;

use crate::harness::Test;
use crate::support::{col, read_csv, Project, PRODUCTION};

/// The tags of each question of a set, by id.
fn tags_by_id(set: &str) -> BTreeMap<String, Vec<String>> {
    let doc: Yaml = serde_yaml::from_str(set).unwrap();
    let mut out = BTreeMap::new();
    for list in ["answerable", "unanswerable"] {
        for item in doc[list].as_sequence().unwrap() {
            let tags = item["tags"]
                .as_sequence()
                .map(|t| t.iter().map(|x| x.as_str().unwrap().to_string()).collect())
                .unwrap_or_default();
            out.insert(item["id"].as_str().unwrap().to_string(), tags);
        }
    }
    out
}

#[test]
fn tags_csv_counts_what_runs_csv_holds_for_every_tag_and_setting() {
    let out = Test::sweep().arg("--quiet").run();
    let p = out.project();
    let tags = tags_by_id(&p.read("evalsets/club.yaml"));
    let (rh, runs) = read_csv(&p.read("reports/latest/runs.csv"));
    // By hand from runs.csv: (setting, tag) -> the counts of tags.csv, in its column order.
    const COUNTS: [&str; 5] = [
        "answerable",
        "unanswerable",
        "false_refusal",
        "unwanted_answer",
        "wrong_answer",
    ];
    let mut want: BTreeMap<(String, String, String), [usize; 5]> = BTreeMap::new();
    for run in &runs {
        let id = col(&rh, run, "question_id");
        let answerable = col(&rh, run, "answerable") == "true";
        let outcome = col(&rh, run, "outcome");
        let setting = (
            col(&rh, run, "min_score").to_string(),
            col(&rh, run, "k").to_string(),
        );
        for tag in &tags[id] {
            let c = want
                .entry((setting.0.clone(), setting.1.clone(), tag.clone()))
                .or_default();
            c[0] += usize::from(answerable);
            c[1] += usize::from(!answerable);
            c[2] += usize::from(outcome == "false_refusal");
            c[3] += usize::from(outcome == "unwanted_answer");
            c[4] += usize::from(col(&rh, run, "wrong_answer") == "true");
        }
    }
    let (th, rows) = read_csv(&p.read("reports/latest/tags.csv"));
    assert_eq!(
        th[5..],
        [
            "tag",
            "answerable",
            "unanswerable",
            "false_refusal",
            "unwanted_answer",
            "wrong_answer",
            "false_refusal_rate",
            "false_refusal_rate_lo",
            "false_refusal_rate_hi",
            "unwanted_answer_rate",
            "unwanted_answer_rate_lo",
            "unwanted_answer_rate_hi",
            "wrong_answer_rate",
            "wrong_answer_rate_lo",
            "wrong_answer_rate_hi",
        ]
    );
    assert_eq!(rows.len(), want.len(), "one row per (tag, setting)");
    for row in &rows {
        let key = (
            col(&th, row, "min_score").to_string(),
            col(&th, row, "k").to_string(),
            col(&th, row, "tag").to_string(),
        );
        let got: Vec<usize> = COUNTS
            .iter()
            .map(|c| col(&th, row, c).parse().unwrap())
            .collect();
        assert_eq!(got, want[&key], "{key:?}");
        // The rate is its count over its base.
        let (n, d) = (want[&key][3], want[&key][1]);
        let rate = col(&th, row, "unwanted_answer_rate");
        if d == 0 {
            assert_eq!(rate, "", "{key:?}");
        } else {
            assert_eq!(rate, format!("{:.4}", n as f64 / d as f64), "{key:?}");
        }
    }
    // results.json holds the same counts, and report.md the recommended setting's table.
    let summary = out.summary();
    let rec = summary["recommended"].as_str().unwrap();
    let by_tag = &summary["settings"][rec]["tags"];
    let people = by_tag["people"].clone();
    let md = p.read("reports/latest/report.md");
    assert!(md.contains(&format!("**By tag** at `{rec}`:")), "{md}");
    assert!(
        md.contains(&format!(
            "| people | {} / {} |",
            people["answerable"], people["unanswerable"]
        )),
        "{md}"
    );
    let html = p.read("reports/latest/report.html");
    assert!(html.contains("<section id=\"tags\">"), "{html}");
}

/// The tag and rate of the production setting's tags.csv that is above 0: (tag, statistic,
/// rate).
fn a_rate_above_zero(p: &Project) -> (String, &'static str, f64) {
    let (th, rows) = read_csv(&p.read("reports/latest/tags.csv"));
    for row in &rows {
        for stat in ["unwanted_answer_rate", "false_refusal_rate"] {
            if let Ok(v) = col(&th, row, stat).parse::<f64>() {
                if v > 0.0 {
                    return (col(&th, row, "tag").to_string(), stat, v);
                }
            }
        }
    }
    panic!("no tag has a rate above 0");
}

#[test]
fn the_gate_holds_a_tag_to_its_own_limits() {
    let p = Project::sample();
    p.sweep(PRODUCTION).run();
    let (tag, stat, rate) = a_rate_above_zero(&p);
    let config = |limit: f64| {
        format!(
            "evalsets: [evalsets/club.yaml]\ngate:\n  setting: min_score=0.2,k=4\n  tags:\n    {tag}:\n      max_{stat}: {limit}\n"
        )
    };
    p.write("rageval.yaml", &config(rate - 0.01));
    Test::at(&p)
        .arg("gate")
        .status(1)
        .stdout_contains(format!(
            "FAIL  tag {tag}: {stat} {rate:.3} > limit {:.3}\n",
            rate - 0.01
        ))
        .stdout_lacks("warning")
        .stdout(concat!(
            "gate: setting min_score=0.2,k=4 of reports/latest/results.json (26 questions)\n",
            "PASS  error_runs 0 <= limit 0\n",
            "FAIL  tag events: unwanted_answer_rate 1.000 > limit 0.990\n",
            "gate: FAIL (1 of 2 checks failed)\n",
        ))
        .run();
    p.write("rageval.yaml", &config(rate));
    Test::at(&p)
        .arg("gate")
        .stdout_contains(format!(
            "PASS  tag {tag}: {stat} {rate:.3} <= limit {rate:.3}\n"
        ))
        .stdout(concat!(
            "gate: setting min_score=0.2,k=4 of reports/latest/results.json (26 questions)\n",
            "PASS  error_runs 0 <= limit 0\n",
            "PASS  tag events: unwanted_answer_rate 1.000 <= limit 1.000\n",
            "gate: PASS (2 checks)\n",
        ))
        .run();
    // A limit that is no share is the config's error, with its path.
    p.write("rageval.yaml", &config(1.5));
    Test::at(&p)
        .arg("gate")
        .fails(&format!(
            "rageval.yaml:6: `gate.tags.{tag}.max_{stat}`: must be a share from 0 to 1, not 1.5"
        ))
        .run();
}

/// report.md's table by tag stays well inside a pull-request comment (65,536 characters)
/// however many tags there are: the worst tags are listed and the rest counted.
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
