//! Models and parameters as sweep dimensions (`--chat`, `--temperature`), against real
//! `rageval mock-llm` processes on loopback: settings double, the server's own counters show
//! one call per distinct (profile, request), the temperature reaches the request body, and bad
//! profile names are refused before any work.

use serde_json::{json, Value};

use crate::harness::{results, summary, Output, Record, Test};
use crate::http::{http_project, MockLlm, KEY_ENV};
use crate::support::Project;

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

/// `rageval ARGS` with the server's key.
fn rageval<'p>(p: &'p Project, args: &[&str]) -> Test<'p> {
    crate::http::keyed(p, args)
}

/// `rageval sweep -q ARGS` with the server's key.
fn sweep<'p>(p: &'p Project, args: &[&str]) -> Output<'p> {
    p.sweep(args).env(KEY_ENV, "test-key").run()
}

fn distinct_prompts(out: &Output) -> u64 {
    out.summary()["calls"]["distinct_prompts"].as_u64().unwrap()
}

/// A summary's insight per retrieval variant, which must be of the variants `labels` names.
fn by_retrieval<'a>(summary: &'a Value, labels: &[&str]) -> &'a [Value] {
    let per = summary["by_retrieval"].as_array().unwrap();
    let got: Vec<&str> = per
        .iter()
        .map(|v| v["retrieval"].as_str().unwrap())
        .collect();
    assert_eq!(got, labels);
    per
}

/// Every setting of a record with its dimension values.
fn settings(doc: &Record) -> Vec<(String, Value)> {
    doc.settings
        .iter()
        .map(|(id, values)| (id.clone(), json!(values)))
        .collect()
}

/// (question, answer call, outcome) of every run at `setting`.
fn runs_of(doc: &Record, setting: &str) -> Vec<Value> {
    doc.runs
        .iter()
        .filter(|r| r.setting == setting)
        .map(|r| json!([r.question, r.call, r.verdict.outcome]))
        .collect()
}

