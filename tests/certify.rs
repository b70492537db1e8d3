//! Certification of the recommendation (issue 19), end to end: the certified and uncertified
//! lines, the questions a set needs, the bootstrap and cross-validation figures, the gate's
//! `require_certified`, and bad input.

use serde_json::Value;

use crate::harness::Test;
use crate::support::Project;

/// A project whose questions a threshold separates cleanly: each answerable question names a
/// made-up word that only its own section holds, each unanswerable one a word no section holds.
/// With enough of both, the middle of the grid is certified.
pub(crate) fn separable(answerable: usize, unanswerable: usize) -> Project {
    let p = Project::empty();
    let mut doc = String::from("# Glossary\n\n");
    let mut set = String::from("corpus: kb\nanswerable:\n");
    for i in 0..answerable {
        doc.push_str(&format!(
            "## Term {i}\n\nThe word zorb{i}q names the colour of gate {i} in the old garden.\n\n"
        ));
        set.push_str(&format!(
            "  - id: a{i}\n    question: What does zorb{i}q name in the old garden?\n    expect:\n      sources: [\"glossary.md#Term {i}\"]\n"
        ));
    }
    set.push_str("unanswerable:\n");
    for j in 0..unanswerable {
        set.push_str(&format!(
            "  - id: u{j}\n    question: Who invented the kwelp{j}t engine?\n"
        ));
    }
    p.write("evalsets/kb/glossary.md", &doc);
    p.write("evalsets/set.yaml", &set);
    p.write("rageval.yaml", "evalsets: [evalsets/set.yaml]\n");
    p
}

