//! `chat.kind: http`, the generation contract, against real servers on loopback: `rageval
//! mock-llm`'s `/generate` (the mock behind the contract: a sweep through it must equal the
//! builtin mock's, and its request counter shows the dedup and the cache), and a server
//! started here that breaks the contract one way per path.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use serde_json::{json, Value};

use crate::harness::Test;
use crate::http::{keyed, MockLlm, KEY_ENV};
use crate::retrievers::runs_without_timings;
use crate::support::{col, read_csv, Project, SAMPLE_SWEEP};

/// The sample with `chat:` at the mock's `/generate` (and `extra` after it).
fn generate_project(server: &MockLlm, extra: &str) -> Project {
    let p = Project::sample();
    p.write(
        "rageval.yaml",
        &format!(
            "evalsets: [evalsets/club.yaml]\nchat:\n  kind: http\n  url: {}\n  api_key_env: {KEY_ENV}\n{extra}",
            generate_url(server)
        ),
    );
    p
}

fn generate_url(server: &MockLlm) -> String {
    format!("{}/generate", server.url.trim_end_matches("/v1"))
}

fn generated(server: &MockLlm) -> u64 {
    server.stats()["generate_requests"].as_u64().unwrap()
}

#[test]
fn a_generation_endpoint_sweeps_as_the_builtin_mock_and_calls_once_per_distinct_request() {
    let server = MockLlm::start(&[]);
    let p = generate_project(&server, "");
    p.write("builtin.yaml", "evalsets: [evalsets/club.yaml]\n");
    p.rageval(["--config", "builtin.yaml"])
        .args(SAMPLE_SWEEP)
        .args(["--out", "builtin", "-q"])
        .run();
    let out = keyed(&p, SAMPLE_SWEEP).args(["--out", "http", "-q"]).run();
    assert_eq!(
        runs_without_timings(&p, "http"),
        runs_without_timings(&p, "builtin")
    );
    let distinct = out.results().calls.len() as u64;
    assert_eq!(
        generated(&server),
        distinct,
        "one call per distinct request"
    );
    assert_eq!(server.stats()["chat_requests"], 0);

    // Two prompt formats: the builtin model gets two prompts per passage list, the endpoint
    // (which builds its own prompt) one request; the answers are the same.
    let formats = ["--format", "numbered,tagged", "-q", "--no-cache"];
    let both = keyed(&p, SAMPLE_SWEEP)
        .args(formats)
        .args(["--out", "formats"])
        .run();
    assert_eq!(generated(&server), 2 * distinct);
    assert_eq!(both.results().calls.len() as u64, distinct);
    p.rageval(["--config", "builtin.yaml"])
        .args(SAMPLE_SWEEP)
        .args(formats)
        .args(["--out", "builtin-formats"])
        .run();
    let prompts = crate::harness::results(&p, "builtin-formats").calls.len() as u64;
    assert!(prompts > distinct, "{prompts} builtin prompts");

    // The cache answers a rerun; a dry run counts it and calls nothing.
    let dry = keyed(&p, &["sweep", "--dry-run", "--output", "json"])
        .args(&SAMPLE_SWEEP[1..])
        .stdout_snapshot("chat_http__a_generation_endpoint_sweeps_as_the_builtin_mock_and_calls_once_per_distinct_request_3")
        .run()
        .stdout_json();
    let row = &dry["dry_run"][0];
    assert_eq!(row["model"], "http");
    assert_eq!(row["distinct_prompts"].as_u64(), Some(distinct));
    assert_eq!(
        (row["cached_prompts"].as_u64(), row["calls"].as_u64()),
        (Some(distinct), Some(0))
    );
    keyed(&p, SAMPLE_SWEEP)
        .args(["--out", "again", "--wide"])
        .stdout_contains(format!(
            "{distinct} distinct prompts ({distinct} from cache, 0 failed)"
        ))
        .stdout_snapshot("chat_http__a_generation_endpoint_sweeps_as_the_builtin_mock_and_calls_once_per_distinct_request")
        .run();
    assert_eq!(generated(&server), 2 * distinct, "the rerun made no call");
    assert_eq!(
        runs_without_timings(&p, "again"),
        runs_without_timings(&p, "http")
    );

    // With the cache off, a dry run predicts every call, and makes none.
    let cold = keyed(
        &p,
        &["sweep", "--dry-run", "--output", "json", "--no-cache"],
    )
    .args(&SAMPLE_SWEEP[1..])
    .stdout_snapshot("chat_http__a_generation_endpoint_sweeps_as_the_builtin_mock_and_calls_once_per_distinct_request_2")
    .run()
    .stdout_json();
    assert_eq!(cold["dry_run"][0]["calls"].as_u64(), Some(distinct));
    assert!(cold["dry_run"][0]["prompt_tokens"].as_u64().unwrap() > 0);
    assert_eq!(generated(&server), 2 * distinct);
}

