//! Batch engines: the requests a sweep needs, written as the OpenAI batch input format, and
//! the answers of any engine that reads it (the OpenAI or Azure Batch API, vLLM's
//! `run_batch`) read back into the response cache.
//!
//! A line is `{"custom_id", "method": "POST", "url": "/v1/chat/completions", "body"}`, the body
//! what the live call sends (never streamed: batch engines refuse `stream`) and `custom_id`
//! the request's response-cache key, so an answer finds its request again. Every line written
//! is also kept in the cache folder's ledger (`batch/requests.jsonl`: which cache file the key
//! belongs to), so an import accepts answers to this project's own requests only.

pub mod client;
pub mod collect;
pub mod cycle;
pub mod deferred;
pub mod import;
pub mod multipart;

use std::collections::HashMap;
use std::io::{BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result};
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use deferred::{DeferredEmbedder, DeferredModel};

use crate::adapters::cache::{CachedReply, Store};
use crate::vocab::grid::DEFAULT_PROFILE;

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

impl CacheFiles {
    /// The cache of a pipeline that has one: batches answer into the response cache, so
    /// without one (`--no-cache`, `cache.enabled: false`) there is nowhere to read them from.
    pub fn required(cache: Option<Self>) -> Result<Self> {
        cache.ok_or_else(|| anyhow::anyhow!("batches need the response cache (the answers are read into it): remove `--no-cache`, or set `cache.enabled: true`"))
    }
}

/// The URL path of chat lines.
pub const CHAT_URL: &str = "/v1/chat/completions";

/// The URL path of embedding lines.
pub const EMBEDDINGS_URL: &str = "/v1/embeddings";

/// Which cache file an answer belongs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StoreKind {
    /// `chat.jsonl`: answers and rewrites of every chat model.
    Chat,
    /// `judge.jsonl`: the judge's grades.
    Judge,
    /// `embeddings.jsonl`: the vectors of every embedder.
    Embedding,
}

impl StoreKind {
    /// The cache file, under the cache folder.
    pub fn file(self) -> &'static str {
        match self {
            StoreKind::Chat => "chat.jsonl",
            StoreKind::Judge => "judge.jsonl",
            StoreKind::Embedding => "embeddings.jsonl",
        }
    }

    /// The URL path of its lines (a batch holds lines of one URL).
    pub fn url(self) -> &'static str {
        match self {
            StoreKind::Embedding => EMBEDDINGS_URL,
            StoreKind::Chat | StoreKind::Judge => CHAT_URL,
        }
    }

    /// The config section whose server answers it when no other is named: `chat` (the
    /// judge's lines go to `judge`, embeddings to `embedder`).
    pub fn default_section(self) -> Section {
        match self {
            StoreKind::Chat => Section::Chat,
            StoreKind::Judge => Section::Judge,
            StoreKind::Embedding => Section::Embedder,
        }
    }
}

/// The config section whose server would answer a request live, and so runs its batches.
/// Written in `batch/open.json` as its YAML path: `chat`, `judge`, `embedder`, `models.NAME`,
/// `embedders.NAME`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Section {
    /// `chat:`, the `default` chat profile.
    Chat,
    /// `judge:`.
    Judge,
    /// `embedder:`, the `default` embedder profile.
    Embedder,
    /// `models.NAME`: a chat profile.
    Model(String),
    /// `embedders.NAME`: an embedder profile.
    Embedders(String),
}

impl Section {
    /// The section of chat profile `profile`: `chat`, or `models.NAME`.
    pub fn chat(profile: &str) -> Self {
        if profile == DEFAULT_PROFILE {
            Section::Chat
        } else {
            Section::Model(profile.into())
        }
    }

    /// The section of embedder profile `profile`: `embedder`, or `embedders.NAME`.
    pub fn embedder(profile: &str) -> Self {
        if profile == DEFAULT_PROFILE {
            Section::Embedder
        } else {
            Section::Embedders(profile.into())
        }
    }