#[test]
fn a_separable_set_of_enough_questions_is_certified_and_cross_validated() {
    let p = separable(30, 30);
    let out = p
        .rageval(["sweep", "--min-score", "0.1..0.5", "--k", "1,2", "--wide"])
        .stdout_contains("\nrecommended: min_score=0.4,k=1, certified at 95% by ordered tests over 10 settings: false refusals 0% [0–11], unwanted 0% [0–11], wrong answers 0% [0–11], 74.3 prompt tokens/question; upper bounds unwanted 13.6% (limit 20%), false refusals 13.6% (limit 50%); at most 5% of sweeps certify any setting that breaks a limit; the lowest weighted cost (0.004) of 8 certified settings\n")
        .stdout_contains("\nstability: min_score=0.4,k=1 chosen in 100% of 200 resampled question sets; certified at 95% by ordered tests in 100%\n")
        .stdout_contains("\ncross-validation (5 folds): held-out unwanted 0% [0–11] (0 of 30), false refusals 0% [0–11] (0 of 30); the folds chose min_score=0.4,k=1 (5), 5 of 5 certified at 95% by ordered tests\n")
        .stdout_lacks("to certify")
        .stdout_lacks("over all")
        .stdout_snapshot("certify__a_separable_set_of_enough_questions_is_certified_and_cross_validated")
        .run();
    let s = out.summary();
    let rec = &s["recommendation"];
    assert_eq!(rec["certified"], true, "{rec}");
    let id = rec["setting"].as_str().unwrap();
    assert_eq!(s["settings"][id]["certified"], true);
    // Ordered tests: two limits, two chains (k = 1, 2) each, so a chain's first test is at
    // 0.05 / 2 / 2; 0 of 30 at 0.0125 bounds the rate at 1 - 0.0125^(1/30).
    let bound = rec["bounds"][0]["upper_bound"].as_f64().unwrap();
    assert!((rec["bounds"][0]["level"].as_f64().unwrap() - 0.0125).abs() < 1e-15);
    assert!(
        (bound - (1.0 - 0.0125f64.powf(1.0 / 30.0))).abs() < 1e-12,
        "{bound}"
    );
    assert_eq!(rec["sequential"], false);
    // The procedure as facts, and in words written from them.
    let mut procedure = rec["procedure"].clone();
    let first = procedure["first_level"].take().as_f64().unwrap();
    assert!((first - 0.0125).abs() < 1e-15, "{first}");
    assert_eq!(
        procedure,
        serde_json::json!({"method": "ordered", "sequential": false, "families": 2, "chains": 2, "along": "min_score", "first_level": null})
    );
    assert!(
        rec["method"]
            .as_str()
            .unwrap()
            .starts_with("ordered family-wise tests: each of the 2 rate limits a family"),
        "{rec}"
    );
    // The gate names the procedure that certified the setting, not a plain split of the grid.
    p.write(
        "rageval.yaml",
        "evalsets: [evalsets/set.yaml]\ngate:\n  setting: min_score=0.4,k=1\n",
    );
    p.rageval(["gate", "--require-certified"])
        .stdout(concat!(
            "warning: no limits configured and no baseline: the gate checks only failed calls; set `gate.max_unwanted_answer_rate` and `gate.max_false_refusal_rate` (or pass `--max-unwanted-answer-rate` and `--max-false-refusal-rate`), see docs/ci.md\n",
            "gate: setting min_score=0.4,k=1 of reports/latest/results.json (60 questions)\n",
            "PASS  error_runs 0 <= limit 0\n",
            "PASS  certified certified at 95% by ordered tests over 10 settings\n",
            "gate: PASS (2 checks)\n",
        ))
        .run();
    assert_eq!(rec["cross_validation"]["folds"], 5);
    assert_eq!(rec["cross_validation"]["certified_folds"], 5);
    assert_eq!(rec["bootstrap"]["resamples"], 200);
    assert_eq!(rec["bootstrap"]["certified_share"], 1.0);
    // The pick column says so, and summary.csv has a column for it.
    let csv = p.read("reports/latest/summary.csv");
    assert!(
        csv.lines()
            .next()
            .unwrap()
            .ends_with(",recommended,certified,certification"),
        "{csv}"
    );
    assert!(
        csv.lines()
            .any(|l| l.ends_with(",true,true,ordered tests at 95%")),
        "{csv}"
    );
    let html = p.read("reports/latest/report.html");
    for section in [
        "id=\"certification\"",
        "id=\"stability\"",
        "id=\"cross-validation\"",
    ] {
        assert!(html.contains(section), "{section} in report.html");
    }
    let md = p.read("reports/latest/report.md");
    assert!(md.contains("| **certified** |"), "{md}");
    assert!(md.contains("\ncross-validation (5 folds): "), "{md}");
}

