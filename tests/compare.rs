//! `rageval compare A B` through the real binary: the changed questions are the ones a hand
//! count of the two runs.csv files finds, each rate's McNemar p is the exact binomial tail
//! computed here another way, and runs over different question sets compare on the questions
//! both ask.

use std::collections::{BTreeMap, BTreeSet};

use crate::support::{col, read_csv, Project, PRODUCTION};

/// The grid of both sweeps: four settings.
const GRID: &[&str] = &[
    "--evalset",
    "evalsets/club.yaml",
    "--min-score",
    "0.1,0.3",
    "--k",
    "1,4",
];

/// A baseline in `base/`, then the same questions embedded into fewer buckets (so retrieval,
/// and with it many outcomes, changes both ways) into `now/`.
fn two_runs() -> Project {
    let p = Project::sample();
    p.rageval(["sweep", "-q", "--out", "base"]).args(GRID).run();
    p.write(
        "coarse.yaml",
        "evalsets: [evalsets/club.yaml]\nembedder: {kind: hash, dimensions: 32}\n",
    );
    p.rageval(["--config", "coarse.yaml", "sweep", "-q", "--out", "now"])
        .args(GRID)
        .run();
    p
}

/// A run as `compare` names it: its outcome, `(wrong)` after a wrong answer.
fn label(header: &[String], row: &[String]) -> String {
    let outcome = col(header, row, "outcome");
    if col(header, row, "wrong_answer") == "true" {
        format!("{outcome} (wrong)")
    } else {
        outcome.to_string()
    }
}

/// runs.csv of `dir` as setting id -> question id -> (answerable, label).
type Runs = BTreeMap<String, BTreeMap<String, (bool, String)>>;

fn runs(p: &Project, dir: &str) -> Runs {
    let (header, rows) = read_csv(&p.read(&format!("{dir}/runs.csv")));
    let mut out = Runs::new();
    for row in &rows {
        let setting = format!(
            "min_score={},k={}",
            col(&header, row, "min_score"),
            col(&header, row, "k")
        );
        out.entry(setting).or_default().insert(
            col(&header, row, "question_id").to_string(),
            (
                col(&header, row, "answerable") == "true",
                label(&header, row),
            ),
        );
    }
    out
}

/// Two-sided exact McNemar p, written out: the binomial(n, 1/2) tail up to min(b, c) in whole
/// numbers, doubled, at most 1; printed as `compare` prints a p-value.
fn mcnemar(b: u64, c: u64) -> String {
    let n = b + c;
    let mut coef: u128 = 1;
    let mut tail: u128 = 1;
    for i in 1..=b.min(c) as u128 {
        coef = coef * (n as u128 + 1 - i) / i;
        tail += coef;
    }
    let p = (2.0 * tail as f64 / 2f64.powi(n as i32)).min(1.0);
    if p >= 0.0001 {
        format!("{p:.4}")
    } else {
        format!("{p:.1e}")
    }
}

/// Whether a run with this label counts toward a rate.
fn counts(rate: &str, label: &str) -> bool {
    match rate {
        "unwanted_answer_rate" => label == "unwanted_answer",
        "false_refusal_rate" => label == "false_refusal",
        _ => label.ends_with("(wrong)"),
    }
}

#[test]
fn the_changed_questions_and_p_values_equal_a_hand_count_of_the_two_runs() {
    let p = two_runs();
    let out = p
        .rageval([
            "compare",
            "base",
            "now/results.json",
            "--markdown",
            "cmp.md",
        ])
        .stdout_snapshot(
            "compare__the_changed_questions_and_p_values_equal_a_hand_count_of_the_two_runs",
        )
        .file_snapshot(
            "cmp.md",
            "compare__the_changed_questions_and_p_values_equal_a_hand_count_of_the_two_runs_2",
        )
        .run();
    let (before, after) = (runs(&p, "base"), runs(&p, "now"));
    // By hand: every (setting, question) whose label differs.
    let mut hand: BTreeSet<String> = BTreeSet::new();
    let mut total = 0;
    for (setting, questions) in &before {
        for (id, (_, was)) in questions {
            let (_, is) = &after[setting][id];
            if was != is {
                hand.insert(format!("{setting} {id}: {was} -> {is}"));
                total += 1;
            }
        }
    }
    // As printed: the `  id: a -> b` lines under each setting's header line.
    let mut printed: BTreeSet<String> = BTreeSet::new();
    let mut setting = String::new();
    let mut p_lines: Vec<(String, String)> = Vec::new();
    for line in out.stdout.lines() {
        if let Some((head, _)) = line
            .split_once(": ")
            .filter(|_| line.starts_with("min_score="))
        {
            setting = head.to_string();
        } else if let Some(rest) = line.strip_prefix("  ") {
            if rest.contains(" -> ") && rest.contains(": ") && !rest.starts_with("tag ") {
                printed.insert(format!("{setting} {rest}"));
            } else if rest.contains("McNemar p=") {
                p_lines.push((setting.clone(), rest.to_string()));
            }
        }
    }
    assert!(
        total >= 8,
        "the two runs differ too little to test anything: {hand:?}"
    );
    assert_eq!(printed, hand, "{}", out.stdout);
    // Each rate's up and down counts and p, from the hand count.
    let mut most = 0;
    for (setting, line) in &p_lines {
        let rate = line.split_whitespace().next().unwrap();
        let (mut up, mut down) = (0u64, 0u64);
        for (id, (_, was)) in &before[setting] {
            let is = &after[setting][id].1;
            match (counts(rate, was), counts(rate, is)) {
                (false, true) => up += 1,
                (true, false) => down += 1,
                _ => {}
            }
        }
        let want = format!("({up} up, {down} down, McNemar p={})", mcnemar(up, down));
        assert!(line.ends_with(&want), "{setting}: {line} vs {want}");
        most = most.max(up + down);
    }
    // Some rate moved by enough questions for its p-value to be more than a formality.
    assert!(most >= 5, "{}", out.stdout);
}

