//! The HTTP path, for real: `rageval mock-llm` on an ephemeral loopback port, the sweep as an
//! OpenAI-compatible client, faults injected by the server.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::harness::{results, Record, RunRecord, Test, Usage, SAMPLE_SWEEP_TABLE};
use crate::support::{col, read_csv, spawn_announced, Project};

pub const KEY_ENV: &str = "RAGEVAL_TEST_KEY";

/// `rageval ARGS` in `p` with the mock's key.
pub fn keyed<'p>(p: &'p Project, args: &[&str]) -> Test<'p> {
    p.rageval(args).env(KEY_ENV, "test-key")
}

/// A `rageval mock-llm` process, killed when dropped.
pub struct MockLlm {
    child: Child,
    pub url: String,
    addr: String,
}

impl MockLlm {
    pub fn start(args: &[&str]) -> Self {
        let (child, line) = spawn_announced(
            Command::new(assert_cmd::cargo::cargo_bin("rageval"))
                .args(["mock-llm", "--addr", "127.0.0.1:0"])
                .args(args),
            "start mock-llm",
        );
        let url = line
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .expect("url in first line")
            .to_string();
        let addr = url
            .trim_start_matches("http://")
            .trim_end_matches("/v1")
            .to_string();
        MockLlm { child, url, addr }
    }

    /// `GET /stats`.
    pub fn stats(&self) -> Value {
        self.get("/stats")
    }

    /// `GET path`, a JSON answer.
    pub fn get(&self, path: &str) -> Value {
        let (status, body) = raw(&self.addr, "GET", path, &[], b"");
        assert_eq!(status, 200);
        serde_json::from_slice(&body).unwrap()
    }
}

impl Drop for MockLlm {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A minimal HTTP/1.1 request: (status, body).
pub fn raw(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> (u16, Vec<u8>) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    // The address as Host, unless the test names its own.
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        req.push_str(&format!("Host: {addr}\r\n"));
    }
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).unwrap();
    let _ = s.write_all(body);
    let mut resp = Vec::new();
    let _ = s.read_to_end(&mut resp);
    let text = String::from_utf8_lossy(&resp);
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body_at = text.find("\r\n\r\n").map(|i| i + 4).unwrap_or(resp.len());
    (status, resp[body_at..].to_vec())
}

/// A sample project whose config sends chat (and optionally embeddings) to `url`.
pub fn http_project(url: &str, http_embedder: bool, extra_chat: &str) -> Project {
    let p = Project::sample();
    let embedder = if http_embedder {
        format!("embedder:\n  kind: openai\n  base_url: {url}\n  model: hash-1024\n  api_key_env: {KEY_ENV}\n  batch_size: 64\n")
    } else {
        String::new()
    };
    p.write(
        "rageval.yaml",
        &format!(
            "evalsets: [evalsets/club.yaml]\n{embedder}chat:\n  kind: openai\n  base_url: {url}\n  model: mock\n  api_key_env: {KEY_ENV}\n{extra_chat}sweep:\n  min_score: 0.1..0.5\n  k: 1,2,4,8\n"
        ),
    );
    p
}

/// A run with its answer call's reply and tokens in place of the call's digest.
pub type RunAnswer = (RunRecord, Option<(String, Usage)>);

/// results.json without the figures that vary from run to run (latency) or name the backend
/// (call digests cover the model's name and parameters): each run with its call's reply and
/// tokens in place of the digest, and the settings' statistics as written.
pub fn comparable(p: &Project, out: &str) -> (Vec<RunAnswer>, Value) {
    let Record { runs, calls, .. } = results(p, out);
    let runs = runs
        .into_iter()
        .map(|mut run| {
            let answer = run.call.take().map(|digest| {
                let call = &calls[&digest];
                (call.reply.clone(), call.usage)
            });
            (run, answer)
        })
        .collect();
    let mut v = crate::harness::summary(p, out);
    for s in v["settings"].as_object_mut().unwrap().values_mut() {
        let s = s.as_object_mut().unwrap();
        s.remove("latency_p50_ms");
        s.remove("latency_p95_ms");
        s.remove("ttft_p50_ms");
        s.remove("ttft_p95_ms");
    }
    (runs, v["settings"].take())
}

pub fn builtin(p: &Project) -> (Vec<RunAnswer>, Value) {
    builtin_with(p, &[])
}

