//! What a batch server or a batch file sends is the server's text, never trusted: its ids never
//! reach a path, its replies pass the live path's checks, its repeated or foreign lines are
//! counted honestly, and every file of the batch path is read with a bound.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::response::IntoResponse;
use axum::routing::{get, post};
use serde_json::{json, Value};

use crate::http::{http_project, keyed};
use crate::support::{serve_forever, Project};

/// What the scripted batch server answers each request of a batch with.
#[derive(Clone, Copy)]
enum Replies {
    /// The refusal sentence, with sane usage.
    Plain,
    /// The first line: usage no call can have; the second: a 2 MiB answer; the rest plain.
    Absurd,
    /// Plain, but every answer sent again and again to the letter, for an output file of
    /// 400 MB.
    Huge,
}

/// A batch server that answers every uploaded line at once, under the batch and file ids
/// given (a hostile server's `../` ids), and counts the live chat calls it gets.
struct Scripted {
    input: Mutex<String>,
    live_calls: AtomicUsize,
}

fn scripted(batch_id: &str, file_id: &str, replies: Replies) -> (String, Arc<Scripted>) {
    let state = Arc::new(Scripted {
        input: Mutex::new(String::new()),
        live_calls: AtomicUsize::new(0),
    });
    let status = json!({"id": batch_id, "object": "batch", "status": "completed",
        "output_file_id": file_id, "error_file_id": null,
        "request_counts": {"total": u64::MAX, "completed": u64::MAX, "failed": 1}});
    let (s1, s2, s3) = (state.clone(), state.clone(), state.clone());
    let (st1, st2) = (status.clone(), status);
    let app = axum::Router::new()
        .route(
            "/v1/files",
            post(move |body: String| async move {
                *s1.input.lock().unwrap() = body;
                axum::Json(json!({"id": "file-in", "object": "file"}))
            }),
        )
        .route("/v1/batches", post(move || async move { axum::Json(st1) }))
        // Any other GET: a download (`.../content`) or a poll. A fallback, not routes under
        // `/v1/batches/` and `/v1/files/`: a client that put a `../` id into its URL unencoded
        // lands anywhere, and must still be answered, so that it gets as far as writing the
        // download where the id points.
        .fallback(get(move |uri: axum::http::Uri| async move {
            if uri.path().ends_with("/content") {
                output(&s2.input.lock().unwrap(), replies).into_response()
            } else {
                axum::Json(st2).into_response()
            }
        }))
        .route(
            "/v1/chat/completions",
            post(move || async move {
                s3.live_calls.fetch_add(1, Ordering::Relaxed);
                axum::Json(reply("I don't know based on the provided documents.", 10))
            }),
        );
    (serve_forever(app), state)
}

fn reply(content: &str, prompt_tokens: u64) -> Value {
    json!({"choices": [{"message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": 9}})
}

/// The output file of the uploaded (multipart) input: one answer per request line.
fn output(input: &str, replies: Replies) -> String {
    let mut out = String::new();
    let ids = input
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| v["custom_id"].as_str().map(str::to_string));
    for (i, id) in ids.enumerate() {
        let body = match (replies, i) {
            (Replies::Absurd, 0) => reply("It is in Room B2. [1]", u64::MAX),
            (Replies::Absurd, 1) => reply(&"x".repeat(2 << 20), 10),
            _ => reply("I don't know based on the provided documents.", 10),
        };
        let line = json!({"id": "r", "custom_id": id, "error": null,
            "response": {"status_code": 200, "body": body}});
        out.push_str(&format!("{line}\n"));
    }
    if matches!(replies, Replies::Huge) && !out.is_empty() {
        out = out.repeat((400 << 20) / out.len() + 1);
    }
    out
}

/// The ids of a server that, joined to a download path, would climb into the project folder.
fn climbing(p: &Project, name: &str) -> String {
    format!("{}{}/{name}", "../".repeat(16), p.path().display())
}

