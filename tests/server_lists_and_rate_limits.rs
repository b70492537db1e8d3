//! Several servers per model and rate limits, against real `rageval mock-llm` processes on
//! loopback: calls spread by load, a dead server's calls served by another, pacing seen by the
//! server's clock, and bad values of the new fields.

use serde_json::Value;

use crate::harness::{results, SAMPLE_SWEEP_TABLE};
use crate::http::{builtin, comparable, http_project, keyed, MockLlm};
use crate::support::Project;

/// A loopback URL where nothing listens.
fn dead_url() -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    format!("http://127.0.0.1:{port}/v1")
}

fn distinct_prompts(p: &Project) -> u64 {
    crate::harness::summary(p, "reports/latest")["calls"]["distinct_prompts"]
        .as_u64()
        .unwrap()
}

fn chat_requests(server: &MockLlm) -> u64 {
    server.stats()["chat_requests"].as_u64().unwrap()
}

#[test]
fn calls_spread_over_both_servers_of_a_list_with_builtin_results() {
    let a = MockLlm::start(&["--delay-ms", "20"]);
    let b = MockLlm::start(&["--delay-ms", "20"]);
    let p = http_project(&a.url, true, "");
    let config = p.read("rageval.yaml").replace(
        &format!("base_url: {}\n", a.url),
        &format!("base_url: [{}, {}]\n", a.url, b.url),
    );
    p.write("rageval.yaml", &config);
    keyed(&p, &["sweep", "--no-cache"])
        .stdout_snapshot(SAMPLE_SWEEP_TABLE)
        .run();
    assert_eq!(comparable(&p, "reports/latest"), builtin(&p));

    let distinct = distinct_prompts(&p);
    let (na, nb) = (chat_requests(&a), chat_requests(&b));
    assert_eq!(
        na + nb,
        distinct,
        "one call per distinct prompt, on one server"
    );
    // Eight calls in flight over two servers of equal speed: each takes about half.
    assert!(
        na >= distinct / 4 && nb >= distinct / 4,
        "calls spread: {na} and {nb} of {distinct}"
    );
    let embeddings = |s: &MockLlm| s.stats()["embedding_requests"].as_u64().unwrap();
    assert_eq!(
        embeddings(&a) + embeddings(&b),
        2,
        "the embedder's list too"
    );

    // Both servers are recorded, and the digest is that of a one-server run.
    let fleet = results(&p, "reports/latest").identity.identity;
    assert_eq!(
        serde_json::json!(fleet.config.chat.endpoint.unwrap().base_url),
        serde_json::json!([a.url, b.url])
    );
    let single = http_project(&a.url, true, "");
    let out = keyed(&single, &["sweep", "--no-cache"])
        .stdout_snapshot(SAMPLE_SWEEP_TABLE)
        .run();
    assert_eq!(out.results().identity.identity.digest, fleet.digest);
}

#[test]
fn a_dead_server_first_in_the_list_leaves_its_calls_to_the_other() {
    let live = MockLlm::start(&[]);
    let dead = dead_url();
    let p = http_project(&live.url, false, "  backoff_ms: 1\n");
    let config = p.read("rageval.yaml").replace(
        &format!("base_url: {}\n", live.url),
        &format!("base_url: [{dead}, {}]\n", live.url),
    );
    p.write("rageval.yaml", &config);
    keyed(&p, &["sweep", "--no-cache"])
        .stdout_snapshot(SAMPLE_SWEEP_TABLE)
        .run();
    assert_eq!(
        comparable(&p, "reports/latest"),
        builtin(&p),
        "the same results as one live server"
    );
    assert_eq!(
        chat_requests(&live),
        distinct_prompts(&p),
        "every call was served once, by the live server"
    );
    assert_eq!(
        crate::harness::summary(&p, "reports/latest")["calls"]["failed"],
        0
    );
}

#[test]
fn every_server_of_a_list_dead_stops_the_sweep_naming_them_all() {
    let (d1, d2) = (dead_url(), dead_url());
    let p = http_project(&d1, false, "  max_retries: 1\n  backoff_ms: 1\n");
    let config = p.read("rageval.yaml").replace(
        &format!("base_url: {d1}\n"),
        &format!("base_url: [{d1}, {d2}]\n"),
    );
    p.write("rageval.yaml", &config);
    let err = keyed(&p, &["sweep"]).status(2).stderr_lines(1)
        .stderr(
            "error: the sweep stopped early: 20 connection attempts in a row failed (104 connect); no report written; is the model server at `http://127.0.0.1:[PORT]/v1, http://127.0.0.1:[PORT]/v1` running?\n",
        )
        .run().stderr;
    assert!(
        err.starts_with("error: the sweep stopped early: 20 connection attempts in a row failed ("),
        "{err}"
    );
    assert!(
        err.ends_with(&format!(
            "); no report written; is the model server at `{d1}, {d2}` running?\n"
        )),
        "{err}"
    );
    assert!(!p.path().join("reports/latest").exists());
}