#[test]
fn too_few_questions_say_what_it_takes_and_the_gate_can_require_certification() {
    // Ten unanswerable questions cannot show unwanted ≤ 20%: the unwanted chain of k = 1 starts
    // at minScore 0.5 at level 0.05 / 2 / 2, where 0 of 10 bounds the rate at 35.5%, and stops
    // there; with none answered it takes 20 (0.8^20 ≤ 0.0125 < 0.8^19).
    let p = separable(30, 10);
    let line = "to certify min_score=0.4,k=1 at 95% by ordered tests: unwanted 0 of 10 (bound 35.5% > 20%; its chain stopped at min_score=0.5,k=1) needs at least 20 unanswerable questions with none answered (or 30 with at most one); adding questions and re-sweeping until certified breaks this promise unless `recommend.sequential: true`";
    p.rageval(["sweep", "--min-score", "0.1..0.5", "--k", "1,2", "--wide"])
        .stdout_contains("\nrecommended: min_score=0.4,k=1 (best, not certified at 95% by ordered tests): ")
        .stdout_contains(format!("\n{line}\n"))
        .stdout_contains("\nstability: min_score=0.4,k=1 chosen in 100% of 200 resampled question sets; certified at 95% by ordered tests in 0%\n")
        .stdout_contains("best, not certified │")
        .stdout_snapshot(
            "certify__too_few_questions_say_what_it_takes_and_the_gate_can_require_certification",
        )
        .run();
    // The gate holds the uncertified setting to its limits as before, unless told otherwise.
    // What it prints before its verdict here: no limits, one check of failed calls.
    let head = concat!(
        "warning: no limits configured and no baseline: the gate checks only failed calls; set `gate.max_unwanted_answer_rate` and `gate.max_false_refusal_rate` (or pass `--max-unwanted-answer-rate` and `--max-false-refusal-rate`), see docs/ci.md\n",
        "gate: setting min_score=0.4,k=1 of reports/latest/results.json (40 questions)\n",
        "PASS  error_runs 0 <= limit 0\n",
    );
    // The same failed check whether the flag or the config asks for certification.
    let uncertified =
        format!("{head}FAIL  certified not certified: {line}\ngate: FAIL (1 of 2 checks failed)\n");
    p.rageval(["gate"])
        .stdout(format!("{head}gate: PASS (1 check)\n"))
        .run();
    let out = p
        .rageval(["gate", "--require-certified"])
        .status(1)
        .stdout_contains(format!("not certified: {line}"))
        .stdout(&uncertified)
        .run();
    // results.json keeps the sentences, written from the facts beside them.
    let rec = &out.summary()["recommendation"];
    assert_eq!(rec["needed"], line);
    let b = &rec["bounds"][0];
    assert_eq!(
        (&b["failures"], &b["questions"], &b["stopped_at"]),
        (
            &serde_json::json!(0),
            &serde_json::json!(10),
            &serde_json::json!("min_score=0.5,k=1")
        )
    );
    assert_eq!(
        (
            &b["questions_needed_with_none"],
            &b["questions_needed_with_one"]
        ),
        (&serde_json::json!(20), &serde_json::json!(30))
    );
    p.write(
        "rageval.yaml",
        "evalsets: [evalsets/set.yaml]\ngate:\n  require_certified: true\n",
    );
    p.rageval(["gate"]).status(1).stdout(&uncertified).run();
    // Confidence 0: the measured choice, nothing certified, no bound.
    p.write(
        "rageval.yaml",
        "evalsets: [evalsets/set.yaml]\nrecommend:\n  confidence: 0\n",
    );
    let out = p
        .rageval(["sweep", "--min-score", "0.1..0.5", "--k", "1,2", "--wide"])
        .stdout_contains("\nrecommended: min_score=0.4,k=1: ")
        .stdout_lacks("certif")
        .stdout_snapshot(
            "certify__too_few_questions_say_what_it_takes_and_the_gate_can_require_certification_2",
        )
        .run();
    let rec = &out.summary()["recommendation"];
    assert_eq!(
        (&rec["certified"], &rec["bounds"]),
        (&Value::Bool(false), &serde_json::json!([]))
    );
}

