//! The on-disk response cache: every finished call is appended to a JSON-lines file at once, so
//! a killed sweep keeps its work and the rerun makes no call for it.
//!
//! Chat replies are keyed by sha256 of (model, parameters that change the reply, messages);
//! embeddings by sha256 of (model, text). Neither key holds the URL or the API key: the same
//! model behind another URL shares the cache, and no secret is ever written. A torn last
//! record (a kill mid-write) is skipped when the file is read.

pub mod config;

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::adapters::chat::{CallError, ChatModel, ChatReply, ChatRequest, Usage};
use crate::adapters::embed::{EmbedError, Embedded, Embedder};
use crate::base::input::FileError;
use crate::base::BoxFuture;

/// How the cache is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheMode {
    /// Read and write.
    Use,
    /// Write only: every call is made again and its answer replaces the old one.
    Refresh,
}

/// An append-only file of `{"key": ..., "value": ...}` lines, loaded into memory.
pub struct Store<V> {
    path: PathBuf,
    entries: Mutex<HashMap<String, V>>,
    file: Mutex<File>,
    /// Lines that could not be read (a torn last record).
    pub skipped: usize,
    warnings: Mutex<Warnings>,
}

/// Failed writes, for the command to print once: the first message and how many followed (a
/// full disk fails every write of a sweep).
#[derive(Debug, Default)]
struct Warnings {
    first: Option<String>,
    more: usize,
}

#[derive(Serialize, Deserialize)]
struct Record<V> {
    key: String,
    value: V,
}

/// The longest cache record read: 64 MiB, twice the largest reply a server may send
/// ([`crate::adapters::http::MAX_REPLY_BYTES`]) and far above an embedding's. A longer line is
/// damage: it is skipped like a torn record, without being held whole.
pub const MAX_RECORD_BYTES: usize = 64 * 1024 * 1024;

impl<V: Serialize + DeserializeOwned + Clone> Store<V> {
    /// Open (or create) the cache file at `path`. It gets the checks of every input file: a
    /// link to a device, a FIFO or a folder is refused before it is opened (`/dev/zero` would
    /// be read until memory runs out, a FIFO would block), only the length it had when opened
    /// is read, and a record longer than [`MAX_RECORD_BYTES`] is skipped.
    pub fn open(path: &Path, mode: CacheMode) -> Result<Self> {
        let cannot = || format!("cannot open cache `{}`", path.display());
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create cache folder `{}`", dir.display()))?;
        }
        match crate::base::input::check_regular(path) {
            Ok(()) => {}
            Err(FileError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).with_context(cannot),
        }
        let mut file = OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(path)
            .with_context(cannot)?;
        // Checked again through the handle: the path may have been swapped since.
        let meta = file.metadata().with_context(cannot)?;
        if let Some(kind) = crate::base::input::odd_kind(&meta) {
            if path != Path::new("/dev/null") {
                return Err(FileError::NotRegular(kind)).with_context(cannot);
            }
        }
        let len = meta.len();
        let mut entries = HashMap::new();
        let mut skipped = 0;
        if mode == CacheMode::Use {
            let reader = BufReader::new((&file).take(len));
            crate::base::input::bounded_lines(reader, MAX_RECORD_BYTES, |line| {
                let Some(line) = line else {
                    skipped += 1;
                    return;
                };
                match serde_json::from_slice::<Record<V>>(line) {
                    Ok(r) => {
                        entries.insert(r.key, r.value);
                    }
                    Err(_) if line.trim_ascii().is_empty() => {}
                    Err(_) => skipped += 1,
                }
            })
            .with_context(cannot)?;
        }
        // A torn last record has no newline: start the next record on a line of its own.
        if len > 0 {
            let mut last = [0u8];
            file.seek(SeekFrom::Start(len - 1))?;
            file.read_exact(&mut last)?;
            if last[0] != b'\n' {
                file.write_all(b"\n")?;
            }
        }
        Ok(Store {
            path: path.to_path_buf(),
            entries: Mutex::new(entries),
            file: Mutex::new(file),
            skipped,
            warnings: Mutex::default(),
        })
    }

    pub fn get(&self, key: &str) -> Option<V> {
        self.entries.lock().expect("cache lock").get(key).cloned()
    }

    /// Remember `value` and append it to the file (one write, flushed).
    pub fn put(&self, key: String, value: V) -> Result<()> {
        let mut line = serde_json::to_vec(&Record {
            key: key.clone(),
            value: &value,
        })?;
        line.push(b'\n');
        self.file
            .lock()
            .expect("cache lock")
            .write_all(&line)
            .with_context(|| format!("cannot write cache `{}`", self.path.display()))?;
        self.entries.lock().expect("cache lock").insert(key, value);
        Ok(())
    }

    /// [`Store::put`], keeping a failure as a warning: a call whose answer cannot be cached
    /// still counts.
    pub fn put_or_warn(&self, key: String, value: V) {
        if let Err(e) = self.put(key, value) {
            let mut w = self.warnings.lock().expect("cache lock");
            match w.first {
                None => w.first = Some(format!("{e:#}")),
                Some(_) => w.more += 1,
            }
        }
    }

    /// The warnings since the last call, as lines without a prefix.
    pub fn take_warnings(&self) -> Vec<String> {
        let w = std::mem::take(&mut *self.warnings.lock().expect("cache lock"));
        w.first
            .map(|first| match w.more {
                0 => first,
                n => format!("{first} ({n} more cache writes failed)"),
            })
            .into_iter()
            .collect()
    }

    pub fn len(&self) -> usize {
        self.entries.lock().expect("cache lock").len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Store<Vec<f32>> {
    /// The vector held under `key`; an empty one is no answer (an embedder's hiccup that an
    /// older rageval kept).
    pub fn vector(&self, key: &str) -> Option<Vec<f32>> {
        self.get(key).filter(|v| !v.is_empty())
    }
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    hex(&Sha256::digest(bytes))
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(2 * bytes.len());
    for &b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 15)]));
    }
    out
}

