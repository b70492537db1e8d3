//! The gate's CI surfaces: `--comment` against a GitHub REST server started inside the test
//! (one comment, found again by its marker across pages and updated; a 403, no token and no
//! pull request leave the verdict alone; the token in no stream or file), and the
//! `--benchmark-json` and `--openmetrics` files read back by their formats' rules.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use axum::extract::{Json, Path as UrlPath, State};
use axum::http::{header, HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, patch};
use axum::Router;
use serde_json::{json, Value};

use crate::gate::{gate_now, regressed, regressed_failure, regressed_report};
use crate::harness::Test;
use crate::support::{col, read_csv, row_where, Project, PRODUCTION};

const TOKEN: &str = "ghs_TestTokenNeverPrinted42";
const MARKER: &str = "<!-- rageval-gate-comment -->";
/// Comments already on the pull request: the gate's lands on the second page of 100.
const OTHERS: u64 = 120;

/// The pull request's comments and what the server saw.
#[derive(Default)]
struct Issue {
    /// (id, body), oldest first.
    comments: Vec<(u64, String)>,
    posts: usize,
    /// PATCHes per comment id.
    patches: BTreeMap<u64, usize>,
    /// Requests without the token or a User-Agent.
    bad: Vec<String>,
    requests: usize,
    /// Answer POST and PATCH with 403, as for a fork's read-only token.
    read_only: bool,
}

type Shared = Arc<Mutex<Issue>>;

struct GitHub {
    api: String,
    issue: Shared,
    _runtime: tokio::runtime::Runtime,
}

impl GitHub {
    fn start(read_only: bool) -> Self {
        let runtime = crate::support::server_runtime();
        let mut issue = Issue {
            read_only,
            ..Issue::default()
        };
        for id in 1..=OTHERS {
            issue.comments.push((id, format!("LGTM #{id}")));
        }
        let issue = Arc::new(Mutex::new(issue));
        let app = Router::new()
            .route(
                "/repos/{owner}/{repo}/issues/{number}/comments",
                get(list).post(create),
            )
            .route("/repos/{owner}/{repo}/issues/comments/{id}", patch(update))
            .with_state(issue.clone());
        let addr = crate::support::serve(&runtime, app);
        GitHub {
            api: format!("http://{addr}"),
            issue,
            _runtime: runtime,
        }
    }

    fn issue(&self) -> std::sync::MutexGuard<'_, Issue> {
        self.issue.lock().unwrap()
    }
}

/// Whether the request carries the token and a User-Agent, as GitHub demands; a request that
/// does not is recorded and refused.
fn allowed(issue: &mut Issue, headers: &HeaderMap, what: &str) -> bool {
    issue.requests += 1;
    let text = |h| headers.get(h).and_then(|v| v.to_str().ok()).unwrap_or("");
    let auth_ok = text(header::AUTHORIZATION) == format!("Bearer {TOKEN}");
    let agent_ok = text(header::USER_AGENT).starts_with("rageval/");
    if !(auth_ok && agent_ok) {
        issue.bad.push(format!(
            "{what}: authorization ok {auth_ok}, user agent {:?}",
            text(header::USER_AGENT)
        ));
    }
    auth_ok && agent_ok
}

fn refused(status: StatusCode, message: &str) -> Response {
    (status, Json(json!({ "message": message }))).into_response()
}

fn query(uri: &Uri, key: &str, default: usize) -> usize {
    uri.query()
        .unwrap_or("")
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(k, _)| *k == key)
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(default)
}

async fn list(
    State(issue): State<Shared>,
    UrlPath((owner, repo, number)): UrlPath<(String, String, u64)>,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    let mut issue = issue.lock().unwrap();
    if !allowed(&mut issue, &headers, "GET") {
        return refused(StatusCode::UNAUTHORIZED, "Bad credentials");
    }
    if (owner.as_str(), repo.as_str(), number) != ("o", "r", 7) {
        return refused(StatusCode::NOT_FOUND, "Not Found");
    }
    // GitHub's defaults: 30 a page, pages from 1.
    let (per_page, page) = (query(&uri, "per_page", 30).min(100), query(&uri, "page", 1));
    let page: Vec<Value> = issue
        .comments
        .iter()
        .skip(per_page * (page.max(1) - 1))
        .take(per_page)
        .map(|(id, body)| json!({"id": id, "body": body, "user": {"login": "someone"}}))
        .collect();
    Json(Value::Array(page)).into_response()
}

