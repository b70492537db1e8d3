//! The batch cycle of a `batch: true` run: finish the batches a killed run left open, then
//! round by round collect the requests the cache does not hold, send them as batches to the
//! server of their section, wait, and import the answers into the response cache.
//!
//! The cycle prints nothing: it reports what it does as [`Event`]s (resumed, submitted, polled,
//! a failed line, finished) to a sink the caller gives, which renders them (terminal lines, a
//! progress bar) or keeps them (a test).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context, Result};

use super::client::{Client, Status};
use super::{Ledger, Pending, StoreKind};
use crate::adapters::cache::{CachedReply, Store};
use crate::adapters::chat::config::{BatchRetry, ChatConfig};
use crate::adapters::embed::config::EmbedderConfig;
use crate::adapters::http::config::HttpConfig;
use crate::adapters::judge::config::JudgeConfig;
use crate::base::safe_text::one_line;
use crate::vocab::grid::DEFAULT_PROFILE;

/// What the cycle reports as it goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// Batches a killed run left open, picked up again (their ids, in order).
    Resumed { ids: Vec<String> },
    /// A batch created at the server of `section`, holding `requests` requests.
    Submitted {
        id: String,
        section: String,
        requests: usize,
    },
    /// What a poll of a batch said.
    Polled(Status),
    /// A line of batch `id` that the engine failed, with its message.
    LineFailed { id: String, message: String },
    /// Batch `id` ended (`status`) and its output was imported: of its `requests`, `answered`
    /// were answered and `failed` were not.
    Finished {
        id: String,
        status: String,
        requests: usize,
        answered: usize,
        failed: usize,
    },
}

/// The config sections a batch cycle sends to: each chat and embedder profile's (`default`:
/// `chat:` and `embedder:`) and the judge's; the sweep's plan has them, and so has the config.
pub trait Sections {
    fn chat(&self, profile: &str) -> Option<&ChatConfig>;
    fn embedder(&self, profile: &str) -> Option<&EmbedderConfig>;
    fn judge(&self) -> Option<&JudgeConfig>;
}

/// The response cache the answers go into: its folder, and the stores the pipeline writes
/// through (so the next round, and the sweep, see the answers at once); a store the pipeline
/// does not hold is opened from the folder.
#[derive(Clone, Default)]
pub struct CacheFiles {
    pub dir: PathBuf,
    pub chat: Option<Arc<Store<CachedReply>>>,
    pub judge: Option<Arc<Store<CachedReply>>>,
    pub embeddings: Option<Arc<Store<Vec<f32>>>>,
}

/// The batches of a `batch: true` run still running on the server, kept in the cache folder
/// (`batch/open.json`) from their creation until their answers are imported: a rageval killed
/// meanwhile picks them up again and never pays twice.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct Open {
    batches: Vec<OpenBatch>,
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct OpenBatch {
    id: String,
    /// Which cache file its answers go to.
    store: StoreKind,
    /// The config section whose server runs it (see [`Pending::section`]); empty (as an
    /// earlier rageval wrote it): the store's own.
    #[serde(default)]
    section: String,
    /// The number of requests it holds.
    requests: usize,
}

impl OpenBatch {
    fn section(&self) -> &str {
        if self.section.is_empty() {
            self.store.default_section()
        } else {
            &self.section
        }
    }
}

impl Open {
    fn path(cache_dir: &Path) -> PathBuf {
        cache_dir.join("batch").join("open.json")
    }

    fn load(cache_dir: &Path) -> Result<Self> {
        let path = Self::path(cache_dir);
        // Read as every input file is: a regular file, at most MAX_OPEN_BYTES.
        match crate::base::input::read_limited(&path, MAX_OPEN_BYTES) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
                crate::base::error::InputError::new(
                    &path,
                    format!("is not the list of open batches rageval writes ({e}): remove it to start new batches"),
                )
                .into()
            }),
            Err(crate::base::input::FileError::Io(e))
                if e.kind() == std::io::ErrorKind::NotFound =>
            {
                Ok(Open::default())
            }
            Err(e) => Err(crate::base::error::InputError::new(
                &path,
                format!("cannot read the list of open batches: {e}; remove it to start new batches"),
            )
            .into()),
        }
    }

    fn save(&self, cache_dir: &Path) -> Result<()> {
        let path = Self::path(cache_dir);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let text = serde_json::to_vec_pretty(self)?;
        crate::base::atomic::write_atomic(&path, |w| Ok(w.write_all(&text)?))
    }
}

/// The largest `open.json` read: a few hundred bytes a batch, and a run has a few batches.
const MAX_OPEN_BYTES: u64 = 16 * 1024 * 1024;