#[test]
fn the_sequential_mode_and_bonferroni_are_options() {
    let p = separable(30, 30);
    let out = p
        .rageval([
            "sweep",
            "--min-score",
            "0.1..0.5",
            "--k",
            "1,2",
            "--wide",
            "--sequential",
        ])
        .stdout_contains("\nrecommended: min_score=0.4,k=1, certified at 95% by ordered anytime-valid tests over 10 settings: ")
        .stdout_contains("; upper bounds unwanted 18.5% (limit 20%), false refusals 18.5% (limit 50%); at most 5% of sweeps certify any setting that breaks a limit, at whatever number of questions they stop; ")
        .stdout_contains("; certified at 95% by ordered anytime-valid tests in 100%\n")
        .stdout_snapshot("certify__the_sequential_mode_and_bonferroni_are_options")
        .run();
    let rec = &out.summary()["recommendation"];
    assert_eq!(
        (&rec["sequential"], &rec["certified"]),
        (&Value::Bool(true), &Value::Bool(true))
    );
    assert!(
        rec["method"].as_str().unwrap().contains("anytime-valid"),
        "{rec}"
    );
    p.write(
        "rageval.yaml",
        "evalsets: [evalsets/set.yaml]\nrecommend:\n  method: bonferroni\n",
    );
    let out = p
        .rageval(["sweep", "--min-score", "0.1..0.5", "--k", "1,2", "--wide"])
        .stdout_contains(
            "\nrecommended: min_score=0.4,k=1, certified at 95% by Bonferroni over 10 settings: ",
        )
        .stdout_snapshot("certify__the_sequential_mode_and_bonferroni_are_options_2")
        .run();
    let rec = &out.summary()["recommendation"];
    let mut procedure = rec["procedure"].clone();
    let first = procedure["first_level"].take().as_f64().unwrap();
    assert!((first - 0.005).abs() < 1e-15, "{first}");
    assert_eq!(
        procedure,
        serde_json::json!({"method": "bonferroni", "sequential": false, "families": 2, "chains": null, "along": null, "first_level": null})
    );
    assert!(
        rec["method"]
            .as_str()
            .unwrap()
            .starts_with("Bonferroni: exact binomial"),
        "{rec}"
    );
    // 0 of 30 at 0.05 / 10.
    assert!((rec["bounds"][0]["level"].as_f64().unwrap() - 0.005).abs() < 1e-15);
}

#[test]
fn validate_says_what_a_set_of_its_size_can_certify_and_plans_the_questions() {
    // The sample's grid: minScore 0.1..0.5 x k 1, 2, 4, 8, so 4 chains along minScore and two
    // rate limits: each chain starts at 0.05 / 2 / 4. At a true rate of half the limit, 145
    // unanswerable questions give an 80% chance of certifying unwanted ≤ 20% there, and 23
    // with none answered (0.8^23 ≤ 0.00625 < 0.8^22).
    Test::new()
        .args(["validate"])
        .stdout(concat!(
            "ok    evalsets/club.yaml: 17 answerable, 9 unanswerable; corpus `evalsets/club` (23 chunks)\n",
            "      at 95%, 9 unanswerable and 17 answerable questions can certify at best unwanted ≤ 28.3% and false refusals ≤ 16.2% for one setting, unwanted ≤ 43.1% and false refusals ≤ 25.8% at the first setting of each of the 4 chains along min_score of the configured grid\n",
            "      plan for a chance of 80% at 95% by ordered tests (level 0.625%, at the first setting of each of the 4 chains along min_score of the configured grid), if each true rate is half its limit: unwanted 10% needs 145 unanswerable questions (this set has 9), or 23 with none answered; false refusals 25% needs 44 answerable questions (this set has 17), or 8 with none refused\n",
        ))
        .stderr("")
        .run();
    // Anytime-valid tests under Bonferroni ask for more, and say so.
    Test::new()
        .write(
            "rageval.yaml",
            "evalsets: [evalsets/club.yaml]\nsweep:\n  min_score: \"0.1..0.5\"\n  k: \"1,2,4,8\"\nrecommend:\n  method: bonferroni\n  sequential: true\n  max_wrong_answer_rate: 0.1\n",
        )
        .args(["validate"])
        .stdout(concat!(
            "ok    evalsets/club.yaml: 17 answerable, 9 unanswerable; corpus `evalsets/club` (23 chunks)\n",
            "      at 95% (anytime-valid), 9 unanswerable and 17 answerable questions can certify at best unwanted ≤ 38.3% and false refusals ≤ 22.9% for one setting, unwanted ≤ 57.7% and false refusals ≤ 37.1% over the 20 settings of the configured grid\n",
            "      plan for a chance of 80% at 95% by Bonferroni, anytime-valid tests (level 0.25%, over the 20 settings of the configured grid), if each true rate is half its limit: unwanted 10% needs 281 unanswerable questions (this set has 9), or 36 with none answered; false refusals 25% needs 80 answerable questions (this set has 17), or 12 with none refused; wrong answers 5% needs 617 answerable questions (this set has 17), or 77 with none answered wrong\n",
        ))
        .stderr("")
        .run();
}

