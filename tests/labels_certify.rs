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

/// Answerable questions of [`hiding`]: every third is one the mock cannot answer from its
/// passage and refuses in the fourth wording, which no string tier reads.
const ANSWERABLE: usize = 36;

/// `text` with `?`s added until its length in characters is `rem` modulo 4: the paraphrasing
/// mock picks a refusal's wording by the question's length (`adapters::mock::chat::paraphrase`).
fn padded(text: &str, rem: usize) -> String {
    let mut t = text.to_string();
    while t.chars().count() % 4 != rem {
        t.push('?');
    }
    t
}

/// A project on the paraphrasing mock at `url` whose one setting refuses a third of its
/// answerable questions in the wording the grader reads as a (wrong) answer: a true
/// false-refusal rate of 1/3 against a limit of 20%, which the grader reads as 0. Its 20
/// unanswerable questions are refused in the exact sentence. The hidden refusals are spread
/// through the set (every third question), so no prefix of the questions certifies the limit
/// on the truth either.
pub(crate) fn hiding(url: &str) -> (crate::support::Project, usize) {
    let p = crate::support::Project::empty();
    let mut doc = String::from("# Glossary\n\n");
    let mut set = String::from("corpus: kb\nanswerable:\n");
    let mut hidden = 0;
    for i in 0..ANSWERABLE {
        doc.push_str(&format!(
            "## Term {i}\n\nThe word zorb{i}q names the colour of gate {i} in the old garden.\n\n"
        ));
        // Shares one content word with its passage: the mock refuses it.
        let question = if i % 3 == 2 {
            hidden += 1;
            padded(&format!("Who paints zorb{i}q?"), 3)
        } else {
            format!("What does zorb{i}q name in the old garden?")
        };
        set.push_str(&format!(
            "  - id: a{i:02}\n    question: \"{question}\"\n    expect:\n      answer: [colour]\n"
        ));
    }
    set.push_str("unanswerable:\n");
    for j in 0..20 {
        let question = padded(&format!("Who invented the kwelp{j}t engine?"), 0);
        set.push_str(&format!("  - id: u{j:02}\n    question: \"{question}\"\n"));
    }
    p.write("kb/glossary.md", &doc);
    p.write("set.yaml", &set);
    p.write(
        "rageval.yaml",
        &format!(
            "evalsets: [set.yaml]\nchat:\n  kind: openai\n  base_url: {url}\n  model: mock\n  api_key_env: {}\n  max_retries: 1\nsweep:\n  min_score: 0\n  k: 1\nrecommend:\n  max_false_refusal_rate: 0.2\n  max_unwanted_answer_rate: 0.5\n",
            crate::http::KEY_ENV
        ),
    );
    (p, hidden)
}

/// `rageval sweep` of `p` with the mock's key: the summary of its results.json.
fn swept(p: &crate::support::Project) -> serde_json::Value {
    p.sweep::<_, &str>([])
        .env(crate::http::KEY_ENV, "test-key")
        .run()
        .summary()
}

/// Issue 37's end-to-end flip on `mock-llm --paraphrase`: without labels the grader's reading
/// (no false refusal) certifies a setting whose true false-refusal rate (1/3) breaks the 20%
/// limit; with every sampled reply labelled by its true meaning, the setting is certified no
/// more, its false-refusal bound is above the limit, and the counts are the truth.
#[test]
fn labels_by_true_meaning_take_back_a_certificate_the_grader_gave() {
    let server = crate::http::MockLlm::start(&["--paraphrase"]);
    let (p, hidden) = hiding(&server.url);
    let key = (crate::http::KEY_ENV, "test-key");
    let graded = swept(&p);
    let setting = "min_score=0,k=1";
    let rec = &graded["recommendation"];
    assert_eq!(rec["certified"], true, "{rec}");
    assert_eq!(rec["setting"], setting, "{rec}");
    let stats = &graded["settings"][setting];
    assert_eq!(stats["false_refusal"], 0, "{stats}");
    assert_eq!(stats["wrong_answer"], hidden, "{stats}");
    let fr = |rec: &serde_json::Value| {
        rec["bounds"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["limit"] == "max_false_refusal_rate")
            .cloned()
            .unwrap_or_else(|| panic!("no false-refusal bound: {rec}"))
    };
    let bound = fr(rec);
    assert!(bound["upper_bound"].as_f64().unwrap() <= 0.2, "{bound}");

    p.rageval(["label", "--share", "1"])
        .stdout_any("the sampling line is compared in labels.rs")
        .run();
    let labels = crate::labels::label_truly(&p.read("reports/latest/labels.csv"));
    let (h, rows) = crate::support::read_csv(&labels);
    let refused = rows
        .iter()
        .filter(|r| crate::support::col(&h, r, "refused") == "yes")
        .count();
    // Every reply labelled: the hidden refusals and the unanswerable questions' refusals.
    assert_eq!((rows.len(), refused), (ANSWERABLE + 20, hidden + 20));
    p.write("labels.csv", &labels);
    let out = p
        .sweep(["--labels", "labels.csv"])
        .env(key.0, key.1)
        .stderr_any("the grader's disagreement warning is compared in labels.rs")
        .run();
    let s = out.summary();
    let stats = &s["settings"][setting];
    assert_eq!(stats["false_refusal"], hidden, "{stats}");
    assert_eq!(stats["wrong_answer"], 0, "{stats}");
    let truth = hidden as f64 / ANSWERABLE as f64;
    assert!(truth > 0.2);
    let rec = &s["recommendation"];
    assert_eq!(rec["certified"], false, "{rec}");
    let bound = fr(rec);
    assert!(bound["upper_bound"].as_f64().unwrap() > 0.2, "{bound}");
    assert_eq!(s["settings"][setting]["certified"], false, "{s}");
}

