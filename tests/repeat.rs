//! `sweep --repeat N` against `mock-llm --vary-per-repeat`, which refuses every request whose
//! `seed` (the repeat index) is odd: the flip rates are known exactly from repeat 0's outcomes.

use serde_json::Value;

use crate::http::{http_project, MockLlm, KEY_ENV};
use crate::shards::{assert_same, untimed, whole_and_merged};
use crate::support::{stderr, stdout, Project};

/// The outcome repeat 1 (seed 1, refused by the server) gives a run that called the model.
fn refused(outcome: &str) -> &'static str {
    match outcome {
        "answer" | "false_refusal" => "false_refusal",
        _ => "model_refusal",
    }
}

#[test]
fn repeat_three_against_a_mock_that_varies_per_repeat_gives_the_expected_flip_rates() {
    let server = MockLlm::start(&["--vary-per-repeat"]);
    let p = http_project(&server.url, false, "");
    let sweep = |args: &[&str]| {
        let out = p.cmd(args).env(KEY_ENV, "test-key").output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        out
    };
    let dry = |repeat: &str| -> u64 {
        let out = sweep(&["sweep", "--dry-run", "--repeat", repeat, "--output", "json"]);
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        doc["dry_run"][0]["calls"].as_u64().unwrap()
    };
    let (once, thrice) = (dry("1"), dry("3"));
    assert_eq!(thrice, 3 * once, "the dry run predicts N x the calls");
    sweep(&["sweep", "-q", "--repeat", "3"]);
    assert_eq!(
        server.stats()["chat_requests"].as_u64(),
        Some(thrice),
        "every distinct call made three times, as predicted"
    );

    let doc: Value = serde_json::from_str(&p.read("reports/latest/results.json")).unwrap();
    // The repeated record is still valid against the committed schema.
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
    assert_eq!(doc["identity"]["config"]["sweep"]["repeat"], 3);
    let calls = doc["calls"].as_object().unwrap();
    let repeats_of_calls: Vec<u64> = calls
        .values()
        .map(|c| c["repeat"].as_u64().unwrap_or(0))
        .collect();
    for r in 0..3 {
        assert_eq!(
            repeats_of_calls.iter().filter(|&&x| x == r).count() as u64,
            once,
            "repeat {r} made each distinct call once"
        );
    }
    let questions = doc["questions"].as_object().unwrap().len();
    let settings = doc["settings"].as_object().unwrap().len();
    let mut flips_per_setting = std::collections::HashMap::<String, usize>::new();
    let mut flips_per_question = std::collections::HashMap::<String, usize>::new();
    for run in doc["runs"].as_array().unwrap() {
        let outcome = run["outcome"].as_str().unwrap();
        let repeats: Vec<(&str, Option<&str>)> = run["repeats"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (r["outcome"].as_str().unwrap(), r["call"].as_str()))
            .collect();
        let expected: Vec<&str> = if run["call"].is_null() {
            vec![outcome, outcome]
        } else {
            vec![refused(outcome), outcome]
        };
        let got: Vec<&str> = repeats.iter().map(|r| r.0).collect();
        assert_eq!(got, expected, "{run}");
        // Each repeat names its own call, made with its own seed.
        for (i, (_, call)) in repeats.iter().enumerate() {
            assert_eq!(
                call.map(|c| calls[c]["repeat"].as_u64().unwrap()),
                run["call"].as_str().map(|_| i as u64 + 1),
                "{run}"
            );
        }
        let flips = usize::from(expected[0] != outcome);
        *flips_per_setting
            .entry(run["setting"].as_str().unwrap().into())
            .or_default() += flips;
        *flips_per_question
            .entry(run["question"].as_str().unwrap().into())
            .or_default() += flips;
    }
    let summary = &doc["summary"];
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
        p.cmd(&[
            "gate",
            "reports/latest/results.json",
            "--max-flip-rate",
            &limit.to_string(),
        ])
        .output()
        .unwrap()
    };
    let failed = gate(flip / 2.0);
    assert_eq!(failed.status.code(), Some(1), "{}", stdout(&failed));
    let line = format!("{flip:.3} > limit {:.3}", flip / 2.0);
    assert!(
        stdout(&failed)
            .lines()
            .any(|l| l.contains("flip_rate") && l.contains(&line)),
        "{}",
        stdout(&failed)
    );
    let passed = gate(flip);
    assert_eq!(passed.status.code(), Some(0), "{}", stdout(&passed));
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
        let mut args = vec!["sweep", "-q", "--no-cache", "--out", dir];
        if let Some(n) = extra {
            args.extend(["--repeat", n]);
        }
        let out = p.cmd(&args).output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
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
    let out = p.cmd(&["sweep", "--repeat", "0"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr(&out).trim_end(),
        "error: invalid --repeat: must be from 1 to 1000"
    );
    assert!(!p.path().join("reports/latest").exists());
}
