//! Batch engines end to end, against `rageval mock-llm` on loopback: `sweep --batch-out` writes
//! the requests of a live sweep and makes no call, `batch import` reads an engine's answers
//! into the cache, and `chat.batch: true` runs the whole cycle through the mock's Files and
//! Batches endpoints, resuming the same batch after a SIGKILL.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::harness::{Outcome, Record, Test};
use crate::http::{http_project, keyed, raw, MockLlm, KEY_ENV};
use crate::support::Project;

/// Each run's outcome, by (question, setting).
fn outcomes(r: &Record) -> BTreeMap<(String, String), Outcome> {
    r.runs
        .iter()
        .map(|run| {
            (
                (run.question.clone(), run.setting.clone()),
                run.verdict.outcome,
            )
        })
        .collect()
}

/// The live sweep every batch sweep is compared with: its record, on a mock of its own.
fn live_sweep() -> Record {
    let mock = MockLlm::start(&[]);
    let p = http_project(&mock.url, false, "");
    keyed(&p, &["sweep", "--quiet"]).run().results()
}

/// The live sweep with the mock's embedder: its record, and the texts it embedded.
fn live_sweep_embedded() -> (Record, u64) {
    let mock = MockLlm::start(&[]);
    let p = http_project(&mock.url, true, "");
    let record = keyed(&p, &["sweep", "--quiet"]).run().results();
    (record, count(&mock.stats(), &["texts_embedded"]))
}

pub(crate) fn count(v: &Value, path: &[&str]) -> u64 {
    path.iter().fold(v, |v, k| &v[*k]).as_u64().unwrap_or(0)
}

/// What an engine of one's own does with a batch input file: each line sent to `mock`'s chat
/// (or embeddings) endpoint, the answers written as output lines and the failures as error lines.
pub(crate) fn answer(mock: &MockLlm, input: &str) -> (String, String) {
    let addr = mock
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/v1");
    let (mut output, mut errors) = (String::new(), String::new());
    for line in input.lines() {
        let req: Value = serde_json::from_str(line).unwrap();
        let body = req["body"].to_string();
        let (status, reply) = raw(
            addr,
            "POST",
            req["url"].as_str().unwrap(),
            &[
                ("Authorization", "Bearer test-key"),
                ("Content-Type", "application/json"),
            ],
            body.as_bytes(),
        );
        let reply: Value = serde_json::from_slice(&reply).unwrap_or(Value::Null);
        let out = json!({"id": "r", "custom_id": req["custom_id"], "response": {"status_code": status, "body": reply}, "error": null});
        let to = if status == 200 {
            &mut output
        } else {
            &mut errors
        };
        to.push_str(&format!("{out}\n"));
    }
    (output, errors)
}