#[test]
fn two_chat_profiles_double_the_settings_and_call_once_per_profile_and_request() {
    // The distinct prompts of one profile, from a plain sweep on a server of its own.
    let plain_server = MockLlm::start(&[]);
    let plain_project = profiled(&plain_server.url);
    let plain = sweep(&plain_project, &["--no-cache"]);
    let one = distinct_prompts(&plain);
    assert!(one > 0);

    let server = MockLlm::start(&[]);
    let p = profiled(&server.url);
    let out = sweep(&p, &["--no-cache", "--chat", "default,fast"]);
    let doc = out.results();
    let settings = settings(&doc);
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
        doc.dimensions,
        ["min_score", "k", "order", "format", "rewrite", "chat"]
    );
    // One call per distinct (profile, request), by the server's counters.
    let stats = server.stats();
    assert_eq!(
        stats["chat_by_model"],
        json!({"mock": one, "mock-fast": one}),
        "{stats}"
    );
    assert_eq!(distinct_prompts(&out), 2 * one);
    // The `default` settings are the plain sweep's, run for run.
    let plain_doc = plain.results();
    assert_eq!(
        runs_of(&doc, "min_score=0.3,k=4"),
        runs_of(&plain_doc, "min_score=0.3,k=4")
    );
    assert_eq!(
        out.summary()["settings"]["min_score=0.3,k=4"]["answer"],
        plain.summary()["settings"]["min_score=0.3,k=4"]["answer"]
    );

    // `same` is `chat:` under another name: its requests are the same calls, made once.
    let alias_server = MockLlm::start(&[]);
    let alias = profiled(&alias_server.url);
    let out = sweep(&alias, &["--no-cache", "--chat", "default,same"]);
    assert_eq!(
        alias_server.stats()["chat_by_model"],
        json!({ "mock": one })
    );
    assert_eq!(distinct_prompts(&out), one);
    assert_eq!(
        runs_of(&out.results(), "min_score=0.3,k=4,chat=same"),
        runs_of(&plain_doc, "min_score=0.3,k=4")
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

    let out = sweep(&p, &["--temperature", "0,0.7"]);
    let doc = out.results();
    let ids: Vec<&String> = doc.settings.keys().take(2).collect();
    assert_eq!(
        ids,
        [
            "min_score=0.1,k=1,temperature=0",
            "min_score=0.1,k=1,temperature=0.7"
        ]
    );
    assert_eq!(
        doc.settings["min_score=0.1,k=1,temperature=0.7"]["temperature"],
        0.7
    );
    // Temperature 0 is the configured model: its calls came from the cache; only the
    // temperature 0.7 calls reached the server, each with its temperature in the body.
    assert_eq!(
        server.stats()["chat_by_temperature"],
        json!({"0.0": one, "0.7": one})
    );
    assert_eq!(distinct_prompts(&out), 2 * one);
    assert_eq!(out.summary()["calls"]["cache_hits"].as_u64(), Some(one));
    // The config's sweep section may list them too.
    let config = p
        .read("rageval.yaml")
        .replace("sweep:\n", "sweep:\n  temperature: [0.7]\n  chat: fast\n");
    p.write("rageval.yaml", &config);
    let doc = sweep(&p, &[]).results();
    assert_eq!(
        json!(doc.settings["min_score=0.1,k=1,chat=fast,temperature=0.7"]),
        json!({"min_score": 0.1, "k": 1, "order": "score", "format": "numbered", "rewrite": "none", "chat": "fast", "temperature": 0.7})
    );
    assert_eq!(
        json!(doc.identity.identity.config.sweep)["chat"],
        "fast",
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
    let doc = rageval(&p, &["sweep", "--dry-run", "--output", "json"])
        .args(args)
        .stdout_snapshot("models__a_dry_run_prints_one_row_per_chat_profile_and_predicts_the_calls")
        .run()
        .stdout_json();
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

    let out = sweep(&p, &args);
    assert_eq!(server.stats()["chat_requests"], 46);
    assert_eq!(distinct_prompts(&out), 46);

    let text = rageval(&p, &["sweep", "--dry-run"])
        .args(args)
        .stdout(concat!(
            "dry run: no chat call was made and no report written; the corpus and 26 question texts were embedded to plan the prompts.\n",
            "┌──────────────────┬──────┬────────────────┬──────────────────┬────────────────┬───────────────────┬───────────────┬──────────────────────┬────────────────────┐\n",
            "│ chat model       ┆ runs ┆ early refusals ┆ distinct prompts ┆ cached prompts ┆ rewrites (cached) ┆ calls to make ┆ prompt tokens (est.) ┆ prompt cost (est.) │\n",
            "╞══════════════════╪══════╪════════════════╪══════════════════╪════════════════╪═══════════════════╪═══════════════╪══════════════════════╪════════════════════╡\n",
            "│ default (mock)   ┆   26 ┆              3 ┆               23 ┆             23 ┆             0 (0) ┆             0 ┆                    0 ┆         0.0000 USD │\n",
            "│ same (mock)      ┆   26 ┆              3 ┆                0 ┆              0 ┆             0 (0) ┆             0 ┆                    0 ┆         0.0000 USD │\n",
            "│ fast (mock-fast) ┆   26 ┆              3 ┆               23 ┆             23 ┆             0 (0) ┆             0 ┆                    0 ┆         0.0000 USD │\n",
            "└──────────────────┴──────┴────────────────┴──────────────────┴────────────────┴───────────────────┴───────────────┴──────────────────────┴────────────────────┘\n",
            "prompt tokens are estimated at four characters a token; completions are not known before the calls, so the cost counts prompt tokens only.\n",
        ))
        .run()
        .stdout;
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
            "error: invalid --chat: unknown chat profile `nope`; `models:` defines `default`, `fast`, `same`",
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
        rageval(&p, &["sweep"])
            .args(args)
            .status(2)
            .stderr(format!("{message}\n"))
            .run();
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
    let merged = results(&p, "merged");
    assert_eq!(merged.settings.len(), 20 * 2 * 2);
    assert_eq!(
        merged.dimensions.join(" "),
        "min_score k order format rewrite chat temperature"
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
            "sweep:\n  chat: [default, nope]\n",
            "error: rageval.yaml:3: `sweep.chat`: unknown chat profile `nope`; `models:` defines `default`",
        ),
        (
            "embedders:\n  small:\n    kind: hash\nsweep:\n  embedder: small,big\n",
            "error: rageval.yaml:6: `sweep.embedder`: unknown embedder profile `big`; `embedders:` defines `default`, `small`",
        ),
        (
            "sweep:\n  chunk_tokens: [0]\n",
            "error: rageval.yaml:3: `sweep.chunk_tokens`: a chunk size must be a whole number from 1 to 1000000, got `0`",
        ),
        (
            "models:\n  a,b:\n    kind: mock\n",
            "error: rageval.yaml:4: `models.a,b`: `a,b` is not a profile name: use letters, digits, `_`, `-` and `.`",
        ),
    ] {
        p.write("rageval.yaml", &format!("evalsets: [evalsets/club.yaml]\n{yaml}"));
        p.rageval(["sweep"])
            .status(2)
            .stderr(format!("{message}\n"))
            .run();
        assert!(!p.path().join("reports").exists());
    }
}

