//! The reranker stage, for real: `rageval mock-llm` serves `/v1/rerank` (its score is the share
//! of the query's words a passage holds), a search service started inside the test returns
//! passages with fixed retrieval scores, and a second in-test server breaks the rerank contract
//! one way per path.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use axum::extract::{Json, Path as UrlPath, State};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use serde_json::{json, Value};

use crate::harness::{CallRole, Record, Test};
use crate::http::MockLlm;
use crate::support::{col, read_csv, Project};

/// The passages of the store: (id, text).
pub const PASSAGES: [(&str, &str); 3] = [
    ("hours", "The shop opens at nine on weekdays."),
    ("returns", "Returns are accepted within thirty days."),
    (
        "sunday",
        "On Sunday the shop does open when the market is on.",
    ),
];

/// Retrieval scores by question text, in the order the search service returns them.
fn retrieval(query: &str) -> Vec<(&'static str, f64)> {
    if query.contains("Sunday") {
        vec![("hours", 0.9), ("returns", 0.8), ("sunday", 0.7)]
    } else {
        vec![("hours", 0.95), ("sunday", 0.9), ("returns", 0.85)]
    }
}

/// One in-test server: `/search` is the store's search service (it counts its requests),
/// `/{mode}/rerank` answers rerank requests that break the contract one way each.
struct Servers {
    addr: SocketAddr,
    searches: Arc<AtomicU64>,
    _runtime: tokio::runtime::Runtime,
}

impl Servers {
    fn start() -> Self {
        let runtime = crate::support::server_runtime();
        let searches = Arc::new(AtomicU64::new(0));
        let app = Router::new()
            .route("/search", post(search))
            .route("/{mode}/rerank", post(bad_rerank))
            .with_state(searches.clone());
        let addr = crate::support::serve(&runtime, app);
        Servers {
            addr,
            searches,
            _runtime: runtime,
        }
    }
}

async fn search(State(count): State<Arc<AtomicU64>>, Json(body): Json<Value>) -> Response {
    count.fetch_add(1, Ordering::Relaxed);
    let k = body["k"].as_u64().unwrap() as usize;
    let hits: Vec<Value> = retrieval(body["query"].as_str().unwrap())
        .into_iter()
        .take(k)
        .map(|(id, score)| {
            let text = PASSAGES.iter().find(|p| p.0 == id).unwrap().1;
            json!({"id": id, "source": format!("{id}.md"), "text": text, "score": score})
        })
        .collect();
    Json(json!({ "hits": hits })).into_response()
}

async fn bad_rerank(UrlPath(mode): UrlPath<String>) -> Response {
    let results = match mode.as_str() {
        "index" => {
            json!([{"index": 0, "relevance_score": 0.5}, {"index": 7, "relevance_score": 0.4}])
        }
        "missing" => json!([{"index": 0}]),
        "nan" => json!([{"index": 0, "relevance_score": null}]),
        _ => return axum::http::StatusCode::NOT_FOUND.into_response(),
    };
    Json(json!({ "results": results })).into_response()
}

pub const SET: &str = "\
answerable:
  - id: open-sunday
    question: When does the shop open on Sunday?
    expect: {ids: [sunday], answer: [\"market\"]}
  - id: open-sunday-again
    question: When does the shop open on Sunday?
    expect: {ids: [sunday], answer: [\"market\"]}
unanswerable:
  - id: parking
    question: Where can I park my car?
";

const KEY: &str = "sk-rerank-secret-1234";

/// A project over the in-test search service; `reranker` is the config's `reranker:` section.
fn project(servers: &Servers, reranker: &str) -> Project {
    let p = Project::empty();
    p.write("sets/shop.yaml", SET);
    p.write(
        "rageval.yaml",
        &format!(
            "evalsets: [sets/shop.yaml]\nsweep: {{min_score: \"0.3,0.5\", k: \"1,2\"}}\nretriever:\n  kind: http\n  url: http://{}/search\n{reranker}",
            servers.addr
        ),
    );
    p
}

/// `rageval ARGS` with the reranker's key.
fn rageval<'p>(p: &'p Project, args: &[&str]) -> Test<'p> {
    p.rageval(args).env("RAGEVAL_TEST_RERANK_KEY", KEY)
}

fn sweep<'p>(p: &'p Project, out: &str) -> Test<'p> {
    rageval(p, &["sweep", "--out", out])
}

