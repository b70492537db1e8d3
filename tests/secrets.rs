//! No secret leaves: a distinct canary in every place a credential can come from (the key's
//! variable, URL userinfo and query in the config and in `$OPENAI_BASE_URL`, header values),
//! then every output of sweep (with failing calls), ask, prompt and gate is searched for them.
//! URL credentials are sent as Basic auth, so they go with no key (a key beside them is
//! refused).

use std::path::Path;

use crate::http::MockLlm;
use crate::support::Project;

const KEY_ENV: &str = "RAGEVAL_CANARY_KEY";
/// A variable no test sets: the sections whose URLs hold credentials send no key.
const NO_KEY_ENV: &str = "RAGEVAL_CANARY_UNSET";
const CANARIES: &[&str] = &[
    "CANARY-KEY",
    "CANARY-USER",
    "CANARY-PASSWORD",
    "CANARY-QUERY",
    "CANARY-ENV-USER",
    "CANARY-ENV-QUERY",
    "CANARY-HEADER",
];

/// `http://host:port/v1` with userinfo and a query holding canaries.
fn with_credentials(url: &str, user: &str, query: &str) -> String {
    let rest = url.trim_start_matches("http://");
    format!("http://{user}@{rest}?api_key={query}")
}

/// The sample over the server at `chat_url` (the embedder's URL from `$OPENAI_BASE_URL`), the
/// key read from `key_env`.
fn config(chat_url: &str, key_env: &str) -> String {
    format!(
        "evalsets: [evalsets/club.yaml]\n\
         embedder:\n  kind: openai\n  model: hash-1024\n  api_key_env: {key_env}\n  headers: {{X-Canary: CANARY-HEADER}}\n\
         chat:\n  kind: openai\n  base_url: {chat_url}\n  model: mock\n  api_key_env: {key_env}\n  max_retries: 0\n  headers: {{X-Canary: CANARY-HEADER}}\n\
         sweep:\n  min_score: 0.1..0.3\n  k: 1,2\n"
    )
}

/// Every file below `dir`, recursively.
fn files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files(&path));
        } else {
            out.push(path);
        }
    }
    out
}

fn assert_clean(what: &str, text: &str) {
    for canary in CANARIES {
        assert!(!text.contains(canary), "{canary} in {what}:\n{text}");
    }
}

#[test]
fn no_canary_reaches_any_output_file_cache_or_message() {
    let server = MockLlm::start(&["--no-auth", "--fail-rate", "0.2", "--drop-rate", "0.2"]);
    let p = Project::sample();
    let chat_url = with_credentials(&server.url, "CANARY-USER:CANARY-PASSWORD", "CANARY-QUERY");
    p.write("rageval.yaml", &config(&chat_url, NO_KEY_ENV));
    // The embedder takes its URL from the environment.
    let env_url = with_credentials(&server.url, "CANARY-ENV-USER", "CANARY-ENV-QUERY");
    // No canary on stdout or stderr.
    let run = |args: &[&str], config: &str| {
        let mut run = p
            .rageval(["--config", config])
            .args(args)
            .env(KEY_ENV, "CANARY-KEY")
            .env("OPENAI_BASE_URL", &env_url);
        for canary in CANARIES {
            run = run.stdout_lacks(*canary).stderr_lacks(*canary);
        }
        run
    };

    // Failed calls.
    let err = run(&["sweep", "--concurrency", "2"], "rageval.yaml")
        .status(2)
        .stderr_contains("model calls failed")
        .run()
        .stderr;
    assert!(err.starts_with("error: "), "{err}");
    let out = run(&["sweep", "--allow-errors", "-q"], "rageval.yaml").run();
    let runs = p.read("reports/latest/runs.csv");
    assert!(
        runs.contains(",transport,"),
        "a dropped call's error is recorded"
    );
    let config_identity = out.results().identity.identity.config;
    let port_url = server.url.trim_start_matches("http://");
    assert_eq!(
        serde_json::json!(config_identity.chat.endpoint.unwrap().base_url),
        format!("http://<redacted>@{port_url}?<redacted>")
    );
    assert_eq!(
        config_identity.embedder.endpoint.unwrap().headers,
        ["X-Canary"]
    );
    for args in [
        &["ask", "How much does membership cost per term?"][..],
        &["prompt", "How much does membership cost per term?"],
        &["gate", "--max-error-runs", "1000"],
    ] {
        run(args, "rageval.yaml").any_status().run();
    }

    // The key, where no URL holds credentials: the chat's, beside a builtin embedder.
    let keyed = format!("{}?api_key=CANARY-QUERY", server.url);
    p.write(
        "keyed.yaml",
        &config(&keyed, KEY_ENV)
            .replace("kind: openai\n  model: hash-1024", "kind: hash\n  model: x"),
    );
    run(
        &["sweep", "--allow-errors", "-q", "--out", "reports/keyed"],
        "keyed.yaml",
    )
    .run();
    // Credentials in the URL and a key: refused before any call, both redacted.
    p.write("both.yaml", &config(&chat_url, KEY_ENV));
    run(&["sweep", "--out", "both-out"], "both.yaml")
        .status(2)
        .stderr(format!("error: base_url `http://<redacted>@{port_url}?<redacted>` holds credentials (`user:password@`, sent as Basic auth) and `${KEY_ENV}` holds an API key (sent as a Bearer token): a request carries one `Authorization` header, so keep one of them (remove the credentials from the URL, or point `api_key_env` at a variable that is not set)\n"))
        .absent("both-out")
        .run();

    // A server that is down: the hint names its URL.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dead = with_credentials(
        &format!("http://127.0.0.1:{port}/v1"),
        "CANARY-USER:CANARY-PASSWORD",
        "CANARY-QUERY",
    );
    p.write(
        "dead.yaml",
        &config(&dead, NO_KEY_ENV)
            .replace("kind: openai\n  model: hash-1024", "kind: hash\n  model: x"),
    );
    run(&["sweep", "--out", "dead-out", "--no-cache"], "dead.yaml")
        .any_status()
        .stderr(format!("error: the sweep stopped early: 20 connection attempts in a row failed (50 connect); no report written; is the model server at `http://<redacted>@127.0.0.1:{port}/v1?<redacted>` running?\n"))
        .run();
    // A bad URL is named redacted too.
    p.write(
        "bad.yaml",
        &config("ftp://CANARY-USER@127.0.0.1/v1?CANARY-QUERY", NO_KEY_ENV),
    );
    run(&["sweep"], "bad.yaml")
        .any_status()
        .stderr("error: bad.yaml:9: `chat.base_url`: `ftp://<redacted>@127.0.0.1/v1?<redacted>` must start with http:// or https://\n")
        .run();

    for dir in ["reports", ".rageval"] {
        for file in files(&p.path().join(dir)) {
            let text = String::from_utf8_lossy(&std::fs::read(&file).unwrap()).into_owned();
            assert_clean(&file.display().to_string(), &text);
        }
    }
    assert!(p.path().join(".rageval/cache/chat.jsonl").exists());
}
