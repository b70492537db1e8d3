//! `sweep --repeat N` against `mock-llm --vary-per-repeat`, which refuses every request whose
//! `seed` (the repeat index) is odd: the flip rates are known exactly from repeat 0's outcomes.

use serde_json::Value;

use crate::harness::Outcome;
use crate::http::{http_project, keyed, MockLlm};
use crate::shards::{assert_same, untimed, whole_and_merged};
use crate::support::Project;

/// The outcome repeat 1 (seed 1, refused by the server) gives a run that called the model.
fn refused(outcome: Outcome) -> Outcome {
    match outcome {
        Outcome::Answer | Outcome::FalseRefusal => Outcome::FalseRefusal,
        _ => Outcome::ModelRefusal,
    }
}

#[test]
fn repeat_three_against_a_mock_that_varies_per_repeat_gives_the_expected_flip_rates() {
    let server = MockLlm::start(&["--vary-per-repeat"]);
    let p = http_project(&server.url, false, "");
    let dry = |repeat: &str, snapshot: &str| -> u64 {
        let doc = keyed(
            &p,
            &["sweep", "--dry-run", "--repeat", repeat, "--output", "json"],
        )
        .stdout_snapshot(snapshot)
        .run()
        .stdout_json();
        doc["dry_run"][0]["calls"].as_u64().unwrap()
    };
    let (once, thrice) = (
        dry(
            "1",
            "repeat__repeat_three_against_a_mock_that_varies_per_repeat_gives_the_expected_flip_rates",
        ),
        dry(
            "3",
            "repeat__repeat_three_against_a_mock_that_varies_per_repeat_gives_the_expected_flip_rates_2",
        ),
    );
    assert_eq!(thrice, 3 * once, "the dry run predicts N x the calls");
    let out = keyed(&p, &["sweep", "-q", "--repeat", "3"]).run();
    assert_eq!(
        server.stats()["chat_requests"].as_u64(),
        Some(thrice),
        "every distinct call made three times, as predicted"
    );

    // The repeated record is still valid against the committed schema.
    let doc: Value = serde_json::from_str(&p.read("reports/latest/results.json")).unwrap();
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(crate::support::repo().join("docs/results.schema.json")).unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).expect("a valid JSON Schema");
    let errors: Vec<String> = validator
        .iter_errors(&doc)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    assert_eq!(errors, Vec::<String>::new());
    let record = out.results();
    assert_eq!(
        serde_json::json!(record.identity.identity.config.sweep)["repeat"],
        3
    );
    let calls = &record.calls;
    let repeats_of_calls: Vec<u32> = calls.values().map(|c| c.repeat).collect();
    for r in 0..3 {
        assert_eq!(
            repeats_of_calls.iter().filter(|&&x| x == r).count() as u64,
            once,
            "repeat {r} made each distinct call once"
        );
    }
    let questions = record.questions.len();
    let settings = record.settings.len();
    let mut flips_per_setting = std::collections::HashMap::<String, usize>::new();
    let mut flips_per_question = std::collections::HashMap::<String, usize>::new();
    for run in &record.runs {
        let outcome = run.verdict.outcome;
        let expected = if run.call.is_none() {
            vec![outcome, outcome]
        } else {
            vec![refused(outcome), outcome]
        };
        let got: Vec<Outcome> = run.repeats.iter().map(|r| r.outcome).collect();
        assert_eq!(got, expected, "{run:?}");
        // Each repeat names its own call, made with its own seed.
        for (i, r) in run.repeats.iter().enumerate() {
            assert_eq!(
                r.call.as_ref().map(|c| calls[c].repeat),
                run.call.as_ref().map(|_| i as u32 + 1),
                "{run:?}"
            );
        }
        let flips = usize::from(expected[0] != outcome);
        *flips_per_setting.entry(run.setting.clone()).or_default() += flips;
        *flips_per_question.entry(run.question.clone()).or_default() += flips;
    }
    let summary = out.summary();
    let mut total = 0;
    for (id, s) in summary["settings"].as_object().unwrap() {
        let st = &s["stability"];
        let flips = flips_per_setting[id];
        total += flips;
        assert_eq!(st["repeats"], 3);
        assert_eq!(st["runs"].as_u64(), Some(3 * questions as u64));
        assert_eq!(
            st["flip_rate"].as_f64(),
            Some(flips as f64 / (3 * questions) as f64),
            "{id}"
        );
        assert_eq!(st["flipped_questions"].as_u64(), Some(flips as u64), "{id}");
    }
    assert!(total > 0, "some answers flipped to refusals");
    let rates = summary["flip_rates"].as_object().unwrap();
    assert_eq!(rates.len(), questions);
    for (id, rate) in rates {
        assert_eq!(
            rate.as_f64(),
            Some(flips_per_question[id] as f64 / (3 * settings) as f64),
            "{id}"
        );
    }

    // The gate can demand stability: a limit below the recommended setting's flip rate fails.
    let recommended = summary["recommended"].as_str().unwrap();
    let flip = summary["settings"][recommended]["stability"]["flip_rate"]
        .as_f64()
        .unwrap();
    assert!(flip > 0.0, "the recommended setting answers something");
    let gate = |limit: f64| {
        p.rageval([
            "gate",
            "reports/latest/results.json",
            "--max-flip-rate",
            &limit.to_string(),
        ])
    };
    let failed = gate(flip / 2.0)
        .status(1)
        .stdout(concat!(
            "gate: setting min_score=0.3,k=1 of reports/latest/results.json (26 questions)\n",
            "PASS  error_runs 0 <= limit 0\n",
            "FAIL  flip_rate 0.128 > limit 0.064\n",
            "gate: FAIL (1 of 2 checks failed)\n",
        ))
        .run();
    let line = format!("{flip:.3} > limit {:.3}", flip / 2.0);
    assert!(
        failed
            .stdout
            .lines()
            .any(|l| l.contains("flip_rate") && l.contains(&line)),
        "{}",
        failed.stdout
    );
    gate(flip)
        .stdout(concat!(
            "gate: setting min_score=0.3,k=1 of reports/latest/results.json (26 questions)\n",
            "PASS  error_runs 0 <= limit 0\n",
            "PASS  flip_rate 0.128 <= limit 0.128\n",
            "gate: PASS (2 checks)\n",
        ))
        .run();
}