/// `--batch-out` writes one line per distinct prompt of the live sweep and calls nothing; an
/// engine's answers (every seventh request failing) imported with `batch import` give a sweep
/// that calls only the failed lines and whose every run equals the live sweep's. Importing
/// the same files again changes nothing.
#[test]
fn exported_requests_answered_elsewhere_and_imported_give_the_live_sweep() {
    let live = live_sweep();
    let distinct = live.calls.len();
    let mock = MockLlm::start(&[]);
    let p = http_project(&mock.url, false, "");
    let out = keyed(&p, &["sweep", "--batch-out", "calls.jsonl"])
        .stdout_contains(format!("wrote {distinct} chat requests to calls.jsonl (OpenAI batch input format; no chat call was made)."))
        .stderr("")
        .absent("reports/latest/results.json")
        .stdout(concat!(
            "wrote 104 chat requests to calls.jsonl (OpenAI batch input format; no chat call was made).\n",
            "estimated prompt tokens: 33962; estimated prompt cost at the batch price (50% off): 0.0000 USD\n",
            "next: have a batch engine answer calls.jsonl, then `rageval batch import OUTPUT.jsonl [ERRORS.jsonl]` and run the sweep: it finishes from the cache (failed lines are called live, or `--batch-out` writes them again).\n",
        ))
        .run();
    assert_eq!(count(&mock.stats(), &["chat_requests"]), 0, "no call");
    let input = out.read("calls.jsonl");
    assert_eq!(input.lines().count(), distinct);
    let first: Value = serde_json::from_str(input.lines().next().unwrap()).unwrap();
    assert_eq!(first["method"], "POST");
    assert_eq!(first["url"], "/v1/chat/completions");
    assert_eq!(first["body"]["model"], "mock");
    assert_eq!(first["body"]["stream"], false);
    assert_eq!(
        first["custom_id"].as_str().unwrap().len(),
        64,
        "a cache key"
    );
    assert!(!input.contains("test-key"), "no key in the file");

    let engine = MockLlm::start(&["--fail-every", "7"]);
    let (output, errors) = answer(&engine, &input);
    p.write("answers.jsonl", &output);
    p.write("errors.jsonl", &errors);
    let failed = distinct / 7;
    let imported = distinct - failed;
    let summary = format!(
        "imported {imported} answers (0 already in the cache), {failed} failed, 0 unknown.\n"
    );
    // Each import says what it imported and warns of the same failed lines.
    let import = |summary: String, stdout: &str| {
        keyed(&p, &["batch", "import", "answers.jsonl", "errors.jsonl"])
            .stdout_contains(summary)
            .stdout(format!(
                "{stdout}the cache answers {imported} of the {distinct} requests this project wrote into batch files.\nnext: `rageval sweep` finishes from the cache and calls the unanswered requests live; `rageval sweep --batch-out FILE` writes them into a new batch file instead.\n"
            ))
            .stderr(concat!(
                "warning: errors.jsonl:1: 500: server_error: injected failure\n",
                "warning: errors.jsonl:2: 500: server_error: injected failure\n",
                "warning: errors.jsonl:3: 500: server_error: injected failure\n",
                "warning: errors.jsonl:4: 500: server_error: injected failure\n",
                "warning: errors.jsonl:5: 500: server_error: injected failure\n",
                "warning: ... and 9 more failed lines\n",
            ))
            .run();
    };
    import(
        summary,
        "imported 90 answers (0 already in the cache), 14 failed, 0 unknown.\n",
    );
    import(
        format!(
            "imported 0 answers ({imported} already in the cache), {failed} failed, 0 unknown.\n"
        ),
        "imported 0 answers (90 already in the cache), 14 failed, 0 unknown.\n",
    );
    let swept = keyed(&p, &["sweep", "--quiet"]).run().results();
    assert_eq!(
        count(&mock.stats(), &["chat_requests"]) as usize,
        failed,
        "only the failed lines are called"
    );
    assert_eq!(outcomes(&swept), outcomes(&live));
}

/// An import refuses what is not a batch file, naming the line, and counts a stranger's line
/// as unknown without caching it.
#[test]
fn an_import_refuses_a_broken_line_and_never_guesses_an_unknown_id() {
    let mock = MockLlm::start(&[]);
    let p = http_project(&mock.url, false, "");
    keyed(&p, &["batch", "import", "none.jsonl"])
        .unusable(&["holds no batch requests: write them with `rageval sweep --batch-out FILE`"])
        .run();
    keyed(&p, &["sweep", "--batch-out", "calls.jsonl"])
        .stdout(concat!(
            "wrote 104 chat requests to calls.jsonl (OpenAI batch input format; no chat call was made).\n",
            "estimated prompt tokens: 33962; estimated prompt cost at the batch price (50% off): 0.0000 USD\n",
            "next: have a batch engine answer calls.jsonl, then `rageval batch import OUTPUT.jsonl [ERRORS.jsonl]` and run the sweep: it finishes from the cache (failed lines are called live, or `--batch-out` writes them again).\n",
        ))
        .run();
    p.write(
        "bad.jsonl",
        "{\"custom_id\": \"x\", \"response\": {\"status_code\": 200}}\nnot json\n",
    );
    keyed(&p, &["batch", "import", "bad.jsonl"])
        .unusable(&["error: bad.jsonl:2: the line is not JSON ("])
        .run();
    p.write(
        "other.jsonl",
        &format!("{}\n", json!({"custom_id": "someone-else", "response": {"status_code": 200, "body": {"choices": [{"message": {"content": "hi"}}]}}})),
    );
    keyed(&p, &["batch", "import", "other.jsonl"])
        .stderr("warning: other.jsonl:1: `custom_id` someone-else is no request of this project (not imported)\n")
        .stdout(concat!(
            "imported 0 answers (0 already in the cache), 0 failed, 1 unknown.\n",
            "the cache answers 0 of the 104 requests this project wrote into batch files.\n",
            "next: `rageval sweep` finishes from the cache and calls the unanswered requests live; `rageval sweep --batch-out FILE` writes them into a new batch file instead.\n",
        ))
        .run();
    assert!(
        !p.path().join(".rageval/cache/chat.jsonl").exists()
            || !p.read(".rageval/cache/chat.jsonl").contains("someone-else")
    );
}

