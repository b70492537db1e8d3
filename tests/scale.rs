//! Large sweeps: report.html caps its per-question drill-down (and says so) while runs.csv
//! keeps every run.

use crate::support::Project;

/// A generated set of `n` answerable questions over the sample corpus, swept into `out/`:
/// its report.html.
fn generated(p: &Project, n: usize) -> String {
    let words = ["membership", "fee", "laptop", "loan", "showcase", "refund"];
    let mut yaml = String::from("corpus: club\nanswerable:\n");
    for i in 0..n {
        let (a, b) = (words[i % words.len()], words[(i / 7) % words.len()]);
        yaml.push_str(&format!(
            "  - id: gen-{i}\n    question: What about the {a} and the {b}, case {i}?\n"
        ));
    }
    p.sweep([
        "--evalset",
        "evalsets/generated.yaml",
        "--min-score",
        "0.2",
        "--k",
        "2",
        "--out",
        "out",
    ])
    .write("evalsets/generated.yaml", &yaml)
    .run()
    .read("out/report.html")
}

#[test]
fn a_sweep_above_the_drilldown_cap_shows_the_cap_and_links_the_csv() {
    let p = Project::sample();
    let html = generated(&p, 1003);
    assert_eq!(html.matches("<details class=\"q\"").count(), 1000);
    assert!(html.contains("<details class=\"q\" id=\"q-gen-999\">"));
    assert!(!html.contains("id=\"q-gen-1000\""));
    let notice = "<p class=\"small\" id=\"drilldown-cap\">This sweep has 1003 questions; to keep the page light, the drill-down shows the first 1000. Every run of every question is in <a href=\"runs.csv\">runs.csv</a>.</p>\n";
    assert_eq!(html.matches(notice).count(), 1);
    // runs.csv is not capped: a header and one line per run.
    assert_eq!(p.read("out/runs.csv").lines().count(), 1 + 1003);
}

#[test]
fn a_sweep_at_the_drilldown_cap_shows_every_question_without_a_notice() {
    let p = Project::sample();
    let html = generated(&p, 1000);
    assert_eq!(html.matches("<details class=\"q\"").count(), 1000);
    assert!(!html.contains("drilldown-cap"));
}