#[test]
fn requests_per_minute_paces_the_calls_the_server_sees() {
    let server = MockLlm::start(&[]);
    // 1200 a minute: one request every 50 ms at most.
    let p = http_project(&server.url, false, "  requests_per_minute: 1200\n");
    let out = keyed(
        &p,
        &["sweep", "--no-cache", "--k", "2", "--min-score", "0.1"],
    )
    .env("RAGEVAL_PROGRESS_INTERVAL_MS", "300")
    .stdout_snapshot(
        "server_lists_and_rate_limits__requests_per_minute_paces_the_calls_the_server_sees",
    )
    .stderr_any("the progress lines show the measured rate, which wobbles around 20.0 calls/s")
    .stderr_contains("calls/s, eta")
    .run();
    let n = distinct_prompts(&p);
    assert!(n >= 12, "enough calls to see the pace: {n}");
    let arrivals: Vec<f64> = server.get("/stats/arrivals")["chat_ms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert_eq!(arrivals.len() as u64, n);
    // Paced from the first request: n requests span (n - 1) x 50 ms; one interval of slack
    // for the way from client to server.
    let span = arrivals[arrivals.len() - 1] - arrivals[0];
    assert!(
        span >= (n - 2) as f64 * 50.0,
        "{n} requests within {span:.0} ms"
    );
    // No burst: no 250 ms window holds more than 5 requests (plus one of slack each side).
    for (i, &t) in arrivals.iter().enumerate() {
        let in_window = arrivals[i..].iter().take_while(|&&u| u < t + 250.0).count();
        assert!(
            in_window <= 7,
            "{in_window} requests in 250 ms from {t:.0} ms"
        );
    }
    // The progress lines say how long calls were held back.
    let err = &out.stderr;
    let line = err
        .lines()
        .find(|l| l.starts_with("progress: "))
        .unwrap_or_else(|| panic!("a progress line in: {err}"));
    let re = regex::Regex::new(
        r"^progress: \d+/(\d+|\?) calls, \d+\.\d calls/s, eta (\d+s|unknown), 0 errors, \d+s held by the rate limit$",
    )
    .unwrap();
    assert!(re.is_match(line), "{line}");
}

#[test]
fn the_config_schema_takes_a_list_of_urls_and_rate_limits() {
    let config = crate::editor_and_shell_support::validator("config");
    let good: Value = serde_yaml::from_str(
        "chat:\n  kind: openai\n  base_url: [http://a/v1, http://b/v1]\n  requests_per_minute: 500\n  tokens_per_minute: 200000\nembedder:\n  kind: openai\n  base_url: http://a/v1\n  requests_per_minute: 3000\n",
    )
    .unwrap();
    assert_eq!(
        crate::editor_and_shell_support::errors(&config, &good),
        Vec::<String>::new()
    );
    let bad: Value = serde_yaml::from_str("chat:\n  base_url: 5\n").unwrap();
    assert!(!config.is_valid(&bad));
}

/// A config that must fail with status 2 and exactly `message` on stderr, writing no report.
fn refused(config: &str, message: &str) {
    crate::harness::Test::new()
        .write("rageval.yaml", config)
        .arg("sweep")
        .status(2)
        .stderr(format!("{message}\n"))
        .absent("reports")
        .run();
}

#[test]
fn bad_lists_and_rates_exit_2_naming_the_field() {
    refused(
        "chat:\n  kind: openai\n  base_url: []\n",
        "error: rageval.yaml:3: `chat.base_url`: lists no URL (leave it out for the default)",
    );
    refused(
        "chat:\n  kind: openai\n  base_url:\n    - http://127.0.0.1:1/v1\n    - localhost:8000\n",
        "error: rageval.yaml:5: `chat.base_url[1]`: `localhost:8000` must start with http:// or https://",
    );
    // Odd values: one line at the field, never a panic.
    refused(
        "chat:\n  kind: openai\n  base_url: 8787\n",
        "error: rageval.yaml:3:13: `chat.base_url`: expected a URL or a list of URLs, found the number 8787",
    );
    refused(
        "judge:\n  base_url: {url: http://a/v1}\n",
        "error: rageval.yaml:2:13: `judge.base_url`: expected a URL or a list of URLs, found a mapping",
    );
    refused(
        "embedder:\n  base_url: [~]\n",
        "error: rageval.yaml:2: `embedder.base_url[0]`: `~` must start with http:// or https://",
    );
    refused(
        "embedder:\n  kind: openai\n  requests_per_minute: 0\n",
        "error: rageval.yaml:3:24: `embedder.requests_per_minute`: must be from 1 to 1000000 (leave it out for no limit), got 0",
    );
    refused(
        "chat:\n  tokens_per_minute: 0\n",
        "error: rageval.yaml:2:22: `chat.tokens_per_minute`: must be from 1 to 10000000000 (leave it out for no limit), got 0",
    );
}