/// The cache key of a chat request for `model`: the sha256 of the compact JSON of
/// `{"grounded"?, "messages": [{"content", "role"}...], "model", "params", "seed"?}`, keys in sorted order
/// (as a `serde_json::Value` prints them), written straight into the hash: building that value
/// first copied every prompt twice, and a sweep keys every call.
pub fn chat_key(model: &dyn ChatModel, request: &ChatRequest) -> String {
    use sha2::{Digest, Sha256};

    /// A message with its keys in sorted order.
    #[derive(Serialize)]
    struct KeyMessage<'a> {
        content: &'a str,
        role: crate::adapters::prompt::Role,
    }
    struct KeyMessages<'a>(&'a [crate::adapters::prompt::Message]);
    impl Serialize for KeyMessages<'_> {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.collect_seq(self.0.iter().map(|m| KeyMessage {
                content: &m.content,
                role: m.role,
            }))
        }
    }
    #[derive(Serialize)]
    struct Key<'a> {
        // Only a generation endpoint's request has one (and no messages): every other key
        // is what it always was.
        #[serde(skip_serializing_if = "Option::is_none")]
        grounded: Option<&'a crate::adapters::chat::Grounded>,
        messages: KeyMessages<'a>,
        model: String,
        params: serde_json::Value,
        // Only a repeated sweep sends a seed: without one the key is what it always was.
        #[serde(skip_serializing_if = "Option::is_none")]
        seed: Option<u32>,
        // Only a judge or generator call names a reply format.
        #[serde(skip_serializing_if = "Option::is_none")]
        format: Option<crate::adapters::chat::ReplyFormat>,
    }
    struct Hashing(Sha256);
    impl Write for Hashing {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.update(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let key = Key {
        messages: KeyMessages(&request.messages),
        model: model.model(),
        params: model.params(),
        seed: request.seed,
        format: request.format,
        grounded: request.grounded.as_ref(),
    };
    let mut hashing = Hashing(Sha256::new());
    // Serializing plain strings, numbers and a JSON value into a hash cannot fail.
    let _ = serde_json::to_writer(&mut hashing, &key);
    hex(&hashing.0.finalize())
}

/// The cache key of one embedded text.
pub fn embedding_key(model: &str, text: &str) -> String {
    sha256_hex(json!({"model": model, "text": text}).to_string().as_bytes())
}

/// A chat reply as the cache keeps it. A record the live path would refuse
/// ([`crate::adapters::chat::reply_problem`]: counts no call can have, which saturated the
/// sweep's totals, or a text longer than any answer taken, written by an older rageval) is
/// damaged: it fails to read and is skipped, and the call made again. A reply to a request
/// with a smaller limit (a judge's grade) is held to that limit when served
/// ([`CachedModel`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(try_from = "RawCachedReply")]
pub struct CachedReply {
    pub text: String,
    pub usage: Usage,
    /// A record whose latency is not a duration (negative, not finite, above
    /// [`MAX_CACHED_LATENCY_MS`]) is damaged: it fails to read and is skipped like garbage.
    pub latency_ms: f64,
    /// The answer came through a batch engine (`rageval batch import`, `chat.batch`), billed
    /// at the batch price; absent for a live call.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub batch: bool,
}

/// A [`CachedReply`] as read, before the live path's check.
#[derive(Deserialize)]
struct RawCachedReply {
    text: String,
    usage: Usage,
    #[serde(deserialize_with = "latency_ms")]
    latency_ms: f64,
    #[serde(default)]
    batch: bool,
}

impl TryFrom<RawCachedReply> for CachedReply {
    type Error = String;

    fn try_from(r: RawCachedReply) -> Result<Self, String> {
        let widest = (crate::adapters::chat::MAX_ANSWER_BYTES, "one answer");
        match crate::adapters::chat::reply_problem(&r.text, Some(&r.usage), widest) {
            Some(why) => Err(why),
            None => Ok(CachedReply {
                text: r.text,
                usage: r.usage,
                latency_ms: r.latency_ms,
                batch: r.batch,
            }),
        }
    }
}

/// The longest latency a cached reply may record: a day.
pub const MAX_CACHED_LATENCY_MS: f64 = 86_400_000.0;

fn latency_ms<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    let ms = f64::deserialize(d)?;
    if (0.0..=MAX_CACHED_LATENCY_MS).contains(&ms) {
        Ok(ms)
    } else {
        Err(serde::de::Error::custom(format!(
            "latency_ms {ms} is not a duration"
        )))
    }
}