/// A builtin project (hash embedder, mock model) with embedder profile `small`: the
/// `mock-llm` server's 64-bucket hash embedder over HTTP.
fn embedders(url: &str) -> Project {
    let p = Project::sample();
    p.write(
        "rageval.yaml",
        &format!(
            "evalsets: [evalsets/club.yaml]\nembedders:\n  small:\n    kind: openai\n    base_url: {url}\n    model: hash-64\n    api_key_env: {KEY_ENV}\n"
        ),
    );
    p
}

#[test]
fn two_embedder_profiles_give_separability_and_a_recommendation_each() {
    let server = MockLlm::start(&["--dimensions", "64"]);
    let p = embedders(&server.url);
    let out = sweep(&p, &["--no-cache", "--embedder", "default,small"]);
    let doc = out.results();
    assert_eq!(doc.settings.len(), 2 * 20);
    // The profile is part of the sweep's identity (and so of its config digest).
    let config = json!(doc.identity.identity.config);
    assert_eq!(config["embedders"]["small"]["model"], "hash-64");
    assert_eq!(config["sweep"]["embedder"], "default,small");
    // One embedding per (question, embedder); the corpus once per embedder, in one request.
    assert_eq!(doc.question_embeddings, 2 * 26);
    let stats = server.stats();
    assert_eq!(stats["embedding_requests"], 2, "{stats}");
    assert_eq!(
        stats["texts_embedded"].as_u64(),
        Some(doc.corpora["evalsets/club"].chunks.len() as u64 + 26)
    );

    // Each embedder's insight is the insight of a sweep with that embedder alone.
    let alone = |embedder: &str| {
        let out = Test::new()
            .write(
                "rageval.yaml",
                &format!("evalsets: [evalsets/club.yaml]\n{embedder}"),
            )
            .args(["sweep", "-q"])
            .env(KEY_ENV, "test-key")
            .run();
        (out.results(), out.summary())
    };
    let (plain, plain_summary) = alone("");
    let (small, small_summary) = alone(&format!(
        "embedder:\n  kind: openai\n  base_url: {}\n  model: hash-64\n  api_key_env: {KEY_ENV}\n",
        server.url
    ));
    let summary = out.summary();
    let per = by_retrieval(&summary, &["embedder=default", "embedder=small"]);
    assert_eq!(per[0]["separability"], plain_summary["separability"]);
    assert_eq!(per[1]["separability"], small_summary["separability"]);
    assert_ne!(per[0]["separability"]["auc"], per[1]["separability"]["auc"]);
    assert_eq!(
        per[0]["recommendation"]["setting"],
        plain_summary["recommendation"]["setting"]
    );
    // The small embedder's recommendation names its own settings.
    let with_suffix = |v: &Value| v.as_str().map(|id| format!("{id},embedder=small"));
    assert_eq!(
        per[1]["recommendation"]["closest"]["setting"]
            .as_str()
            .or(per[1]["recommendation"]["setting"].as_str())
            .map(String::from),
        with_suffix(if small_summary["recommendation"]["setting"].is_null() {
            &small_summary["recommendation"]["closest"]["setting"]
        } else {
            &small_summary["recommendation"]["setting"]
        })
    );
    // Per-question scores under each embedder, for merge and the gate to read back.
    let q = &doc.questions["fee-per-term"];
    assert_eq!(
        q.retrieval["embedder=small"].best_score,
        small.questions["fee-per-term"].best_score
    );
    assert_eq!(q.best_score, plain.questions["fee-per-term"].best_score);

    // The terminal footer and report.md show both.
    let text = rageval(&p, &["sweep", "--embedder", "default,small", "--wide"])
        .stdout_snapshot(
            "models__two_embedder_profiles_give_separability_and_a_recommendation_each",
        )
        .run()
        .stdout;
    // One row per variant, in place of the whole-grid line that pools incomparable scores.
    let f3 = |v: &Value| format!("{:.3}", v.as_f64().unwrap());
    let row = |v: &Value| -> Vec<String> {
        let s = &v["separability"];
        let threshold = if s["clean"].is_object() {
            format!(
                "{} < minScore ≤ {}",
                f3(&s["clean"]["above"]),
                f3(&s["clean"]["up_to"])
            )
        } else {
            format!(
                "overlap {} ({} to {})",
                f3(&s["overlap"]),
                f3(&s["answerable_min"]),
                f3(&s["unanswerable_max"])
            )
        };
        let r = &v["recommendation"];
        let pick = match r["setting"].as_str() {
            Some(id) if r["certified"] == true => id.to_string(),
            Some(id) => format!("{id} (best, not certified)"),
            None => {
                let misses: Vec<String> = r["closest"]["misses"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|m| {
                        let pct = |x: &Value| format!("{:.1}%", x.as_f64().unwrap() * 100.0);
                        let label = match m["limit"].as_str().unwrap() {
                            "max_false_refusal_rate" => "false refusals",
                            "max_unwanted_answer_rate" => "unwanted",
                            other => panic!("unexpected limit {other}"),
                        };
                        format!("{label} {} (limit {})", pct(&m["value"]), pct(&m["max"]))
                            .replace(".0%", "%")
                    })
                    .collect();
                format!(
                    "none meets the limits; closest {}: {}",
                    r["closest"]["setting"].as_str().unwrap(),
                    misses.join(", ")
                )
            }
        };
        vec![
            v["retrieval"].as_str().unwrap().to_string(),
            f3(&s["auc"]),
            threshold,
            pick,
        ]
    };
    let rows: Vec<Vec<String>> = text
        .lines()
        .filter(|l| l.starts_with("│ embedder="))
        .map(|l| {
            l.trim_matches('│')
                .split('┆')
                .map(|c| c.trim().to_string())
                .collect()
        })
        .collect();
    assert_eq!(rows, [row(&per[0]), row(&per[1])], "{text}");
    assert_eq!(
        text.lines()
            .filter(|l| l.starts_with("separability") || l.contains(": separability: "))
            .count(),
        0,
        "{text}"
    );
    let md = p.read("reports/latest/report.md");
    let md_rows: Vec<String> = md
        .lines()
        .filter(|l| l.starts_with("| embedder="))
        .map(String::from)
        .collect();
    let md_row = |v: &Value| format!("| {} |", row(v).join(" | "));
    assert_eq!(md_rows, [md_row(&per[0]), md_row(&per[1])], "{md}");
    assert!(!md.contains("**Separability"), "{md}");
    let sep = |v: &Value| {
        v["separability"]["auc"]
            .as_f64()
            .map(|a| format!("AUC {a:.3}"))
            .unwrap()
    };
    for (label, v) in [("embedder=default", &per[0]), ("embedder=small", &per[1])] {
        let line = format!("{label}: separability: {}", sep(v));
        assert!(p
            .read("reports/latest/report.html")
            .contains(&format!("<li>{line}")));
    }
    assert!(p
        .read("reports/latest/report.html")
        .contains("<section id=\"by-retrieval\""));

    // A dry run over both embedders predicts the sweep's calls.
    let dry = rageval(
        &p,
        &[
            "sweep",
            "--dry-run",
            "--output",
            "json",
            "--no-cache",
            "--embedder",
            "default,small",
        ],
    )
    .stdout_snapshot("models__two_embedder_profiles_give_separability_and_a_recommendation_each_2")
    .run()
    .stdout_json();
    assert_eq!(
        dry["dry_run"][0]["calls"],
        summary["calls"]["distinct_prompts"]
    );
    assert_eq!(dry["dry_run"][0]["question_embeddings"], 2 * 26);
}

