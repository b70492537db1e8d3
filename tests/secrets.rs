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

/// Write `name`: the sample with the builtin embedder and its chat model at `url`, with canary
/// credentials in the URL (user, password and query) and no key.
fn write_chat_with_credentials(p: &Project, name: &str, url: &str) {
    let chat = with_credentials(url, "CANARY-USER:CANARY-PASSWORD", "CANARY-QUERY");
    p.write(
        name,
        &config(&chat, NO_KEY_ENV)
            .replace("kind: openai\n  model: hash-1024", "kind: hash\n  model: x"),
    );
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
        .stdout_any("which calls the mock fails depends on the order two concurrent calls reach it")
        .stderr(
            "error: 21 of 50 model calls failed (10 server, 11 transport); their runs are `error` in the reports (pass --allow-errors to accept them)\n",
        )
        .run()
        .stderr;
    assert!(err.starts_with("error: "), "{err}");
    let out = run(&["sweep", "--allow-errors", "-q"], "rageval.yaml")
        .stderr(
            "warning: 7 of 50 model calls failed (5 server, 2 transport); their runs are `error` in the reports\n",
        )
        .run();
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
    // The mock draws its faults from its seed in the order requests arrive, so the sweeps fail
    // the same number of calls, but which prompts failed depends on the order the first
    // sweep's two concurrent calls reached it. The ask's prompt is the sweep's at
    // min_score=0.1,k=1: answered from the cache, or (when both sweeps failed it) a new call
    // the mock fails.
    let question = "How much does membership cost per term?";
    let ask = run(&["ask", question], "rageval.yaml")
        .any_status()
        .stdout_any("the answer, or nothing where the call fails: compared below")
        .stderr_any("the failed call, or nothing where it is answered: compared below")
        .run();
    let answered = (
        Some(0),
        "Membership costs 10 US dollars per term. [membership.md > Membership fee]\n\n\
         sources (* cited):\n  *[1] membership.md > Membership fee (0.354)\n\
         tokens: prompt 188, completion 11\n"
            .to_string(),
        String::new(),
    );
    let failed = (
        Some(2),
        String::new(),
        format!(
            "error: the model call to http://<redacted>@{port_url}?<redacted> failed: server: \
             500 Internal Server Error: injected failure\n"
        ),
    );
    let got = (ask.status, ask.stdout.clone(), ask.stderr.clone());
    assert!(got == answered || got == failed, "ask: {got:?}");
    let out = run(&["prompt", question], "rageval.yaml")
        .stdout_snapshot("secrets__no_canary_reaches_any_output_file_cache_or_message")
        .run();
    assert_clean("prompt", &(out.stdout + &out.stderr));
    // The gate's setting and its count of error runs follow which prompts failed.
    let out = run(&["gate", "--max-error-runs", "1000"], "rageval.yaml")
        .stdout_any("the setting and the error runs vary: compared below without them")
        .run();
    assert_clean("gate", &out.stdout);
    let varying = regex::Regex::new(r"min_score=[0-9.]+,k=\d+|error_runs \d+").unwrap();
    assert_eq!(
        varying.replace_all(&out.stdout, "[VARIES]"),
        "warning: no limits configured and no baseline: the gate checks only failed calls; set `gate.max_unwanted_answer_rate` and `gate.max_false_refusal_rate` (or pass `--max-unwanted-answer-rate` and `--max-false-refusal-rate`), see docs/ci.md\n\
         gate: setting [VARIES] of reports/latest/results.json (26 questions)\n\
         PASS  [VARIES] <= limit 1000\n\
         gate: PASS (1 check)\n"
    );

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
    .stderr(
        "warning: 3 of 50 model calls failed (3 server); their runs are `error` in the reports\n",
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
    write_chat_with_credentials(&p, "dead.yaml", &format!("http://127.0.0.1:{port}/v1"));
    run(&["sweep", "--out", "dead-out", "--no-cache"], "dead.yaml")
        .status(2)
        .stderr(format!("error: the sweep stopped early: 20 connection attempts in a row failed (50 connect); no report written; is the model server at `http://<redacted>@127.0.0.1:{port}/v1?<redacted>` running?\n"))
        .run();
    // A bad URL is named redacted too.
    p.write(
        "bad.yaml",
        &config("ftp://CANARY-USER@127.0.0.1/v1?CANARY-QUERY", NO_KEY_ENV),
    );
    run(&["sweep"], "bad.yaml")
        .status(2)
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

/// Requests that reached the other origin: method, path and every header value.
type Seen = std::sync::Arc<std::sync::Mutex<Vec<String>>>;

/// A hostile service on loopback and a second origin it redirects to: `/echo...` answers 400
/// with the request's headers and URL in its error message; `/r307` and `/r301` redirect to
/// the other origin, which records what it receives and answers a valid (empty) search.
struct Hostile {
    url: String,
    seen: Seen,
    _runtime: tokio::runtime::Runtime,
}

impl Hostile {
    fn start() -> Self {
        use axum::http::{HeaderMap, StatusCode, Uri};
        use axum::response::IntoResponse;
        use axum::routing::any;
        let runtime = crate::support::server_runtime();
        let seen = Seen::default();
        let record = seen.clone();
        let other = axum::Router::new().route(
            "/collect",
            any(
                move |method: axum::http::Method, headers: HeaderMap| async move {
                    let values: Vec<String> = headers
                        .values()
                        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
                        .collect();
                    record
                        .lock()
                        .unwrap()
                        .push(format!("{method} {}", values.join(" ")));
                    axum::Json(serde_json::json!({"hits": []}))
                },
            ),
        );
        let other = crate::support::serve(&runtime, other);
        let redirect = move |status: StatusCode| {
            move || async move {
                let to = format!("http://{other}/collect");
                (status, [(axum::http::header::LOCATION, to)]).into_response()
            }
        };
        let echo = |uri: Uri, headers: HeaderMap| async move {
            let values: Vec<String> = headers
                .iter()
                .map(|(k, v)| format!("{k}: {}", String::from_utf8_lossy(v.as_bytes())))
                .collect();
            let message = format!("bad request {uri} with {}", values.join(", "));
            (
                StatusCode::BAD_REQUEST,
                axum::Json(serde_json::json!({"error": {"message": message}})),
            )
        };
        let app = axum::Router::new()
            .route("/r307", any(redirect(StatusCode::TEMPORARY_REDIRECT)))
            .route("/r308", any(redirect(StatusCode::PERMANENT_REDIRECT)))
            .route("/r301", any(redirect(StatusCode::MOVED_PERMANENTLY)))
            .route("/r302", any(redirect(StatusCode::FOUND)))
            .route("/echo", any(echo))
            .route("/echo/v1/chat/completions", any(echo));
        let addr = crate::support::serve(&runtime, app);
        Hostile {
            url: format!("http://{addr}"),
            seen,
            _runtime: runtime,
        }
    }
}

/// An HTTP retriever at `url` sending a key and a custom header, both canaries.
fn retriever_config(url: &str) -> String {
    format!(
        "evalsets: [evalsets/club.yaml]\nretriever:\n  kind: http\n  url: {url}\n  api_key_env: {KEY_ENV}\n  headers: {{X-Api-Secret: CANARY-HEADER}}\n  max_retries: 0\n"
    )
}

/// A redirect is never followed: a 307 or 308 would send the custom header to the other host,
/// a 301 or 302 would turn the POST into a GET whose reply was used (exit 0). Each is an error
/// naming the redirect, and the other origin sees no request (issue 23 item 5).
#[test]
fn no_redirect_is_followed_and_the_error_names_it() {
    let server = Hostile::start();
    let p = Project::sample();
    for (path, status) in [
        ("r307", "307 Temporary Redirect"),
        ("r308", "308 Permanent Redirect"),
        ("r301", "301 Moved Permanently"),
        ("r302", "302 Found"),
    ] {
        let url = format!("{}/{path}?token=CANARY-QUERY", server.url);
        p.write("redirect.yaml", &retriever_config(&url));
        let shown = format!("{}/{path}?<redacted>", server.url);
        let other = server.url.rsplit_once(':').unwrap().0;
        let out = p
            .rageval(["--config", "redirect.yaml", "sweep", "-q", "--out", path])
            .env(KEY_ENV, "CANARY-KEY")
            .fails(&format!(
                "retrieval for question `fee-per-term` failed: client at {shown}: {status} redirects to `{other}:[PORT]/collect`: rageval follows no redirect (it would send the request's headers on, and a 301 or 302 would turn the POST into a GET); set the URL to the address the redirect names"
            ))
            .run();
        assert!(
            out.stderr.starts_with(&format!(
                "error: retrieval for question `fee-per-term` failed: client at {shown}: {status} redirects to `{other}:"
            )) && out.stderr.ends_with("/collect`: rageval follows no redirect (it would send the request's headers on, and a 301 or 302 would turn the POST into a GET); set the URL to the address the redirect names\n"),
            "{path}: {}",
            out.stderr
        );
        assert_clean(path, &out.stderr);
        assert!(!p.path().join(path).exists(), "{path}: no report");
    }
    assert_eq!(*server.seen.lock().unwrap(), Vec::<String>::new());
}

/// A server whose 4xx body echoes the request (the bearer key, header values, the URL's query
/// and userinfo) prints none of them, even under `-q`: every configured secret is hidden from
/// text that came from outside, in messages and in the reports' error columns.
#[test]
fn a_server_echoing_the_request_shows_no_secret() {
    let server = Hostile::start();
    let p = Project::sample();
    let url = format!("{}/echo?token=CANARY-QUERY", server.url);
    p.write("echo.yaml", &retriever_config(&url));
    let out = p
        .rageval(["--config", "echo.yaml", "sweep", "-q", "--out", "echo"])
        .env(KEY_ENV, "CANARY-KEY")
        .status(2)
        .stderr(
            "error: retrieval for question `fee-per-term` failed: client at http://127.0.0.1:[PORT]/echo?<redacted>: 400 Bad Request: bad request /echo?<redacted> with x-api-secret: <redacted>, content-type: application/json, authorization: Bearer <redacted>, accept: */*, user-agent: rageval/0.1.0, host: 127.0.0.1:[PORT], \n",
        )
        .run();
    assert_clean("retriever stderr", &out.stderr);
    // The chat model too, with its credentials in the URL (sent as Basic auth) instead.
    write_chat_with_credentials(&p, "chat.yaml", &format!("{}/echo/v1", server.url));
    let out = p
        .rageval([
            "--config",
            "chat.yaml",
            "ask",
            "-q",
            "How much does membership cost per term?",
        ])
        .status(2)
        .stderr(
            "error: the model call to http://<redacted>@127.0.0.1:[PORT]/echo/v1?<redacted> failed: client: 400 Bad Request: bad request /echo/v1/chat/completions?<redacted> with authorization: Basic <redacted>, x-canary: <redacted>, content-type: application/json, accept: */*, user-ag\n",
        )
        .run();
    assert_clean("chat stdout", &out.stdout);
    assert_clean("chat stderr", &out.stderr);
}

/// `headers: {Authorization: ...}` beside a key in `api_key_env` would send two
/// `Authorization` headers: refused as a config error naming the file, line and field, as URL
/// credentials beside a key are.
#[test]
fn an_authorization_header_beside_a_key_is_refused_naming_the_field() {
    let p = Project::sample();
    p.write(
        "auth.yaml",
        &format!("evalsets: [evalsets/club.yaml]\nchat:\n  kind: openai\n  api_key_env: {KEY_ENV}\n  headers:\n    Authorization: Bearer CANARY-HEADER\n"),
    );
    let why = format!("`headers` sets `Authorization` and `${KEY_ENV}` holds an API key (sent as `Authorization: Bearer`): a request carries one `Authorization` header, so keep one of them (remove the header, or point `api_key_env` at a variable that is not set)");
    p.rageval(["--config", "auth.yaml", "sweep", "--out", "auth"])
        .env(KEY_ENV, "CANARY-KEY")
        .fails(&format!("auth.yaml:6: `chat.headers.Authorization`: {why}"))
        .absent("auth")
        .run();
    // The retriever's section alike (any case of the name).
    p.write(
        "retriever.yaml",
        &retriever_config("http://127.0.0.1:9/search").replace(
            "X-Api-Secret: CANARY-HEADER",
            "authorization: Bearer CANARY-HEADER",
        ),
    );
    let why = why.replace("`Authorization` and", "`authorization` and");
    p.rageval(["--config", "retriever.yaml", "validate"])
        .env(KEY_ENV, "CANARY-KEY")
        .fails(&format!(
            "retriever.yaml:6: `retriever.headers.authorization`: {why}"
        ))
        .run();
    // Without a key in the variable one header is sent: accepted.
    p.rageval(["--config", "auth.yaml", "validate"])
        .env_remove(KEY_ENV)
        .stdout(concat!(
            "ok    evalsets/club.yaml: 17 answerable, 9 unanswerable; corpus `evalsets/club` (23 chunks)\n",
            "      at 95%, 9 unanswerable and 17 answerable questions can certify at best unwanted ≤ 28.3% and false refusals ≤ 16.2% for one setting, unwanted ≤ 43.1% and false refusals ≤ 25.8% at the first setting of each of the 4 chains along min_score of the configured grid\n",
            "      plan for a chance of 80% at 95% by ordered tests (level 0.625%, at the first setting of each of the 4 chains along min_score of the configured grid), if each true rate is half its limit: unwanted 10% needs 145 unanswerable questions (this set has 9), or 23 with none answered; false refusals 25% needs 44 answerable questions (this set has 17), or 8 with none refused\n",
        ))
        .run();
}
