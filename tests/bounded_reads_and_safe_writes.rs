//! Inputs read within bounds (cache files, concurrency,
//! answers), writes that never replace a device or a link, and exit statuses that stay 0, 1 or
//! 2 whatever happens to the streams.

use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::process::Stdio;

use crate::http::http_project;
use crate::support::Project;

const SET: &str = "corpus: docs\nanswerable:\n  - question: What is the fee?\n";

/// A stream whose reader is gone before the process starts: every write to it fails with
/// `EPIPE`, as `rageval ... 2>&1 >/dev/null | head -1` does once `head` has its line.
fn closed_pipe() -> Stdio {
    let (ours, theirs) = UnixStream::pair().unwrap();
    drop(ours);
    Stdio::from(OwnedFd::from(theirs))
}

/// A closed stderr pipe never turns into exit status 101 (a panic in the standard printing
/// macros): an error still exits 2, a run with warnings still exits 0.
#[test]
fn a_closed_stderr_pipe_keeps_the_exit_status() {
    let p = Project::one_doc(SET);
    for (args, code) in [
        (&["sweep", "--evalset", "missing.yaml"][..], 2),
        (&["validate", "missing.yaml"][..], 2),
        (&["sweep", "--evalset", "set.yaml", "--out", "out"][..], 0),
    ] {
        let status = p
            .process()
            .args(args)
            // Stage timings: more lines on stderr after the run.
            .env("RAGEVAL_TIMINGS", "1")
            .stdout(Stdio::null())
            .stderr(closed_pipe())
            .status()
            .unwrap();
        assert_eq!(status.code(), Some(code), "rageval {}", args.join(" "));
    }
}

/// A cache file gets the checks of every input file (issue 33 item 2): a link to /dev/zero was
/// read until the process aborted (2.2 GB, exit 134), a FIFO hung the sweep. Both now exit 2
/// at once, naming the file, within 512 MiB and 20 seconds.
#[test]
fn cache_files_that_are_no_regular_file_are_refused_at_once() {
    // The cache is opened before any call: no server needs to listen.
    let p = http_project("http://127.0.0.1:9/v1", true, "");
    let cache = p.path().join(".rageval/cache");
    std::fs::create_dir_all(&cache).unwrap();
    std::os::unix::fs::symlink("/dev/zero", cache.join("chat.jsonl")).unwrap();
    let (code, stderr) = p.run_bounded(&["sweep", "-q"], 512, 20);
    assert_eq!(
        (code, stderr.as_str()),
        (
            Some(2),
            "error: cannot open cache `.rageval/cache/chat.jsonl`: it is a device, not a regular file\n"
        )
    );
    std::fs::remove_file(cache.join("chat.jsonl")).unwrap();
    // Opened first, the embeddings' file was created before the chat file was refused.
    std::fs::remove_file(cache.join("embeddings.jsonl")).unwrap();
    if !crate::support::require_tool("mkfifo", "coreutils") {
        return;
    }
    let fifo = cache.join("embeddings.jsonl");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let (code, stderr) = p.run_bounded(&["sweep", "-q"], 512, 20);
    assert_eq!(
        (code, stderr.as_str()),
        (
            Some(2),
            "error: cannot open cache `.rageval/cache/embeddings.jsonl`: it is a FIFO, not a regular file\n"
        )
    );
}

fn mkfifo(path: &std::path::Path) {
    assert!(
        crate::support::require_tool("mkfifo", "coreutils"),
        "mkfifo is needed"
    );
    let made = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(made.success(), "mkfifo {}", path.display());
}

fn is_link(path: &std::path::Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
}

/// Reports are written through a link, a device or a FIFO, never renamed over them (issue 33
/// item 3): `gate --junit /dev/null` as root replaced the machine's /dev/null with a regular
/// file, `--markdown /dev/stdout` replaced the link. Here the device is reached through a link
/// in the project (so that the old code, run by mistake, breaks nothing outside it).
#[test]
fn gate_writes_into_a_device_a_fifo_or_a_link_and_leaves_each_in_place() {
    use std::os::unix::fs::FileTypeExt;
    let p = Project::sample();
    p.sweep(["--out", "out"])
        .args(crate::support::PRODUCTION)
        .run();
    let at = |rel: &str| p.path().join(rel);
    std::os::unix::fs::symlink("/dev/null", at("junit.xml")).unwrap();
    p.write("real.md", "old text");
    std::os::unix::fs::symlink("real.md", at("summary.md")).unwrap();
    mkfifo(&at("checks.fifo"));
    // A reader for the FIFO, as a pipe to another program would be.
    let fifo = at("checks.fifo");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(std::fs::read_to_string(fifo).unwrap_or_default());
    });
    let gate = |junit: &str, markdown: &str| {
        p.rageval(["gate", "out/results.json", "--setting", "min_score=0.2,k=4"])
            .args(["--max-unwanted-answer-rate", "1", "--junit", junit])
            .args(["--markdown", markdown])
            .stdout(concat!(
                "gate: setting min_score=0.2,k=4 of out/results.json (26 questions)\n",
                "PASS  error_runs 0 <= limit 0\n",
                "PASS  unwanted_answer_rate 0.556 <= limit 1.000\n",
                "gate: PASS (2 checks)\n",
            ))
            .run();
    };
    gate("junit.xml", "checks.fifo");
    let streamed = rx
        .recv_timeout(std::time::Duration::from_secs(20))
        .expect("the FIFO's reader got the checks");
    assert!(
        streamed.contains("| unwanted_answer_rate | PASS |"),
        "{streamed}"
    );
    assert!(std::fs::metadata(at("checks.fifo"))
        .unwrap()
        .file_type()
        .is_fifo());
    assert!(is_link(&at("junit.xml")));
    assert!(std::fs::metadata(at("junit.xml"))
        .unwrap()
        .file_type()
        .is_char_device());
    // Through a link to a regular file: the file is replaced, the link kept.
    gate("junit.xml", "summary.md");
    assert!(is_link(&at("summary.md")));
    assert!(p
        .read("real.md")
        .contains("| unwanted_answer_rate | PASS |"));
}