/// A chat model behind the cache. Failed calls are not cached.
pub struct CachedModel {
    inner: Arc<dyn ChatModel>,
    store: Arc<Store<CachedReply>>,
    mode: CacheMode,
    pub hits: AtomicUsize,
}

impl CachedModel {
    pub fn new(inner: Arc<dyn ChatModel>, dir: &Path, mode: CacheMode) -> Result<Self> {
        Self::open(inner, &dir.join("chat.jsonl"), mode)
    }

    /// A cache in a file of its own: the judge's replies live in `judge.jsonl`, apart from the
    /// model's, so the two never share a key.
    pub fn open(inner: Arc<dyn ChatModel>, file: &Path, mode: CacheMode) -> Result<Self> {
        Ok(Self::sharing(
            inner,
            Arc::new(Store::open(file, mode)?),
            mode,
        ))
    }

    /// A model behind a store other models share: the chat profiles of one sweep all live in
    /// `chat.jsonl` (their keys differ by model identity), written through one handle.
    pub fn sharing(
        inner: Arc<dyn ChatModel>,
        store: Arc<Store<CachedReply>>,
        mode: CacheMode,
    ) -> Self {
        CachedModel {
            inner,
            store,
            mode,
            hits: AtomicUsize::new(0),
        }
    }

    /// The store [`CachedModel::new`] opens in `dir`.
    pub fn open_store(dir: &Path, mode: CacheMode) -> Result<Arc<Store<CachedReply>>> {
        Ok(Arc::new(Store::open(&dir.join("chat.jsonl"), mode)?))
    }