#[test]
fn early_refusals_make_no_call_and_profiles_mix_an_endpoint_with_a_plain_model() {
    let server = MockLlm::start(&[]);
    let p = generate_project(&server, "");
    // No passage scores 0.9: every run refuses early, nothing is called, the sweep succeeds.
    let out = keyed(&p, &["sweep", "-q", "--min-score", "0.9", "--k", "4"]).run();
    assert!(out.results().runs.iter().all(|r| r.call.is_none()));
    assert_eq!(generated(&server), 0);

    let openai = &server.url;
    p.write(
        "mixed.yaml",
        &format!(
            "evalsets: [evalsets/club.yaml]\nmodels:\n  chain:\n    kind: http\n    url: {}\n    model: support-chain-v1\n    api_key_env: {KEY_ENV}\n  plain:\n    kind: openai\n    base_url: {openai}\n    model: mock\n    api_key_env: {KEY_ENV}\n",
            generate_url(&server)
        ),
    );
    let out = keyed(&p, &["--config", "mixed.yaml", "sweep", "-q"])
        .args(["--chat", "chain,plain", "--min-score", "0.2", "--k", "1,4"])
        .run();
    let doc = out.results();
    let stats = server.stats();
    let (chain, plain) = (
        stats["generate_requests"].as_u64().unwrap(),
        stats["chat_requests"].as_u64().unwrap(),
    );
    assert!(chain > 0 && chain == plain, "{stats}");
    assert_eq!(doc.calls.len() as u64, chain + plain);
    // The same mock behind both contracts: each question's outcome is the same in both.
    let (header, rows) = read_csv(&p.read("reports/latest/runs.csv"));
    let outcome = |chat: &str, q: &str, k: &str| {
        rows.iter()
            .find(|r| {
                col(&header, r, "chat") == chat
                    && col(&header, r, "question_id") == q
                    && col(&header, r, "k") == k
            })
            .map(|r| col(&header, r, "outcome").to_string())
            .unwrap()
    };
    for q in ["fee-per-term", "vice-president", "laptop-rules"] {
        for k in ["1", "4"] {
            assert_eq!(outcome("chain", q, k), outcome("plain", q, k), "{q} k={k}");
        }
    }
    let table = keyed(&p, &["--config", "mixed.yaml", "sweep"])
        .args([
            "--chat",
            "chain,plain",
            "--min-score",
            "0.2",
            "--k",
            "1,4",
            "--wide",
        ])
        .stdout_snapshot("chat_http__early_refusals_make_no_call_and_profiles_mix_an_endpoint_with_a_plain_model")
        .run()
        .stdout;
    assert!(
        table.starts_with("models: chain = support-chain-v1, plain = mock\n"),
        "{table}"
    );
}

/// Requests by path.
type Counts = Arc<Mutex<BTreeMap<String, u64>>>;