async fn create(
    State(issue): State<Shared>,
    UrlPath((owner, repo, number)): UrlPath<(String, String, u64)>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let mut issue = issue.lock().unwrap();
    if !allowed(&mut issue, &headers, "POST") {
        return refused(StatusCode::UNAUTHORIZED, "Bad credentials");
    }
    if issue.read_only {
        return refused(
            StatusCode::FORBIDDEN,
            "Resource not accessible by integration",
        );
    }
    if (owner.as_str(), repo.as_str(), number) != ("o", "r", 7) {
        return refused(StatusCode::NOT_FOUND, "Not Found");
    }
    let id = issue.comments.last().map_or(1, |(id, _)| id + 1);
    let text = body["body"].as_str().unwrap_or_default().to_string();
    issue.comments.push((id, text.clone()));
    issue.posts += 1;
    (StatusCode::CREATED, Json(json!({"id": id, "body": text}))).into_response()
}

async fn update(
    State(issue): State<Shared>,
    UrlPath((_, _, id)): UrlPath<(String, String, u64)>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let mut issue = issue.lock().unwrap();
    if !allowed(&mut issue, &headers, "PATCH") {
        return refused(StatusCode::UNAUTHORIZED, "Bad credentials");
    }
    if issue.read_only {
        return refused(
            StatusCode::FORBIDDEN,
            "Resource not accessible by integration",
        );
    }
    let text = body["body"].as_str().unwrap_or_default().to_string();
    let Some(slot) = issue.comments.iter_mut().find(|(i, _)| *i == id) else {
        return refused(StatusCode::NOT_FOUND, "Not Found");
    };
    slot.1 = text.clone();
    *issue.patches.entry(id).or_default() += 1;
    Json(json!({"id": id, "body": text})).into_response()
}

/// `test` on GitHub Actions for pull request o/r#7, the API at `api`.
fn on_actions<'p>(test: Test<'p>, p: &Project, api: &str) -> Test<'p> {
    p.write(
        "event.json",
        r#"{"action":"synchronize","number":7,"pull_request":{"number":7}}"#,
    );
    test.env("GITHUB_TOKEN", TOKEN)
        .env("GITHUB_REPOSITORY", "o/r")
        .env(
            "GITHUB_EVENT_PATH",
            p.path().join("event.json").to_str().unwrap(),
        )
        .env("GITHUB_API_URL", api)
        .stdout_lacks(TOKEN)
        .stderr_lacks(TOKEN)
}

/// No file of the project holds the token.
fn token_in_no_file(p: &Project) {
    fn walk(dir: &std::path::Path) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path);
            } else {
                let bytes = std::fs::read(&path).unwrap();
                let text = String::from_utf8_lossy(&bytes);
                assert!(!text.contains(TOKEN), "the token is in {}", path.display());
            }
        }
    }
    walk(p.path());
}

#[test]
fn three_runs_leave_one_comment_updated_twice() {
    let gh = GitHub::start(false);
    let p = regressed();
    let created = format!(
        "gate: created comment {} on pull request o/r#7\n",
        OTHERS + 1
    );
    let updated = format!(
        "gate: updated comment {} on pull request o/r#7\n",
        OTHERS + 1
    );
    on_actions(
        gate_now(&p, &["--comment", "--markdown", "gate.md"]),
        &p,
        &gh.api,
    )
    .status(1)
    .stdout(regressed_failure("base/results.json"))
    .stderr(created)
    .run();
    on_actions(gate_now(&p, &["--comment"]), &p, &gh.api)
        .status(1)
        .stdout(regressed_failure("base/results.json"))
        .stderr(updated.clone())
        .run();
    // The third push runs `sweep --gate`, as the composite action does.
    on_actions(
        p.rageval(["sweep"])
            .args(PRODUCTION)
            .args(["--out", "now", "--gate", "--setting", "min_score=0.2,k=4"])
            .args(["--baseline", "base/results.json", "--comment"]),
        &p,
        &gh.api,
    )
    .status(1)
    .stdout_any("the sweep's table and the gate's report are pinned by their own tests")
    .stdout_contains(regressed_failure("base/results.json"))
    .stderr(updated)
    .run();
    let issue = gh.issue();
    assert_eq!(issue.bad, Vec::<String>::new());
    assert_eq!(issue.comments.len() as u64, OTHERS + 1);
    let ours: Vec<&(u64, String)> = issue
        .comments
        .iter()
        .filter(|(_, b)| b.contains(MARKER))
        .collect();
    assert_eq!(ours.len(), 1);
    assert_eq!(issue.posts, 1);
    assert_eq!(issue.patches, BTreeMap::from([(OTHERS + 1, 2)]));
    let body = ours[0].1.replace(env!("CARGO_PKG_VERSION"), "[VERSION]");
    assert!(!body.contains(TOKEN));
    crate::harness::assert_snapshot("gate_ci__three_runs_leave_one_comment_updated_twice", &body);
    token_in_no_file(&p);
}