/// (question, min_score, k, outcome, best_score, passages) of every run.
pub fn runs(p: &Project, out: &str) -> Vec<[String; 6]> {
    let (header, rows) = read_csv(&p.read(&format!("{out}/runs.csv")));
    rows.iter()
        .map(|r| {
            [
                "question_id",
                "min_score",
                "k",
                "outcome",
                "best_score",
                "passages",
            ]
            .map(|c| col(&header, r, c).to_string())
        })
        .collect()
}

/// Expected [`runs`], one a line: six cells separated by `|`.
pub fn rows(table: &str) -> Vec<[String; 6]> {
    table
        .lines()
        .map(|l| {
            let cells: Vec<String> = l.split('|').map(|c| c.trim().to_string()).collect();
            cells
                .try_into()
                .unwrap_or_else(|c| panic!("not six cells: {c:?}"))
        })
        .collect()
}

#[test]
fn a_reranked_sweep_orders_and_filters_by_the_rerank_score() {
    let servers = Servers::start();
    let mock = MockLlm::start(&["--api-key", KEY]);
    // Without a reranker: retrieval order, retrieval scores.
    let plain = project(&servers, "");
    // Every retrieval score is 0.7 or more: 0.3 and 0.5 filter nothing.
    sweep(&plain, "out")
        .stdout_snapshot("rerank__a_reranked_sweep_orders_and_filters_by_the_rerank_score")
        .stderr("warning: min_score 0.3 and 0.5 send the same prompts for every question (no score the retriever returned lies between them): each group measures one setting; sweep values that differ\n")
        .run();
    let by_retrieval = runs(&plain, "out");
    assert_eq!(by_retrieval[0][5], "hours");
    assert_eq!(by_retrieval[3][5], "hours returns");

    // The mock scores a passage by the share of the query's words it holds: for "When does the
    // shop open on Sunday?" (7 words) `sunday` holds all 7, `hours` 3 (the, shop, on),
    // `returns` none; "Where can I park my car?" shares no word with any passage. Three
    // candidates go to the reranker, which returns the best 2 (top_n: the largest k).
    let p = project(
        &servers,
        &format!(
            "reranker:\n  base_url: {}?token=q-secret-5678\n  model: mock-rerank\n  api_key_env: RAGEVAL_TEST_RERANK_KEY\n  candidates: 3\n  max_retries: 0\n",
            mock.url
        ),
    );
    let out = sweep(&p, "out")
        .stdout_snapshot("rerank__a_reranked_sweep_orders_and_filters_by_the_rerank_score_2")
        .run();
    assert_eq!(
        runs(&p, "out"),
        rows(
            "\
        open-sunday       | 0.3 | 1 | answer        | 1.000000 | sunday
        open-sunday-again | 0.3 | 1 | answer        | 1.000000 | sunday
        parking           | 0.3 | 1 | early_refusal | 0.000000 |
        open-sunday       | 0.3 | 2 | answer        | 1.000000 | sunday hours
        open-sunday-again | 0.3 | 2 | answer        | 1.000000 | sunday hours
        parking           | 0.3 | 2 | early_refusal | 0.000000 |
        open-sunday       | 0.5 | 1 | answer        | 1.000000 | sunday
        open-sunday-again | 0.5 | 1 | answer        | 1.000000 | sunday
        parking           | 0.5 | 1 | early_refusal | 0.000000 |
        open-sunday       | 0.5 | 2 | answer        | 1.000000 | sunday
        open-sunday-again | 0.5 | 2 | answer        | 1.000000 | sunday
        parking           | 0.5 | 2 | early_refusal | 0.000000 |"
        )
    );
    // Both best scores per question, and the separability of each.
    let doc = out.results();
    for (id, best, retrieval) in [
        ("open-sunday", 1.0, 0.9),
        ("open-sunday-again", 1.0, 0.9),
        ("parking", 0.0, 0.95),
    ] {
        let q = &doc.questions[id];
        assert_eq!(
            (q.best_score, q.best_retrieval_score),
            (Some(best), Some(retrieval)),
            "{id}"
        );
    }
    let summary = out.summary();
    assert_eq!(
        summary["separability"]["clean"],
        json!({"above": 0.0, "up_to": 1.0})
    );
    assert_eq!(
        summary["retrieval_separability"]["overlap"]
            .as_f64()
            .map(|o| (o * 1e6).round()),
        Some(50_000.0)
    );
    let reranker = doc.identity.identity.config.reranker.as_ref().unwrap();
    assert_eq!(reranker.model, "mock-rerank");
    assert_eq!(reranker.candidates, Some(3));
    assert_eq!(
        json!(reranker.endpoint.base_url),
        format!("{}?<redacted>", mock.url)
    );
    let md = p.read("out/report.md");
    let lines: Vec<&str> = md
        .lines()
        .filter(|l| l.starts_with("**Separability"))
        .collect();
    assert_eq!(
        lines,
        [
            "**Separability (rerank score).** AUC 1.000 for the best score (2 answerable vs 1 unanswerable); any minScore above 0.000 and up to 1.000 separates them cleanly",
            "**Separability (retrieval score).** AUC 0.000 for the best score (2 answerable vs 1 unanswerable); no minScore separates them: they overlap by 0.050 (answerable from 0.900, unanswerable up to 0.950)",
        ]
    );

    let rerank_line = lines[0]
        .strip_prefix("**Separability (rerank score).** ")
        .unwrap();
    let retrieval_line = lines[1]
        .strip_prefix("**Separability (retrieval score).** ")
        .unwrap();
    let html = p.read("out/report.html");
    assert!(
        html.contains(&format!(
            "<p>Rerank score: {}</p>\n<p>Retrieval score: {}</p>",
            rerank_line, retrieval_line
        )),
        "report.html shows both separability lines"
    );
    // The terminal's footer, its wrapped lines joined.
    let text = &out.stdout;
    let mut footer: Vec<String> = Vec::new();
    for line in text.lines() {
        if line.starts_with("separability") {
            footer.push(line.to_string());
        } else if let (Some(last), Some(more)) = (footer.last_mut(), line.strip_prefix("  ")) {
            if !last.ends_with('.') {
                last.push(' ');
                last.push_str(more);
            }
        }
    }
    assert_eq!(
        footer,
        [
            format!("separability (rerank score): {rerank_line}"),
            format!("separability (retrieval score): {retrieval_line}"),
        ]
    );

    // One rerank call per distinct question text (the repeated question shares one), and
    // none at all when the sweep runs again on the cache.
    let stats = mock.stats();
    assert_eq!(stats["rerank_requests"], 2);
    assert_eq!(stats["documents_reranked"], 6);
    assert_eq!(stats["queries"], json!({"token=q-secret-5678": 2}));
    assert_eq!(servers.searches.load(Ordering::Relaxed), 2 + 2);
    let again = sweep(&p, "again")
        .stdout_snapshot("rerank__a_reranked_sweep_orders_and_filters_by_the_rerank_score_3")
        .run();
    assert_eq!(
        mock.stats()["rerank_requests"],
        2,
        "the second sweep is cached"
    );
    assert_eq!(runs(&p, "again"), runs(&p, "out"));

    // A cache file edited by hand cannot point past the passages retrieved.
    let cache = p.read(".rageval/cache/rerank.jsonl");
    assert_eq!(cache.matches("\"index\":2").count(), 1, "{cache}");
    p.write(
        ".rageval/cache/rerank.jsonl",
        &cache.replace("\"index\":2", "\"index\":9"),
    );
    sweep(&p, "edited")
        .status(2)
        .stderr("error: reranking for question `open-sunday` failed: the cached reply names passage 9 of 3\n")
        .run();
    p.write(".rageval/cache/rerank.jsonl", &cache);

    // The key and the URL's query never reach output, reports or the cache.
    for text in [&out.stdout, &out.stderr, &again.stdout, &again.stderr] {
        assert!(!text.contains(KEY) && !text.contains("q-secret"), "{text}");
    }
    for entry in walk(p.path()) {
        let bytes = std::fs::read(&entry).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        assert!(
            !text.contains(KEY) && !text.contains("q-secret"),
            "{} holds a secret",
            entry.display()
        );
    }
}