/// A generation endpoint that breaks the contract one way per path.
struct BadServer {
    addr: SocketAddr,
    counts: Counts,
    _runtime: tokio::runtime::Runtime,
}

impl BadServer {
    fn start() -> Self {
        let runtime = crate::support::server_runtime();
        let counts = Counts::default();
        let app = Router::new()
            .route("/{mode}", post(reply))
            .with_state(counts.clone());
        let addr = crate::support::serve(&runtime, app);
        BadServer {
            addr,
            counts,
            _runtime: runtime,
        }
    }

    fn url(&self, mode: &str) -> String {
        format!("http://{}/{mode}", self.addr)
    }

    fn count(&self, mode: &str) -> u64 {
        self.counts.lock().unwrap().get(mode).copied().unwrap_or(0)
    }
}

async fn reply(
    State(counts): State<Counts>,
    UrlPath(mode): UrlPath<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    *counts.lock().unwrap().entry(mode.clone()).or_default() += 1;
    let request: Value = serde_json::from_slice(&body).unwrap();
    // Exactly the two fields of the contract.
    assert_eq!(
        request.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["passages", "question"]
    );
    let answer = format!(
        "It costs ten dollars. [1] ({} passage(s))",
        request["passages"].as_array().unwrap().len()
    );
    match mode.as_str() {
        "no-usage" => axum::Json(json!({ "answer": answer })).into_response(),
        "usage" => axum::Json(
            json!({ "answer": answer, "usage": {"prompt_tokens": 1234, "completion_tokens": 56} }),
        )
        .into_response(),
        "not-json" => (StatusCode::OK, "<html>Bad gateway</html>").into_response(),
        "no-answer" => axum::Json(json!({ "text": answer })).into_response(),
        "number" => axum::Json(json!({ "answer": 42 })).into_response(),
        "bad-usage" => axum::Json(json!({ "answer": answer, "usage": {"prompt_tokens": "many"} }))
            .into_response(),
        "500" => (StatusCode::INTERNAL_SERVER_ERROR, "down").into_response(),
        // Counts that no call can have, which saturated the sweep's totals.
        "max-usage" => axum::Json(json!({
            "answer": answer,
            "usage": {"prompt_tokens": u64::MAX, "completion_tokens": 5}
        }))
        .into_response(),
        // An answer past the 1 MiB that one answer may have.
        "long" => axum::Json(json!({ "answer": "a".repeat((1 << 20) + 1) })).into_response(),
        // Answers questions about the fee, fails the others.
        "picky" if request["question"].as_str().unwrap().contains("fee") => {
            axum::Json(json!({ "answer": answer })).into_response()
        }
        "400" | "picky" => (
            StatusCode::BAD_REQUEST,
            axum::Json(json!({"error": {"message": "chain raised KeyError: 'context'"}})),
        )
            .into_response(),
        // A reply that never ends: spaces, 64 KiB at a time.
        "huge" => {
            let spaces = Bytes::from(vec![b' '; 1 << 16]);
            let body = futures_util::stream::repeat(Ok::<_, std::convert::Infallible>(spaces));
            axum::body::Body::from_stream(body).into_response()
        }
        // An endpoint that quotes what it was sent: the key and the header hidden on the way.
        "echo" => {
            let shown = |h: &str| {
                headers
                    .get(h)
                    .map(|v| v.to_str().unwrap().to_string())
                    .unwrap_or_default()
            };
            axum::Json(json!({
                "answer": format!("{} {} {answer}", shown("authorization"), shown("x-tenant")),
            }))
            .into_response()
        }
        _ => StatusCode::NOT_FOUND.into_response(),
    }
}

const SET: &str = "corpus: docs\nanswerable:\n  - id: fee\n    question: What is the fee per term?\n    expect: {answer: [ten dollars]}\n";

const SECRET_KEY: &str = "sk-chain-secret-4242";