/// `text` (a labels file) with every row labelled as the grader read it: a person who agrees.
fn label_as_graded(text: &str) -> String {
    let (header, rows) = crate::support::read_csv(text);
    let at = |name: &str| header.iter().position(|h| h == name).unwrap();
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(&header).unwrap();
    for mut row in rows {
        row[at("refused")] = row[at("graded_refused")].clone();
        row[at("correct")] = row[at("graded_correct")].clone();
        w.write_record(&row).unwrap();
    }
    String::from_utf8(w.into_inner().unwrap()).unwrap()
}

/// The flip of [`labels_by_true_meaning_take_back_a_certificate_the_grader_gave`] with a
/// stratified sample instead of every reply: about 40 of the 56 replies, the graded wrong
/// answers (where the hidden refusals are) drawn twice as often, so every one of them is
/// labelled and the others with probability 7/11. The same rows labelled as the grader read
/// them keep the certificate (so the sample is large enough to certify); labelled by their
/// true meaning, each weighed by its own probability, they take it back.
#[test]
fn a_stratified_sample_labelled_by_true_meaning_takes_it_back_too() {
    let server = crate::http::MockLlm::start(&["--paraphrase"]);
    let (p, hidden) = hiding(&server.url);
    let key = (crate::http::KEY_ENV, "test-key");
    let graded = swept(&p);
    assert_eq!(graded["recommendation"]["certified"], true);
    p.rageval([
        "label",
        "--sample",
        "40",
        "--oversample",
        "wrong_answer=2",
        "--seed",
        "3",
    ])
    .stdout_any("the sampling line is compared in labels.rs")
    .run();
    let sampled = p.read("reports/latest/labels.csv");
    let (h, rows) = crate::support::read_csv(&sampled);
    let col = |r: &Vec<String>, name: &str| crate::support::col(&h, r, name).to_string();
    // 12 × min(1, 2b) + 44 × b = 40: 2b > 1, so the wrong answers are drawn at 1 (all of
    // them) and 12 + 44b = 40, b = 7/11.
    let wrong = rows
        .iter()
        .filter(|r| col(r, "graded_correct") == "no")
        .inspect(|r| assert_eq!(col(r, "inclusion"), "1"))
        .count();
    assert_eq!(wrong, hidden);
    for r in rows.iter().filter(|r| col(r, "graded_correct") != "no") {
        let p: f64 = col(r, "inclusion").parse().unwrap();
        assert!((p - 7.0 / 11.0).abs() < 1e-12, "{p}");
    }
    assert!(rows.len() < ANSWERABLE + 20, "{} rows", rows.len());
    let sweep = |labels: &str| {
        p.write("labels.csv", labels);
        p.sweep(["--labels", "labels.csv"])
            .env(key.0, key.1)
            .stderr_any("the grader's disagreement warning is compared in labels.rs")
            .run()
            .summary()
    };
    let agreeing = sweep(&label_as_graded(&sampled));
    let rec = &agreeing["recommendation"];
    assert_eq!(rec["certified"], true, "{rec}");
    assert_eq!(rec["procedure"]["labels"], rows.len(), "{rec}");
    let truly = sweep(&crate::labels::label_truly(&sampled));
    let rec = &truly["recommendation"];
    assert_eq!(rec["certified"], false, "{rec}");
    assert_eq!(rec["procedure"]["labels"], rows.len(), "{rec}");
    assert_eq!(
        truly["settings"]["min_score=0,k=1"]["false_refusal"], hidden,
        "every hidden refusal was drawn"
    );
}