/// An OpenAI-compatible server that answers the question about the fee with `usage` and the
/// others with plausible counts, plain or streamed as the request asks. Returns its base URL.
fn usage_server(usage: serde_json::Value) -> String {
    use axum::response::IntoResponse;
    use axum::routing::post;
    crate::support::serve_forever(axum::Router::new().route(
        "/v1/chat/completions",
        post(move |body: axum::body::Bytes| {
            let usage = usage.clone();
            async move {
                let req: serde_json::Value = serde_json::from_slice(&body).unwrap();
                let content = "It costs ten dollars. [1]";
                let usage = match req.to_string().contains("What is the fee?") {
                    true => usage,
                    false => serde_json::json!({"prompt_tokens": 40, "completion_tokens": 6}),
                };
                if req["stream"].as_bool() == Some(true) {
                    let chunk = serde_json::json!({"choices": [{"delta": {"content": content}}]});
                    let last = serde_json::json!({"choices": [], "usage": usage});
                    let text = format!("data: {chunk}\n\ndata: {last}\n\ndata: [DONE]\n\n");
                    ([("content-type", "text/event-stream")], text).into_response()
                } else {
                    axum::Json(serde_json::json!({
                        "choices": [{"message": {"role": "assistant", "content": content}}],
                        "usage": usage,
                    }))
                    .into_response()
                }
            }
        }),
    ))
}

/// A server claiming 2^64 - 1 prompt tokens, plain or streamed, makes an `error` run naming the
/// field (issue 33 item 4): the sweep used to exit 0 with saturated totals, and `gate` then
/// refused the results.json it wrote as inconsistent. Every record a sweep writes now gates.
#[test]
fn implausible_usage_is_an_error_run_and_the_record_gates() {
    let url = usage_server(serde_json::json!({"prompt_tokens": u64::MAX, "completion_tokens": 3}));
    let p = Project::one_doc(&format!("{SET}  - question: When does the club open?\n"));
    p.write(
        "rageval.yaml",
        &format!("evalsets: [set.yaml]\nsweep: {{min_score: \"0\", k: \"1\"}}\nchat: {{kind: openai, base_url: \"{url}\", model: m, max_retries: 0}}\n"),
    );
    for stream in [false, true] {
        let out = if stream { "streamed" } else { "plain" };
        let mut sweep = p.rageval(["sweep", "-q", "--no-cache", "--allow-errors", "--out", out]);
        if stream {
            sweep = sweep.arg("--stream");
        }
        let record = sweep
            .stderr(
                "warning: 1 of 2 model calls failed (1 malformed); their runs are `error` in the reports\n",
            )
            .run().results();
        let failed: Vec<_> = record
            .calls
            .values()
            .filter(|c| c.error.is_some())
            .collect();
        assert_eq!(failed.len(), 1, "{out}");
        let call = failed[0];
        let error = call.error.as_ref().unwrap();
        assert_eq!(error.kind.as_str(), "malformed", "{out}");
        assert!(
            error.message.ends_with("`usage.prompt_tokens` is 18446744073709551615, more than one call can count (1000000000)"),
            "{out}: {}",
            error.message
        );
        assert_eq!(call.usage.prompt_tokens, 0, "{out}");
        p.rageval([
            "gate",
            &format!("{out}/results.json"),
            "--setting",
            "min_score=0,k=1",
        ])
        .args(["--max-unwanted-answer-rate", "1"])
        .status(1)
        .stdout(format!(
            "gate: setting min_score=0,k=1 of {out}/results.json (2 questions)\n\
             FAIL  error_runs 1 > limit 0\n\
             PASS  unwanted_answer_rate n/a (no unanswerable questions)\n\
             gate: FAIL (1 of 2 checks failed)\n"
        ))
        .run();
    }
}

