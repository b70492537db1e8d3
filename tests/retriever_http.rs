//! The HTTP retriever against a search service started inside the test that misbehaves on
//! purpose: one whose ranking at k = 1 is no prefix of its ranking at k = 2
//! (`retriever.query_per_k`), and ones that fail a few times, or always, with a 500 or a body
//! that is not JSON.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::extract::{Json, Path as UrlPath, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use serde_json::{json, Value};

use crate::harness::Test;
use crate::rerank::{rows, runs, PASSAGES, SET};
use crate::support::Project;

/// Requests by `path k`.
type Counts = Arc<Mutex<BTreeMap<String, u64>>>;

struct Service {
    addr: SocketAddr,
    counts: Counts,
    _runtime: tokio::runtime::Runtime,
}

impl Service {
    fn start() -> Self {
        let runtime = crate::support::server_runtime();
        let counts = Counts::default();
        let app = Router::new()
            .route("/{mode}/{n}", post(search))
            .with_state(counts.clone());
        let addr = crate::support::serve(&runtime, app);
        Service {
            addr,
            counts,
            _runtime: runtime,
        }
    }

    fn count(&self, key: &str) -> u64 {
        self.counts.lock().unwrap().get(key).copied().unwrap_or(0)
    }
}

fn hit(id: &str, score: f64) -> Value {
    let text = PASSAGES.iter().find(|p| p.0 == id).unwrap().1;
    json!({"id": id, "source": format!("{id}.md"), "text": text, "score": score})
}

/// `/per-k/0`: at k = 1 `returns`, at k = 2 `hours` and `sunday` (no prefix of each other).
/// `/json/N` and `/500/N`: the first N requests get a body that is not JSON or a 500, later
/// ones the k = 2 ranking; N = 99 fails every time.
async fn search(
    State(counts): State<Counts>,
    UrlPath((mode, n)): UrlPath<(String, u64)>,
    Json(body): Json<Value>,
) -> Response {
    let k = body["k"].as_u64().unwrap();
    let seen = {
        let mut c = counts.lock().unwrap();
        *c.entry(format!("{mode} {k}")).or_default() += 1;
        let all = c.entry(mode.clone()).or_default();
        *all += 1;
        *all
    };
    let hits = if mode == "per-k" && k == 1 {
        vec![hit("returns", 0.8)]
    } else {
        vec![hit("hours", 0.9), hit("sunday", 0.7)]
    };
    if seen <= n {
        match mode.as_str() {
            "json" => return (StatusCode::OK, "{\"hits\": [").into_response(),
            "500" => return (StatusCode::INTERNAL_SERVER_ERROR, "down").into_response(),
            _ => {}
        }
    }
    Json(json!({ "hits": hits })).into_response()
}

const TOKEN: &str = "sk-search-secret-9876";

fn project(service: &Service, path: &str, extra: &str) -> Project {
    let p = Project::empty();
    p.write("sets/shop.yaml", SET);
    p.write(
        "rageval.yaml",
        &format!(
            "evalsets: [sets/shop.yaml]\nsweep: {{min_score: \"0.5\", k: \"1,2\"}}\nretriever:\n  kind: http\n  url: http://{}{path}\n  api_key_env: RAGEVAL_TEST_SEARCH_TOKEN\n  max_retries: 2\n  backoff_ms: 1\n{extra}",
            service.addr
        ),
    );
    p
}

/// `rageval ARGS` with the search service's token.
fn rageval<'p>(p: &'p Project, args: &[&str]) -> Test<'p> {
    p.rageval(args).env("RAGEVAL_TEST_SEARCH_TOKEN", TOKEN)
}

fn sweep(p: &Project) -> Test<'_> {
    rageval(p, &["sweep", "--out", "out", "--quiet"])
}

#[test]
fn query_per_k_retrieves_once_per_question_and_k_and_uses_each_ranking() {
    let service = Service::start();
    // By default one search per question text at the largest k; k = 1 takes its first hit.
    let p = project(&service, "/per-k/0", "");
    sweep(&p).run();
    assert_eq!((service.count("per-k 1"), service.count("per-k 2")), (0, 2));
    assert_eq!(runs(&p, "out")[0][5], "hours");

    let p = project(&service, "/per-k/0", "  query_per_k: true\n");
    let out = sweep(&p).run();
    // Two distinct question texts (one asked twice), two k: 2 more searches at each k.
    assert_eq!((service.count("per-k 1"), service.count("per-k 2")), (2, 4));
    assert_eq!(
        runs(&p, "out"),
        rows(
            "\
        open-sunday       | 0.5 | 1 | false_refusal | 0.900000 | returns
        open-sunday-again | 0.5 | 1 | false_refusal | 0.900000 | returns
        parking           | 0.5 | 1 | model_refusal | 0.900000 | returns
        open-sunday       | 0.5 | 2 | answer        | 0.900000 | hours sunday
        open-sunday-again | 0.5 | 2 | answer        | 0.900000 | hours sunday
        parking           | 0.5 | 2 | model_refusal | 0.900000 | hours sunday"
        )
    );
    let doc = out.results();
    let retriever = doc.identity.identity.config.retriever.as_ref().unwrap();
    assert!(retriever.query_per_k);
}