/// Rounds of batches at most: embeddings, rewrites, the rewrites' embeddings, answers,
/// grades, and one retry.
pub const MAX_ROUNDS: usize = 8;

/// Overrides the poll interval (1 s, growing to 30 s), in milliseconds: for tests.
pub const POLL_ENV: &str = "RAGEVAL_BATCH_POLL_MS";

/// What a batch cycle reads: the config sections (their servers, `chat.batch_retry`), the
/// cache files, and where its events go.
pub struct Cycle<'a> {
    pub sections: &'a dyn Sections,
    pub cache: CacheFiles,
    /// Rounds of batches at most.
    pub max_rounds: usize,
    pub events: &'a dyn Fn(Event),
}

impl Cycle<'_> {
    /// Finish the batches left open, then round by round: `collect` the requests, send them
    /// as batches, wait, import; until `collect` gives nothing new.
    pub async fn run(&self, mut collect: impl AsyncFnMut() -> Result<Vec<Pending>>) -> Result<()> {
        let c = self.sections;
        let dir = self.cache.dir.clone();
        let client_for = |section: &str| -> Result<Client> {
            let (http, switch) = section_http(c, section)?;
            let held = Arc::new(crate::adapters::http::Held::default());
            let endpoints = crate::adapters::http::endpoints(http, &held)?;
            let first =
                endpoints.servers().first().cloned().ok_or_else(|| {
                    anyhow::anyhow!("`{section}` has no base_url to send batches to")
                })?;
            Client::new(first, switch)
        };
        // Batches a killed run left open come first.
        let mut open = Open::load(&dir)?;
        if !open.batches.is_empty() {
            (self.events)(Event::Resumed {
                ids: open.batches.iter().map(|b| b.id.clone()).collect(),
            });
        }
        let mut sent: std::collections::HashSet<String> = Default::default();
        let mut retried = false;
        for _round in 0..self.max_rounds {
            while let Some(b) = open.batches.first().cloned() {
                let client = client_for(b.section())?;
                let failed = self.finish(&client, &b, &dir).await?;
                // A resumed batch's failed lines count as sent, as this run's own do.
                sent.extend(failed);
                open.batches.remove(0);
                open.save(&dir)?;
            }
            let mut pending = collect().await?;
            // A request sent before and still unanswered is a failed line.
            let again = pending.iter().any(|p| sent.contains(&p.line.custom_id));
            if again {
                let retry = c.chat(DEFAULT_PROFILE).map(|chat| chat.batch_retry);
                if retry == Some(BatchRetry::Batch) && !retried {
                    retried = true;
                } else {
                    pending.retain(|p| !sent.contains(&p.line.custom_id));
                }
            }
            if pending.is_empty() {
                return Ok(());
            }
            Ledger::open(&dir)?.record(&pending)?;
            // One run of batches per server and URL, in the order first asked.
            let mut groups: Vec<(String, StoreKind, Vec<Pending>)> = Vec::new();
            for p in pending {
                match groups
                    .iter_mut()
                    .find(|g| g.0 == p.section && g.1.url() == p.store.url())
                {
                    Some(g) => g.2.push(p),
                    None => groups.push((p.section.clone(), p.store, vec![p])),
                }
            }
            for (section, store, mine) in groups {
                let client = client_for(&section)?;
                for (i, file) in super::split(&mine, super::Limits::default())
                    .iter()
                    .enumerate()
                {
                    let name = format!("rageval-{}-{}.jsonl", section.replace('.', "-"), i + 1);
                    let file_id = client.upload(&name, file.as_bytes()).await?;
                    let status = client.create(&file_id, store.url()).await?;
                    let requests = file.lines().count();
                    // Kept before the first poll: a kill from here on resumes this batch.
                    open.batches.push(OpenBatch {
                        id: status.id.clone(),
                        store,
                        section: section.clone(),
                        requests,
                    });
                    open.save(&dir)?;
                    (self.events)(Event::Submitted {
                        id: status.id,
                        section: section.clone(),
                        requests,
                    });
                }
                sent.extend(mine.into_iter().map(|p| p.line.custom_id));
            }
        }
        bail!("the batches did not converge after {} rounds; run the command again (the cache keeps what they answered)", self.max_rounds)
    }

    /// Wait for batch `b` to end, then import its output and error files: the `custom_id`s of
    /// the lines that failed.
    async fn finish(&self, client: &Client, b: &OpenBatch, dir: &Path) -> Result<Vec<String>> {
        let status = self.wait(client, &b.id).await?;
        if status.status == "failed" {
            let errors = if status.errors.is_empty() {
                "the server gave no reason".to_string()
            } else {
                status.errors.join("; ")
            };
            bail!(
                "batch {} at {} failed: {}; no request of it was answered (its id is kept in `{}`; remove the file to start anew: `rm {}`)",
                one_line(&b.id),
                client.shown(),
                one_line(&errors),
                Open::path(dir).display(),
                Open::path(dir).display()
            );
        }
        let mut files = Vec::new();
        // The downloads are named by rageval, in a folder of its own under the cache's batch
        // folder, removed when the import ends: no batch or file id (the server's text, which
        // may read `../../elsewhere`) ever reaches a path.
        let batch_dir = dir.join("batch");
        std::fs::create_dir_all(&batch_dir)
            .with_context(|| format!("cannot create `{}`", batch_dir.display()))?;
        let tmp = tempfile::Builder::new()
            .prefix(".download-")
            .tempdir_in(&batch_dir)
            .with_context(|| format!("cannot create a folder in `{}`", batch_dir.display()))?;
        for (name, id) in [
            ("output", &status.output_file_id),
            ("errors", &status.error_file_id),
        ] {
            if let Some(id) = id {
                let bytes = client.content(id).await.with_context(|| {
                    format!(
                        "cannot download the {name} file of batch {}; the batch stays in `{}`, so running the command again retries it, and `rm {}` starts new batches instead",
                        one_line(&b.id),
                        Open::path(dir).display(),
                        Open::path(dir).display()
                    )
                })?;
                let path = tmp.path().join(format!("{name}.jsonl"));
                std::fs::write(&path, bytes)?;
                files.push(path);
            }
        }
        // Through the pipeline's own stores: the next round, and the sweep, see the answers
        // at once.
        let cache = &self.cache;
        let stores = super::import::Stores {
            replies: &|kind| {
                let shared = match kind {
                    StoreKind::Judge => cache.judge.clone(),
                    StoreKind::Chat | StoreKind::Embedding => cache.chat.clone(),
                };
                match shared {
                    Some(store) => Ok(store),
                    None => super::import::open(dir, kind),
                }
            },
            vectors: &|| match &cache.embeddings {
                Some(store) => Ok(store.clone()),
                None => super::import::open(dir, StoreKind::Embedding),
            },
        };
        let imported = super::import::import_into(&files, dir, &stores)?;
        let answered = imported.imported + imported.already;
        for f in &imported.failed {
            (self.events)(Event::LineFailed {
                id: b.id.clone(),
                message: f.message.clone(),
            });
        }
        (self.events)(Event::Finished {
            id: b.id.clone(),
            status: status.status.clone(),
            requests: b.requests,
            answered,
            failed: b.requests.saturating_sub(answered),
        });
        Ok(imported.failed.into_iter().map(|f| f.custom_id).collect())
    }

    /// Poll batch `id` until it ends, reporting each poll.
    async fn wait(&self, client: &Client, id: &str) -> Result<Status> {
        let fixed = std::env::var(POLL_ENV)
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(std::time::Duration::from_millis);
        let mut pause = fixed.unwrap_or(std::time::Duration::from_secs(1));
        loop {
            let st = client.get(id).await.map_err(|e| {
                anyhow::anyhow!("cannot poll batch {}: {e:#}; its id is kept in the cache folder, so the next run resumes it", one_line(id))
            })?;
            (self.events)(Event::Polled(st.clone()));
            if st.is_done() {
                return Ok(st);
            }
            tokio::time::sleep(pause).await;
            if fixed.is_none() {
                pause = (pause * 3 / 2).min(std::time::Duration::from_secs(30));
            }
        }
    }
}