/// Four paragraphs of 20 to 23 estimated tokens under a 3-token heading (as in chunks.rs): a
/// size of 40 puts each in a part of its own, 256 keeps the section whole.
const GUIDE: &str = "# Install\nDownload the tool and run it once.\n\n# Long section\n\
Membership fees are paid by bank transfer before the first meeting of each term.\n\n\
The robotics lab opens at nine in the morning on weekdays for every member.\n\n\
Lost badges are replaced for five dollars at the office with a photo card.\n\n\
Parking permits for the north garage cost twelve dollars monthly and are sold online.\n";

#[test]
fn chunk_sizes_build_one_index_each_and_runs_point_at_their_parts() {
    let server = MockLlm::start(&[]);
    let p = Project::empty();
    p.write("docs/guide.md", GUIDE);
    p.write(
        "set.yaml",
        "corpus: docs\nanswerable:\n  - id: parking\n    question: How much do parking permits for the north garage cost?\n    expect: {sources: [guide.md#Long section], answer: [twelve dollars]}\nunanswerable:\n  - id: pool\n    question: When does the swimming pool open?\n",
    );
    p.write(
        "rageval.yaml",
        &format!(
            "evalsets: [set.yaml]\nembedder:\n  kind: openai\n  base_url: {}\n  model: hash-1024\n  api_key_env: {KEY_ENV}\nsweep:\n  min_score: 0.1\n  k: 1\n",
            server.url
        ),
    );
    let plain = sweep(&p, &["--no-cache"]).results();
    let before = server.stats()["texts_embedded"].as_u64().unwrap();
    let out = sweep(&p, &["--no-cache", "--chunk-tokens", "40,256"]);
    let doc = out.results();
    // The default cut (256) first, with its ids; the parts of the 40-token cut follow.
    let chunks: Vec<&String> = doc.corpora["docs"].chunks.keys().collect();
    assert_eq!(
        chunks,
        [
            "guide.md#0",
            "guide.md#1",
            "guide.md#1.1",
            "guide.md#1.2",
            "guide.md#1.3",
            "guide.md#1.4"
        ]
    );
    // Every distinct chunk and question embedded once: one index per size from them.
    assert_eq!(
        server.stats()["texts_embedded"].as_u64().unwrap() - before,
        6 + 2
    );
    assert_eq!(doc.question_embeddings, 2);
    let passages = |doc: &Record, setting: &str| -> Vec<Value> {
        doc.runs
            .iter()
            .filter(|r| r.setting == setting)
            .map(|r| json!([r.question, r.passages, r.verdict.outcome]))
            .collect()
    };
    assert_eq!(
        passages(&doc, "min_score=0.1,k=1,chunk_tokens=256"),
        passages(&plain, "min_score=0.1,k=1")
    );
    let sent = |setting: &str| -> Vec<Value> {
        passages(&doc, setting)
            .iter()
            .map(|r| r[1][0][0].clone())
            .collect()
    };
    // The pool question is refused early at both sizes: no passage.
    assert_eq!(
        sent("min_score=0.1,k=1,chunk_tokens=40"),
        [json!("guide.md#1.4"), Value::Null]
    );
    assert_eq!(
        sent("min_score=0.1,k=1,chunk_tokens=256"),
        [json!("guide.md#1"), Value::Null]
    );
    // The table and summary.csv show the dimension.
    let csv = p.read("reports/latest/summary.csv");
    assert!(csv.starts_with("min_score,k,order,format,rewrite,chunk_tokens,questions,"));
    let text = rageval(&p, &["sweep", "--chunk-tokens", "40,256"])
        .stdout_snapshot("models__chunk_sizes_build_one_index_each_and_runs_point_at_their_parts")
        .run()
        .stdout;
    let header = text.lines().find(|l| l.contains("min_score")).unwrap();
    assert!(header.contains("┆ chunk_tokens ┆"), "{header}");
    by_retrieval(&out.summary(), &["chunk_tokens=40", "chunk_tokens=256"]);
}