/// The one-document project with `chat:` at `url` on the bad server.
fn bad_project(url: &str, extra: &str) -> Project {
    let p = Project::one_doc(SET);
    p.write(
        "rageval.yaml",
        &format!(
            "evalsets: [set.yaml]\nsweep: {{min_score: \"0.1\", k: \"1\"}}\nchat:\n  kind: http\n  url: {url}\n  api_key_env: RAGEVAL_TEST_CHAIN_KEY\n  max_retries: 2\n  backoff_ms: 1\n  headers: {{X-Tenant: tenant-secret-77}}\n{extra}"
        ),
    );
    p
}

fn bad_sweep(p: &Project) -> Test<'_> {
    p.rageval(["sweep", "-q", "--out", "out"])
        .env("RAGEVAL_TEST_CHAIN_KEY", SECRET_KEY)
}

#[test]
fn usage_is_the_endpoints_when_given_and_estimated_and_marked_when_not() {
    let server = BadServer::start();
    for (mode, prompt_tokens, estimated) in [("usage", 1234, false), ("no-usage", 0, true)] {
        let p = bad_project(&server.url(mode), "");
        let out = bad_sweep(&p).run();
        let doc = out.results();
        let call = doc.calls.values().next().unwrap();
        assert_eq!(call.usage.estimated, estimated, "{mode}");
        if estimated {
            // Four characters a token over the question and the passage it was sent.
            let sent = "The fee is ten dollars per term.".len();
            let question = "What is the fee per term?".len();
            assert_eq!(
                call.usage.prompt_tokens,
                (question as u64).div_ceil(4) + (sent as u64).div_ceil(4)
            );
            assert_eq!(
                call.usage.completion_tokens,
                (call.reply.len() as u64).div_ceil(4)
            );
        } else {
            assert_eq!(
                (call.usage.prompt_tokens, call.usage.completion_tokens),
                (prompt_tokens, 56)
            );
        }
        let (header, rows) = read_csv(&p.read("out/summary.csv"));
        assert_eq!(
            col(&header, &rows[0], "tokens_estimated"),
            estimated.to_string()
        );
        assert_eq!(server.count(mode), 1);
    }
}