/// The HTTP fields of config section `section` (see [`Pending::section`]), and what to set to
/// stop batching it, for messages.
fn section_http<'a>(c: &'a dyn Sections, section: &str) -> Result<(HttpConfig<'a>, String)> {
    let off = |field: &str, flag: &str| format!("`{field}.batch: false` (or drop `{flag}`)");
    let missing = || {
        anyhow::anyhow!("no config section `{section}` to send batches to (the cache folder's `batch/open.json` names it: remove the file to start anew)")
    };
    Ok(match section.split_once('.') {
        None if section == "chat" => (
            c.chat(DEFAULT_PROFILE).ok_or_else(missing)?.http(),
            off("chat", "--batch"),
        ),
        None if section == "judge" => (
            c.judge().ok_or_else(missing)?.http(),
            off("chat", "--batch"),
        ),
        None if section == "embedder" => (
            c.embedder(DEFAULT_PROFILE).ok_or_else(missing)?.http(),
            off("embedder", "--batch-embeddings"),
        ),
        Some(("models", name)) => (
            c.chat(name).ok_or_else(missing)?.http(),
            format!("`{section}.batch: false`"),
        ),
        Some(("embedders", name)) => (
            c.embedder(name).ok_or_else(missing)?.http(),
            off(section, "--batch-embeddings"),
        ),
        _ => return Err(missing()),
    })
}