/// Run `rageval ARGS` in `p` with the mock's key (batches polled every `poll_ms`) and SIGKILL
/// it a moment after its first batch is kept open in the cache folder.
pub fn kill_while_a_batch_runs(p: &Project, args: &[&str], poll_ms: &str) {
    let mut child = p
        .process()
        .args(args)
        .env(KEY_ENV, "test-key")
        .env("RAGEVAL_BATCH_POLL_MS", poll_ms)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let open = p.path().join(".rageval/cache/batch/open.json");
    let start = Instant::now();
    while !open.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no batch was created"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
}

/// `chat.batch: true` against the mock's Batch API (every seventh request failing, a few
/// seconds a batch): a run killed by SIGKILL while its batch runs leaves the batch id in the
/// cache folder; the next run resumes that same batch (no second one), calls live only the
/// lines the batch failed, and every run's outcome equals the live sweep's.
#[test]
fn a_batch_sweep_killed_mid_batch_resumes_the_same_batch_and_equals_the_live_sweep() {
    let live = live_sweep();
    let distinct = live.calls.len() as u64;
    let mock = MockLlm::start(&["--fail-every", "7", "--batch-delay", "4000"]);
    let p = http_project(&mock.url, false, "  batch: true\n");
    kill_while_a_batch_runs(&p, &["sweep", "--quiet"], "100");
    let kept: Value = serde_json::from_str(&p.read(".rageval/cache/batch/open.json")).unwrap();
    let id = kept["batches"][0]["id"].as_str().unwrap().to_string();
    let before = mock.stats();
    assert_eq!(count(&before, &["batches", "created"]), 1);
    assert!(
        count(&before, &["batches", "lines"]) < distinct,
        "killed mid-batch"
    );

    let out = keyed(&p, &["sweep"])
        .env("RAGEVAL_BATCH_POLL_MS", "100")
        .stderr(format!(
            "resuming 1 batch left open by an earlier run: {id}\nbatch {id}: completed, {distinct}/{distinct} requests done, {} failed\n{}batch {id}: {} of {distinct} requests answered, {} failed\n",
            distinct / 7,
            format!("note: batch {id}: 500: server_error: injected failure\n").repeat(5),
            distinct - distinct / 7,
            distinct / 7
        ))
        .stdout_snapshot("batch__a_batch_sweep_killed_mid_batch_resumes_the_same_batch_and_equals_the_live_sweep")
        .run();
    let stats = mock.stats();
    assert_eq!(
        count(&stats, &["batches", "created"]),
        1,
        "the same batch, not a new one"
    );
    assert_eq!(count(&stats, &["batches", "lines"]), distinct);
    let batch_faults = distinct / 7;
    let live_faults = count(&stats, &["faults", "failed"]) - batch_faults;
    let live_calls = count(&stats, &["chat_requests"]) - distinct - live_faults;
    assert_eq!(
        live_calls,
        distinct / 7,
        "only the failed lines are called live"
    );
    assert_eq!(outcomes(&out.results()), outcomes(&live));
    assert_eq!(
        p.read(".rageval/cache/batch/open.json").trim(),
        "{\n  \"batches\": []\n}"
    );
}

/// `batch_retry: batch` sends the failed lines as one more batch; a server without a Batch
/// API is named with what to do.
#[test]
fn failed_lines_go_into_one_more_batch_and_a_server_without_batches_is_named() {
    let live = live_sweep();
    let mock = MockLlm::start(&["--fail-every", "7", "--batch-delay", "200"]);
    let p = http_project(&mock.url, false, "  batch: true\n  batch_retry: batch\n");
    let out = keyed(&p, &["sweep", "--quiet"])
        .env("RAGEVAL_BATCH_POLL_MS", "50")
        .run();
    let stats = mock.stats();
    assert_eq!(
        count(&stats, &["batches", "created"]),
        2,
        "one for the sweep, one for its failed lines"
    );
    assert_eq!(outcomes(&out.results()), outcomes(&live));

    let bare = crate::support::serve_forever(axum::Router::new());
    let p = http_project(&bare, false, "  batch: true\n");
    keyed(&p, &["sweep"])
        .unusable(&[
            "answered 404 Not Found",
            "serves no Files and Batches API",
            "set `chat.batch: false`",
        ])
        .run();
}