/// Every file under `dir` but the config, which names the URL.
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else if path.file_name().is_some_and(|n| n != "rageval.yaml") {
            out.push(path);
        }
    }
    out
}

#[test]
fn a_reranker_that_is_down_or_breaks_the_contract_stops_the_sweep_naming_the_question() {
    let servers = Servers::start();
    let bad = |mode: &str| format!("http://{}/{mode}", servers.addr);
    let cases = [
        (
            "http://127.0.0.1:1/v1".to_string(),
            "connect at http://127.0.0.1:1/v1/rerank: cannot connect to http://127.0.0.1:1/v1 (after 2 attempts)".to_string(),
        ),
        (
            bad("index"),
            format!("malformed at {}/rerank: result 1 has `index` 7, but 2 documents were sent", bad("index")),
        ),
        (
            bad("missing"),
            format!("malformed at {}/rerank: result 0 has no `relevance_score`", bad("missing")),
        ),
        (
            bad("nan"),
            format!("malformed at {}/rerank: result 0 has a `relevance_score` that is not a finite number", bad("nan")),
        ),
    ];
    for (i, (url, why)) in cases.iter().enumerate() {
        let p = project(
            &servers,
            &format!("reranker:\n  base_url: {url}\n  api_key_env: RAGEVAL_TEST_RERANK_KEY\n  max_retries: 1\n  backoff_ms: 1\n"),
        );
        sweep(&p, "out")
            .status(2)
            .stderr(format!(
                "error: reranking for question `open-sunday` failed: {why}\n"
            ))
            .stderr_lacks(KEY)
            .run();
        assert!(!p.path().join("out").exists(), "case {i}: no report");
    }
}