#[test]
fn bad_retrieval_dimensions_are_refused_before_any_work() {
    let p = Project::sample();
    p.write(
        "rageval.yaml",
        "evalsets: [evalsets/club.yaml]\nembedders:\n  small:\n    kind: hash\n    dimensions: 64\n",
    );
    for (args, message) in [
        (
            &["--embedder", "small,big"][..],
            "error: invalid --embedder: unknown embedder profile `big`; `embedders:` defines `default`, `small`",
        ),
        (
            &["--chunk-tokens", "0,128"][..],
            "error: invalid --chunk-tokens: a chunk size must be a whole number from 1 to 1000000, got `0`",
        ),
    ] {
        p.rageval(["sweep"])
            .args(args)
            .status(2)
            .stderr(format!("{message}\n"))
            .run();
        assert!(!p.path().join("reports").exists());
    }
    // A foreign retriever has its own chunks.
    p.write(
        "rageval.yaml",
        "evalsets: [evalsets/club.yaml]\nretriever:\n  kind: pgvector\n  table: chunks\n",
    );
    p.rageval(["sweep", "--chunk-tokens", "128"])
        .status(2)
        .stderr("error: invalid --chunk-tokens: `retriever.kind: pgvector` returns passages chunked by the search service; chunk sizes apply to the builtin retriever only\n")
        .run();
    assert!(!p.path().join("reports").exists());
}