/// The batch fields are checked with their section: a batch of the builtin mock, and a
/// discount that is not a share, are refused naming file, line and field.
#[test]
fn batch_fields_that_cannot_be_are_refused_by_the_config_check() {
    let p = Project::sample();
    p.write(
        "rageval.yaml",
        "evalsets: [evalsets/club.yaml]\nchat:\n  kind: mock\n  batch: true\n",
    );
    Test::at(&p)
        .args(["sweep"])
        .unusable(&[
            "rageval.yaml:4",
            "chat.batch",
            "batch engines answer `openai` models only, and this section is of kind `mock`",
        ])
        .run();
    p.write(
        "rageval.yaml",
        "evalsets: [evalsets/club.yaml]\npricing:\n  batch_discount: 1.5\n",
    );
    Test::at(&p)
        .args(["sweep"])
        .unusable(&[
            "rageval.yaml:3",
            "pricing.batch_discount",
            "must be a share from 0 to below 1 (0.5: half price), got 1.5",
        ])
        .run();
    p.write(
        "rageval.yaml",
        "evalsets: [evalsets/club.yaml]\nmodels:\n  big:\n    kind: http\n    url: http://127.0.0.1:9/generate\n    batch: true\n",
    );
    Test::at(&p)
        .args(["sweep"])
        .unusable(&[
            "rageval.yaml:6",
            "models.big.batch",
            "batch engines answer `openai` models only, and this section is of kind `http`",
        ])
        .run();
    p.write(
        "rageval.yaml",
        "evalsets: [evalsets/club.yaml]\nembedders:\n  small:\n    kind: hash\n    batch: true\n",
    );
    Test::at(&p)
        .args(["sweep"])
        .unusable(&[
            "rageval.yaml:5",
            "embedders.small.batch",
            "batch engines embed with `openai` embedders only, and this section is of kind `hash`",
        ])
        .run();
}

/// With `--batch-embeddings`, a sweep whose embeddings are not cached writes them, one line
/// per distinct text the live sweep embeds, and no chat request (the prompts depend on what
/// they retrieve); once they are imported, the next `--batch-out` writes exactly the live
/// sweep's chat requests, and after their import the sweep makes no call at all and equals
/// the live sweep run by run.
#[test]
fn embeddings_exported_first_then_the_chat_requests_give_the_live_sweep() {
    let (live, texts) = live_sweep_embedded();
    let distinct = live.calls.len();
    let mock = MockLlm::start(&[]);
    let p = http_project(&mock.url, true, "");
    assert_eq!(texts, 49, "the sample's chunks and questions");
    let out = keyed(&p, &["sweep", "--batch-out", "embed.jsonl", "--batch-embeddings"])
        .stdout(concat!(
            "wrote 49 embedding requests to embed.jsonl (OpenAI batch input format; no embedding or chat call was made).\n",
            "estimated input tokens: 1469 (embeddings are not priced)\n",
            "next: have a batch engine answer embed.jsonl, then `rageval batch import OUTPUT.jsonl [ERRORS.jsonl]`, then run this command again: the chat requests depend on what those embeddings retrieve.\n",
        ))
        .run();
    let stats = mock.stats();
    assert_eq!(
        count(&stats, &["embedding_requests"]),
        0,
        "no embedding call"
    );
    assert_eq!(count(&stats, &["chat_requests"]), 0, "no chat call");
    let input = out.read("embed.jsonl");
    assert_eq!(
        input.lines().count() as u64,
        texts,
        "one line per distinct text"
    );
    let first: Value = serde_json::from_str(input.lines().next().unwrap()).unwrap();
    assert_eq!(first["url"], "/v1/embeddings");
    assert_eq!(first["body"]["model"], "hash-1024");
    assert_eq!(first["body"]["input"].as_array().unwrap().len(), 1);

    let (output, errors) = answer(&mock, &input);
    assert_eq!(errors, "");
    p.write("embedded.jsonl", &output);
    keyed(&p, &["batch", "import", "embedded.jsonl"])
        .stdout(concat!(
            "imported 49 answers (0 already in the cache), 0 failed, 0 unknown.\n",
            "the cache answers 49 of the 49 requests this project wrote into batch files.\n",
            "next: `rageval sweep --batch-out FILE` writes the chat requests, whose prompts depend on what these embeddings retrieve (`rageval sweep` makes them live, and embeds live what failed).\n",
        ))
        .run();
    let before = mock.stats();
    assert_eq!(distinct, 104);
    let out = keyed(
        &p,
        &["sweep", "--batch-out", "calls.jsonl", "--batch-embeddings"],
    )
    .stdout(concat!(
        "wrote 104 chat requests to calls.jsonl (OpenAI batch input format; no chat call was made).\n",
        "estimated prompt tokens: 33962; estimated prompt cost at the batch price (50% off): 0.0000 USD\n",
        "next: have a batch engine answer calls.jsonl, then `rageval batch import OUTPUT.jsonl [ERRORS.jsonl]` and run the sweep: it finishes from the cache (failed lines are called live, or `--batch-out` writes them again).\n",
    ))
    .run();
    assert_eq!(
        count(&mock.stats(), &["embedding_requests"]),
        count(&before, &["embedding_requests"]),
        "every vector from the cache"
    );
    let (output, _) = answer(&mock, &out.read("calls.jsonl"));
    p.write("answers.jsonl", &output);
    keyed(&p, &["batch", "import", "answers.jsonl"])
        .stdout(concat!(
            "imported 104 answers (0 already in the cache), 0 failed, 0 unknown.\n",
            "the cache answers 153 of the 153 requests this project wrote into batch files.\n",
            "next: `rageval sweep` finishes from the cache with no call.\n",
        ))
        .run();
    let before = mock.stats();
    let swept = keyed(&p, &["sweep", "--quiet"]).run().results();
    let after = mock.stats();
    for what in ["embedding_requests", "chat_requests"] {
        assert_eq!(count(&after, &[what]), count(&before, &[what]), "no {what}");
    }
    assert_eq!(outcomes(&swept), outcomes(&live));
}