#[test]
fn ask_and_prompt_rerank_as_the_sweep_does() {
    let servers = Servers::start();
    let mock = MockLlm::start(&["--no-auth"]);
    let q = "When does the shop open on Sunday?";
    let context = |p: &Project, snapshot: &str| {
        let out = p
            .rageval(["prompt", q, "--k", "1", "--min-score", "0.5"])
            .stdout_snapshot(snapshot)
            .run();
        out.stdout
            .lines()
            .find(|l| l.starts_with("[1]"))
            .unwrap_or_default()
            .to_string()
    };
    assert_eq!(
        context(
            &project(&servers, ""),
            "rerank__ask_and_prompt_rerank_as_the_sweep_does"
        ),
        "[1] (source: hours.md) The shop opens at nine on weekdays."
    );
    let reranked = project(
        &servers,
        &format!("reranker:\n  base_url: {}\n  candidates: 3\n", mock.url),
    );
    assert_eq!(
        context(
            &reranked,
            "rerank__ask_and_prompt_rerank_as_the_sweep_does_2"
        ),
        "[1] (source: sunday.md) On Sunday the shop does open when the market is on."
    );
    assert_eq!(mock.stats()["rerank_requests"], 1);
}

#[test]
fn a_reranker_section_without_a_server_or_with_zero_passages_is_refused() {
    Project::sample().refuses_each_section(
        "rageval.yaml",
        "evalsets: [evalsets/club.yaml]\n",
        &["sweep", "--out", "out"],
        "out",
        &[
            (
                "reranker:\n  model: bge\n",
                "rageval.yaml:3: `reranker.base_url`: is missing: the reranker needs its server's URL (`POST {base_url}/rerank`)",
            ),
            (
                "reranker:\n  base_url: http://127.0.0.1:1/v1\n  top_n: 0\n",
                "rageval.yaml:4: `reranker.top_n`: must be from 1 to 1000 (leave it out for the grid's largest k)",
            ),
            (
                "reranker:\n  base_url: ftp://127.0.0.1:1/v1\n",
                "rageval.yaml:3: `reranker.base_url`: `ftp://127.0.0.1:1/v1` must start with http:// or https://",
            ),
        ],
    );
}

