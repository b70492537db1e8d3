//! The cycle driven in process against a scripted server: what it does is read off its events
//! (snapshotted) and the cache it fills.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use serde_json::json;

use super::*;
use crate::adapters::cache::{CacheMode, Store};
use crate::base::BoxFuture;
use crate::batch::Line;

/// A Batch API in memory: a batch is `validating` when created, `in_progress` (half its lines
/// done) at its first poll and `completed` at its second. A line whose id ends in `!` fails the
/// first time it is sent; with `hang`, a poll never answers (the run is killed meanwhile).
#[derive(Default)]
struct Script {
    files: Mutex<Vec<String>>,
    /// Per batch: its lines' ids and how often it was polled.
    batches: Mutex<Vec<(Vec<String>, u64)>>,
    /// Ids that failed once already.
    failed: Mutex<Vec<String>>,
    hang: AtomicBool,
}

impl Script {
    fn status(&self, n: usize) -> Status {
        let batches = self.batches.lock().unwrap();
        let (ids, polls) = &batches[n];
        let total = ids.len() as u64;
        let failing = ids
            .iter()
            .filter(|id| id.ends_with('!') && !self.failed.lock().unwrap().contains(id))
            .count() as u64;
        let (status, done) = match polls {
            0 => (BatchState::Validating, 0),
            1 => (BatchState::InProgress, total / 2),
            _ => (BatchState::Completed, total),
        };
        let failed = failing.min(done);
        Status {
            id: format!("batch_{}", n + 1),
            status,
            total,
            completed: done - failed,
            failed,
            output_file_id: (done == total).then(|| format!("out_{}", n + 1)),
            error_file_id: (done == total && failing > 0).then(|| format!("err_{}", n + 1)),
            errors: Vec::new(),
        }
    }

    fn batch(id: &str) -> usize {
        id.rsplit('_').next().unwrap().parse::<usize>().unwrap() - 1
    }
}

impl Server for Script {
    fn shown(&self) -> &str {
        "script"
    }
    fn upload<'a>(&'a self, _name: &'a str, file: &'a [u8]) -> BoxFuture<'a, Result<String>> {
        Box::pin(async move {
            let mut files = self.files.lock().unwrap();
            files.push(String::from_utf8(file.to_vec()).unwrap());
            Ok(format!("file_{}", files.len()))
        })
    }
    fn create<'a>(&'a self, file_id: &'a str, _url: &'a str) -> BoxFuture<'a, Result<Status>> {
        Box::pin(async move {
            let text = self.files.lock().unwrap()[Script::batch(file_id)].clone();
            let ids = text
                .lines()
                .map(|l| serde_json::from_str::<Line>(l).unwrap().custom_id)
                .collect();
            let n = {
                let mut batches = self.batches.lock().unwrap();
                batches.push((ids, 0));
                batches.len() - 1
            };
            Ok(self.status(n))
        })
    }
    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Status>> {
        Box::pin(async move {
            if self.hang.load(Ordering::SeqCst) {
                std::future::pending::<()>().await;
            }
            let n = Script::batch(id);
            self.batches.lock().unwrap()[n].1 += 1;
            Ok(self.status(n))
        })
    }
    fn download<'a>(
        &'a self,
        id: &'a str,
        dest: &'a std::path::Path,
    ) -> BoxFuture<'a, Result<u64>> {
        Box::pin(async move {
            let ids = self.batches.lock().unwrap()[Script::batch(id)].0.clone();
            let mut failed = self.failed.lock().unwrap();
            let mut text = String::new();
            for custom_id in ids {
                let fails = custom_id.ends_with('!') && !failed.contains(&custom_id);
                let line = match (id.starts_with("err"), fails) {
                    (true, true) => json!({"custom_id": custom_id, "response": null,
                        "error": {"code": "server_error", "message": "injected failure"}}),
                    (false, false) => json!({"custom_id": custom_id, "error": null,
                        "response": {"status_code": 200, "body": {
                            "choices": [{"message": {"role": "assistant", "content": format!("answer to {custom_id}")}}],
                            "usage": {"prompt_tokens": 30, "completion_tokens": 4}}}}),
                    _ => continue,
                };
                text.push_str(&line.to_string());
                text.push('\n');
            }
            if id.starts_with("err") {
                let ids: Vec<String> = text
                    .lines()
                    .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
                    .map(|v| v["custom_id"].as_str().unwrap().to_string())
                    .collect();
                failed.extend(ids);
            }
            std::fs::write(dest, &text)?;
            Ok(text.len() as u64)
        })
    }
}

/// A `chat:` section and `models.big`, each with its own `batch_retry`.
struct Config {
    chat: ChatConfig,
    big: ChatConfig,
}

impl Config {
    fn new(chat: BatchRetry, big: BatchRetry) -> Self {
        let section = |batch_retry| ChatConfig {
            batch: true,
            batch_retry,
            ..ChatConfig::default()
        };
        Config {
            chat: section(chat),
            big: section(big),
        }
    }
}

impl Sections for Config {
    fn chat(&self, profile: &str) -> Option<&ChatConfig> {
        match profile {
            DEFAULT_PROFILE => Some(&self.chat),
            "big" => Some(&self.big),
            _ => None,
        }
    }
    fn embedder(&self, _: &str) -> Option<&EmbedderConfig> {
        None
    }
    fn judge(&self) -> Option<&JudgeConfig> {
        None
    }
}

