//! Models and parameters as sweep dimensions (`--chat`, `--temperature`), against real
//! `rageval mock-llm` processes on loopback: settings double, the server's own counters show
//! one call per distinct (profile, request), the temperature reaches the request body, and bad
//! profile names are refused before any work.

use serde_json::{json, Value};

use crate::http::{http_project, MockLlm, KEY_ENV};
use crate::support::{entries, stderr, Project};

/// A project whose `chat:` is `mock` at `url`, with chat profiles `fast` (another model name
/// on the same server) and `same` (the `chat:` section under another name).
fn profiled(url: &str) -> Project {
    let profile = |model: &str| {
        format!("    kind: openai\n    base_url: {url}\n    model: {model}\n    api_key_env: {KEY_ENV}\n")
    };
    let models = format!(
        "models:\n  fast:\n{}  same:\n{}",
        profile("mock-fast"),
        profile("mock")
    );
    http_project(url, false, &models)
}

fn sweep(p: &Project, args: &[&str]) -> Value {
    let mut all = vec!["sweep", "-q"];
    all.extend(args);
    let out = p.cmd(&all).env(KEY_ENV, "test-key").output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_str(&p.read("reports/latest/results.json")).unwrap()
}

fn distinct_prompts(doc: &Value) -> u64 {
    doc["summary"]["calls"]["distinct_prompts"]
        .as_u64()
        .unwrap()
}

#[test]
fn two_chat_profiles_double_the_settings_and_call_once_per_profile_and_request() {
    // The distinct prompts of one profile, from a plain sweep on a server of its own.
    let plain_server = MockLlm::start(&[]);
    let plain = sweep(&profiled(&plain_server.url), &["--no-cache"]);
    let one = distinct_prompts(&plain);
    assert!(one > 0);

    let server = MockLlm::start(&[]);
    let p = profiled(&server.url);
    let doc = sweep(&p, &["--no-cache", "--chat", "default,fast"]);
    let settings = entries(&p.read("reports/latest/results.json"), "settings");
    assert_eq!(settings.len(), 2 * 20);
    assert_eq!(
        settings[..2],
        [
            (
                "min_score=0.1,k=1".to_string(),
                json!({"min_score": 0.1, "k": 1, "order": "score", "format": "numbered", "rewrite": "none", "chat": "default"})
            ),
            (
                "min_score=0.1,k=1,chat=fast".to_string(),
                json!({"min_score": 0.1, "k": 1, "order": "score", "format": "numbered", "rewrite": "none", "chat": "fast"})
            ),
        ]
    );
    assert_eq!(
        doc["dimensions"],
        json!(["min_score", "k", "order", "format", "rewrite", "chat"])
    );
    // One call per distinct (profile, request), by the server's counters.
    let stats = server.stats();
    assert_eq!(
        stats["chat_by_model"],
        json!({"mock": one, "mock-fast": one}),
        "{stats}"
    );
    assert_eq!(distinct_prompts(&doc), 2 * one);
    // The `default` settings are the plain sweep's, run for run.
    let runs_of = |doc: &Value, setting: &str| -> Vec<Value> {
        doc["runs"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["setting"] == setting)
            .map(|r| json!([r["question"], r["call"], r["outcome"]]))
            .collect()
    };
    assert_eq!(
        runs_of(&doc, "min_score=0.3,k=4"),
        runs_of(&plain, "min_score=0.3,k=4")
    );
    assert_eq!(
        doc["summary"]["settings"]["min_score=0.3,k=4"]["answer"],
        plain["summary"]["settings"]["min_score=0.3,k=4"]["answer"]
    );

    // `same` is `chat:` under another name: its requests are the same calls, made once.
    let alias_server = MockLlm::start(&[]);
    let alias = profiled(&alias_server.url);
    let doc = sweep(&alias, &["--no-cache", "--chat", "default,same"]);
    assert_eq!(
        alias_server.stats()["chat_by_model"],
        json!({ "mock": one })
    );
    assert_eq!(distinct_prompts(&doc), one);
    assert_eq!(
        runs_of(&doc, "min_score=0.3,k=4,chat=same"),
        runs_of(&plain, "min_score=0.3,k=4")
    );
}

#[test]
fn temperatures_reach_the_request_and_each_is_its_own_call() {
    let server = MockLlm::start(&[]);
    let p = profiled(&server.url);
    // A plain sweep fills the cache at the configured temperature (0).
    let plain = sweep(&p, &[]);
    let one = distinct_prompts(&plain);
    assert_eq!(server.stats()["chat_by_temperature"], json!({ "0.0": one }));

    let doc = sweep(&p, &["--temperature", "0,0.7"]);
    let ids: Vec<String> = entries(&p.read("reports/latest/results.json"), "settings")
        .into_iter()
        .map(|(id, _)| id)
        .take(2)
        .collect();
    assert_eq!(
        ids,
        [
            "min_score=0.1,k=1,temperature=0",
            "min_score=0.1,k=1,temperature=0.7"
        ]
    );
    assert_eq!(
        doc["settings"]["min_score=0.1,k=1,temperature=0.7"]["temperature"],
        0.7
    );
    // Temperature 0 is the configured model: its calls came from the cache; only the
    // temperature 0.7 calls reached the server, each with its temperature in the body.
    assert_eq!(
        server.stats()["chat_by_temperature"],
        json!({"0.0": one, "0.7": one})
    );
    assert_eq!(distinct_prompts(&doc), 2 * one);
    assert_eq!(doc["summary"]["calls"]["cache_hits"].as_u64(), Some(one));
    // The config's sweep section may list them too.
    let config = p
        .read("rageval.yaml")
        .replace("sweep:\n", "sweep:\n  temperature: [0.7]\n  chat: fast\n");
    p.write("rageval.yaml", &config);
    let doc = sweep(&p, &[]);
    assert_eq!(
        doc["settings"]["min_score=0.1,k=1,chat=fast,temperature=0.7"],
        json!({"min_score": 0.1, "k": 1, "order": "score", "format": "numbered", "rewrite": "none", "chat": "fast", "temperature": 0.7})
    );
    assert_eq!(
        doc["identity"]["config"]["sweep"]["chat"], "fast",
        "the grid is part of the identity"
    );
}

