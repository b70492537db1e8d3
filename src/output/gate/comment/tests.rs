//! The comment's body over hand-built results: its marker, its rows, and its length bound.

use std::path::Path;

use super::*;
use crate::output::gate::{evaluate, Policy};
use crate::output::report::fixture::doc;

type Row = (String, bool, &'static str, Option<bool>);

fn results(rows: &[Row]) -> Results {
    let refs: Vec<(&str, bool, &str, Option<bool>)> = rows
        .iter()
        .map(|(id, a, o, m)| (id.as_str(), *a, *o, *m))
        .collect();
    doc(&refs)
}

/// `n` answerable questions with ids `prefix0..`, answered right before and refused after.
fn flipped(n: usize, prefix: &str) -> (Results, Results) {
    let ids: Vec<String> = (0..n).map(|i| format!("{prefix}{i}")).collect();
    let before: Vec<Row> = ids
        .iter()
        .map(|id| (id.clone(), true, "answer", Some(true)))
        .collect();
    let after: Vec<Row> = ids
        .iter()
        .map(|id| (id.clone(), true, "false_refusal", None))
        .collect();
    (results(&before), results(&after))
}

fn body(before: &Results, after: &Results, trend: Option<String>) -> String {
    let policy = Policy {
        setting: Some("min_score=0.2,k=4".parse().unwrap()),
        ..Policy::default()
    };
    let report = evaluate(
        (after, Path::new("now.json")),
        Some((before, Path::new("base.json"))),
        &policy,
    )
    .unwrap();
    Comment {
        report: &report,
        current: after,
        baseline: Some(before),
        trend,
    }
    .body()
}

#[test]
fn the_body_starts_with_the_marker_and_shows_rates_before_and_after() {
    let (before, after) = flipped(12, "q");
    let text = body(
        &before,
        &after,
        Some("no rise (Cochran-Armitage, p=0.41)".into()),
    );
    assert!(
        text.starts_with(&format!("{MARKER}\n## rageval gate: FAIL")),
        "{text}"
    );
    assert!(
        text.contains("| gated `min_score=0.2,k=4` | - -> - | 0.000 -> 1.000 |"),
        "{text}"
    );
    assert!(text.contains("12 worse, 0 better, p=0.0005"), "{text}");
    assert!(text.contains("- `q0`: answer -> false_refusal\n"), "{text}");
    assert!(
        text.contains("- `q9`: answer -> false_refusal\n- and 2 more\n"),
        "{text}"
    );
    assert!(!text.contains("`q10`"), "{text}");
    assert!(
        text.contains("\n**Trend**: no rise (Cochran-Armitage, p=0.41)\n"),
        "{text}"
    );
}

#[test]
fn a_huge_report_stays_under_githubs_limit() {
    // Ids of 2,000 characters: ten flips alone pass the limit.
    let (before, after) = flipped(40, &"x".repeat(2_000));
    let text = body(&before, &after, Some("t".repeat(70_000)));
    assert!(
        text.chars().count() <= MAX_CHARS,
        "{}",
        text.chars().count()
    );
    assert!(text.starts_with(MARKER));
    assert!(
        text.ends_with("the job's log has the whole report)\n"),
        "{}",
        &text[text.len() - 200..]
    );
    let (before, after) = flipped(40, &"y".repeat(7_000));
    let text = body(&before, &after, None);
    assert!(
        text.chars().count() <= MAX_CHARS,
        "{}",
        text.chars().count()
    );
    // Some flips fit, the rest are counted.
    assert!(text.contains(" more\n"), "{text}");
}

#[test]
fn the_recommended_setting_gets_its_own_row_when_it_is_not_the_gated_one() {
    let r = crate::output::report::fixture::results();
    let rec = r
        .insight
        .recommendation
        .index
        .expect("the fixture recommends a setting");
    let other = (0..r.settings.len()).find(|&i| i != rec).unwrap();
    let (rec_id, other_id) = (
        r.setting_id(rec).to_string(),
        r.setting_id(other).to_string(),
    );
    let policy = Policy {
        setting: Some(other_id.parse().unwrap()),
        ..Policy::default()
    };
    let report = evaluate(
        (&r, Path::new("now.json")),
        Some((&r, Path::new("base.json"))),
        &policy,
    )
    .unwrap();
    let text = Comment {
        report: &report,
        current: &r,
        baseline: Some(&r),
        trend: None,
    }
    .body();
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("| gated") || l.starts_with("| recommended"))
        .collect();
    assert_eq!(rows.len(), 2, "{text}");
    assert!(
        rows[0].starts_with(&format!("| gated `{other_id}` |")),
        "{text}"
    );
    assert!(
        rows[1].starts_with(&format!("| recommended `{rec_id}` |")),
        "{text}"
    );
    let certified = if r.insight.is_certified(rec) {
        "yes"
    } else {
        "no"
    };
    assert!(rows[1].ends_with(&format!("| {certified} |")), "{text}");
    // Against itself, every rate is unchanged.
    let s = &r.stats[rec];
    let ua = s
        .unwanted_answer_rate
        .map_or("-".to_string(), |v| format!("{v:.3}"));
    assert!(rows[1].contains(&format!("| {ua} -> {ua} |")), "{text}");
    assert!(!text.contains("**Trend**"), "{text}");
}

#[test]
fn ids_from_outside_ping_no_one_and_link_nowhere() {
    // A question id that tries to close the code span and then mention, link and embed.
    let hostile = "q` @octocat [x](https://evil.example) <img src=x> #1 `";
    let (before, after) = flipped(1, hostile);
    let text = body(&before, &after, Some("tag @team rose".into()));
    let id = format!("{hostile}0");
    // The id sits in one code span whose fence is longer than any backtick run inside it,
    // so nothing in it renders as markup.
    assert!(
        text.contains(&format!("- ``{id}``: answer -> false_refusal\n")),
        "{text}"
    );
    // Outside code spans, a mention is broken by a zero-width space.
    assert!(text.contains("**Trend**: tag @&#8203;team rose"), "{text}");
    assert!(!text.contains("@team"), "{text}");
}