#[test]
fn a_read_only_token_leaves_the_verdict_and_says_why() {
    let gh = GitHub::start(true);
    let p = regressed();
    let notice = |api: &str| {
        format!(
            "notice: --comment: no comment posted on pull request o/r#7: POST {api}/repos/o/r/issues/7/comments answered 403 Forbidden: Resource not accessible by integration (the token may not write to the pull request; a pull request from a fork gets a read-only token); the gate's verdict stands\n"
        )
    };
    on_actions(gate_now(&p, &["--comment"]), &p, &gh.api)
        .status(1)
        .stdout(regressed_failure("base/results.json"))
        .stderr(notice(&gh.api))
        .run();
    // A gate that passes still passes.
    let passing = regressed_report(
        "base/results.json",
        [
            "PASS  unwanted_answer_rate vs baseline 0.556 <= 0.556 + tolerance 0.100",
            "PASS  false_refusal_rate vs baseline 0.235 <= 0.176 + tolerance 0.100",
            "PASS  answer_match_rate vs baseline 0.615 >= 0.643 - tolerance 0.100",
            "PASS  wrong_answer_rate vs baseline 0.294 <= 0.294 + tolerance 0.100",
        ],
        "PASS (5 checks)",
    );
    on_actions(
        gate_now(&p, &["--comment", "--tolerance", "0.1"]),
        &p,
        &gh.api,
    )
    .stdout(passing)
    .stderr(notice(&gh.api))
    .run();
    let issue = gh.issue();
    assert_eq!(issue.bad, Vec::<String>::new());
    assert_eq!((issue.posts, issue.comments.len() as u64), (0, OTHERS));
    token_in_no_file(&p);
}