#[test]
fn a_bad_reply_is_one_error_naming_the_question_and_no_secret() {
    let server = BadServer::start();
    let at = |mode: &str| format!("at http://{}/{mode}?<redacted>", server.addr);
    let q = "generation for question `What is the fee per term?` failed";
    let shape =
        "the reply is not `{\"answer\": \"...\", \"usage\"?: {prompt_tokens, completion_tokens}}`";
    for (mode, attempts, why) in [
        (
            "not-json",
            3,
            format!("malformed {}: the reply is not JSON: expected value at line 1 column 1 (after 3 attempts)", at("not-json")),
        ),
        ("no-answer", 1, format!("malformed {}: {shape}: it has no `answer`", at("no-answer"))),
        ("number", 1, format!("malformed {}: {shape}: `answer` is a number, not a string", at("number"))),
        (
            "bad-usage",
            1,
            format!("malformed {}: {shape}: `usage` needs `prompt_tokens` and `completion_tokens` as whole numbers (leave `usage` out to have them estimated)", at("bad-usage")),
        ),
        ("500", 3, format!("server {}: 500 Internal Server Error (after 3 attempts)", at("500"))),
        (
            "max-usage",
            1,
            format!("malformed {}: `usage.prompt_tokens` is 18446744073709551615, more than one call can count (1000000000)", at("max-usage")),
        ),
        (
            "long",
            1,
            format!("malformed {}: the reply has 1048577 bytes, more than the limit of 1024 KiB for one answer", at("long")),
        ),
        (
            "400",
            1,
            format!("client {}: 400 Bad Request: chain raised KeyError: 'context'", at("400")),
        ),
        (
            "huge",
            1,
            format!(
                "malformed {}: the reply from http://{}/huge?<redacted> is larger than the limit of 32 MiB",
                at("huge"),
                server.addr
            ),
        ),
    ] {
        let p = bad_project(&format!("{}?token=query-secret-99", server.url(mode)), "");
        let kind = why.split(' ').next().unwrap();
        bad_sweep(&p)
            .status(2)
            .stdout("")
            .stderr(format!(
                "error: every model call failed (1 {kind}); no report written; the first: {q}: {why}\n"
            ))
            .absent("out")
            .run();
        assert_eq!(server.count(mode), attempts, "{mode}");
        // Kept for a rerun to resume: nothing failed is cached, no secret is anywhere.
        assert_no_secret(&p);
    }
    // A failure among answers is an `error` run, reported with the first failure; the
    // reports hold no secret either.
    let p = bad_project(&server.url("picky"), "");
    p.write(
        "set.yaml",
        &format!("{SET}  - id: rules\n    question: What are the rules?\n"),
    );
    let out = bad_sweep(&p).arg("--allow-errors")
        .stderr(
            "warning: 1 of 2 model calls failed (1 client); their runs are `error` in the reports; the first: generation for question `What are the rules?` failed: client at http://127.0.0.1:[PORT]/picky: 400 Bad Request: chain raised KeyError: 'context'\n",
        )
        .run();
    assert_eq!(
        out.stderr,
        format!("warning: 1 of 2 model calls failed (1 client); their runs are `error` in the reports; the first: generation for question `What are the rules?` failed: client at {}: 400 Bad Request: chain raised KeyError: 'context'\n", server.url("picky"))
    );
    let (header, rows) = read_csv(&p.read("out/runs.csv"));
    let outcomes: Vec<&str> = rows.iter().map(|r| col(&header, r, "outcome")).collect();
    assert_eq!(outcomes, ["answer", "error"]);
    assert_no_secret(&p);
}

#[test]
fn an_endpoint_that_echoes_credentials_has_them_hidden_everywhere() {
    let server = BadServer::start();
    let p = bad_project(&server.url("echo"), "");
    let out = bad_sweep(&p).run();
    let call = out.results().calls.values().next().unwrap().clone();
    assert!(call.reply.starts_with("Bearer "), "{}", call.reply);
    assert_no_secret(&p);
    // Credentials in the URL go as Basic auth (with no key); echoed, they are hidden too.
    let basic = bad_project(
        &server
            .url("echo")
            .replace("http://", "http://chain-user:pass-secret-55@"),
        "",
    );
    let out = basic
        .rageval(["sweep", "-q", "--out", "out"])
        .env_remove("RAGEVAL_TEST_CHAIN_KEY")
        .run();
    let reply = out.results().calls.values().next().unwrap().reply.clone();
    assert!(reply.starts_with("Basic <redacted>"), "{reply}");
    for file in walk(basic.path())
        .iter()
        .filter(|f| !f.ends_with("rageval.yaml"))
    {
        let text = String::from_utf8_lossy(&std::fs::read(file).unwrap()).into_owned();
        // `chain-user:pass-secret-55` in base64 is `Y2hhaW4tdXNlcjpwYXNzLXNlY3JldC01NQ==`.
        for secret in [
            "pass-secret-55",
            "Y2hhaW4tdXNlcjpwYXNzLXNlY3JldC01NQ",
            "tenant-secret-77",
        ] {
            assert!(!text.contains(secret), "{} holds {secret}", file.display());
        }
    }
    // `ask` shows the same hidden reply; `prompt` shows the body the endpoint is sent.
    let ask = p
        .rageval([
            "ask",
            "What is the fee per term?",
            "--min-score",
            "0.1",
            "--k",
            "1",
        ])
        .env("RAGEVAL_TEST_CHAIN_KEY", SECRET_KEY)
        .stdout(concat!(
            "Bearer <redacted> <redacted> It costs ten dollars. [a.md > Fee] (1 passage(s))\n",
            "\n",
            "sources (* cited):\n",
            "  *[1] a.md > Fee (0.816)\n",
            "tokens: prompt 15, completion 18 (estimated)\n",
        ))
        .run();
    assert!(!ask.stdout.contains(SECRET_KEY) && !ask.stdout.contains("tenant-secret-77"));
    p.rageval(["prompt", "What is the fee per term?", "--min-score", "0.1", "--k", "1"])
        .stdout(format!(
            "--- POST {}\n{{\n  \"question\": \"What is the fee per term?\",\n  \"passages\": [\n    {{\n      \"id\": \"a.md#0\",\n      \"source\": \"a.md\",\n      \"heading\": \"Fee\",\n      \"text\": \"The fee is ten dollars per term.\",\n      \"score\": {}\n    }}\n  ]\n}}\n",
            server.url("echo"),
            out.results().runs[0].passages[0].1
        ))
        .run();
}