#[test]
fn shards_of_an_embedder_and_chunk_size_sweep_merge_into_the_whole() {
    let p = Project::sample();
    p.write(
        "rageval.yaml",
        "evalsets: [evalsets/club.yaml]\nembedders:\n  small:\n    kind: hash\n    dimensions: 64\n",
    );
    crate::shards::whole_and_merged(
        &p,
        &[
            "--embedder",
            "default,small",
            "--chunk-tokens",
            "16,256",
            "--rewrite",
            "none,heuristic",
        ],
        2,
    );
    crate::shards::assert_same(&p);
    assert_eq!(
        summary(&p, "merged")["by_retrieval"]
            .as_array()
            .unwrap()
            .len(),
        4
    );
}

#[test]
fn each_embedder_profile_is_checked_against_the_pgvector_table() {
    let Some(dsn) = crate::support::require_database() else {
        return;
    };
    let p = Project::sample();
    p.write(
        "rageval.yaml",
        "evalsets: [evalsets/club.yaml]\nembedders:\n  small:\n    kind: hash\n    dimensions: 64\n  wide:\n    kind: hash\n    dimensions: 1024\nretriever:\n  kind: pgvector\n  dsn_env: RAGEVAL_TEST_DSN\n  ef_search: 1000\n  table: rv_profiles\n",
    );
    p.rageval(["index", "--replace"])
        .env("RAGEVAL_TEST_DSN", &dsn)
        .stdout(
            "loaded 23 chunks into `rv_profiles` at postgresql://postgres@127.0.0.1:[PORT]/rageval_test (embedder `hash-1024`)\n",
        )
        .run();
    let run = |embedders: &str| {
        p.sweep(["--embedder", embedders])
            .env("RAGEVAL_TEST_DSN", &dsn)
    };
    run("default,small")
        .status(2)
        .stderr("error: embedder profile `small`: column `embedding` of table `rv_profiles` holds 1024-dimensional vectors, the embedder `hash-64` gives 64: reload the table with `rageval index --replace` or configure the embedder it was built with\n")
        .run();
    assert!(!p.path().join("reports").exists());
    // A profile of the table's dimensions sweeps, each embedder retrieving on its own.
    let out = run("default,wide").run();
    let summary = out.summary();
    let per = summary["by_retrieval"].as_array().unwrap();
    assert_eq!(per.len(), 2);
    assert_eq!(
        per[0]["separability"], per[1]["separability"],
        "the same vectors"
    );
    assert_eq!(out.results().question_embeddings, 2 * 26);
}

