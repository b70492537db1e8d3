//! Unit tests of the gate's rules over results as the sweep writes them.

use std::path::Path;

use super::*;
use crate::sweep::Setting;
use crate::vocab::limit::Limit;

/// Results with one setting `min_score=0.2,k=4` and the given (id, answerable, outcome,
/// answer_match) runs, each a copy of the fixture's first run (an answer citing its expected
/// source, 100 prompt tokens); an answer is wrong when it misses its expected text, as without
/// a judge. Not yet written: see [`written`].
fn unwritten(runs: &[(&str, bool, &str, Option<bool>)]) -> Results {
    let mut r = crate::output::report::fixture::results();
    let (question, run) = (r.questions[0].clone(), r.runs[0].clone());
    r.settings = vec![Setting::new("0.2".parse().unwrap(), 4)];
    r.questions = runs
        .iter()
        .map(
            |&(id, answerable, _, _)| crate::adapters::evalset::Question {
                id: id.into(),
                answerable,
                ..question.clone()
            },
        )
        .collect();
    r.runs = runs
        .iter()
        .enumerate()
        .map(|(q, &(_, _, outcome, answer_match))| {
            let mut run = run.clone();
            run.question = q;
            run.verdict.outcome = serde_json::from_value(serde_json::json!(outcome)).unwrap();
            run.verdict.answer_match = answer_match;
            run.verdict.wrong_answer = answer_match.filter(|_| outcome == "answer").map(|m| !m);
            run
        })
        .collect();
    let n = r.questions.len();
    (r.positions, r.question_set, r.expected_scores) =
        ((0..n).collect(), vec![0; n], vec![None; n]);
    r.stats = vec![crate::analysis::stats::aggregate(
        &r.runs,
        &r.questions,
        &r.meta.pricing,
    )];
    r.setting_text = Default::default();
    r.tag_stats = Default::default();
    r.with_insight(&Default::default())
}

/// `r` as the gate reads it: written as results.json by the sweep's writer, read back through
/// the record (statistics and insight computed afresh).
fn written(r: &Results) -> Results {
    let mut out = Vec::new();
    crate::output::record::stream::write(r, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    Record::parse(Path::new("r.json"), &text)
        .unwrap()
        .into_results()
        .unwrap()
}

fn doc(runs: &[(&str, bool, &str, Option<bool>)]) -> Results {
    written(&unwritten(runs))
}

/// The gated setting, and no limit but `gate.max_error_runs`'s default of 0.
fn policy() -> Policy {
    let mut p = Policy {
        setting: Some("k=4,min_score=0.2".parse().unwrap()),
        ..Policy::default()
    };
    p.limits.set(Limit::MaxErrorRuns, Some(0.0));
    p
}

fn check<'a>(r: &'a Report, name: &str) -> &'a Check {
    r.checks
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no check {name}: {:?}", r.checks))
}

/// `now` gated against the baseline `base` under `p`.
fn compare(now: &Results, base: &Results, p: &Policy) -> Result<Report> {
    evaluate(
        (now, Path::new("r.json")),
        Some((base, Path::new("b.json"))),
        p,
    )
}

/// Ten answerable questions answered correctly and ten unanswerable ones refused.
fn good() -> Vec<(String, bool, &'static str, Option<bool>)> {
    let mut v = Vec::new();
    for i in 0..10 {
        v.push((format!("a{i}"), true, "answer", Some(true)));
        v.push((format!("u{i}"), false, "early_refusal", None));
    }
    v
}

fn as_doc(v: &[(String, bool, &str, Option<bool>)]) -> Results {
    let refs: Vec<(&str, bool, &str, Option<bool>)> = v
        .iter()
        .map(|(a, b, c, d)| (a.as_str(), *b, *c, *d))
        .collect();
    doc(&refs)
}