/// No file the project holds (reports, the response cache, results) and no earlier output
/// names a secret of the config or the environment.
fn assert_no_secret(p: &Project) {
    for file in walk(p.path()) {
        let text = String::from_utf8_lossy(&std::fs::read(&file).unwrap()).into_owned();
        for secret in [SECRET_KEY, "tenant-secret-77", "query-secret-99"] {
            if file.ends_with("rageval.yaml") && secret != SECRET_KEY {
                continue;
            }
            assert!(!text.contains(secret), "{} holds {secret}", file.display());
        }
    }
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn a_generation_endpoint_without_its_url_or_with_openai_fields_is_refused_naming_the_line() {
    for (config, line) in [
        (
            "chat:\n  kind: http\n",
            "rageval.yaml:2: `chat.url`: is missing: `kind: http` needs the generation endpoint's URL (`POST {url}` with the question and passages)",
        ),
        (
            "chat:\n  kind: http\n  url: http://127.0.0.1:1/generate\n  base_url: http://127.0.0.1:1/v1\n",
            "rageval.yaml:4: `chat.base_url`: applies to `kind: openai`; a generation endpoint (`kind: http`) takes `url`, the whole URL it is posted to",
        ),
        (
            "models:\n  chain:\n    kind: http\n    url: [http://127.0.0.1:1/generate, 127.0.0.1:2/generate]\n",
            "rageval.yaml:4: `models.chain.url`: `127.0.0.1:2/generate` must start with http:// or https://",
        ),
        (
            "models:\n  chain:\n    kind: http\n    url: http://127.0.0.1:1/generate\n    stream: true\n",
            "rageval.yaml:5: `models.chain.stream`: applies to `kind: openai`: a generation endpoint (`kind: http`) is sent the question and passages alone",
        ),
        (
            "chat:\n  url: http://127.0.0.1:1/generate\n",
            "rageval.yaml:2: `chat.url`: applies to `kind: http` (a generation endpoint); `kind: openai` takes `base_url`",
        ),
        (
            "judge:\n  kind: http\n",
            "rageval.yaml:2: `judge.kind`: `http` is the generation contract, which sends no rubric; the judge is `openai` or `mock`",
        ),
    ] {
        Test::new()
            .write("rageval.yaml", config)
            .args(["sweep", "-q"])
            .fails(line)
            .run();
    }
    // Model rewrites ask the `chat:` model a rewrite prompt, which an endpoint is never sent.
    Test::new()
        .write("rageval.yaml", "chat:\n  kind: http\n  url: http://127.0.0.1:1/generate\n")
        .args(["sweep", "-q", "--rewrite", "none,model"])
        .fails("invalid --rewrite: `model` asks the `chat:` model to rewrite follow-up questions, and `chat.kind: http` is a generation endpoint, sent questions and passages, not a rewrite prompt; use `heuristic`, or keep an `openai` model in `chat:` and sweep the endpoint as a `models:` profile")
        .run();
}