#[test]
fn bad_certification_input_names_the_field() {
    for (yaml, message) in [
        (
            "confidence: 1",
            "rageval.yaml:3: `recommend.confidence`: must be a confidence from 0 to below 1 (0.95 is 95%; 0 certifies nothing), got 1",
        ),
        (
            "confidence: -0.1",
            "rageval.yaml:3: `recommend.confidence`: must be a confidence from 0 to below 1 (0.95 is 95%; 0 certifies nothing), got -0.1",
        ),
        (
            "confidence: high",
            "rageval.yaml:3:15: `recommend.confidence`: expected a number, found the string \"high\"",
        ),
        (
            "folds: 1",
            "rageval.yaml:3: `recommend.folds`: must be 0 (none) or at least 2 folds, got 1",
        ),
        (
            "resamples: 1000000",
            "rageval.yaml:3: `recommend.resamples`: must be from 0 to 100000 resamples, got 1000000",
        ),
        (
            "method: holm",
            "rageval.yaml:3:11: `recommend.method`: unknown variant `holm`, expected `ordered` or `bonferroni`",
        ),
        (
            "power: 1",
            "rageval.yaml:3: `recommend.power`: must be a chance above 0 and below 1 (0.8 is 80%), got 1",
        ),
        (
            "power: 0",
            "rageval.yaml:3: `recommend.power`: must be a chance above 0 and below 1 (0.8 is 80%), got 0",
        ),
        (
            "sequential: maybe",
            "rageval.yaml:3:15: `recommend.sequential`: expected true or false, found the string \"maybe\"",
        ),
    ] {
        Test::new()
            .write(
                "rageval.yaml",
                &format!("evalsets: [evalsets/club.yaml]\nrecommend:\n  {yaml}\n"),
            )
            .args(["sweep"])
            .fails(message)
            .absent("reports/latest/results.json")
            .run();
    }
    Test::sweep()
        .args(["--folds", "1"])
        .fails("invalid --folds: must be 0 (none) or at least 2 folds, got 1")
        .run();
    // The sample has 9 unanswerable questions: 10 folds cannot each hold one out.
    Test::sweep()
        .args(["--folds", "10"])
        .fails("invalid --folds 10: more folds than the 9 unanswerable questions of the sets (every fold holds out questions of each class); use at most 9 folds, or 0 for none")
        .absent("reports/latest/results.json")
        .run();
    // Three folds fit, and say so.
    Test::sweep()
        .args(["--folds", "3", "--wide"])
        .stdout_contains("\ncross-validation (3 folds): held-out unwanted ")
        .stdout_snapshot("certify__bad_certification_input_names_the_field")
        .run();
}

/// A confidence that is neither 0 nor 1 never reads as `0%` or `100%` in the certificate's
/// line or in report.md.
#[test]
fn a_confidence_near_1_or_near_0_is_printed_apart_from_the_bounds() {
    for (confidence, shown) in [
        ("0.9999999999999999", "99.99999999999999%"),
        ("1e-300", "1.0e-298%"),
    ] {
        let p = Project::sample();
        p.write(
            "rageval.yaml",
            &format!("evalsets: [evalsets/club.yaml]\nrecommend:\n  confidence: {confidence}\n"),
        );
        Test::at(&p)
            .args(["sweep", "--min-score", "0.1..0.5", "--k", "1,2"])
            .stdout_any("the table is the sample sweep's; this test reads the certificate's words")
            .stdout_contains(format!(" at {shown} by ordered tests"))
            .stdout_lacks(" at 100% by")
            .stdout_lacks(" at 0% by")
            .run();
        let md = p.read("reports/latest/report.md");
        assert!(
            md.contains(&format!(" at {shown} by ordered tests")),
            "{md}"
        );
    }
}