#[test]
fn a_reranked_two_embedder_sweep_keeps_both_scores_per_embedder_through_merge() {
    let server = MockLlm::start(&[]);
    let p = Project::sample();
    p.write(
        "rageval.yaml",
        &format!(
            "evalsets: [evalsets/club.yaml]\nembedders:\n  small:\n    kind: hash\n    dimensions: 64\nreranker:\n  base_url: {}\n  api_key_env: {KEY_ENV}\n  candidates: 8\n",
            server.url
        ),
    );
    crate::shards::whole_and_merged(&p, &["--embedder", "default,small"], 2);
    crate::shards::assert_same(&p);
    let doc = results(&p, "whole");
    let q = &doc.questions["fee-per-term"].retrieval;
    for label in ["embedder=default", "embedder=small"] {
        assert!(q[label].best_score.is_some(), "{q:?}");
        assert!(q[label].best_retrieval_score.is_some(), "{q:?}");
    }
    // The retrieval scores differ by embedder; the reranker scores the same passages' words.
    assert_ne!(
        q["embedder=default"].best_retrieval_score,
        q["embedder=small"].best_retrieval_score
    );
    // Each variant's insight has both separabilities: the rerank score's and the retrieval
    // score's, the default embedder's being the whole grid's (its runs come first).
    let summary = summary(&p, "whole");
    let per = summary["by_retrieval"].as_array().unwrap();
    assert_eq!(
        per[0]["retrieval_separability"],
        summary["retrieval_separability"]
    );
    assert!(
        per[1]["retrieval_separability"]["auc"].is_number(),
        "{per:?}"
    );
    assert_ne!(
        per[0]["retrieval_separability"]["auc"],
        per[1]["retrieval_separability"]["auc"]
    );
    assert_ne!(per[1]["retrieval_separability"], per[1]["separability"]);
    let auc = |v: &Value| format!("{:.3}", v["auc"].as_f64().unwrap());
    let md = p.read("whole/report.md");
    let rows: Vec<&str> = md
        .lines()
        .filter(|l| l.starts_with("| embedder="))
        .collect();
    assert_eq!(rows.len(), 2, "{md}");
    for (row, v) in rows.iter().zip(per) {
        let cells: Vec<&str> = row.trim_matches('|').split(" | ").map(str::trim).collect();
        assert_eq!(
            cells[..2].to_vec(),
            [v["retrieval"].as_str().unwrap(), &auc(&v["separability"])]
        );
        assert_eq!(cells[3], auc(&v["retrieval_separability"]), "{row}");
    }
    assert!(
        md.contains(
            "| variant | AUC | separating minScore / overlap | retrieval AUC | recommended |"
        ),
        "{md}"
    );
}

/// A free loopback port with nothing listening on it.
fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// [`http_project`] at `url` with chat profile `b` at `b_url` (its key in `$RAGEVAL_TEST_B_KEY`,
/// one attempt per call).
fn with_profile_b(url: &str, b_url: &str) -> Project {
    http_project(
        url,
        false,
        &format!("models:\n  b:\n    kind: openai\n    base_url: {b_url}\n    model: mock-b\n    api_key_env: RAGEVAL_TEST_B_KEY\n    max_retries: 0\n"),
    )
}

/// `sweep ARGS` with profile `b`'s key `b_key` must exit 2 with exactly `error` on stderr and
/// write no report.
fn failing_sweep(p: &Project, args: &[&str], b_key: &str, error: String) {
    p.sweep(args)
        .env(KEY_ENV, "test-key")
        .env("RAGEVAL_TEST_B_KEY", b_key)
        .status(2)
        .stderr(error)
        .run();
    assert!(!p.path().join("reports/latest").exists(), "no report");
}

#[test]
fn a_dead_server_of_a_second_chat_profile_stops_the_sweep_naming_it() {
    let server = MockLlm::start(&[]);
    let one = distinct_prompts(&sweep(&profiled(&server.url), &["--no-cache"]));
    let port = closed_port();
    let p = with_profile_b(
        &server.url,
        &format!("http://127.0.0.1:{port}/v1?token=b-secret-42"),
    );
    // Even with --allow-errors: half the report would be `error` runs.
    for extra in [&[][..], &["--allow-errors"][..]] {
        let mut args = vec!["--no-cache", "--chat", "default,b"];
        args.extend(extra);
        failing_sweep(
            &p,
            &args,
            "test-key",
            format!("error: the sweep stopped early: 20 connection attempts in a row to chat profile `b` failed ({one} connect); no report written; is the model server at `http://127.0.0.1:{port}/v1?<redacted>` running?\n"),
        );
    }
    // Each temperature of the `chat:` model is a model of its own, watched the same way.
    let dead = format!("http://127.0.0.1:{port}/v1");
    let p = http_project(&dead, false, "  max_retries: 0\n");
    failing_sweep(
        &p,
        &["--no-cache", "--temperature", "0,0.7"],
        "test-key",
        format!("error: the sweep stopped early: 20 connection attempts in a row failed ({} connect); no report written; is the model server at `{dead}` running?\n", 2 * one),
    );
}