#[test]
fn malformed_json_and_500s_are_retried_then_name_the_question_without_the_token() {
    let service = Service::start();
    // Two failures, then an answer: max_retries 2 is enough.
    for mode in ["json", "500"] {
        let p = project(&service, &format!("/{mode}/2?token=q-secret"), "");
        sweep(&p).run();
        assert_eq!(
            service.count(mode),
            2 + 2,
            "{mode}: two failures, two texts"
        );
    }
    // Always failing: three attempts, then one line naming the first question.
    let shown = |mode: &str| format!("http://{}/{mode}/99?<redacted>", service.addr);
    for (mode, why) in [
        (
            "json",
            format!("malformed at {}: the reply is not JSON: EOF while parsing a list at line 1 column 10 (after 3 attempts)", shown("json")),
        ),
        (
            "500",
            format!("server at {}: 500 Internal Server Error (after 3 attempts)", shown("500")),
        ),
    ] {
        let p = project(&service, &format!("/{mode}/99?token=q-secret"), "");
        sweep(&p)
            .status(2)
            .stdout("")
            .stderr(format!(
                "error: retrieval for question `open-sunday` failed: {why}\n"
            ))
            .run();
        assert!(!p.path().join("out").exists(), "{mode}: no report");
    }
    // No output above held the token or the URL's query; a sweep's files hold neither.
    let p = project(&service, "/json/0?token=q-secret", "");
    sweep(&p).run();
    let results = p.read("out/results.json");
    assert!(!results.contains(TOKEN) && !results.contains("q-secret"));
}

/// A service that is down is found at the first question (issue 33): its retries, and those
/// of the searches already in flight, then nothing more. Before, every one of the 40 questions
/// was retried to its end (120 requests) before the sweep stopped.
#[test]
fn a_failing_retriever_stops_the_sweep_at_the_first_question() {
    let service = Service::start();
    let p = project(&service, "/500/999999", "");
    let questions: String = (0..40)
        .map(|i| format!("  - id: q{i:02}\n    question: What does question {i} ask?\n"))
        .collect();
    p.write("sets/shop.yaml", &format!("unanswerable:\n{questions}"));
    sweep(&p)
        .status(2)
        .stdout("")
        .stderr(format!(
            "error: retrieval for question `q00` failed: server at http://{}/500/999999: 500 Internal Server Error (after 3 attempts)\n",
            service.addr
        ))
        .run();
    // Three attempts for each of the 8 searches in flight at most.
    let asked = service.count("500");
    assert!((3..=24).contains(&asked), "{asked} requests");
}

#[test]
fn query_per_k_is_refused_where_it_cannot_apply() {
    let service = Service::start();
    let p = project(
        &service,
        "/per-k/0",
        "  query_per_k: true\nreranker:\n  base_url: http://127.0.0.1:1/v1\n",
    );
    sweep(&p)
        .status(2)
        .stderr("error: rageval.yaml:9: `retriever.query_per_k`: cannot be combined with a `reranker`, which reorders one list of candidates per question (raise `retriever.ef_search` instead)\n")
        .run();
}

#[test]
fn validate_checks_a_foreign_retrievers_sets_and_connects_only_when_asked() {
    let service = Service::start();
    let p = project(&service, "/per-k/0", "");
    p.rageval(["validate"])
        .stdout("ok    sets/shop.yaml: 2 answerable, 1 unanswerable; passages from the `http` retriever\n      at 95%, 1 unanswerable and 2 answerable questions can certify at best unwanted ≤ 95% and false refusals ≤ 77.6% for one setting, unwanted ≤ 98.8% and false refusals ≤ 88.8% over the 2 settings of the configured grid\n      plan for a chance of 80% at 95% by ordered tests (level 1.25%, over the 2 settings of the configured grid), if each true rate is half its limit: unwanted 10% needs 126 unanswerable questions (this set has 1), or 20 with none answered; false refusals 25% needs 37 answerable questions (this set has 2), or 7 with none refused\n")
        .run();
    assert_eq!(service.count("per-k"), 0, "no request without --connect");

    let out = rageval(&p, &["validate", "--connect"])
        .stdout(concat!(
            "ok    sets/shop.yaml: 2 answerable, 1 unanswerable; passages from the `http` retriever\n",
            "      at 95%, 1 unanswerable and 2 answerable questions can certify at best unwanted ≤ 95% and false refusals ≤ 77.6% for one setting, unwanted ≤ 98.8% and false refusals ≤ 88.8% over the 2 settings of the configured grid\n",
            "      plan for a chance of 80% at 95% by ordered tests (level 1.25%, over the 2 settings of the configured grid), if each true rate is half its limit: unwanted 10% needs 126 unanswerable questions (this set has 1), or 20 with none answered; false refusals 25% needs 37 answerable questions (this set has 2), or 7 with none refused\n",
            "ok    retriever `http` at http://127.0.0.1:[PORT]/per-k/0: question `open-sunday` got 1 passage at k = 1\n",
        ))
        .run();
    assert_eq!(
        out.stdout.lines().last().unwrap(),
        format!(
            "ok    retriever `http` at http://{}/per-k/0: question `open-sunday` got 1 passage at k = 1",
            service.addr
        )
    );
    assert_eq!(service.count("per-k 1"), 1);

    let bad = project(&service, "/json/99?token=q-secret", "");
    rageval(&bad, &["validate", "--connect", "--quiet"])
        .status(2)
        .stdout("")
        .stderr(format!("error: retrieval for question `open-sunday` failed: malformed at http://{}/json/99?<redacted>: the reply is not JSON: EOF while parsing a list at line 1 column 10 (after 3 attempts)\n", service.addr))
        .run();

    // An expected passage must be named, by `source#heading` or by id.
    p.write(
        "sets/shop.yaml",
        &SET.replacen("expect: {ids: [sunday]", "expect: {ids: [sunday, \" \"]", 1),
    );
    p.rageval(["validate"])
        .status(2)
        .stderr("error: sets/shop.yaml:4: `answerable[0].expect.ids[1]`: is empty: name a passage by `source#heading` or by its id\n")
        .run();
}