    /// The text `Display` writes back, or `None` for a text that names no section.
    fn parse(text: &str) -> Option<Self> {
        Some(match text.split_once('.') {
            None if text == "chat" => Section::Chat,
            None if text == "judge" => Section::Judge,
            None if text == "embedder" => Section::Embedder,
            Some(("models", name)) if !name.is_empty() => Section::Model(name.into()),
            Some(("embedders", name)) if !name.is_empty() => Section::Embedders(name.into()),
            _ => return None,
        })
    }
}

impl std::fmt::Display for Section {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Section::Chat => f.write_str("chat"),
            Section::Judge => f.write_str("judge"),
            Section::Embedder => f.write_str("embedder"),
            Section::Model(name) => write!(f, "models.{name}"),
            Section::Embedders(name) => write!(f, "embedders.{name}"),
        }
    }
}

impl Serialize for Section {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Section {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Section::parse(&text).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "`{text}` is no config section that sends batches (`chat`, `judge`, `embedder`, `models.NAME`, `embedders.NAME`)"
            ))
        })
    }
}

/// One request of a batch input file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Line {
    pub custom_id: String,
    pub method: String,
    pub url: String,
    pub body: Value,
}

/// A request the sweep needs and the cache does not hold, as it was collected.
#[derive(Debug, Clone)]
pub struct Pending {
    pub line: Line,
    pub store: StoreKind,
    /// The prompt tokens, estimated at four characters a token.
    pub prompt_tokens: u64,
    /// A `model` rewrite of a follow-up: the answers asked after it depend on its reply.
    pub rewrite: bool,
    /// The config section whose server would answer it live: a batch of it goes to that
    /// server.
    pub section: Section,
}

/// The requests a sweep would send, gathered instead of sent (see [`DeferredModel`]): each
/// distinct key once, in the order the sweep asked.
#[derive(Debug, Default)]
pub struct Collector {
    pending: Mutex<IndexMap<String, Pending>>,
}

impl Collector {
    pub fn add(&self, pending: Pending) {
        self.pending
            .lock()
            .expect("collector lock")
            .entry(pending.line.custom_id.clone())
            .or_insert(pending);
    }

    /// The requests to send now, of those `wanted` keeps. When an embedding is among them,
    /// only the embeddings: what the sweep retrieved (and so every prompt it asked) came from
    /// stand-in vectors. Else, when a `model` rewrite is among them, only the rewrites: the
    /// answer the sweep asked in place of a rewrite (the question as written) is not the one
    /// it will ask once the rewrite is answered, so those answers wait for the next round.
    pub fn take(&self, wanted: &dyn Fn(&Pending) -> bool) -> Vec<Pending> {
        let all: Vec<Pending> = std::mem::take(&mut *self.pending.lock().expect("collector lock"))
            .into_values()
            .filter(|p| wanted(p))
            .collect();
        if all.iter().any(|p| p.store == StoreKind::Embedding) {
            all.into_iter()
                .filter(|p| p.store == StoreKind::Embedding)
                .collect()
        } else if all.iter().any(|p| p.rewrite) {
            all.into_iter().filter(|p| p.rewrite).collect()
        } else {
            all
        }
    }

    /// Whether an embedding is among the requests kept.
    pub fn has_embeddings(&self) -> bool {
        self.pending
            .lock()
            .expect("collector lock")
            .values()
            .any(|p| p.store == StoreKind::Embedding)
    }
}

/// One entry of the ledger: a request this project wrote into a batch file.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct LedgerEntry {
    custom_id: String,
    store: StoreKind,
    /// The estimated prompt tokens, for an answer whose engine reports no usage.
    #[serde(default)]
    prompt_tokens: u64,
}

/// The longest ledger line read: an entry is a key, a file name and a count, under 200 bytes.
const MAX_LEDGER_LINE: usize = 64 * 1024;

