//! `sweep --dry-run` against the HTTP mock: no chat call by the server's own counters, and the
//! calls it predicts are the calls the real sweep then makes.

use serde_json::Value;

use crate::http::{http_project, keyed, MockLlm};

/// The dry run's plan as JSON; its whole text is the snapshot `snapshot`.
fn dry(p: &crate::support::Project, snapshot: &str) -> Value {
    let doc = keyed(p, &["sweep", "--dry-run", "--output", "json"])
        .stdout_snapshot(snapshot)
        .run()
        .stdout_json();
    assert_eq!(doc["dry_run"].as_array().unwrap().len(), 1, "{doc}");
    doc["dry_run"][0].clone()
}

#[test]
fn a_dry_run_makes_no_chat_call_and_predicts_the_sweeps_calls() {
    let server = MockLlm::start(&[]);
    let p = http_project(&server.url, true, "");
    let plan = dry(
        &p,
        "dry_run__a_dry_run_makes_no_chat_call_and_predicts_the_sweeps_calls",
    );
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
    let out = keyed(&p, &["sweep", "-q"]).run();
    assert_eq!(server.stats()["chat_requests"].as_u64(), Some(predicted));
    let early = out
        .results()
        .runs
        .iter()
        .filter(|r| r.call.is_none())
        .count();
    assert_eq!(plan["early_refusals"].as_u64(), Some(early as u64));

    // Now every prompt is cached: nothing left to call, nothing called.
    let again = dry(
        &p,
        "dry_run__a_dry_run_makes_no_chat_call_and_predicts_the_sweeps_calls_2",
    );
    assert_eq!(again["cached_prompts"].as_u64(), Some(predicted));
    assert_eq!(again["calls"], 0);
    assert_eq!(again["prompt_tokens"], 0);
    assert_eq!(server.stats()["chat_requests"].as_u64(), Some(predicted));
}

#[test]
fn the_dry_run_table_says_what_was_and_was_not_done() {
    // 7270 estimated prompt tokens x 0.15 EUR per million.
    crate::harness::Test::new()
        .write(
            "rageval.yaml",
            "pricing:\n  prompt_per_million: 0.15\n  currency: EUR\n",
        )
        .args(["sweep", "--dry-run"])
        .args(crate::support::PRODUCTION)
        .stdout(
            "dry run: no chat call was made and no report written; the corpus and 26 question texts were embedded to plan the prompts.
┌────────────┬──────┬────────────────┬──────────────────┬────────────────┬───────────────────┬───────────────┬──────────────────────┬────────────────────┐
│ chat model ┆ runs ┆ early refusals ┆ distinct prompts ┆ cached prompts ┆ rewrites (cached) ┆ calls to make ┆ prompt tokens (est.) ┆ prompt cost (est.) │
╞════════════╪══════╪════════════════╪══════════════════╪════════════════╪═══════════════════╪═══════════════╪══════════════════════╪════════════════════╡
│ mock       ┆   26 ┆              3 ┆               23 ┆              0 ┆             0 (0) ┆            23 ┆                 7270 ┆         0.0011 EUR │
└────────────┴──────┴────────────────┴──────────────────┴────────────────┴───────────────────┴───────────────┴──────────────────────┴────────────────────┘
prompt tokens are estimated at four characters a token; completions are not known before the calls, so the cost counts prompt tokens only.
",
        )
        .absent("reports/latest")
        .run();
}

/// With `chat.batch: true` the dry run prices the calls at the batch price, as `--batch-out`
/// and an adaptive sweep's budget do, and says so; everything else is the live plan's.
#[test]
fn a_dry_run_prices_batched_calls_at_the_batch_price() {
    let server = MockLlm::start(&[]);
    let priced = "pricing:\n  prompt_per_million: 1000\n  batch_discount: 0.25\n";
    let run = |batch: &str| {
        let p = http_project(&server.url, false, batch);
        p.write("rageval.yaml", &(p.read("rageval.yaml") + priced));
        let json = keyed(&p, &["sweep", "--dry-run", "--output", "json"])
            .stdout_any("the plan is compared with the live-priced one's below")
            .run()
            .stdout_json();
        let table = keyed(&p, &["sweep", "--dry-run"])
            .stdout_any("the table is compared with the live-priced one's below")
            .run()
            .stdout;
        (json["dry_run"][0].clone(), table)
    };
    let (live, live_table) = run("");
    let (batch, batch_table) = run("  batch: true\n");
    let cost = |row: &Value| row["prompt_cost"].as_f64().unwrap();
    assert!(cost(&live) > 0.0);
    assert_eq!(cost(&batch), cost(&live) * 0.75);
    let mut same = batch.clone();
    same["prompt_cost"] = live["prompt_cost"].clone();
    assert_eq!(same, live, "only the cost differs");
    let shown = |c: f64| format!("{c:.4} USD");
    assert_eq!(
        batch_table,
        live_table.replace(&shown(cost(&live)), &shown(cost(&batch)))
            + "the calls of `chat` go through batches: their cost is at the batch price (25% off).\n"
    );
    assert_eq!(server.stats()["chat_requests"], 0);
}