/// [`builtin`] over the grid of `args` (into `builtin/`).
pub fn builtin_with(p: &Project, args: &[&str]) -> (Vec<RunAnswer>, Value) {
    p.sweep([
        "--config",
        "/dev/null",
        "--evalset",
        "evalsets/club.yaml",
        "--out",
        "builtin",
    ])
    .args(args)
    .run();
    comparable(p, "builtin")
}

#[test]
fn http_sweep_equals_builtin_with_one_call_per_prompt_and_a_free_rerun() {
    let server = MockLlm::start(&[]);
    let p = http_project(&server.url, true, "");
    let out = keyed(&p, &["sweep"])
        .stdout_snapshot(SAMPLE_SWEEP_TABLE)
        .run();
    assert_eq!(
        comparable(&p, "reports/latest"),
        builtin(&p),
        "HTTP and builtin sweeps differ"
    );

    let distinct = out.summary()["calls"]["distinct_prompts"].as_u64().unwrap();
    let stats = server.stats();
    assert_eq!(
        stats["chat_requests"].as_u64(),
        Some(distinct),
        "one chat call per distinct prompt"
    );
    // 23 chunks and 26 questions, each embedded once, in one batch each.
    assert_eq!(stats["texts_embedded"].as_u64(), Some(23 + 26));
    assert_eq!(stats["embedding_requests"].as_u64(), Some(2));

    keyed(&p, &["sweep", "--wide"])
        .stdout_contains(format!(
            "{distinct} distinct prompts ({distinct} from cache, 0 failed)"
        ))
        .stdout_snapshot(
            "http__http_sweep_equals_builtin_with_one_call_per_prompt_and_a_free_rerun",
        )
        .run();
    let after = server.stats();
    assert_eq!(
        after["chat_requests"], stats["chat_requests"],
        "a rerun makes no chat call"
    );
    assert_eq!(
        after["embedding_requests"], stats["embedding_requests"],
        "nor an embedding call"
    );
    assert_eq!(comparable(&p, "reports/latest"), builtin(&p));

    // The key is never written anywhere.
    for f in [
        "reports/latest/results.json",
        ".rageval/cache/chat.jsonl",
        ".rageval/cache/embeddings.jsonl",
    ] {
        assert!(!p.read(f).contains("test-key"), "{f} holds the key");
    }
}

#[test]
fn small_embedding_batches_in_parallel_keep_their_order() {
    let server = MockLlm::start(&["--delay-ms", "5"]);
    let p = http_project(&server.url, true, "");
    let config = p
        .read("rageval.yaml")
        .replace("batch_size: 64", "batch_size: 5\n  concurrency: 3");
    p.write("rageval.yaml", &config);
    keyed(&p, &["sweep", "--no-cache"])
        .stdout_snapshot(SAMPLE_SWEEP_TABLE)
        .run();
    // 23 chunks and 26 questions in batches of 5: 5 + 6 requests.
    assert_eq!(server.stats()["embedding_requests"].as_u64(), Some(11));
    assert_eq!(
        comparable(&p, "reports/latest"),
        builtin(&p),
        "vectors came back in order"
    );
}

#[test]
fn streamed_sweep_equals_builtin() {
    let server = MockLlm::start(&[]);
    let p = http_project(&server.url, false, "");
    keyed(&p, &["sweep", "--stream", "--no-cache"])
        .stdout_snapshot("http__streamed_sweep_equals_builtin")
        .run();
    assert_eq!(comparable(&p, "reports/latest"), builtin(&p));
    let stats = server.stats();
    assert!(stats["chat_stream_requests"].as_u64().unwrap() > 0);
    assert_eq!(stats["chat_stream_requests"], stats["chat_requests"]);
}

#[test]
fn injected_500s_and_429s_are_retried_to_identical_results() {
    for status in ["500", "429"] {
        let server = MockLlm::start(&[
            "--fail-rate",
            "0.3",
            "--fail-status",
            status,
            "--retry-after",
            "0",
            "--seed",
            "7",
        ]);
        let p = http_project(&server.url, false, "  max_retries: 12\n  backoff_ms: 1\n");
        keyed(&p, &["sweep", "--no-cache"])
            .stdout_snapshot(SAMPLE_SWEEP_TABLE)
            .run();
        assert_eq!(comparable(&p, "reports/latest"), builtin(&p), "{status}");
        assert!(
            server.stats()["faults"]["failed"].as_u64().unwrap() > 10,
            "faults were injected"
        );
    }
}

