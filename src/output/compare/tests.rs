//! Unit tests of the comparison over hand-built results.

use super::*;
use crate::output::report::fixture::doc;
use crate::vocab::limit::Stat;

type Row<'a> = (&'a str, bool, &'a str, Option<bool>);

/// Two-sided exact McNemar p by a route of its own: whole binomial coefficients summed in
/// integers, the tail doubled.
fn exact_p(b: u64, c: u64) -> f64 {
    let n = b + c;
    let (mut coef, mut tail) = (1u128, 1u128);
    for i in 1..=b.min(c) as u128 {
        coef = coef * (n as u128 + 1 - i) / i;
        tail += coef;
    }
    (2.0 * tail as f64 / 2f64.powi(n as i32)).min(1.0)
}

fn rate(d: &SettingDiff, stat: Stat) -> &RateChange {
    d.rates.iter().find(|r| r.stat == stat).unwrap()
}

#[test]
fn each_rate_moves_with_its_own_paired_test() {
    let mut before: Vec<Row> = Vec::new();
    let mut after: Vec<Row> = Vec::new();
    let ids: Vec<String> = (0..30).map(|i| format!("q{i:02}")).collect();
    // Unanswerable q00..q19: 7 refused before and answered after, 1 the other way round,
    // the rest refused both times.
    for (i, id) in ids.iter().enumerate().take(20) {
        let (b, a) = match i {
            0..=6 => ("model_refusal", "unwanted_answer"),
            7 => ("unwanted_answer", "early_refusal"),
            8 => ("early_refusal", "model_refusal"),
            _ => ("early_refusal", "early_refusal"),
        };
        before.push((id, false, b, None));
        after.push((id, false, a, None));
    }
    // Answerable q20..q29: one falsely refused after, one answer gone wrong, one put right.
    for (i, id) in ids.iter().enumerate().skip(20) {
        let (b, a) = match i {
            20 => (("answer", Some(true)), ("false_refusal", None)),
            21 => (("answer", Some(true)), ("answer", Some(false))),
            22 => (("answer", Some(false)), ("answer", Some(true))),
            _ => (("answer", Some(true)), ("answer", Some(true))),
        };
        before.push((id, true, b.0, b.1));
        after.push((id, true, a.0, a.1));
    }
    let d = diff((&doc(&before), "a"), (&doc(&after), "b")).unwrap();
    assert_eq!(d.common, 30);
    assert_eq!((d.settings.len(), d.only_before.len()), (1, 0));
    let s = &d.settings[0];
    let ua = rate(s, Stat::UnwantedAnswerRate);
    assert_eq!((ua.up, ua.down), (7, 1));
    assert_eq!(ua.before, Some(1.0 / 20.0));
    assert_eq!(ua.after, Some(7.0 / 20.0));
    assert!((ua.p_value - exact_p(7, 1)).abs() < 1e-12, "{}", ua.p_value);
    assert!(
        (ua.p_value - 0.0703125).abs() < 1e-12,
        "18/256: {}",
        ua.p_value
    );
    let fr = rate(s, Stat::FalseRefusalRate);
    assert_eq!((fr.up, fr.down, fr.p_value), (1, 0, 1.0));
    let wa = rate(s, Stat::WrongAnswerRate);
    assert_eq!((wa.up, wa.down), (1, 1));
    // q08 changed kind of refusal: listed, neither worse nor better.
    let shown: Vec<String> = s.changes.iter().map(ToString::to_string).collect();
    assert_eq!(
        shown[7..],
        [
            "q07: unwanted_answer -> early_refusal",
            "q08: early_refusal -> model_refusal",
            "q20: answer -> false_refusal",
            "q21: answer -> answer (wrong)",
            "q22: answer (wrong) -> answer",
        ]
    );
    assert_eq!(s.changes.len(), 12);
    // Worse: 7 unwanted answers, 1 false refusal; better: q07. Wrongness is not a rank.
    assert_eq!((s.worse, s.better), (8, 1));
    assert!((s.p_value - exact_p(8, 1)).abs() < 1e-12);
}

#[test]
fn different_question_sets_compare_on_the_questions_both_ask_alike() {
    let before: Vec<Row> = vec![
        ("a", true, "answer", Some(true)),
        ("b", false, "model_refusal", None),
        ("gone", false, "early_refusal", None),
        ("moved", true, "answer", Some(true)),
    ];
    let after: Vec<Row> = vec![
        ("new", true, "false_refusal", None),
        ("b", false, "unwanted_answer", None),
        ("moved", false, "unwanted_answer", None),
        ("a", true, "answer", Some(true)),
    ];
    let d = diff((&doc(&before), "a.json"), (&doc(&after), "b.json")).unwrap();
    assert_eq!(d.common, 2);
    assert_eq!(d.added, ["new"]);
    assert_eq!(d.removed, ["gone"]);
    assert_eq!(d.moved, ["moved"]);
    let s = &d.settings[0];
    // Only the shared questions count: `new`'s false refusal and `moved`'s answer do not.
    let fr = rate(s, Stat::FalseRefusalRate);
    assert_eq!((fr.before, fr.after), (Some(0.0), Some(0.0)));
    let ua = rate(s, Stat::UnwantedAnswerRate);
    assert_eq!((ua.before, ua.after, ua.up), (Some(0.0), Some(1.0), 1));
    assert_eq!(s.changes.len(), 1);
    assert_eq!(s.changes[0].id, "b");
    let text = human(&d);
    assert!(
        text.contains("compared on the 2 questions in both, at the 1 setting in both\n"),
        "{text}"
    );
    assert!(
        text.contains("questions only in a.json (1): `gone`\n"),
        "{text}"
    );
    assert!(
        text.contains("questions only in b.json (1): `new`\n"),
        "{text}"
    );
}

#[test]
fn nothing_shared_is_an_error_naming_both_files() {
    let a = doc(&[("x", true, "answer", Some(true))]);
    let b = doc(&[("y", true, "answer", Some(true))]);
    let e = diff((&a, "a.json"), (&b, "b.json"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("`a.json` and `b.json` share no question"), "{e}");
    let mut c = doc(&[("x", true, "answer", Some(true))]);
    c.settings = vec![crate::sweep::Setting::new("0.5".parse().unwrap(), 1)];
    c.setting_text = Default::default();
    let e = diff((&a, "a.json"), (&c, "c.json"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("share no setting"), "{e}");
    assert!(
        e.contains("`min_score=0.2,k=4`") && e.contains("`min_score=0.5,k=1`"),
        "{e}"
    );
}
