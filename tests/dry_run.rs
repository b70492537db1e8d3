//! `sweep --dry-run` against the HTTP mock: no chat call by the server's own counters, and the
//! calls it predicts are the calls the real sweep then makes.

use serde_json::Value;

use crate::http::{http_project, MockLlm, KEY_ENV};
use crate::support::{stderr, stdout};

fn dry(p: &crate::support::Project) -> Value {
    let out = p
        .cmd(&["sweep", "--dry-run", "--output", "json"])
        .env(KEY_ENV, "test-key")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("stdout is one JSON document");
    assert_eq!(doc["dry_run"].as_array().unwrap().len(), 1, "{doc}");
    doc["dry_run"][0].clone()
}

#[test]
fn a_dry_run_makes_no_chat_call_and_predicts_the_sweeps_calls() {
    let server = MockLlm::start(&[]);
    let p = http_project(&server.url, true, "");
    let plan = dry(&p);
    let stats = server.stats();
    assert_eq!(stats["chat_requests"], 0, "no chat call: {stats}");
    assert!(
        stats["embedding_requests"].as_u64().unwrap() > 0,
        "embeddings are allowed (and said so): {stats}"
    );
    assert!(
        !p.path().join("reports/latest").exists(),
        "a dry run writes no report"
    );
    assert_eq!(plan["model"], "mock");
    assert_eq!(plan["runs"], 26 * 20);
    assert_eq!(plan["cached_prompts"], 0);
    let predicted = plan["calls"].as_u64().unwrap();
    assert_eq!(plan["distinct_prompts"].as_u64(), Some(predicted));
    assert!(plan["prompt_tokens"].as_u64().unwrap() > 0);

    // The real sweep makes exactly the predicted calls, and refuses the predicted runs early.
    let out = p
        .cmd(&["sweep", "-q"])
        .env(KEY_ENV, "test-key")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(server.stats()["chat_requests"].as_u64(), Some(predicted));
    let record: Value = serde_json::from_str(&p.read("reports/latest/results.json")).unwrap();
    let early = record["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["call"].is_null())
        .count();
    assert_eq!(plan["early_refusals"].as_u64(), Some(early as u64));

    // Now every prompt is cached: nothing left to call, nothing called.
    let again = dry(&p);
    assert_eq!(again["cached_prompts"].as_u64(), Some(predicted));
    assert_eq!(again["calls"], 0);
    assert_eq!(again["prompt_tokens"], 0);
    assert_eq!(server.stats()["chat_requests"].as_u64(), Some(predicted));
}

#[test]
fn the_dry_run_table_says_what_was_and_was_not_done() {
    let p = crate::support::Project::sample();
    p.write(
        "rageval.yaml",
        "pricing:\n  prompt_per_million: 0.15\n  currency: EUR\n",
    );
    let out = p
        .cmd(&[
            "sweep",
            "--dry-run",
            "--evalset",
            "evalsets/club.yaml",
            "--min-score",
            "0.2",
            "--k",
            "4",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    // 7270 estimated prompt tokens x 0.15 EUR per million.
    assert_eq!(
        stdout(&out),
        "dry run: no chat call was made and no report written; the corpus and 26 question texts were embedded to plan the prompts.
┌────────────┬──────┬────────────────┬──────────────────┬────────────────┬───────────────────┬───────────────┬──────────────────────┬────────────────────┐
│ chat model ┆ runs ┆ early refusals ┆ distinct prompts ┆ cached prompts ┆ rewrites (cached) ┆ calls to make ┆ prompt tokens (est.) ┆ prompt cost (est.) │
╞════════════╪══════╪════════════════╪══════════════════╪════════════════╪═══════════════════╪═══════════════╪══════════════════════╪════════════════════╡
│ mock       ┆   26 ┆              3 ┆               23 ┆              0 ┆             0 (0) ┆            23 ┆                 7270 ┆         0.0011 EUR │
└────────────┴──────┴────────────────┴──────────────────┴────────────────┴───────────────────┴───────────────┴──────────────────────┴────────────────────┘
prompt tokens are estimated at four characters a token; completions are not known before the calls, so the cost counts prompt tokens only.
"
    );
    assert!(!p.path().join("reports/latest").exists());
}