#[test]
fn without_a_token_or_a_pull_request_nothing_is_sent() {
    let gh = GitHub::start(false);
    let p = regressed();
    on_actions(gate_now(&p, &["--comment"]), &p, &gh.api)
        .env_remove("GITHUB_TOKEN")
        .status(1)
        .stdout(regressed_failure("base/results.json"))
        .stderr("notice: --comment: no `GITHUB_TOKEN` (a pull request from a fork gets none; pass `GITHUB_TOKEN: ${{ github.token }}` in the step's `env`); no comment posted\n")
        .run();
    p.write("push.json", r#"{"ref":"refs/heads/main"}"#);
    on_actions(gate_now(&p, &["--comment"]), &p, &gh.api)
        .env("GITHUB_EVENT_PATH", p.path().join("push.json").to_str().unwrap())
        .status(1)
        .stdout(regressed_failure("base/results.json"))
        .stderr("notice: --comment: the event in `[PROJECT]/push.json` is not about a pull request (run on `pull_request`); no comment posted\n")
        .run();
    // Outside GitHub Actions.
    gate_now(&p, &["--comment"])
        .status(1)
        .stdout(regressed_failure("base/results.json"))
        .stderr("notice: --comment: `GITHUB_REPOSITORY` is not set: not on GitHub Actions; no comment posted\n")
        .run();
    assert_eq!(gh.issue().requests, 0);
    token_in_no_file(&p);
}

/// The gated setting's row of `now/summary.csv`, as (column, value) of the four numbers.
fn summary_numbers(p: &Project) -> Vec<(String, f64)> {
    let (header, rows) = read_csv(&p.read("now/summary.csv"));
    let row = row_where(&header, &rows, &[("min_score", "0.2"), ("k", "4")]);
    [
        "unwanted_answer_rate",
        "false_refusal_rate",
        "wrong_answer_rate",
        "prompt_tokens_per_question",
    ]
    .iter()
    .map(|c| (c.to_string(), col(&header, row, c).parse().unwrap()))
    .collect()
}

#[test]
fn benchmark_json_and_openmetrics_read_back_by_their_formats() {
    let p = regressed();
    gate_now(
        &p,
        &[
            "--benchmark-json",
            "ci/bench.json",
            "--openmetrics",
            "ci/metrics.txt",
        ],
    )
    .status(1)
    .stdout(regressed_failure("base/results.json"))
    .run();
    let want = summary_numbers(&p);
    // customSmallerIsBetter: an array of objects with a string name and unit and a number value.
    let bench: Value = serde_json::from_str(&p.read("ci/bench.json")).unwrap();
    let entries = bench.as_array().expect("an array");
    let got: Vec<(String, f64)> = entries
        .iter()
        .map(|e| {
            assert!(e["unit"].is_string(), "{e}");
            assert_eq!(e["extra"], "setting min_score=0.2,k=4; 26 questions");
            (
                e["name"].as_str().unwrap().to_string(),
                e["value"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(got.len(), want.len(), "{got:?}");
    for ((name, value), (column, csv)) in got.iter().zip(&want) {
        assert_eq!(name, column);
        // summary.csv rounds rates to three places and tokens to one.
        let places = if name.starts_with("prompt_tokens") {
            0.051
        } else {
            0.001
        };
        assert!((value - csv).abs() < places, "{name}: {value} vs {csv}");
    }
    // OpenMetrics text: `# TYPE` and `# HELP` lines, `name value` samples, `# EOF` last.
    let text = p.read("ci/metrics.txt");
    assert!(text.ends_with("# EOF\n"), "{text}");
    let mut samples = Vec::new();
    for line in text.lines() {
        if let Some(meta) = line.strip_prefix("# ") {
            let kind = meta.split(' ').next().unwrap();
            assert!(["TYPE", "HELP", "EOF"].contains(&kind), "{line}");
            continue;
        }
        let (name, value) = line.split_once(' ').expect(line);
        let valid = name.chars().enumerate().all(|(i, c)| {
            c.is_ascii_alphabetic() || c == '_' || c == ':' || (i > 0 && c.is_ascii_digit())
        });
        assert!(valid, "metric name {name:?}");
        samples.push((name.to_string(), value.parse::<f64>().expect(line)));
    }
    let from_json: Vec<(String, f64)> = got
        .iter()
        .map(|(n, v)| (format!("rageval_{n}"), *v))
        .collect();
    assert_eq!(samples, from_json);
    // Both are flags of the gate, and so of `sweep --gate` only.
    p.rageval([
        "sweep",
        "--benchmark-json",
        "b.json",
        "--openmetrics",
        "m.txt",
    ])
    .fails("--benchmark-json, --openmetrics apply only with `--gate`")
    .run();
}

/// The action's `Sweep and gate` step, run by bash as GitHub runs it: each `${{ inputs.NAME }}`
/// of its `env` is `inputs` here, else the input's default.
#[test]
fn the_actions_sweep_step_sweeps_gates_and_writes_every_file() {
    if !crate::support::require_tool("bash", "bash (GitHub's runners run the step with it)") {
        return;
    }
    let action: serde_yaml::Value = serde_yaml::from_str(
        &std::fs::read_to_string(crate::support::repo().join("action.yml")).unwrap(),
    )
    .unwrap();
    assert_eq!(action["runs"]["using"], "composite");
    let steps = action["runs"]["steps"].as_sequence().unwrap();
    for step in steps.iter().filter(|s| s.get("run").is_some()) {
        assert_eq!(step["shell"], "bash", "{step:?}");
    }
    let step = steps
        .iter()
        .find(|s| s["name"] == "Sweep and gate")
        .unwrap();
    let inputs: BTreeMap<&str, &str> = BTreeMap::from([
        ("token", TOKEN),
        (
            "sweep-args",
            "--evalset evalsets/club.yaml --min-score 0.1..0.3 --k 2,4 --setting min_score=0.2,k=4 --max-unwanted-answer-rate 0.6",
        ),
        ("benchmark-json", "ci/bench.json"),
        ("openmetrics", "ci/metrics.txt"),
    ]);
    let p = Project::sample();
    let bin = assert_cmd::cargo::cargo_bin("rageval");
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut bash = p.other("bash");
    bash.env("PATH", path);
    for (name, value) in step["env"].as_mapping().unwrap() {
        let value = value.as_str().unwrap();
        let input = value
            .strip_prefix("${{ inputs.")
            .and_then(|v| v.strip_suffix(" }}"))
            .expect(value);
        let given = inputs.get(input).copied();
        let default = action["inputs"][input]["default"].as_str().unwrap();
        bash.env(name.as_str().unwrap(), given.unwrap_or(default));
    }
    let out = bash
        .args(["-c", step["run"].as_str().unwrap()])
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("gate: PASS"), "{stdout}");
    assert_eq!(
        stderr,
        "notice: --comment: `GITHUB_REPOSITORY` is not set: not on GitHub Actions; no comment posted\n"
    );
    // The defaults' files and the asked-for ones.
    assert!(p
        .read("reports/gate.md")
        .starts_with("## rageval gate: PASS"));
    roxmltree::Document::parse(&p.read("reports/gate.xml")).unwrap();
    let bench: Value = serde_json::from_str(&p.read("ci/bench.json")).unwrap();
    assert_eq!(bench.as_array().unwrap().len(), 4);
    assert!(p.read("ci/metrics.txt").ends_with("# EOF\n"));
    assert!(!stdout.contains(TOKEN) && !stderr.contains(TOKEN));
    token_in_no_file(&p);
}