/// The requests of a small sweep: four of `chat:` (one failing once) and three of
/// `models.big` (one failing once).
fn requests() -> Vec<Pending> {
    let ask = |id: &str, section: Section| Pending {
        section,
        ..crate::batch::tests::pending(id, false)
    };
    let big = || Section::Model("big".into());
    vec![
        ask("a", Section::Chat),
        ask("b!", Section::Chat),
        ask("c", Section::Chat),
        ask("d", Section::Chat),
        ask("x", big()),
        ask("y!", big()),
        ask("z", big()),
    ]
}

/// The cache of `dir`, its chat store opened.
fn cache(dir: &Path) -> CacheFiles {
    CacheFiles {
        dir: dir.to_path_buf(),
        chat: Some(Arc::new(
            Store::open(&dir.join("chat.jsonl"), CacheMode::Use).unwrap(),
        )),
        judge: None,
        embeddings: None,
    }
}

/// Run a cycle over [`requests`] (each round: those the chat store does not hold) against
/// `script`, within `limit` (past it, the run is dropped as a kill would end it): its events,
/// one line each, and whether it ended.
async fn cycle(
    config: &Config,
    dir: &Path,
    script: &Arc<Script>,
    limit: std::time::Duration,
) -> (String, Option<Result<()>>) {
    let (events, received) = std::sync::mpsc::channel();
    let mut cycle = Cycle::new(config, cache(dir), events);
    cycle.server = Some(script.clone());
    cycle.poll = Some(std::time::Duration::ZERO);
    let store = cycle.cache.chat.clone().unwrap();
    let collect = async || {
        Ok(requests()
            .into_iter()
            .filter(|p| store.get(&p.line.custom_id).is_none())
            .collect())
    };
    let ended = tokio::time::timeout(limit, cycle.run(collect)).await.ok();
    drop(cycle);
    let lines: Vec<String> = received.iter().map(|e| line(&e)).collect();
    (lines.join("\n"), ended)
}

/// An event as one line: a poll in short, the others as they are.
fn line(e: &Event) -> String {
    match e {
        Event::Polled(st) => format!(
            "Polled {}: {}, {} done, {} failed of {}",
            st.id, st.status, st.completed, st.failed, st.total
        ),
        other => format!("{other:?}"),
    }
}

/// Each section's batch is submitted, polled to its end and imported; a failed line is sent
/// once more where its section says `batch_retry: batch` (`models.big` here) and left to be
/// called live where it says `live` (`chat:`).
#[tokio::test]
async fn each_section_is_batched_and_its_own_batch_retry_is_honoured() {
    let dir = tempfile::tempdir().unwrap();
    let script = Arc::new(Script::default());
    let config = Config::new(BatchRetry::Live, BatchRetry::Batch);
    let (events, ended) = cycle(&config, dir.path(), &script, LONG).await;
    assert!(ended.unwrap().is_ok());
    insta::assert_snapshot!(events);
    let store = cache(dir.path()).chat.unwrap();
    let answered: Vec<&str> = ["a", "b!", "c", "d", "x", "y!", "z"]
        .into_iter()
        .filter(|id| store.get(id).is_some())
        .collect();
    assert_eq!(
        answered,
        ["a", "c", "d", "x", "y!", "z"],
        "b! is left to be called live"
    );
    assert_eq!(Open::load(dir.path()).unwrap().batches.len(), 0);
}

/// A run killed while it polls leaves its batches in `open.json`; the next run resumes them
/// (no new batch for their lines), imports them, and goes on as if never stopped.
#[tokio::test]
async fn a_killed_cycle_leaves_its_batches_open_and_the_next_resumes_them() {
    let dir = tempfile::tempdir().unwrap();
    let script = Arc::new(Script::default());
    script.hang.store(true, Ordering::SeqCst);
    let config = Config::new(BatchRetry::Batch, BatchRetry::Live);
    let short = std::time::Duration::from_millis(200);
    let (killed, ended) = cycle(&config, dir.path(), &script, short).await;
    assert!(ended.is_none(), "killed while it polled");
    let open = std::fs::read_to_string(dir.path().join("batch/open.json")).unwrap();
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&open).unwrap(),
        json!({"batches": [
            {"id": "batch_1", "store": "chat", "section": "chat", "requests": 4},
            {"id": "batch_2", "store": "chat", "section": "models.big", "requests": 3},
        ]}),
        "the same text an earlier rageval wrote"
    );
    script.hang.store(false, Ordering::SeqCst);
    let (resumed, ended) = cycle(&config, dir.path(), &script, LONG).await;
    assert!(ended.unwrap().is_ok());
    insta::assert_snapshot!(format!("{killed}\n--- killed; the next run:\n{resumed}"));
    assert_eq!(Open::load(dir.path()).unwrap().batches.len(), 0);
}

/// A cycle's bound in a test that must end.
const LONG: std::time::Duration = std::time::Duration::from_secs(30);

/// An `open.json` of an earlier rageval (no section, or an empty one) still reads: the store's
/// own section.
#[test]
fn an_open_batch_without_a_section_is_its_stores() {
    let old: Open = serde_json::from_str(
        r#"{"batches": [{"id": "b1", "store": "judge", "requests": 2}, {"id": "b2", "store": "embedding", "section": "", "requests": 1}, {"id": "b3", "store": "chat", "section": "embedders.big", "requests": 1}]}"#,
    )
    .unwrap();
    let sections: Vec<Section> = old.batches.iter().map(OpenBatch::section).collect();
    assert_eq!(
        sections,
        [
            Section::Judge,
            Section::Embedder,
            Section::Embedders("big".into())
        ]
    );
    let bad = serde_json::from_str::<Open>(
        r#"{"batches": [{"id": "b1", "store": "chat", "section": "model.big", "requests": 2}]}"#,
    );
    assert!(bad
        .unwrap_err()
        .to_string()
        .contains("`model.big` is no config section"));
}
