//! Certification on labels (issue 37), end to end: a sweep given a labels file tests every
//! rate the labels grade with the prediction-powered test, and says what the certificate
//! rests on in its line and in results.json.

use std::collections::BTreeMap;

use rageval::adapters::classify::{Outcome, Refusal};

use crate::certify::separable;

/// A labels file in which a person read every distinct model reply of the results in `dir`
/// as the grader did (a census: inclusion 1), and the number of replies.
fn census(p: &crate::support::Project, dir: &str) -> (String, usize) {
    let results = crate::harness::results(p, dir).into_results().unwrap();
    let ids = results.reply_ids();
    let mut rows: BTreeMap<String, String> = BTreeMap::new();
    for (run, id) in results.runs.iter().zip(ids) {
        let Some(id) = id else { continue };
        let refused = run.verdict.refusal == Some(Refusal::Model);
        assert_ne!(run.verdict.outcome, Outcome::Error);
        let q = &results.questions[run.question];
        rows.entry(id.clone()).or_insert_with(|| {
            format!(
                "{id},{},{},q,,,r,,,,1,7,{},\n",
                q.id,
                if q.answerable { "yes" } else { "no" },
                if refused { "yes" } else { "no" }
            )
        });
    }
    let header = "reply_id,question_id,answerable,question,expected_answers,passages,reply,graded_refused,graded_correct,graded_by,inclusion,seed,refused,correct\n";
    let n = rows.len();
    (
        header.to_string() + &rows.into_values().collect::<String>(),
        n,
    )
}

#[test]
fn with_labels_the_certificate_is_prediction_powered_and_says_what_it_rests_on() {
    let p = separable(30, 30);
    let sweep = ["sweep", "--min-score", "0.1..0.5", "--k", "1,2", "--wide"];
    p.rageval(sweep)
        .stdout_contains(", certified at 95% by ordered tests over 10 settings: ")
        .stdout_any("the table and lines are certify.rs's; this test reads the record")
        .run();
    let (labels, n) = census(&p, "reports/latest");
    assert!(n > 30, "{n} distinct replies");
    p.write("labels.csv", &labels);
    let out = p
        .rageval(sweep.into_iter().chain(["--labels", "labels.csv"]))
        .stdout_contains(format!(
            ", certified at 95% by ordered prediction-powered tests on {n} labels over 10 settings: "
        ))
        .stdout_contains(format!(
            "; at most 5% of sweeps certify any setting that breaks a limit; the certificate rests on {n} labelled replies, every run's grade corrected by them; "
        ))
        .stdout_any("the rest of the table is the sweep's, as above")
        .run();
    let s = out.summary();
    let rec = &s["recommendation"];
    assert_eq!(rec["certified"], true, "{rec}");
    assert_eq!(rec["procedure"]["labels"], n, "{rec}");
    let bounds = rec["bounds"].as_array().unwrap();
    assert_eq!(bounds.len(), 2);
    for b in bounds {
        // The chosen setting refuses some questions early: their grades are exact, not labels.
        let labels = b["labels"].as_u64().unwrap();
        assert!(labels <= b["questions"].as_u64().unwrap(), "{b}");
        assert!(
            b["upper_bound"].as_f64().unwrap() <= b["max"].as_f64().unwrap(),
            "{b}"
        );
    }
    assert!(
        rec["method"].as_str().unwrap().contains(&format!(
            "; prediction-powered tests on {n} labelled replies ("
        )),
        "{rec}"
    );
}