/// The requests this project has written into batch files, by `custom_id`: kept in
/// `batch/requests.jsonl` under the cache folder, appended to, never rewritten.
pub struct Ledger {
    path: PathBuf,
    entries: HashMap<String, (StoreKind, u64)>,
}

impl Ledger {
    /// The ledger of the cache folder `cache_dir` (empty when none was written yet).
    pub fn open(cache_dir: &Path) -> Result<Self> {
        let path = cache_dir.join("batch").join("requests.jsonl");
        let cannot = || format!("cannot read `{}`", path.display());
        let mut entries = HashMap::new();
        // The checks every cache file gets: a link to a device or a FIFO is refused before it
        // is opened, only the length it had is read, and a line past the limit is skipped
        // unread.
        match crate::base::input::check_regular(&path) {
            Ok(()) => {}
            Err(crate::base::input::FileError::Io(e))
                if e.kind() == std::io::ErrorKind::NotFound =>
            {
                return Ok(Ledger { path, entries })
            }
            Err(e) => return Err(e).with_context(cannot),
        }
        let f = std::fs::File::open(&path).with_context(cannot)?;
        let len = f.metadata().with_context(cannot)?.len();
        crate::base::input::bounded_lines(BufReader::new(f.take(len)), MAX_LEDGER_LINE, |line| {
            // A torn last line (a kill mid-write) and a line past the limit are skipped.
            if let Some(e) = line.and_then(|l| serde_json::from_slice::<LedgerEntry>(l).ok()) {
                entries.insert(e.custom_id, (e.store, e.prompt_tokens));
            }
        })
        .with_context(cannot)?;
        Ok(Ledger { path, entries })
    }

    /// Which cache file `custom_id` belongs to, when this project wrote it.
    pub fn store_of(&self, custom_id: &str) -> Option<StoreKind> {
        self.entries.get(custom_id).map(|e| e.0)
    }

    /// The estimated prompt tokens of `custom_id`'s request (0 when unknown).
    pub fn prompt_tokens(&self, custom_id: &str) -> u64 {
        self.entries.get(custom_id).map_or(0, |e| e.1)
    }

    /// Every request the ledger holds, with its cache file.
    pub fn requests(&self) -> impl Iterator<Item = (&str, StoreKind)> {
        self.entries.iter().map(|(id, e)| (id.as_str(), e.0))
    }

    /// How many requests the ledger holds.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Remember `pending` (those not yet remembered), before the file that holds them is
    /// handed to an engine.
    pub fn record(&mut self, pending: &[Pending]) -> Result<()> {
        let mut text = String::new();
        for p in pending {
            if self.entries.contains_key(&p.line.custom_id) {
                continue;
            }
            self.entries
                .insert(p.line.custom_id.clone(), (p.store, p.prompt_tokens));
            text.push_str(&serde_json::to_string(&LedgerEntry {
                custom_id: p.line.custom_id.clone(),
                store: p.store,
                prompt_tokens: p.prompt_tokens,
            })?);
            text.push('\n');
        }
        if text.is_empty() {
            return Ok(());
        }
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create `{}`", dir.display()))?;
        }
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .with_context(|| format!("cannot open `{}`", self.path.display()))?;
        f.write_all(text.as_bytes())
            .with_context(|| format!("cannot write `{}`", self.path.display()))
    }
}

/// The lines of `pending` as batch input, one JSON object a line.
pub fn input_text(pending: &[Pending]) -> String {
    let mut out = String::new();
    for p in pending {
        // A line of strings and JSON values always serializes.
        out.push_str(&serde_json::to_string(&p.line).expect("a batch line serializes"));
        out.push('\n');
    }
    out
}

/// A provider's limits on one batch: OpenAI's are 50,000 requests and 200 MB.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_requests: usize,
    pub max_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_requests: 50_000,
            max_bytes: 200 * 1000 * 1000,
        }
    }
}