#[test]
fn every_call_of_a_non_default_profile_failing_names_its_server_or_key() {
    let server = MockLlm::start(&[]);
    let one = distinct_prompts(&sweep(&profiled(&server.url), &["--no-cache"]));
    let failing = MockLlm::start(&["--fail-rate", "1", "--fail-status", "500"]);
    let b = format!("{}?token=b-secret-42", failing.url);
    let shown = format!("{}?<redacted>", failing.url);
    let p = with_profile_b(&server.url, &b);
    // The only profile swept: every call failed.
    failing_sweep(
        &p,
        &["--no-cache", "--chat", "b"],
        "test-key",
        format!("error: every model call failed ({one} server); no report written; see the errors of the server at `{shown}`\n"),
    );
    // Beside a profile that answers: every call of `b` failed.
    failing_sweep(
        &p,
        &["--no-cache", "--chat", "default,b"],
        "test-key",
        format!("error: every model call of chat profile `b` failed ({one} server); no report written; see the errors of the server at `{shown}`\n"),
    );
    // A wrong key: the hint names `b`'s key variable, never the key.
    let p = with_profile_b(&server.url, &server.url);
    failing_sweep(
        &p,
        &["--no-cache", "--chat", "b"],
        "sk-wrong-b-1",
        format!("error: every model call failed ({one} auth); no report written; check the key in `$RAGEVAL_TEST_B_KEY`\n"),
    );
}

#[test]
fn reports_name_each_swept_profile_with_its_model() {
    let server = MockLlm::start(&["--dimensions", "64"]);
    let p = profiled(&server.url);
    p.write(
        "rageval.yaml",
        &format!(
            "{}embedders:\n  small:\n    kind: openai\n    base_url: {}\n    model: hash-64\n    api_key_env: {KEY_ENV}\n",
            p.read("rageval.yaml"),
            server.url
        ),
    );
    let out = rageval(
        &p,
        &[
            "sweep",
            "--no-cache",
            "--chat",
            "default,fast",
            "--embedder",
            "default,small",
            "--min-score",
            "0.2",
            "--k",
            "2",
        ],
    )
    .env("COLUMNS", "200")
    .stdout_snapshot("models__reports_name_each_swept_profile_with_its_model")
    .run();
    let models = "models: default = mock, fast = mock-fast";
    let embedders = "embedders: default = hash-1024, small = hash-64";
    let text = &out.stdout;
    assert_eq!(
        text.lines().take(2).collect::<Vec<_>>(),
        [models, embedders]
    );
    let md = p.read("reports/latest/report.md");
    assert_eq!(
        md.lines().take(5).collect::<Vec<_>>(),
        [
            "### rageval: 26 questions x 4 settings",
            "",
            models,
            "",
            embedders
        ]
    );
    let html = p.read("reports/latest/report.html");
    assert!(
        html.contains("Embedders <code>default</code> = <code>hash-1024</code>, <code>small</code> = <code>hash-64</code>, models <code>default</code> = <code>mock</code>, <code>fast</code> = <code>mock-fast</code>, rageval "),
        "{}",
        html.lines().find(|l| l.contains("class=\"meta\"")).unwrap_or_default()
    );
    let identity = out.results().identity;
    assert_eq!(
        (json!(identity.models), json!(identity.embedders)),
        (
            json!({"default": "mock", "fast": "mock-fast"}),
            json!({"default": "hash-1024", "small": "hash-64"})
        )
    );
    // One profile that is not `default` is named too; the default profiles alone are not, and
    // their record has neither field.
    let one = sweep(&p, &["--no-cache", "--chat", "fast"]).results();
    assert_eq!(json!(one.identity.models), json!({"fast": "mock-fast"}));
    assert_eq!(
        p.read("reports/latest/report.md").lines().nth(2),
        Some("models: fast = mock-fast")
    );
    let plain = sweep(&p, &["--no-cache"]);
    assert_eq!(
        p.read("reports/latest/report.md").lines().take(3).collect::<Vec<_>>(),
        ["### rageval: 26 questions x 20 settings", "", "**Recommended: `min_score=0.3,k=1`** (best, not certified at 95% by ordered tests): false refusals 47% [26–69], unwanted 11% [2–43], wrong answers 6% [1–27], 83.7 prompt tokens/question; the lowest weighted cost (0.867) of 4 of 20 settings within the limits (unwanted ≤ 20%, false refusals ≤ 50%) on the measured rates, but none is certified"]
    );
    let identity: Value = serde_json::from_str::<Value>(&plain.read("reports/latest/results.json"))
        .unwrap()["identity"]
        .take();
    let keys = crate::support::keys(&identity);
    assert!(
        !keys.contains(&"models") && !keys.contains(&"embedders"),
        "{keys:?}"
    );
}