#[test]
fn validate_connect_probes_the_reranker_with_two_fixed_documents() {
    let servers = Servers::start();
    let mock = MockLlm::start(&["--api-key", KEY]);
    let p = project(
        &servers,
        &format!(
            "reranker:\n  base_url: {}?token=q-secret-5678\n  model: mock-rerank\n  api_key_env: RAGEVAL_TEST_RERANK_KEY\n",
            mock.url
        ),
    );
    let out = rageval(&p, &["validate", "--connect"])
        .stdout(concat!(
            "ok    sets/shop.yaml: 2 answerable, 1 unanswerable; passages from the `http` retriever\n",
            "      at 95%, 1 unanswerable and 2 answerable questions can certify at best unwanted ≤ 95% and false refusals ≤ 77.6% for one setting, unwanted ≤ 98.8% and false refusals ≤ 88.8% at the first setting of each of the 2 chains along min_score of the configured grid\n",
            "      plan for a chance of 80% at 95% by ordered tests (level 1.25%, at the first setting of each of the 2 chains along min_score of the configured grid), if each true rate is half its limit: unwanted 10% needs 126 unanswerable questions (this set has 1), or 20 with none answered; false refusals 25% needs 37 answerable questions (this set has 2), or 7 with none refused\n",
            "ok    retriever `http` at http://127.0.0.1:[PORT]/search: question `open-sunday` got 1 passage at k = 1\n",
            "ok    reranker `mock-rerank`: scored 2 of 2 probe documents, best document 1 at 0.400\n",
        ))
        .run();
    // The mock scores by the share of the query's 5 words a document holds: "the" and "shop".
    assert_eq!(
        out.stdout.lines().last().unwrap(),
        "ok    reranker `mock-rerank`: scored 2 of 2 probe documents, best document 1 at 0.400"
    );
    assert_eq!(mock.stats()["rerank_requests"], 1, "{}", mock.stats());

    // A closed port: exit 2, one line, neither the key nor the URL's query.
    let down = project(
        &servers,
        "reranker:\n  base_url: http://127.0.0.1:1/v1?token=q-secret-5678\n  api_key_env: RAGEVAL_TEST_RERANK_KEY\n  max_retries: 0\n",
    );
    rageval(&down, &["validate", "--connect"])
        .status(2)
        .stderr("error: the reranker probe failed: connect at http://127.0.0.1:1/v1/rerank?<redacted>: cannot connect to http://127.0.0.1:1/v1?<redacted>\n")
        .stdout_lacks(KEY)
        .stdout_lacks("q-secret")
        .stdout(concat!(
            "ok    sets/shop.yaml: 2 answerable, 1 unanswerable; passages from the `http` retriever\n",
            "      at 95%, 1 unanswerable and 2 answerable questions can certify at best unwanted ≤ 95% and false refusals ≤ 77.6% for one setting, unwanted ≤ 98.8% and false refusals ≤ 88.8% at the first setting of each of the 2 chains along min_score of the configured grid\n",
            "      plan for a chance of 80% at 95% by ordered tests (level 1.25%, at the first setting of each of the 2 chains along min_score of the configured grid), if each true rate is half its limit: unwanted 10% needs 126 unanswerable questions (this set has 1), or 20 with none answered; false refusals 25% needs 37 answerable questions (this set has 2), or 7 with none refused\n",
        ))
        .run();
}

/// The rerank calls of a results file: (digest, prompt tokens, has a latency, cached), in
/// record order.
fn rerank_calls(doc: &Record) -> Vec<(String, u64, bool, bool)> {
    doc.calls
        .iter()
        .filter(|(_, c)| c.role == CallRole::Rerank)
        .map(|(digest, c)| {
            (
                digest.clone(),
                c.usage.prompt_tokens,
                c.latency_ms.is_some(),
                c.cached,
            )
        })
        .collect()
}

/// `summary.calls`' rerank counters: (calls, cache hits, failed).
fn rerank_counters(summary: &Value) -> [u64; 3] {
    let c = &summary["calls"];
    ["rerank_calls", "rerank_cache_hits", "rerank_failed"].map(|k| c[k].as_u64().unwrap())
}