#[test]
fn different_question_sets_compare_on_the_questions_both_ask() {
    let p = Project::sample();
    p.rageval(["sweep", "-q", "--out", "base"])
        .args(PRODUCTION)
        .run();
    // Drop two questions, add one.
    let set = p.read("evalsets/club.yaml");
    let start = set.find("  - id: scholarship\n").unwrap();
    let end = set.find("  - id: laptop-loan-length\n").unwrap();
    let mut edited = format!("{}{}", &set[..start], &set[end..]);
    let start = edited.find("  - id: president\n").unwrap();
    let len = edited[start + 4..].find("  - id: ").unwrap() + 4;
    edited.replace_range(start..start + len, "");
    edited = edited.replacen(
        "answerable:\n",
        "answerable:\n  - id: new-one\n    question: When does the club meet?\n",
        1,
    );
    p.write("evalsets/club.yaml", &edited);
    p.rageval(["sweep", "-q", "--out", "now"])
        .args(PRODUCTION)
        .run();
    let out = p
        .rageval(["compare", "base", "now"])
        .stdout_snapshot("compare__different_question_sets_compare_on_the_questions_both_ask")
        .run();
    assert!(
        out.stdout.contains(
            "compared on the 24 questions in both, at the 1 setting in both\n\
             questions only in base/results.json (2): `scholarship`, `president`\n\
             questions only in now/results.json (1): `new-one`\n"
        ),
        "{}",
        out.stdout
    );
    // The rates are over the shared questions: recount the unwanted answers from runs.csv.
    let (before, after) = (runs(&p, "base"), runs(&p, "now"));
    let shared: Vec<&String> = before["min_score=0.2,k=4"]
        .keys()
        .filter(|id| after["min_score=0.2,k=4"].contains_key(*id))
        .collect();
    assert_eq!(shared.len(), 24);
    let rate = |r: &Runs| {
        let runs = &r["min_score=0.2,k=4"];
        let un: Vec<_> = shared
            .iter()
            .map(|id| &runs[*id])
            .filter(|(a, _)| !a)
            .collect();
        let n = un.iter().filter(|(_, l)| l == "unwanted_answer").count();
        format!("{:.3}", n as f64 / un.len() as f64)
    };
    let (b, a) = (rate(&before), rate(&after));
    assert!(
        out.stdout.contains(&format!("unwanted_answer_rate {a}"))
            || out
                .stdout
                .contains(&format!("unwanted_answer_rate  {b} -> {a}")),
        "{b} -> {a}\n{}",
        out.stdout
    );
}

#[test]
fn bad_inputs_exit_2_naming_the_file() {
    let p = Project::sample();
    p.rageval(["sweep", "-q", "--out", "base"])
        .args(PRODUCTION)
        .run();
    p.rageval(["compare", "base", "missing"]).fails(
        "results `missing` does not exist: run `rageval sweep` first, or name a results file or its folder",
    ).run();
    p.rageval([
        "sweep",
        "-q",
        "--out",
        "other",
        "--evalset",
        "evalsets/club.yaml",
        "--min-score",
        "0.4",
        "--k",
        "2",
    ])
    .run();
    p.rageval(["compare", "base", "other"])
        .unusable(&[
            "share no setting to compare",
            "`min_score=0.2,k=4`",
            "`min_score=0.4,k=2`",
        ])
        .run();
}