#[test]
fn absolute_limits_count_from_the_runs() {
    let r = doc(&[
        ("a", true, "answer", Some(true)),
        ("b", true, "answer", Some(false)),
        ("c", true, "answer", None),
        ("d", true, "false_refusal", None),
        ("u", false, "unwanted_answer", None),
        ("v", false, "model_refusal", None),
        ("w", false, "error", None),
    ]);
    let mut p = policy();
    for (limit, v) in [
        (Limit::MaxUnwantedAnswerRate, 0.3),
        (Limit::MaxFalseRefusalRate, 0.25),
        (Limit::MaxPromptTokensPerQuestion, 100.0),
        (Limit::MinAnswerMatchRate, 0.5),
        (Limit::MaxWrongAnswerRate, 0.25),
    ] {
        p.limits.set(limit, Some(v));
    }
    let rep = evaluate((&r, Path::new("r.json")), None, &p).unwrap();
    assert_eq!(rep.setting, "min_score=0.2,k=4");
    let e = check(&rep, "error_runs");
    assert!(!e.passed && e.figures == "1 > limit 0", "{e:?}");
    // 1 of 3 unanswerable
    let u = check(&rep, "unwanted_answer_rate");
    assert!(!u.passed && u.figures == "0.333 > limit 0.300", "{u:?}");
    // 1 of 4 answerable
    assert!(check(&rep, "false_refusal_rate").passed);
    // 1 of the 2 answers that have an expected text; `c` has none and is not counted
    let m = check(&rep, "answer_match_rate");
    assert!(m.passed && m.figures == "0.500 >= limit 0.500", "{m:?}");
    assert!(check(&rep, "prompt_tokens_per_question").passed);
    // `b` of 4 answerable
    let w = check(&rep, "wrong_answer_rate");
    assert!(w.passed && w.figures == "0.250 <= limit 0.250", "{w:?}");
    assert_eq!(rep.failed(), 2);
}

#[test]
fn the_wrong_answer_limit_holds_at_its_boundary_and_fails_past_it() {
    // 1 wrong answer of 4 answerable questions; unanswerable ones do not count.
    let mut raw = unwritten(&[
        ("a", true, "answer", Some(true)),
        ("b", true, "answer", Some(false)),
        ("c", true, "answer", None),
        ("d", true, "false_refusal", None),
        ("u", false, "unwanted_answer", None),
    ]);
    let r = written(&raw);
    let gate = |r: &Results, limit: f64| {
        let mut p = policy();
        p.limits.set(Limit::MaxWrongAnswerRate, Some(limit));
        let rep = evaluate((r, Path::new("r.json")), None, &p).unwrap();
        let c = check(&rep, "wrong_answer_rate").clone();
        (c.passed, c.figures, rep.passed())
    };
    assert_eq!(gate(&r, 0.25), (true, "0.250 <= limit 0.250".into(), true));
    assert_eq!(gate(&r, 0.24), (false, "0.250 > limit 0.240".into(), false));
    // The judge's verdict decides, not the substring: `a` holds its text but was judged wrong.
    raw.runs[0].verdict.wrong_answer = Some(true);
    let r = written(&raw);
    assert_eq!(gate(&r, 0.25), (false, "0.500 > limit 0.250".into(), false));
    assert_eq!(gate(&r, 0.5), (true, "0.500 <= limit 0.500".into(), true));
    let none = doc(&[("u", false, "unwanted_answer", None)]);
    assert_eq!(
        gate(&none, 0.0),
        (true, "n/a (no answerable questions)".into(), true)
    );
}

#[test]
fn more_wrong_answers_than_the_baseline_fail_beyond_the_tolerance() {
    let base = as_doc(&good());
    let mut now = good();
    now[0].3 = Some(false); // a0 answers, but wrongly: no flip, a worse rate
    let now = as_doc(&now);
    let mut p = policy();
    let rep = compare(&now, &base, &p).unwrap();
    let c = check(&rep, "wrong_answer_rate vs baseline");
    assert_eq!(
        (c.passed, c.figures.as_str()),
        (false, "0.100 > 0.000 + tolerance 0.000")
    );
    assert!(rep.baseline.as_ref().unwrap().worse.is_empty());
    p.tolerance = 0.1;
    let rep = compare(&now, &base, &p).unwrap();
    let c = check(&rep, "wrong_answer_rate vs baseline");
    assert_eq!(
        (c.passed, c.figures.as_str()),
        (true, "0.100 <= 0.000 + tolerance 0.100")
    );
}

#[test]
fn only_error_runs_are_checked_by_default() {
    let r = as_doc(&good());
    let rep = evaluate((&r, Path::new("r.json")), None, &policy()).unwrap();
    let names: Vec<&str> = rep.checks.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["error_runs"]);
    assert!(rep.passed());
}