#[test]
fn a_dry_run_prints_one_row_per_chat_profile_and_predicts_the_calls() {
    let server = MockLlm::start(&[]);
    let p = profiled(&server.url);
    let args = [
        "--chat",
        "default,same,fast",
        "--min-score",
        "0.2",
        "--k",
        "4",
    ];
    let mut dry = vec!["sweep", "--dry-run", "--output", "json"];
    dry.extend(args);
    let out = p.cmd(&dry).env(KEY_ENV, "test-key").output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = doc["dry_run"].as_array().unwrap();
    let pick = |field: &str| -> Vec<Value> { rows.iter().map(|r| r[field].clone()).collect() };
    assert_eq!(
        pick("profile"),
        [json!("default"), json!("same"), json!("fast")]
    );
    assert_eq!(
        pick("model"),
        [json!("mock"), json!("mock"), json!("mock-fast")]
    );
    assert_eq!(pick("runs"), [json!(26), json!(26), json!(26)]);
    // `same` shares every prompt with `default`: counted once, under `default`.
    assert_eq!(pick("calls"), [json!(23), json!(0), json!(23)]);
    assert_eq!(server.stats()["chat_requests"], 0);

    let doc = sweep(&p, &args);
    assert_eq!(server.stats()["chat_requests"], 46);
    assert_eq!(distinct_prompts(&doc), 46);

    let mut table = vec!["sweep", "--dry-run"];
    table.extend(args);
    let out = p.cmd(&table).env(KEY_ENV, "test-key").output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let names: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with('│') && !l.contains("chat model"))
        .map(|l| l.split('┆').next().unwrap().trim_matches(['│', ' ']))
        .collect();
    assert_eq!(names, ["default (mock)", "same (mock)", "fast (mock-fast)"]);
}

#[test]
fn unknown_profiles_and_bad_temperatures_are_refused_before_any_work() {
    let server = MockLlm::start(&[]);
    let p = profiled(&server.url);
    for (args, message) in [
        (
            &["--chat", "default,nope"][..],
            "error: invalid --chat: unknown chat profile `nope`; the config defines `default`, `fast`, `same`",
        ),
        (
            &["--chat", "fast,,same"][..],
            "error: invalid --chat: `fast,,same` has an empty item",
        ),
        (
            &["--temperature", "0,2.5"][..],
            "error: invalid --temperature: a temperature must be from 0 to 2, got `2.5`",
        ),
    ] {
        let mut all = vec!["sweep"];
        all.extend(args);
        let out = p.cmd(&all).env(KEY_ENV, "test-key").output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert_eq!(stderr(&out), format!("{message}\n"));
        assert!(!p.path().join("reports").exists(), "no report for {args:?}");
    }
    assert_eq!(server.stats()["chat_requests"], 0);
    assert_eq!(server.stats()["embedding_requests"], 0);
}

#[test]
fn shards_of_a_two_profile_sweep_with_repeats_merge_into_the_whole() {
    let server = MockLlm::start(&[]);
    let p = profiled(&server.url);
    crate::shards::whole_and_merged(
        &p,
        &[
            "--chat",
            "fast,default",
            "--temperature",
            "0,0.5",
            "--repeat",
            "2",
        ],
        2,
    );
    crate::shards::assert_same(&p);
    let merged: Value = serde_json::from_str(&p.read("merged/results.json")).unwrap();
    assert_eq!(merged["settings"].as_object().unwrap().len(), 20 * 2 * 2);
    assert_eq!(
        merged["dimensions"],
        json!([
            "min_score",
            "k",
            "order",
            "format",
            "rewrite",
            "chat",
            "temperature"
        ])
    );
}

#[test]
fn bad_profiles_in_the_config_name_file_line_and_field() {
    let p = Project::sample();
    for (yaml, message) in [
        (
            "models:\n  fast:\n    kind: openai\n    temperature: 3\n",
            "error: rageval.yaml:5: `models.fast.temperature`: must be between 0 and 2",
        ),
        (
            "models:\n  fast:\n    kind: openai\n    base_url: [ftp://x]\n",
            "error: rageval.yaml:5: `models.fast.base_url[0]`: `ftp://x` must start with http:// or https://",
        ),
        (
            "models:\n  a,b:\n    kind: mock\n",
            "error: rageval.yaml:4: `models.a,b`: `a,b` is not a profile name: use letters, digits, `_`, `-` and `.`",
        ),
    ] {
        p.write("rageval.yaml", &format!("evalsets: [evalsets/club.yaml]\n{yaml}"));
        let out = p.cmd(&["sweep"]).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{yaml}");
        assert_eq!(stderr(&out), format!("{message}\n"));
        assert!(!p.path().join("reports").exists());
    }
}