#[test]
fn rerank_calls_are_counted_in_the_record_the_reports_and_the_dry_run() {
    let servers = Servers::start();
    let mock = MockLlm::start(&["--api-key", KEY]);
    let p = project(
        &servers,
        &format!(
            "reranker:\n  base_url: {}\n  model: mock-rerank\n  api_key_env: RAGEVAL_TEST_RERANK_KEY\n  candidates: 3\n",
            mock.url
        ),
    );
    let run = |args: &[&str], snapshot: &str| rageval(&p, args).stdout_snapshot(snapshot).run();
    let requests = || mock.stats()["rerank_requests"].as_u64().unwrap();

    // A dry run makes the rerank calls (their scores decide which prompts exist), one per
    // distinct question text: the repeated question shares one.
    let dry = run(
        &["sweep", "--dry-run", "--output", "json"],
        "rerank__rerank_calls_are_counted_in_the_record_the_reports_and_the_dry_run",
    )
    .stdout_json();
    let plan = &dry["dry_run"][0];
    assert_eq!(
        (
            plan["rerank_calls"].as_u64(),
            plan["cached_reranks"].as_u64()
        ),
        (Some(2), Some(0))
    );
    assert_eq!(requests(), 2, "the dry run's calls are the server's");
    let table = run(
        &["sweep", "--dry-run"],
        "rerank__rerank_calls_are_counted_in_the_record_the_reports_and_the_dry_run_2",
    )
    .stdout;
    assert_eq!(
        table.lines().next().unwrap(),
        "dry run: no chat call was made and no report written; the corpus and 2 question texts were embedded to plan the prompts, and their passages reranked (2 rerank calls: 2 from the cache, 0 made); the sweep reranks from the cache."
    );
    assert_eq!(requests(), 2, "the second dry run reranks from the cache");

    // A sweep without the cache makes the calls the dry run counted.
    let out = run(
        &["sweep", "--no-cache", "--out", "out"],
        "rerank__rerank_calls_are_counted_in_the_record_the_reports_and_the_dry_run_3",
    );
    assert_eq!(requests(), 2 + 2);
    let doc = out.results();
    assert_eq!(rerank_counters(&out.summary()), [2, 0, 0]);
    // The mock reports llama.cpp's usage: a quarter token a character, rounded up, of the query
    // and each of the three passages sent.
    let calls = rerank_calls(&doc);
    let tokens: Vec<(u64, bool, bool)> = calls.iter().map(|c| (c.1, c.2, c.3)).collect();
    assert_eq!(
        tokens,
        [
            (9 + 9 + 10 + 13, true, false),
            (6 + 9 + 13 + 10, true, false)
        ]
    );
    // Every run names the call that scored its passages: the two Sunday questions share one.
    let by_question: Vec<(String, String)> = doc
        .runs
        .iter()
        .take(3)
        .map(|r| (r.question.clone(), r.rerank_call.clone().unwrap()))
        .collect();
    assert_eq!(
        by_question,
        [
            ("open-sunday".to_string(), calls[0].0.clone()),
            ("open-sunday-again".to_string(), calls[0].0.clone()),
            ("parking".to_string(), calls[1].0.clone()),
        ]
    );
    assert!(doc.runs.iter().all(|r| r.rerank_call.is_some()));
    let line = "reranker `mock-rerank`: 2 calls (0 from cache, 0 failed)";
    assert!(out.stdout.lines().any(|l| l == line), "{}", out.stdout);
    assert!(
        p.read("out/report.md")
            .lines()
            .any(|l| l == format!("**Reranker.** {line}")),
        "{}",
        p.read("out/report.md")
    );
    assert!(p
        .read("out/report.html")
        .contains(&format!("<p class=\"meta\">{line}.</p>\n</header>\n")));

    // With the cache (the dry run filled it): no call made, every one a cache hit.
    let again = run(
        &["sweep", "--out", "again"],
        "rerank__rerank_calls_are_counted_in_the_record_the_reports_and_the_dry_run_4",
    );
    assert_eq!(requests(), 4, "the cached sweep makes no rerank call");
    assert_eq!(rerank_counters(&again.summary()), [2, 2, 0]);
    let cached: Vec<(String, u64, bool, bool)> = rerank_calls(&again.results());
    assert_eq!(
        cached,
        [
            (calls[0].0.clone(), 0, false, true),
            (calls[1].0.clone(), 0, false, true)
        ]
    );
    assert!(p
        .read("again/report.md")
        .lines()
        .any(|l| l == "**Reranker.** reranker `mock-rerank`: 2 calls (2 from cache, 0 failed)"));
}