#[test]
fn flips_are_classified_by_error_wrong_right() {
    let base = as_doc(&good());
    let mut now = good();
    now[0].2 = "false_refusal"; // a0: answer -> false_refusal
    now[1].2 = "unwanted_answer"; // u0: early_refusal -> unwanted_answer
    now[3].2 = "model_refusal"; // u1: early -> model refusal: no flip
    now[4].2 = "error"; // a2: answer -> error
    let now = as_doc(&now);
    let rep = compare(&now, &base, &policy()).unwrap();
    let c = rep.baseline.as_ref().unwrap();
    let worse: Vec<(&str, Outcome, Outcome)> = c
        .worse
        .iter()
        .map(|f| (f.id.as_str(), f.before, f.after))
        .collect();
    assert_eq!(
        worse,
        [
            ("a0", Outcome::Answer, Outcome::FalseRefusal),
            ("u0", Outcome::EarlyRefusal, Outcome::UnwantedAnswer),
            ("a2", Outcome::Answer, Outcome::Error),
        ]
    );
    assert!(c.better.is_empty());
    assert!((c.p_value - 0.25).abs() < 1e-12, "{}", c.p_value);
    let fr = check(&rep, "false_refusal_rate vs baseline");
    assert!(
        !fr.passed && fr.figures == "0.100 > 0.000 + tolerance 0.000",
        "{fr:?}"
    );
    assert!(c.regressed);
}

#[test]
fn tolerance_and_significance_decide_baseline_failures() {
    let base = as_doc(&good());
    let mut now = good();
    now[0].2 = "false_refusal";
    let now = as_doc(&now);
    let run = |p: &Policy| compare(&now, &base, p).unwrap();
    // One flip of ten answerable: 0.1 worse.
    assert!(!run(&policy()).passed());
    let mut p = policy();
    p.tolerance = 0.1;
    assert!(run(&p).passed());
    let mut p = policy();
    p.require_significance = true;
    let rep = run(&p);
    assert!(rep.passed(), "{:?}", rep.checks);
    let fr = check(&rep, "false_refusal_rate vs baseline");
    assert!(fr.figures.contains("not significant (p=1.0000"), "{fr:?}");
    // Six regressions and no improvement: p = 0.03125 < 0.05, significant.
    let mut worse = good();
    for i in 0..6 {
        worse[2 * i].2 = "false_refusal";
    }
    let worse = as_doc(&worse);
    let rep = compare(&worse, &base, &p).unwrap();
    assert!(!rep.passed());
    assert!(check(&rep, "false_refusal_rate vs baseline")
        .figures
        .contains("significant (p=0.031"));
}

#[test]
fn a_question_set_that_lost_too_much_is_not_compared() {
    let base = as_doc(&good());
    // Five of twenty baseline questions gone: 25% > 20%.
    let now = as_doc(&good()[5..]);
    let err = compare(&now, &base, &policy()).unwrap_err().to_string();
    assert!(err.contains("changed too much"), "{err}");
    assert!(err.contains("5 of its 20 questions are gone"), "{err}");
    assert!(err.contains("`a0`") && err.contains("`a2`"), "{err}");
    // Four gone (20%) is compared on the common ids, and reported.
    let mut now = good()[4..].to_vec();
    now.push(("new".into(), true, "answer", Some(true)));
    let now = as_doc(&now);
    let rep = compare(&now, &base, &policy()).unwrap();
    let c = rep.baseline.unwrap();
    assert_eq!(c.common, 16);
    assert_eq!(c.removed, ["a0", "u0", "a1", "u1"]);
    assert_eq!(c.added, ["new"]);
}

#[test]
fn the_gated_setting_defaults_to_the_recommendation() {
    // 3 of 10 unanswerable questions answered: above the default `recommend` limit of 20%.
    let mut unwanted = good();
    for i in 0..3 {
        unwanted[2 * i + 1].2 = "unwanted_answer";
    }
    let r = as_doc(&unwanted);
    assert_eq!(r.insight.recommendation.setting, None);
    let mut p = policy();
    p.setting = None;
    let err = evaluate((&r, Path::new("r.json")), None, &p)
        .unwrap_err()
        .to_string();
    assert!(err.contains("no gated setting"), "{err}");
    assert!(err.contains("--setting min_score=0.2,k=4"), "{err}");
    let r = as_doc(&good());
    assert_eq!(
        r.insight.recommendation.setting.as_deref(),
        Some("min_score=0.2,k=4")
    );
    let rep = evaluate((&r, Path::new("r.json")), None, &p).unwrap();
    assert_eq!(rep.setting, "min_score=0.2,k=4");
}

#[test]
fn every_gate_limit_is_one_check_named_after_its_statistic() {
    let r = as_doc(&good());
    let mut p = policy();
    for limit in Limit::of(crate::vocab::limit::Scope::Gate) {
        p.limits.set(limit, Some(1.0));
    }
    let rep = evaluate((&r, Path::new("r.json")), None, &p).unwrap();
    let mut names: Vec<&str> = rep.checks.iter().map(|c| c.name.as_str()).collect();
    // The order the gate has always printed them in.
    assert_eq!(
        names,
        [
            "error_runs",
            "unwanted_answer_rate",
            "false_refusal_rate",
            "answer_match_rate",
            "wrong_answer_rate",
            "prompt_tokens_per_question",
            "flip_rate"
        ]
    );
    names.sort();
    let mut want: Vec<&str> = Limit::of(crate::vocab::limit::Scope::Gate)
        .map(|l| l.stat().name())
        .collect();
    want.sort();
    assert_eq!(names, want);
}