/// `--concurrency` and `sweep.concurrency` are bounded (issue 33 item 2): 2^64 - 1 panicked
/// (capacity overflow, exit 101), 2^32 aborted allocating 137 GB.
#[test]
fn concurrency_past_its_bound_is_refused_with_the_range() {
    let p = Project::one_doc(SET);
    p.rageval([
        "sweep",
        "--evalset",
        "set.yaml",
        "-j",
        "18446744073709551615",
    ])
    .fails(
        "invalid --concurrency: must be from 1 to 1024 calls in flight, got 18446744073709551615",
    )
    .absent("reports")
    .run();
    p.write(
        "big.yaml",
        "evalsets: [set.yaml]\nsweep:\n  concurrency: 4294967296\n",
    );
    p.rageval(["sweep", "--config", "big.yaml"])
        .fails("big.yaml:3: `sweep.concurrency`: must be from 1 to 1024 calls in flight, got 4294967296")
        .absent("reports")
        .run();
}

/// URLs are checked beyond their scheme, with the file and line (issue 33 item 8): a port past
/// 65535 was retried and reported as a transport failure of every call.
#[test]
fn an_endpoint_url_that_does_not_parse_is_refused_with_file_and_line() {
    let cases = [
        (
            "chat: {kind: openai, base_url: \"http://127.0.0.1:99999/g\", model: m}\n",
            "chat.base_url",
        ),
        (
            "chat: {kind: http, url: \"http://127.0.0.1:99999/g\"}\n",
            "chat.url",
        ),
        (
            "retriever: {kind: http, url: \"http://127.0.0.1:99999/g\"}\n",
            "retriever.url",
        ),
    ]
    .map(|(section, field)| {
        (
            section,
            format!(
                "bad.yaml:2: `{field}`: `http://127.0.0.1:99999/g` is not a URL: invalid port number"
            ),
        )
    });
    Project::one_doc(SET).refuses_each_section(
        "bad.yaml",
        "evalsets: [set.yaml]\n",
        &["sweep", "--config", "bad.yaml"],
        "reports",
        &cases,
    );
}

/// `generate --out` onto a link to a device writes into the device (issue 33 item 3): `--out
/// /dev/null --force` as root replaced /dev/null with a regular file.
#[test]
fn generate_writes_through_a_link_to_a_device() {
    use std::os::unix::fs::FileTypeExt;
    let p = Project::sample();
    let out = p.path().join("evalsets/null.yaml");
    std::os::unix::fs::symlink("/dev/null", &out).unwrap();
    p.rageval(["generate", "-q", "--answerable", "2", "--unanswerable", "1"])
        .args(["--out", "evalsets/null.yaml", "--force"])
        .stdout(concat!(
            "wrote 3 of 3 questions asked for to evalsets/null.yaml\n",
            "  answerable: 2 asked, 2 tried, 2 kept\n",
            "  near-miss: 1 asked, 1 tried, 1 kept\n",
            "note: these questions are placeholders: the offline mock model (`chat: {kind: mock}`, the default) wrote them from the passages' words, to show the file's shape. For real ones, point `chat:` (or `generate.model`) at a model, e.g. `chat: {kind: openai, model: gpt-4o-mini, api_key_env: OPENAI_API_KEY}` or a local server's `base_url` (docs/generate.md), then run `rageval generate --force`\n",
            "next: review them (set `reviewed: true`), then `rageval validate` and `rageval sweep --only reviewed`\n",
        ))
        .run();
    assert!(is_link(&out));
    assert!(std::fs::metadata(&out)
        .unwrap()
        .file_type()
        .is_char_device());
}

/// A file that appears at `generate --out` while the questions are generated is kept (issue 33
/// item 3): `--out` was checked absent at the start and renamed over at the end, so two runs at
/// once both reported success and one was lost.
#[test]
fn generate_keeps_a_file_that_appeared_while_it_ran() {
    let p = Project::sample();
    let child = p
        .process()
        .args(["generate", "-q", "--answerable", "2", "--unanswerable", "1"])
        .args(["--out", "evalsets/new.yaml"])
        // The temporary file is held open this long before it is filled.
        .env("RAGEVAL_TEST_HOLD_TEMPORARY_MS", "3000")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let dir = p.path().join("evalsets");
    let started = std::time::Instant::now();
    while !std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .any(|e| e.file_name().to_string_lossy().starts_with(".rageval-tmp-"))
    {
        assert!(
            started.elapsed().as_secs() < 30,
            "no temporary file appeared"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    p.write("evalsets/new.yaml", "# mine\n");
    let output = child.wait_with_output().unwrap();
    assert_eq!(
        (output.status.code(), String::from_utf8_lossy(&output.stderr).as_ref()),
        (Some(2), "error: `evalsets/new.yaml` was created while the questions were generated: pass --force to overwrite it, or --append to add to it\n")
    );
    assert_eq!(p.read("evalsets/new.yaml"), "# mine\n");
}