#[test]
fn repeated_shards_merged_equal_the_whole_repeated_sweep() {
    let server = MockLlm::start(&["--vary-per-repeat"]);
    let p = http_project(&server.url, false, "");
    whole_and_merged(&p, &["--repeat", "3"], 2);
    assert_same(&p);
    let whole = untimed(&p, "whole").0;
    assert!(whole["summary"]["flip_rates"].is_object(), "{whole}");
}

#[test]
fn repeat_one_leaves_every_output_byte_identical() {
    let p = Project::sample();
    for (dir, extra) in [("plain", None), ("once", Some("1"))] {
        let repeat = extra.map(|n| ["--repeat", n]);
        p.sweep(["--no-cache", "--out", dir])
            .args(repeat.iter().flatten())
            .run();
    }
    for file in ["report.md", "report.html"] {
        assert_eq!(
            p.read(&format!("plain/{file}")),
            p.read(&format!("once/{file}")),
            "{file}"
        );
    }
    assert_eq!(untimed(&p, "plain"), untimed(&p, "once"));
    let text = p.read("once/results.json");
    for absent in ["\"repeat", "\"stability\"", "\"flip_rates\"", "\"seed\""] {
        assert!(!text.contains(absent), "{absent} in results.json");
    }
}

#[test]
fn a_repeat_of_zero_is_refused_with_one_line() {
    let p = Project::sample();
    p.rageval(["sweep", "--repeat", "0"])
        .fails("invalid --repeat: must be from 1 to 1000")
        .absent("reports/latest")
        .run();
}