/// `runs` written and read back, each question tagged `near` when its id starts with `n`, and
/// every question tagged `all`.
fn tagged(runs: &[(&str, bool, &str, Option<bool>)]) -> Results {
    let mut r = unwritten(runs);
    for q in &mut r.questions {
        q.tags = vec!["all".into()];
        if q.id.starts_with('n') {
            q.tags.push("near".into());
        }
    }
    written(&r)
}

#[test]
fn a_tag_is_held_to_its_own_limits() {
    let r = tagged(&[
        ("a", true, "answer", Some(true)),
        ("n1", false, "unwanted_answer", None),
        ("n2", false, "model_refusal", None),
        ("u1", false, "early_refusal", None),
        ("u2", false, "early_refusal", None),
    ]);
    let mut p = policy();
    // Overall 1 of 4 unwanted answers; `near` 1 of 2.
    p.limits.set(Limit::MaxUnwantedAnswerRate, Some(0.3));
    let limits = |v: f64| {
        let mut l = crate::vocab::limit::Limits::default();
        l.set(Limit::MaxUnwantedAnswerRate, Some(v));
        l.set(Limit::MaxFalseRefusalRate, Some(0.0));
        l
    };
    p.tags = vec![("near".into(), limits(0.3)), ("all".into(), limits(0.3))];
    let report = evaluate((&r, Path::new("r.json")), None, &p).unwrap();
    assert!(check(&report, "unwanted_answer_rate").passed);
    let near = check(&report, "tag near: unwanted_answer_rate");
    assert_eq!(
        (near.passed, near.figures.as_str()),
        (false, "0.500 > limit 0.300")
    );
    // A tag of unanswerable questions only has no false-refusal rate: the limit holds.
    let near = check(&report, "tag near: false_refusal_rate");
    assert_eq!(
        (near.passed, near.figures.as_str()),
        (true, "n/a (no answerable questions)")
    );
    let all = check(&report, "tag all: unwanted_answer_rate");
    assert_eq!(
        (all.passed, all.figures.as_str()),
        (true, "0.250 <= limit 0.300")
    );
    assert_eq!(report.failed(), 1);

    p.tags = vec![("near".into(), limits(0.5))];
    let report = evaluate((&r, Path::new("r.json")), None, &p).unwrap();
    assert!(report.passed(), "{:?}", report.checks);

    // A tag no question carries fails, naming the tags there are.
    p.tags = vec![("nearmiss".into(), limits(0.5))];
    let report = evaluate((&r, Path::new("r.json")), None, &p).unwrap();
    let missing = check(&report, "tag nearmiss");
    assert!(!missing.passed);
    assert_eq!(
        missing.figures,
        "no question carries the tag; the tags are `all`, `near`"
    );
}

#[test]
fn the_baseline_comparison_flags_a_tag_whose_rate_got_worse() {
    let runs = |n1: &'static str| {
        [
            ("a", true, "answer", Some(true)),
            ("n1", false, n1, None),
            ("n2", false, "model_refusal", None),
            ("u1", false, "early_refusal", None),
            ("u2", false, "early_refusal", None),
            ("u3", false, "early_refusal", None),
            ("u4", false, "early_refusal", None),
        ]
    };
    let base = tagged(&runs("model_refusal"));
    let now = tagged(&runs("unwanted_answer"));
    let mut p = policy();
    p.tolerance = 0.2;
    // Overall 1 of 6 (within the tolerance), `near` 1 of 2: flagged, not failed.
    let report = compare(&now, &base, &p).unwrap();
    assert!(report.passed(), "{:?}", report.checks);
    let c = report.baseline.as_ref().unwrap();
    assert_eq!(
        c.tags_worse,
        [TagChange {
            tag: "near".into(),
            stat: "unwanted_answer_rate",
            before: 0.0,
            after: 0.5,
        }]
    );
    let text = output::human(&report);
    assert!(
        text.contains(
            "tags whose rate got worse since the baseline (1): near unwanted_answer_rate 0.000 -> 0.500\n"
        ),
        "{text}"
    );
    // The other way round nothing got worse.
    let report = compare(&base, &now, &p).unwrap();
    assert!(report.baseline.unwrap().tags_worse.is_empty());
}