/// `embedder.batch: true` runs the embeddings through the embedder server's Batch API (the
/// chat stays live): one batch, no live embedding request, one embedding per distinct text,
/// and every run's outcome equal to the live sweep's. A builtin embedder has nothing to batch.
#[test]
fn an_embedder_with_batch_true_embeds_through_one_batch_and_equals_the_live_sweep() {
    let (live, texts) = live_sweep_embedded();
    let mock = MockLlm::start(&["--batch-delay", "200"]);
    let p = http_project(&mock.url, true, "");
    p.write(
        "rageval.yaml",
        &p.read("rageval.yaml")
            .replace("  batch_size: 64\n", "  batch_size: 64\n  batch: true\n"),
    );
    let out = keyed(&p, &["sweep", "--quiet"])
        .env("RAGEVAL_BATCH_POLL_MS", "50")
        .run();
    let stats = mock.stats();
    assert_eq!(count(&stats, &["batches", "created"]), 1);
    assert_eq!(count(&stats, &["batches", "lines"]), texts);
    assert_eq!(
        count(&stats, &["embedding_requests"]),
        texts,
        "every embedding request was a batch line"
    );
    assert_eq!(count(&stats, &["texts_embedded"]), texts);
    assert_eq!(outcomes(&out.results()), outcomes(&live));

    let p = Project::sample();
    p.write(
        "rageval.yaml",
        "evalsets: [evalsets/club.yaml]\nembedder:\n  kind: hash\n  batch: true\n",
    );
    Test::at(&p)
        .args(["sweep"])
        .unusable(&[
            "rageval.yaml:4",
            "embedder.batch",
            "batch engines embed with `openai` embedders only, and this section is of kind `hash`",
        ])
        .run();
    Test::at(&p)
        .args([
            "sweep",
            "--config",
            "/dev/null",
            "--evalset",
            "evalsets/club.yaml",
            "--batch-embeddings",
        ])
        .unusable(&[
            "invalid --batch-embeddings: the sweep embeds with the builtin `hash` embedder",
        ])
        .run();
}