/// A batch id and output file id that climb out of any folder: the old client wrote
/// `{id}-output.jsonl` wherever the id pointed. The canary there survives byte for byte, no
/// file appears beside it, and nothing is left in the cache's batch folder but rageval's own.
#[test]
fn a_batch_servers_ids_never_reach_a_path() {
    let p = Project::sample();
    let canary = "canary: must survive byte for byte\n";
    p.write("victim-output.jsonl", canary);
    let (url, _) = scripted(
        &climbing(&p, "victim"),
        &climbing(&p, "file"),
        Replies::Plain,
    );
    let p2 = http_project(&url, false, "  batch: true\n");
    // The hostile ids point into `p`, the project that holds the canary.
    keyed(&p2, &["sweep", "--quiet"])
        .env("RAGEVAL_BATCH_POLL_MS", "10")
        .run();
    assert_eq!(p.read("victim-output.jsonl"), canary);
    let mut names: Vec<String> = std::fs::read_dir(p.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("victim") || n.contains("file"))
        .collect();
    names.sort();
    assert_eq!(names, ["victim-output.jsonl"]);
    let batch_dir: Vec<String> = std::fs::read_dir(p2.path().join(".rageval/cache/batch"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let mut batch_dir = batch_dir;
    batch_dir.sort();
    assert_eq!(
        batch_dir,
        ["open.json", "requests.jsonl"],
        "no download left behind"
    );
}

/// `chat.batch: true` gets the live path's reply check: usage no call can have and a 2 MiB
/// answer are failed lines (called live after), never in results.json, and the gate reads
/// the record the sweep wrote.
#[test]
fn a_batch_reply_gets_the_checks_a_live_reply_gets() {
    let (url, server) = scripted("batch_1", "file-out", Replies::Absurd);
    let p = http_project(&url, false, "  batch: true\n");
    let out = keyed(&p, &["sweep", "--quiet"])
        .env("RAGEVAL_BATCH_POLL_MS", "10")
        .run();
    let record = out.results();
    let absurd = record
        .calls
        .values()
        .filter(|c| c.usage.prompt_tokens > 1 << 40 || c.reply.len() > 1 << 20)
        .count();
    assert_eq!(absurd, 0, "no absurd reply reached results.json");
    assert_eq!(
        server.live_calls.load(Ordering::Relaxed),
        2,
        "the two refused lines are called live, the rest came from the batch"
    );
    assert_eq!(
        record.calls.values().filter(|c| c.batch).count(),
        record.calls.len() - 2
    );
    keyed(&p, &["gate", "reports/latest/results.json"])
        .stdout_any("the gate's verdict on the sample is not the point here")
        .any_status()
        .stderr_lacks("inconsistent")
        .stderr_any("only the absence of an inconsistency is asserted")
        .run();
}

/// A project whose sweep wrote its 104 chat requests with `--batch-out`: the project and the
/// requests' `custom_id`s.
fn exported() -> (Project, Vec<String>) {
    let (url, _) = scripted("batch_1", "file-out", Replies::Plain);
    let p = http_project(&url, false, "");
    keyed(&p, &["sweep", "--batch-out", "calls.jsonl"])
        .stdout_any("the export's own output is pinned in tests/batch.rs")
        .run();
    let ids = p
        .read("calls.jsonl")
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["custom_id"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    (p, ids)
}

fn answer_line(id: &str, content: &str, prompt_tokens: u64) -> String {
    let line = json!({"id": "r", "custom_id": id, "error": null,
        "response": {"status_code": 200, "body": reply(content, prompt_tokens)}});
    format!("{line}\n")
}

/// An import takes only what the cache will serve, counts a line repeated to the letter once,
/// and says the sweep finishes with no call only when the cache answers every request.
#[test]
fn an_import_counts_only_what_the_cache_will_serve() {
    let (p, ids) = exported();
    let refusal = "I don't know based on the provided documents.";
    let mut file = answer_line(&ids[0], &"x".repeat(2 << 20), 10);
    file += &answer_line(&ids[1], refusal, u64::MAX);
    file += &answer_line(&ids[2], refusal, 10);
    file += &answer_line(&ids[2], refusal, 10);
    p.write("answers.jsonl", &file);
    keyed(&p, &["batch", "import", "answers.jsonl"])
        .stdout(concat!(
            "imported 1 answers (0 already in the cache), 2 failed, 0 unknown.\n",
            "the cache answers 1 of the 104 requests this project wrote into batch files.\n",
            "next: `rageval sweep` finishes from the cache and calls the unanswered requests live; `rageval sweep --batch-out FILE` writes them into a new batch file instead.\n",
        ))
        .stderr(concat!(
            "warning: answers.jsonl:1: the reply has 2097152 bytes, more than the limit of 1024 KiB for one answer\n",
            "warning: answers.jsonl:2: `usage.prompt_tokens` is 18446744073709551615, more than one call can count (1000000000)\n",
        ))
        .run();
    let cache = p.read(".rageval/cache/chat.jsonl");
    assert_eq!(cache.lines().count(), 1, "one answer cached, once");
    // The whole set answered: now, and only now, no call is promised.
    let all: String = ids.iter().map(|id| answer_line(id, refusal, 10)).collect();
    p.write("all.jsonl", &all);
    keyed(&p, &["batch", "import", "all.jsonl"])
        .stdout(concat!(
            "imported 103 answers (1 already in the cache), 0 failed, 0 unknown.\n",
            "the cache answers 104 of the 104 requests this project wrote into batch files.\n",
            "next: `rageval sweep` finishes from the cache with no call.\n",
        ))
        .run();
}

/// A `custom_id` answered twice with different answers is refused, naming both lines, and
/// nothing is written.
#[test]
fn a_request_answered_twice_differently_is_refused() {
    let (p, ids) = exported();
    let mut file = answer_line(&ids[0], "It is in Room B2. [1]", 10);
    file += &answer_line(&ids[1], "Fine.", 10);
    file += &answer_line(&ids[0], "It is in Room C3. [1]", 10);
    p.write("answers.jsonl", &file);
    keyed(&p, &["batch", "import", "answers.jsonl"])
        .fails(&format!(
            "answers.jsonl:3: `custom_id` {} was answered before, at answers.jsonl:1, with another answer: the import takes neither (remove the line that is wrong)",
            ids[0]
        ))
        .run();
    assert!(
        !p.path().join(".rageval/cache/chat.jsonl").exists()
            || p.read(".rageval/cache/chat.jsonl").is_empty()
    );
}

/// A file of another project's requests: five strangers named (a newline in an id escaped, so
/// it cannot forge a line), the rest counted, and none of it under `--quiet`.
#[test]
fn strangers_are_named_escaped_and_capped_and_quiet_means_quiet() {
    let (p, _) = exported();
    let mut file = answer_line("forged\nerror: the gate passed", "hi", 10);
    for i in 0..20 {
        file += &answer_line(&format!("someone-else-{i}"), "hi", 10);
    }
    p.write("other.jsonl", &file);
    keyed(&p, &["batch", "import", "other.jsonl"])
        .stdout(concat!(
            "imported 0 answers (0 already in the cache), 0 failed, 21 unknown.\n",
            "the cache answers 0 of the 104 requests this project wrote into batch files.\n",
            "next: `rageval sweep` finishes from the cache and calls the unanswered requests live; `rageval sweep --batch-out FILE` writes them into a new batch file instead.\n",
        ))
        .stderr(concat!(
            "warning: other.jsonl:1: `custom_id` forged\\u{a}error: the gate passed is no request of this project (not imported)\n",
            "warning: other.jsonl:2: `custom_id` someone-else-0 is no request of this project (not imported)\n",
            "warning: other.jsonl:3: `custom_id` someone-else-1 is no request of this project (not imported)\n",
            "warning: other.jsonl:4: `custom_id` someone-else-2 is no request of this project (not imported)\n",
            "warning: other.jsonl:5: `custom_id` someone-else-3 is no request of this project (not imported)\n",
            "warning: ... and 16 more lines of requests this project never wrote\n",
        ))
        .run();
    keyed(&p, &["batch", "import", "--quiet", "other.jsonl"]).run();
}

/// The batch ledger gets the checks every cache file gets: a FIFO in its place is refused
/// (reading it would block forever), naming the file.
#[cfg(unix)]
#[test]
fn a_ledger_that_is_no_regular_file_is_refused() {
    let (p, _) = exported();
    let ledger = p.path().join(".rageval/cache/batch/requests.jsonl");
    std::fs::remove_file(&ledger).unwrap();
    let status = std::process::Command::new("mkfifo")
        .arg(&ledger)
        .status()
        .unwrap();
    assert!(status.success());
    p.write("answers.jsonl", "");
    keyed(&p, &["batch", "import", "answers.jsonl"])
        .unusable(&["requests.jsonl", "it is a FIFO, not a regular file"])
        .run();
}

/// An output file the server no longer has (a 404 to its download): the message says the batch
/// stays open, that running again retries, and which file to remove to start anew.
#[test]
fn an_output_file_gone_says_how_to_retry_or_start_anew() {
    let status = json!({"id": "batch_1", "status": "completed", "output_file_id": "file-gone",
        "request_counts": {"total": 104, "completed": 104, "failed": 0}});
    let st2 = status.clone();
    let app = axum::Router::new()
        .route(
            "/v1/files",
            post(|| async { axum::Json(json!({"id": "file-in"})) }),
        )
        .route(
            "/v1/batches",
            post(move || async move { axum::Json(status) }),
        )
        .route(
            "/v1/batches/{*rest}",
            get(move || async move { axum::Json(st2) }),
        );
    let url = serve_forever(app);
    let p = http_project(&url, false, "  batch: true\n");
    keyed(&p, &["sweep", "--quiet"])
        .env("RAGEVAL_BATCH_POLL_MS", "10")
        .unusable(&[
            "cannot download the output file of batch batch_1; the batch stays in",
            "so running the command again retries it, and `rm .rageval/cache/batch/open.json` starts new batches instead",
            "/v1/files/file-gone/content answered 404 Not Found",
            "has no such file or batch",
        ])
        .run();
}

/// An import holds a line at a time whatever the file's size: 300 MB of answers (each of the
/// 104 requests answered again and again, to the letter) import under a 256 MiB limit on the
/// address space (`ulimit -v`), where an import that held the answers it read could not.
#[test]
fn a_large_import_runs_in_bounded_memory() {
    use std::io::Write as _;
    let (p, ids) = exported();
    let text = "It is in Room B2. ".repeat(3_000);
    let mut f = std::io::BufWriter::new(std::fs::File::create(p.path().join("big.jsonl")).unwrap());
    let mut written = 0;
    while written < 300 << 20 {
        for id in &ids {
            let line = answer_line(id, &text, 10);
            written += line.len();
            f.write_all(line.as_bytes()).unwrap();
        }
    }
    drop(f);
    let (code, stderr) = p.run_bounded(&["batch", "import", "-q", "big.jsonl"], 256, 300);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(p.read(".rageval/cache/chat.jsonl").lines().count(), 104);
}

/// A batch's output file is written to disk as it arrives, never held whole: a 400 MB output
/// file downloads and imports under a 384 MiB limit on the address space (`ulimit -v`), where
/// a client that read the file into memory before writing it could not.
#[test]
fn a_large_batch_output_downloads_in_bounded_memory() {
    let (url, server) = scripted("batch_1", "file-out", Replies::Huge);
    let p = http_project(&url, false, "  batch: true\n");
    let env = [
        (crate::http::KEY_ENV, "test-key"),
        ("RAGEVAL_BATCH_POLL_MS", "10"),
    ];
    let (code, stderr) = p.run_bounded_env(&["sweep", "-q"], &env, 384, 300);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(
        server.live_calls.load(Ordering::Relaxed),
        0,
        "every answer came from the batch"
    );
    let record = crate::harness::results(&p, "reports/latest");
    assert!(!record.calls.is_empty());
    assert!(
        record.calls.values().all(|c| c.batch),
        "every call is the batch's"
    );
}