/// `pending` cut into files that each fit `limits`, in order. A single line larger than
/// `max_bytes` is a file of its own (the provider names it in its error file).
pub fn split(pending: &[Pending], limits: Limits) -> Vec<String> {
    let mut files = Vec::new();
    let mut current = String::new();
    let mut count = 0;
    for p in pending {
        let line = input_text(std::slice::from_ref(p));
        if count > 0
            && (count == limits.max_requests || current.len() + line.len() > limits.max_bytes)
        {
            files.push(std::mem::take(&mut current));
            count = 0;
        }
        current.push_str(&line);
        count += 1;
    }
    if count > 0 {
        files.push(current);
    }
    files
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

    pub(crate) fn pending(id: &str, rewrite: bool) -> Pending {
        Pending {
            line: Line {
                custom_id: id.into(),
                method: "POST".into(),
                url: CHAT_URL.into(),
                body: json!({"model": "m", "messages": [{"role": "user", "content": id}]}),
            },
            store: StoreKind::Chat,
            prompt_tokens: 1,
            rewrite,
            section: Section::Chat,
        }
    }

    #[test]
    fn a_collector_keeps_each_key_once_and_holds_answers_back_behind_rewrites() {
        let c = Collector::default();
        let all = |_: &Pending| true;
        c.add(pending("a", false));
        c.add(pending("a", false));
        c.add(pending("b", false));
        let ids = |v: Vec<Pending>| v.into_iter().map(|p| p.line.custom_id).collect::<Vec<_>>();
        assert_eq!(ids(c.take(&all)), ["a", "b"]);
        assert!(c.take(&all).is_empty(), "taken once");
        c.add(pending("a", false));
        c.add(pending("r", true));
        assert_eq!(ids(c.take(&all)), ["r"], "answers wait for the rewrite");
        let embedding = Pending {
            store: StoreKind::Embedding,
            ..pending("e", false)
        };
        c.add(pending("a", false));
        c.add(pending("r", true));
        c.add(embedding.clone());
        assert!(c.has_embeddings());
        assert_eq!(
            ids(c.take(&all)),
            ["e"],
            "everything waits for the embeddings"
        );
        c.add(pending("r", true));
        c.add(embedding);
        c.add(pending("a", false));
        let chat_only = |p: &Pending| p.store != StoreKind::Embedding;
        assert_eq!(
            ids(c.take(&chat_only)),
            ["r"],
            "what is not wanted holds nothing back"
        );
    }

    #[test]
    fn files_are_split_at_the_request_and_byte_limits() {
        let all: Vec<Pending> = (0..5).map(|i| pending(&format!("k{i}"), false)).collect();
        let one = input_text(&all[..1]).len();
        let by_count = split(
            &all,
            Limits {
                max_requests: 2,
                max_bytes: usize::MAX,
            },
        );
        assert_eq!(
            by_count
                .iter()
                .map(|f| f.lines().count())
                .collect::<Vec<_>>(),
            [2, 2, 1]
        );
        let by_bytes = split(
            &all,
            Limits {
                max_requests: 100,
                max_bytes: 3 * one,
            },
        );
        assert_eq!(
            by_bytes
                .iter()
                .map(|f| f.lines().count())
                .collect::<Vec<_>>(),
            [3, 2]
        );
        assert_eq!(
            by_bytes.concat(),
            input_text(&all),
            "nothing lost or reordered"
        );
    }

    #[test]
    fn the_ledger_remembers_each_key_once_across_opens() {
        let dir = tempfile::tempdir().unwrap();
        let mut l = Ledger::open(dir.path()).unwrap();
        l.record(&[pending("a", false), pending("b", false)])
            .unwrap();
        l.record(&[pending("a", false)]).unwrap();
        let l = Ledger::open(dir.path()).unwrap();
        assert_eq!(l.store_of("a"), Some(StoreKind::Chat));
        assert_eq!(l.store_of("c"), None);
        let text = std::fs::read_to_string(dir.path().join("batch/requests.jsonl")).unwrap();
        assert_eq!(text.lines().count(), 2);
    }
}