    /// The cached reply to `request` (whose key is `key`), when the cache is used and the
    /// live path would take the reply for it ([`crate::adapters::chat::reply_problem`] at the
    /// request's own limit); otherwise the call is made again.
    fn served(&self, request: &ChatRequest, key: &str) -> Option<CachedReply> {
        if self.mode != CacheMode::Use {
            return None;
        }
        let hit = self.store.get(key)?;
        let (limit, what) = request.reply_limit();
        crate::adapters::chat::reply_problem(&hit.text, Some(&hit.usage), (limit, &what))
            .is_none()
            .then_some(hit)
    }
}

impl ChatModel for CachedModel {
    fn model(&self) -> String {
        self.inner.model()
    }

    fn inner(&self) -> Option<&dyn ChatModel> {
        Some(self.inner.as_ref())
    }

    fn is_cached(&self, request: &ChatRequest) -> bool {
        self.served(request, &chat_key(self.inner.as_ref(), request))
            .is_some()
    }

    fn warnings(&self) -> Vec<String> {
        self.store.take_warnings()
    }

    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatReply, CallError>> {
        Box::pin(async move {
            let key = chat_key(self.inner.as_ref(), request);
            if let Some(hit) = self.served(request, &key) {
                self.hits.fetch_add(1, Ordering::Relaxed);
                return Ok(ChatReply {
                    text: hit.text,
                    usage: hit.usage,
                    latency: Duration::from_secs_f64(hit.latency_ms / 1000.0),
                    ttft: None,
                    cached: true,
                    batch: hit.batch,
                });
            }
            let reply = self.inner.complete(request).await?;
            let record = CachedReply {
                text: reply.text.clone(),
                usage: reply.usage,
                latency_ms: reply.latency.as_secs_f64() * 1000.0,
                batch: false,
            };
            self.store.put_or_warn(key, record);
            Ok(reply)
        })
    }
}

/// An embedder behind the cache: only texts it has not seen are sent.
pub struct CachedEmbedder {
    inner: Arc<dyn Embedder>,
    store: Arc<Store<Vec<f32>>>,
    mode: CacheMode,
}

impl CachedEmbedder {
    pub fn new(inner: Arc<dyn Embedder>, dir: &Path, mode: CacheMode) -> Result<Self> {
        Ok(Self::sharing(inner, Self::open_store(dir, mode)?, mode))
    }

    /// An embedder behind a store other embedders share: the embedder profiles of one sweep
    /// all live in `embeddings.jsonl` (their keys differ by model), written through one handle.
    pub fn sharing(inner: Arc<dyn Embedder>, store: Arc<Store<Vec<f32>>>, mode: CacheMode) -> Self {
        CachedEmbedder { inner, store, mode }
    }

    /// The store [`CachedEmbedder::new`] opens in `dir`.
    pub fn open_store(dir: &Path, mode: CacheMode) -> Result<Arc<Store<Vec<f32>>>> {
        Ok(Arc::new(Store::open(&dir.join("embeddings.jsonl"), mode)?))
    }
}

impl Embedder for CachedEmbedder {
    fn model(&self) -> String {
        self.inner.model()
    }

    fn inner(&self) -> Option<&dyn Embedder> {
        Some(self.inner.as_ref())
    }

    fn warnings(&self) -> Vec<String> {
        self.store.take_warnings()
    }