/// Sweep against a faulty server with no retries (it must succeed); its stderr, the runs that
/// failed, by error kind, and how long it took. Its stderr must be the one line `warning`,
/// where the count is exact (`None` where load may add timeouts).
fn faulty_sweep(
    fault: &[&str],
    extra_chat: &str,
    warning: Option<&str>,
) -> (String, Vec<String>, Duration) {
    let server = MockLlm::start(fault);
    let p = http_project(
        &server.url,
        false,
        &format!("  max_retries: 0\n{extra_chat}"),
    );
    let started = Instant::now();
    let out = keyed(
        &p,
        &[
            "sweep",
            "--no-cache",
            "--allow-errors",
            "--k",
            "2",
            "--min-score",
            "0.1",
        ],
    )
    .stdout_any(
        "which calls the seeded mock breaks depends on the order concurrent calls reach it",
    );
    let out = match warning {
        Some(warning) => out.stderr(format!(
            "warning: {warning}; their runs are `error` in the reports\n"
        )),
        None => out.stderr_any("a call slower than the timeout on a loaded machine adds a timeout"),
    }
    .run();
    let took = started.elapsed();
    let (h, rows) = read_csv(&p.read("reports/latest/runs.csv"));
    let kinds = rows
        .iter()
        .filter(|r| col(&h, r, "outcome") == "error")
        .map(|r| col(&h, r, "error_kind").to_string())
        .collect();
    (out.stderr, kinds, took)
}

#[test]
fn malformed_bodies_dropped_connections_and_hangs_end_as_typed_errors() {
    let (_, kinds, _) = faulty_sweep(
        &["--malformed-rate", "0.5", "--seed", "1"],
        "",
        Some("9 of 26 model calls failed (9 malformed)"),
    );
    assert!(
        !kinds.is_empty() && kinds.iter().all(|k| k == "malformed"),
        "{kinds:?}"
    );

    let (_, kinds, _) = faulty_sweep(
        &["--drop-rate", "0.5", "--seed", "2"],
        "",
        Some("16 of 26 model calls failed (16 transport)"),
    );
    assert!(
        !kinds.is_empty() && kinds.iter().all(|k| k == "transport"),
        "{kinds:?}"
    );

    let (err, kinds, took) = faulty_sweep(
        &["--hang-rate", "0.3", "--seed", "3"],
        "  timeout_s: 1\n",
        None,
    );
    assert!(
        !kinds.is_empty() && kinds.iter().all(|k| k == "timeout"),
        "{kinds:?}"
    );
    assert!(
        took < Duration::from_secs(20),
        "hung calls end at the timeout: {took:?}"
    );
    assert!(
        err.contains("timeout"),
        "errors are reported by kind: {err}"
    );
}

#[test]
fn errors_exit_2_unless_allowed() {
    let server = MockLlm::start(&["--malformed-rate", "0.5", "--seed", "1"]);
    let p = http_project(&server.url, false, "  max_retries: 0\n");
    keyed(&p, &["sweep", "--no-cache"])
        .status(2)
        .stdout_any("which calls the seeded mock garbles depends on the order concurrent calls reach it")
        .stderr(
            "error: 53 of 104 model calls failed (53 malformed); their runs are `error` in the reports (pass --allow-errors to accept them)\n",
        )
        .run();
}

#[test]
fn server_down_exits_2_and_writes_no_report() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/v1");
    for (http_embedder, message) in [
        (false, format!("the sweep stopped early: 20 connection attempts in a row failed (104 connect); no report written; is the model server at `{url}` running?")),
        (true, format!("cannot embed corpus `evalsets/club`: connect at {url}/embeddings: cannot connect to {url} (after 5 attempts)")),
    ] {
        let p = http_project(&url, http_embedder, "  max_retries: 1\n  backoff_ms: 1\n");
        keyed(&p, &["sweep"]).fails(&message).run();
        assert!(
            !p.path().join("reports/latest").exists(),
            "no report may be written"
        );
    }
}

#[test]
fn a_wrong_key_gives_a_clear_401_without_the_key() {
    let server = MockLlm::start(&[]);
    let p = http_project(&server.url, true, "");
    p.rageval(["sweep"])
        .env(KEY_ENV, "sk-wrong-secret-123")
        .status(2)
        .stderr_contains(KEY_ENV)
        .stderr_lacks("sk-wrong-secret-123")
        .stdout_lacks("sk-wrong")
        .stderr(
            "error: cannot embed corpus `evalsets/club`: auth at http://127.0.0.1:[PORT]/v1/embeddings: 401 Unauthorized rejected the API key from `$RAGEVAL_TEST_KEY`\n",
        )
        .run();
    assert_eq!(
        server.stats()["unauthorized"].as_u64(),
        Some(1),
        "a 401 is not retried"
    );
}