/// A generator whose section says `batch: true` sends its calls through the server's Batch
/// API (the candidates, then their verification, one batch each): the file it writes is the
/// live generator's byte for byte, and no call is made but the batches' lines.
#[test]
fn a_generator_with_batch_true_writes_the_live_file_through_batches() {
    let generate = ["generate", "--answerable", "5", "--unanswerable", "5"];
    let live = MockLlm::start(&[]);
    let p = Project::sample();
    p.write("rageval.yaml", &format!("evalsets: [evalsets/club.yaml]\nchat:\n  kind: openai\n  model: m\n  base_url: {}\n  api_key_env: {KEY_ENV}\n", live.url));
    keyed(&p, &generate)
        .stdout_any("the account of the file, compared through the file itself")
        .stderr_any("round lines, compared through the file itself")
        .run();
    let want = p.read("evalsets/generated.yaml");
    let calls = count(&live.stats(), &["chat_requests"]);

    let mock = MockLlm::start(&["--batch-delay", "100"]);
    let p = Project::sample();
    p.write("rageval.yaml", &format!("evalsets: [evalsets/club.yaml]\nchat:\n  kind: openai\n  model: m\n  base_url: {}\n  api_key_env: {KEY_ENV}\n  batch: true\n", mock.url));
    keyed(&p, &generate)
        .env("RAGEVAL_BATCH_POLL_MS", "50")
        .stdout_any("the account of the file, compared through the file itself")
        .stderr(format!(
            concat!(
            "batch batch-mock-2: sent 10 requests to the server of `chat`\n",
            "batch batch-mock-2: completed, 10/10 requests done, 0 failed\n",
            "batch batch-mock-2: 10 of 10 requests answered, 0 failed\n",
            "batch batch-mock-5: sent 5 requests to the server of `chat`\n",
            "batch batch-mock-5: completed, 5/5 requests done, 0 failed\n",
            "batch batch-mock-5: 5 of 5 requests answered, 0 failed\n",
            "generate: round 1: tried 5, 4, 1 (answerable, near-miss, off-topic); kept 5, 4, 1\n",
            "generate: 10 generation and 5 verification calls, {calls} answered from the cache\n",
        ),
            calls = calls
        ))
        .run();
    assert_eq!(p.read("evalsets/generated.yaml"), want, "byte for byte");
    let stats = mock.stats();
    assert_eq!(
        count(&stats, &["batches", "created"]),
        2,
        "the candidates, then their verification"
    );
    assert_eq!(count(&stats, &["batches", "lines"]), calls);
    assert_eq!(
        count(&stats, &["chat_requests"]),
        calls,
        "every call a batch line"
    );
}

/// A `models:` profile whose section says `batch: true` goes through the batch cycle at its
/// own server (one batch, no live call there), beside a `chat:` section called live (no batch
/// there); every run's outcome equals the live sweep's over the same two profiles.
#[test]
fn a_profile_with_batch_true_is_batched_at_its_own_server_beside_a_live_chat() {
    let config = |chat: &str, big: &str, batch: &str| {
        format!(
            "evalsets: [evalsets/club.yaml]\nchat:\n  kind: openai\n  base_url: {chat}\n  model: mock\n  api_key_env: {KEY_ENV}\nmodels:\n  big:\n    kind: openai\n    base_url: {big}\n    model: mock-big\n    api_key_env: {KEY_ENV}\n{batch}sweep:\n  min_score: 0.1..0.5\n  k: 1,2,4,8\n  chat: default,big\n"
        )
    };
    let live = MockLlm::start(&[]);
    let p = Project::sample();
    p.write("rageval.yaml", &config(&live.url, &live.url, ""));
    let want = keyed(&p, &["sweep", "--quiet"]).run().results();
    let big_calls = live.stats()["chat_by_model"]["mock-big"].as_u64().unwrap();

    let chat = MockLlm::start(&[]);
    let big = MockLlm::start(&["--batch-delay", "100"]);
    let p = Project::sample();
    p.write(
        "rageval.yaml",
        &config(&chat.url, &big.url, "    batch: true\n"),
    );
    let out = keyed(&p, &["sweep", "--quiet"])
        .env("RAGEVAL_BATCH_POLL_MS", "50")
        .run();
    let (chat, big) = (chat.stats(), big.stats());
    assert_eq!(count(&big, &["batches", "created"]), 1);
    assert_eq!(count(&big, &["batches", "lines"]), big_calls);
    assert_eq!(
        count(&big, &["chat_requests"]),
        big_calls,
        "every call of the profile a batch line"
    );
    assert_eq!(
        count(&chat, &["batches", "created"]),
        0,
        "the chat section is live"
    );
    assert!(count(&chat, &["chat_requests"]) > 0);
    assert_eq!(outcomes(&out.results()), outcomes(&want));
}