    /// Cached vectors, and the rest from the embedder; a refusal is passed on, not kept (the
    /// parts the caller splits the text into are what is cached).
    fn embed_each<'a>(
        &'a self,
        texts: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<Embedded>, EmbedError>> {
        Box::pin(async move {
            let model = self.inner.model();
            let keys: Vec<String> = texts.iter().map(|t| embedding_key(&model, t)).collect();
            let mut out: Vec<Option<Embedded>> = keys
                .iter()
                .map(|k| {
                    if self.mode == CacheMode::Use {
                        self.store.vector(k).map(Ok)
                    } else {
                        None
                    }
                })
                .collect();
            // Each distinct missing text is embedded once.
            let mut missing: Vec<usize> = Vec::new();
            // Each key maps to its first missing occurrence: a repeat takes that one's vector.
            let mut seen = HashMap::new();
            for (i, v) in out.iter().enumerate() {
                if v.is_none() {
                    seen.entry(&keys[i]).or_insert_with(|| {
                        missing.push(i);
                        i
                    });
                }
            }
            if !missing.is_empty() {
                let batch: Vec<String> = missing.iter().map(|&i| texts[i].clone()).collect();
                let answers = self.inner.embed_each(&batch).await?;
                for (&i, a) in missing.iter().zip(answers) {
                    if let Ok(v) = &a {
                        if !v.is_empty() {
                            self.store.put_or_warn(keys[i].clone(), v.clone());
                        }
                    }
                    out[i] = Some(a);
                }
                // Repeats of a text take the vector of its first occurrence.
                for i in 0..out.len() {
                    if out[i].is_none() {
                        out[i] = out[seen[&keys[i]]].clone();
                    }
                }
            }
            Ok(out
                .into_iter()
                .map(|v| v.unwrap_or_else(|| Ok(Vec::new())))
                .collect())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chat_keys_are_the_hash_of_the_sorted_json_value_they_always_were() {
        use crate::adapters::mock::chat::MockModel;
        use crate::adapters::prompt::{Message, Role};
        use serde_json::json;
        /// The mock under a name that needs escaping, with parameters, as an HTTP model has.
        struct Tuned(MockModel);
        impl ChatModel for Tuned {
            fn model(&self) -> String {
                "llama3.2:1b \"q4\"".into()
            }
            fn params(&self) -> serde_json::Value {
                json!({"temperature": 0.7, "max_tokens": 256})
            }
            fn complete<'a>(
                &'a self,
                request: &'a ChatRequest,
            ) -> crate::base::BoxFuture<
                'a,
                Result<crate::adapters::chat::ChatReply, crate::adapters::chat::CallError>,
            > {
                self.0.complete(request)
            }
        }
        let old = |model: &dyn ChatModel, request: &ChatRequest| {
            let mut material = json!({"model": model.model(), "params": model.params(), "messages": request.messages});
            if let Some(seed) = request.seed {
                material["seed"] = json!(seed);
            }
            sha256_hex(material.to_string().as_bytes())
        };
        for seed in [None, Some(0), Some(3)] {
            let request = ChatRequest {
                messages: vec![
                    Message {
                        role: Role::System,
                        content: "Rules:\n1. \"quote\" \u{1}caf\u{e9} \\ end".into(),
                    },
                    Message {
                        role: Role::User,
                        content: "Context:\n[1] (source: a.md#Fee) The fee.".into(),
                    },
                ],
                seed,
                grounded: None,
                slot: 2,
                format: None,
            };
            for model in [
                &MockModel::default() as &dyn ChatModel,
                &Tuned(MockModel::default()),
            ] {
                assert_eq!(chat_key(model, &request), old(model, &request), "{seed:?}");
            }
        }
        assert_eq!(hex(&[0, 15, 16, 255]), "000f10ff");
    }

    #[test]
    fn a_torn_last_record_is_skipped_and_the_next_starts_cleanly() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.jsonl");
        {
            let s: Store<u32> = Store::open(&path, CacheMode::Use).unwrap();
            s.put("a".into(), 1).unwrap();
            s.put("b".into(), 2).unwrap();
        }
        // A kill mid-write leaves half a line.
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(br#"{"key":"c","val"#).unwrap();
        drop(f);
        let s: Store<u32> = Store::open(&path, CacheMode::Use).unwrap();
        assert_eq!(
            (s.get("a"), s.get("b"), s.get("c")),
            (Some(1), Some(2), None)
        );
        assert_eq!(s.skipped, 1);
        s.put("d".into(), 4).unwrap();
        drop(s);
        let s: Store<u32> = Store::open(&path, CacheMode::Use).unwrap();
        assert_eq!(s.get("d"), Some(4));
        assert_eq!(s.len(), 3);
    }

    /// A reply whose recorded latency is no duration (a hand-edited or damaged cache) is
    /// skipped like a torn line: reading it back used to panic in `Duration::from_secs_f64`.
    #[test]
    fn a_reply_with_an_impossible_latency_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("chat.jsonl");
        let line = |key: &str, ms: &str| {
            format!(
                r#"{{"key":"{key}","value":{{"text":"t","usage":{{"prompt_tokens":1,"completion_tokens":1,"estimated":false}},"latency_ms":{ms}}}}}"#
            )
        };
        let text = [
            line("ok", "12.5"),
            line("negative", "-5"),
            line("huge", "1e300"),
            line("zero", "0"),
        ]
        .join("\n");
        std::fs::write(&path, text + "\n").unwrap();
        let s: Store<CachedReply> = Store::open(&path, CacheMode::Use).unwrap();
        assert_eq!(s.skipped, 2);
        assert_eq!(s.get("ok").map(|r| r.latency_ms), Some(12.5));
        assert_eq!(s.get("zero").map(|r| r.latency_ms), Some(0.0));
        assert!(s.get("negative").is_none() && s.get("huge").is_none());
    }

    /// Counts no call can have, or a text longer than any answer taken, are damage (issue 33):
    /// read back, the counts saturated the sweep's totals and the gate refused its record.
    #[test]
    fn a_reply_with_impossible_counts_or_a_huge_text_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("chat.jsonl");
        let line = |key: &str, text: &str, usage: &str| {
            format!(
                r#"{{"key":"{key}","value":{{"text":"{text}","usage":{{{usage},"estimated":false}},"latency_ms":1}}}}"#
            )
        };
        let huge = "a".repeat(crate::adapters::chat::MAX_ANSWER_BYTES + 1);
        let text = [
            line(
                "ok",
                "t",
                r#""prompt_tokens":10,"completion_tokens":2,"cached_prompt_tokens":10"#,
            ),
            line(
                "max",
                "t",
                r#""prompt_tokens":18446744073709551615,"completion_tokens":2"#,
            ),
            line(
                "cached",
                "t",
                r#""prompt_tokens":10,"completion_tokens":2,"cached_prompt_tokens":11"#,
            ),
            line("huge", &huge, r#""prompt_tokens":10,"completion_tokens":2"#),
        ]
        .join("\n");
        std::fs::write(&path, text + "\n").unwrap();
        let s: Store<CachedReply> = Store::open(&path, CacheMode::Use).unwrap();
        assert_eq!((s.len(), s.skipped), (1, 3));
        assert!(s.get("ok").is_some());
    }

    /// A cached reply the live path would refuse for its request is not served: a judge's
    /// grade longer than a formatted reply's limit (64 KiB) is called again, while the same
    /// text as an answer (limit 1 MiB) is served; the dry run counts it the same way.
    #[test]
    fn a_cached_reply_the_live_path_would_refuse_for_its_request_is_called_again() {
        use crate::adapters::mock::chat::MockModel;
        use crate::adapters::prompt::{Message, Role};
        let dir = tempfile::tempdir().unwrap();
        let store = CachedModel::open_store(dir.path(), CacheMode::Use).unwrap();
        let model = CachedModel::sharing(
            Arc::new(MockModel::default()),
            store.clone(),
            CacheMode::Use,
        );
        let request = |format| ChatRequest {
            messages: vec![Message {
                role: Role::User,
                content:
                    "Context:\n[1] (source: a.md#Fee) The fee is ten dollars.\n\nQuestion: fee?"
                        .into(),
            }],
            seed: None,
            grounded: None,
            slot: 0,
            format,
        };
        let (answer, grade) = (
            request(None),
            request(Some(crate::adapters::judge::GRADE_FORMAT)),
        );
        let long = "word ".repeat(20_000);
        assert!(long.len() > crate::adapters::chat::MAX_FORMATTED_REPLY_BYTES);
        for r in [&answer, &grade] {
            let record = CachedReply {
                text: long.clone(),
                usage: Usage {
                    prompt_tokens: 10,
                    completion_tokens: 20_000,
                    cached_prompt_tokens: 0,
                    estimated: false,
                },
                latency_ms: 1.0,
                batch: false,
            };
            store
                .put(chat_key(&MockModel::default(), r), record)
                .unwrap();
        }
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        assert!(model.is_cached(&answer));
        let served = runtime.block_on(model.complete(&answer)).unwrap();
        assert!(served.cached && served.text == long);
        assert!(
            !model.is_cached(&grade),
            "a dry run counts the grade as a call"
        );
        let called = runtime.block_on(model.complete(&grade)).unwrap();
        assert!(!called.cached && called.text != long, "{}", called.text);
        assert_eq!(model.hits.load(Ordering::Relaxed), 1);
    }

    /// Two equal texts sent to an empty cache both get the vector of the one call made for
    /// them (issue 33 item 1): the repeat used to get an empty vector.
    #[test]
    fn repeated_texts_share_their_first_occurrences_vector() {
        use crate::adapters::embed::HashEmbedder;
        /// The hash embedder, counting the texts it is sent.
        struct Counting(HashEmbedder, std::sync::Mutex<Vec<String>>);
        impl Embedder for Counting {
            fn model(&self) -> String {
                self.0.model()
            }
            fn embed_each<'a>(
                &'a self,
                texts: &'a [String],
            ) -> BoxFuture<'a, Result<Vec<Embedded>, EmbedError>> {
                self.1.lock().unwrap().extend(texts.iter().cloned());
                self.0.embed_each(texts)
            }
        }
        let dir = tempfile::tempdir().unwrap();
        let inner = Arc::new(Counting(HashEmbedder::default(), Default::default()));
        let cached = CachedEmbedder::new(inner.clone(), dir.path(), CacheMode::Use).unwrap();
        let texts: Vec<String> = ["a", "b", "a", "a", "b"].map(String::from).to_vec();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let vectors = runtime.block_on(cached.embed(&texts)).unwrap();
        assert_eq!(*inner.1.lock().unwrap(), ["a", "b"]);
        assert!(vectors.iter().all(|v| !v.is_empty()));
        assert_eq!((&vectors[2], &vectors[3]), (&vectors[0], &vectors[0]));
        assert_eq!(&vectors[4], &vectors[1]);
        // From the cache now: no call.
        let again = runtime.block_on(cached.embed(&texts)).unwrap();
        assert_eq!((again, inner.1.lock().unwrap().len()), (vectors, 2));
    }

    #[test]
    fn failed_writes_are_kept_as_one_warning_not_printed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.jsonl");
        let s: Store<u32> = Store::open(&path, CacheMode::Use).unwrap();
        // A read-only handle in place of the file: every write fails.
        *s.file.lock().unwrap() = File::open(&path).unwrap();
        s.put_or_warn("a".into(), 1);
        s.put_or_warn("b".into(), 2);
        s.put_or_warn("c".into(), 3);
        let w = s.take_warnings();
        assert_eq!(w.len(), 1);
        assert!(
            w[0].starts_with(&format!("cannot write cache `{}`: ", path.display())),
            "{w:?}"
        );
        assert!(w[0].ends_with(" (2 more cache writes failed)"), "{w:?}");
        assert_eq!(s.take_warnings(), Vec::<String>::new(), "taken once");
    }

    #[test]
    fn refresh_ignores_old_records_but_keeps_writing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.jsonl");
        Store::<u32>::open(&path, CacheMode::Use)
            .unwrap()
            .put("a".into(), 1)
            .unwrap();
        let s: Store<u32> = Store::open(&path, CacheMode::Refresh).unwrap();
        assert_eq!(s.get("a"), None);
        s.put("a".into(), 2).unwrap();
        let s: Store<u32> = Store::open(&path, CacheMode::Use).unwrap();
        assert_eq!(s.get("a"), Some(2), "the later record wins");
    }

    #[test]
    fn keys_depend_on_model_params_and_messages_only() {
        assert_eq!(embedding_key("m", "t"), embedding_key("m", "t"));
        assert_ne!(embedding_key("m", "t"), embedding_key("m2", "t"));
        assert_ne!(embedding_key("m", "t"), embedding_key("m", "t "));
    }
}