#[test]
fn server_auth_limits_and_errors_follow_the_openai_shape() {
    let server = MockLlm::start(&["--max-body-bytes", "1000"]);
    let body = br#"{"model":"mock","messages":[{"role":"user","content":"hi"}]}"#;
    let (status, resp) = raw(
        &server.addr,
        "POST",
        "/v1/chat/completions",
        &[("Content-Type", "application/json")],
        body,
    );
    assert_eq!(status, 401);
    let v: Value = serde_json::from_slice(&resp).unwrap();
    assert!(v["error"]["message"].as_str().unwrap().contains("API key"));
    let auth = [
        ("Authorization", "Bearer test-key"),
        ("Content-Type", "application/json"),
    ];
    let (status, resp) = raw(&server.addr, "POST", "/v1/chat/completions", &auth, body);
    assert_eq!(status, 200);
    let v: Value = serde_json::from_slice(&resp).unwrap();
    assert_eq!(
        v["choices"][0]["message"]["content"], "hi",
        "non-context messages are echoed"
    );
    assert!(v["usage"]["prompt_tokens"].as_u64().unwrap() > 0);
    let big = vec![b'x'; 5000];
    let (status, _) = raw(&server.addr, "POST", "/v1/chat/completions", &auth, &big);
    assert_eq!(status, 413);
    let (status, resp) = raw(&server.addr, "GET", "/v1/models", &auth, b"");
    assert_eq!(status, 200);
    assert!(String::from_utf8_lossy(&resp).contains("\"mock\""));
}

/// `rageval ARGS` with the mock's key started in the background (stdout dropped, stderr
/// piped), returned once `replies` replies are in the chat cache or after 20 s.
fn started(p: &Project, args: &[&str], replies: usize) -> Child {
    let child = p
        .process()
        .args(args)
        .env(KEY_ENV, "test-key")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let cached = || {
        std::fs::read_to_string(p.path().join(".rageval/cache/chat.jsonl"))
            .map(|t| t.lines().count())
            .unwrap_or(0)
    };
    while cached() < replies && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    child
}

#[test]
fn a_killed_sweep_keeps_finished_calls() {
    let server = MockLlm::start(&["--delay-ms", "30"]);
    let p = http_project(&server.url, false, "");
    // Let part of the calls finish, then kill the sweep mid-flight.
    let mut child = started(&p, &["sweep", "--concurrency", "2"], 20);
    child.kill().unwrap();
    child.wait().unwrap();
    let made_first = server.stats()["chat_requests"].as_u64().unwrap();
    let cached = p.read(".rageval/cache/chat.jsonl").lines().count() as u64;
    assert!(cached >= 20, "finished calls are on disk: {cached}");

    let summary = keyed(&p, &["sweep"])
        .stdout_snapshot("http__a_killed_sweep_keeps_finished_calls")
        .run()
        .summary();
    let distinct = summary["calls"]["distinct_prompts"].as_u64().unwrap();
    let hits = summary["calls"]["cache_hits"].as_u64().unwrap();
    let made_second = server.stats()["chat_requests"].as_u64().unwrap() - made_first;
    assert!(hits >= 20, "{hits}");
    assert_eq!(
        hits + made_second,
        distinct,
        "the rerun calls only what was not finished"
    );
    assert_eq!(comparable(&p, "reports/latest"), builtin(&p));
}

#[test]
fn a_server_that_dies_mid_sweep_stops_it_early() {
    let server = MockLlm::start(&["--delay-ms", "20"]);
    let url = server.url.clone();
    let p = http_project(&url, false, "  max_retries: 3\n  backoff_ms: 1\n");
    let mut child = started(&p, &["sweep", "--concurrency", "2", "--allow-errors"], 10);
    drop(server);
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let status = child.wait().unwrap();
    // Even with --allow-errors: most runs would be errors, the report would only look valid.
    assert_eq!(status.code(), Some(2), "{err}");
    let (head, tail) = err
        .split_once(" connect); ")
        .unwrap_or_else(|| panic!("{err}"));
    assert!(
        head.starts_with(
            "error: the sweep stopped early: 20 connection attempts in a row failed ("
        ),
        "{err}"
    );
    assert_eq!(
        tail,
        format!("no report written; is the model server at `{url}` running?\n")
    );
    assert!(!p.path().join("reports/latest").exists());
}
