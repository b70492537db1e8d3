//! Reading a batch engine's output and error files into the response cache.
//!
//! A line is `{"custom_id", "response": {"status_code", "body"}, "error"}` (OpenAI, Azure and
//! vLLM's `run_batch` all write it). A success whose `custom_id` this project wrote (see
//! [`Ledger`]) and whose body is a chat completion is put into the cache file of its request,
//! under that key; a failure is counted with the engine's error, an unknown `custom_id` is
//! counted and never guessed at. Nothing is written until every line of every file has been
//! read: a line that is not a batch line stops the import naming its file and line, with the
//! cache as it was. A key the cache already holds is left as it is, so a second import of a
//! file changes nothing.

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Result;
use serde_json::Value;

use super::{Ledger, StoreKind};
use crate::adapters::cache::{CacheMode, CachedReply, Store};
use crate::adapters::chat::{
    estimate_tokens, reply_problem, Usage, MAX_ANSWER_BYTES, MAX_FORMATTED_REPLY_BYTES,
};
use crate::base::error::InputError;
use crate::base::safe_text::one_line;

/// The longest line read: a chat completion's body is far shorter, and an output file (of any
/// size) is read a line at a time.
pub const MAX_LINE_BYTES: usize = 32 * 1024 * 1024;

/// Where a line is: `file:line`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct At {
    pub file: PathBuf,
    pub line: usize,
}

impl std::fmt::Display for At {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.file.display(), self.line)
    }
}

/// A line whose request was not answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failed {
    pub at: At,
    pub custom_id: String,
    /// The engine's error (`500: injected failure`, `batch_expired: ...`), or why the body
    /// is no answer.
    pub message: String,
}

/// What an import did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Imported {
    /// Answers put into the cache.
    pub imported: usize,
    /// Answers the cache already held (a file imported again).
    pub already: usize,
    /// The requests that were not answered, each once (at its first failed line).
    pub failed: Vec<Failed>,
    /// The first [`MAX_KEPT`] lines whose `custom_id` is no request of this project.
    pub unknown: Vec<(At, String)>,
    /// All such lines.
    pub unknown_lines: usize,
    /// Lines that repeat an answer read before, to the letter: counted once.
    pub repeated: usize,
    /// Of the answers (imported or already held), the embeddings' vectors.
    pub vectors: usize,
}

/// Strangers kept by name; the rest are counted. A file of another project names millions.
pub const MAX_KEPT: usize = 5;

/// One answer read, not yet written.
struct Answer {
    store: StoreKind,
    key: String,
    value: Cached,
}

/// What an answer puts into its cache file: a reply, or an embedding's vector.
enum Cached {
    Reply(CachedReply),
    Vector(Vec<f32>),
}

impl Cached {
    /// What tells two answers apart: a repeated `custom_id` must repeat its answer.
    fn digest(&self) -> String {
        let bytes = match self {
            Cached::Reply(r) => serde_json::to_vec(r),
            Cached::Vector(v) => serde_json::to_vec(v),
        }
        .expect("an answer serializes");
        crate::base::digest::digest(&[&bytes])
    }
}

/// What one line of a batch file is.
enum Line {
    /// An answer to a request of this project.
    Answer(Answer),
    /// A request of this project that the engine did not answer (or answered with no answer).
    Failed(String, String),
    /// A `custom_id` this project never wrote.
    Unknown(String),
}

/// The cache files an import writes into.
pub struct Stores<'a> {
    /// `chat.jsonl` or `judge.jsonl`.
    pub replies: &'a dyn Fn(StoreKind) -> Result<Arc<Store<CachedReply>>>,
    /// `embeddings.jsonl`.
    pub vectors: &'a dyn Fn() -> Result<Arc<Store<Vec<f32>>>>,
}

/// Import `files` into the cache folder `cache_dir`, whose ledger names the requests.
pub fn import(files: &[PathBuf], cache_dir: &Path) -> Result<Imported> {
    import_into(
        files,
        cache_dir,
        &Stores {
            replies: &|kind| open(cache_dir, kind),
            vectors: &|| open(cache_dir, StoreKind::Embedding),
        },
    )
}

/// The cache file of `kind` in the cache folder `cache_dir`, opened for use.
pub fn open<V: serde::Serialize + serde::de::DeserializeOwned + Clone>(
    cache_dir: &Path,
    kind: StoreKind,
) -> Result<Arc<Store<V>>> {
    Ok(Arc::new(Store::open(
        &cache_dir.join(kind.file()),
        CacheMode::Use,
    )?))
}

/// [`import`] through the stores `stores` hands out (a running sweep's own, so that it sees
/// the answers at once).
///
/// Two passes, a line at a time, so memory stays at one line whatever the files' size: the
/// first checks every line and remembers a digest of each request's answer (a request whose
/// `custom_id` comes again with another answer stops the import: which one is right is not
/// ours to guess); the second writes the answers. Nothing is written when the first fails.
pub fn import_into(files: &[PathBuf], cache_dir: &Path, stores: &Stores) -> Result<Imported> {
    let ledger = Ledger::open(cache_dir)?;
    let mut out = Imported::default();
    // Per request of this project (the ledger bounds it): its answer's digest and first line.
    let mut answered: HashMap<String, (String, At)> = HashMap::new();
    let mut failed: HashMap<String, usize> = HashMap::new();
    for file in files {
        each_line(file, &ledger, |at, read| {
            match read {
                Line::Answer(a) => {
                    let digest = a.value.digest();
                    match answered.entry(a.key) {
                        Entry::Occupied(e) if e.get().0 == digest => out.repeated += 1,
                        Entry::Occupied(e) => {
                            return Err(InputError::new(&at.file, format!(
                                "`custom_id` {} was answered before, at {}, with another answer: the import takes neither (remove the line that is wrong)",
                                one_line(e.key()), e.get().1
                            ))
                            .at(Some(at.line))
                            .into())
                        }
                        Entry::Vacant(e) => {
                            e.insert((digest, at));
                        }
                    }
                }
                Line::Failed(id, message) => {
                    if let Entry::Vacant(e) = failed.entry(id.clone()) {
                        e.insert(out.failed.len());
                        out.failed.push(Failed {
                            at,
                            custom_id: id,
                            message,
                        });
                    }
                }
                Line::Unknown(id) => {
                    out.unknown_lines += 1;
                    if out.unknown.len() < MAX_KEPT {
                        out.unknown.push((at, id));
                    }
                }
            }
            Ok(())
        })?;
    }
    // A request answered in one line and failed in another (an output and an error file of
    // two tries) is answered.
    out.failed.retain(|f| !answered.contains_key(&f.custom_id));
    let mut writer = Opened::new(stores);
    for file in files {
        each_line(file, &ledger, |at, read| {
            let Line::Answer(a) = read else {
                return Ok(());
            };
            // Each request once, and only the answer the first pass read.
            let Some((digest, first)) = answered.get(&a.key) else {
                return Ok(());
            };
            if *first != at {
                return Ok(());
            }
            if *digest != a.value.digest() {
                return Err(InputError::new(
                    &at.file,
                    "the file changed while it was imported: import it again",
                )
                .at(Some(at.line))
                .into());
            }
            if matches!(a.value, Cached::Vector(_)) {
                out.vectors += 1;
            }
            if writer.put(a)? {
                out.imported += 1;
            } else {
                out.already += 1;
            }
            Ok(())
        })?;
    }
    Ok(out)
}

/// The cache folder the answers in `files` feed, under `base` (the folder `--cache-dir` or
/// `cache.dir` names). A sweep with `--shard I/N` records its requests in its shard's own
/// folder (`shard-I-of-N`), so when `base` holds shard folders, the folder is the one whose
/// ledger wrote the files' `custom_id`s; with none, or when no shard wrote any of them,
/// `base` itself. Answers to the requests of two folders are refused: which cache a line
/// feeds is no guess.
pub fn cache_folder(base: &Path, files: &[PathBuf]) -> Result<PathBuf> {
    let shards = shard_ledgers(base)?;
    if shards.is_empty() {
        return Ok(base.to_path_buf());
    }
    let mut folders = vec![(base.to_path_buf(), Ledger::open(base)?)];
    folders.extend(shards);
    let mut fed = vec![false; folders.len()];
    for file in files {
        each_json(file, |_, _, id| {
            for (fed, (_, ledger)) in fed.iter_mut().zip(&folders) {
                *fed |= ledger.store_of(id).is_some();
            }
            Ok(())
        })?;
    }
    let fed: Vec<PathBuf> = folders
        .into_iter()
        .zip(fed)
        .filter_map(|((dir, _), fed)| fed.then_some(dir))
        .collect();
    match fed.as_slice() {
        [] => Ok(base.to_path_buf()),
        [dir] => Ok(dir.clone()),
        _ => anyhow::bail!(
            "these files answer the requests of more than one cache folder ({}): import each shard's files on their own",
            fed.iter()
                .map(|d| format!("`{}`", d.display()))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// The ledgers of the shard folders (`shard-I-of-N`) under the cache folder `base` that hold
/// requests, by folder name.
fn shard_ledgers(base: &Path) -> Result<Vec<(PathBuf, Ledger)>> {
    let Ok(entries) = std::fs::read_dir(base) else {
        return Ok(Vec::new());
    };
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| crate::sweep::Shard::from_folder(n).is_some())
        })
        .map(|e| e.path())
        .collect();
    dirs.sort();
    let mut out = Vec::new();
    for dir in dirs {
        let ledger = Ledger::open(&dir)?;
        if !ledger.is_empty() {
            out.push((dir, ledger));
        }
    }
    Ok(out)
}

/// How many of the requests in `ledger` the cache folder `cache_dir` holds no answer to: what
/// the sweep that wrote them would still call.
pub fn unanswered(cache_dir: &Path, ledger: &Ledger) -> Result<usize> {
    let stores = Stores {
        replies: &|kind| open(cache_dir, kind),
        vectors: &|| open(cache_dir, StoreKind::Embedding),
    };
    let mut opened = Opened::new(&stores);
    let mut missing = 0;
    for (id, kind) in ledger.requests() {
        let held = if kind == StoreKind::Embedding {
            opened.vectors()?.vector(id).is_some()
        } else {
            opened.replies(kind)?.get(id).is_some()
        };
        missing += usize::from(!held);
    }
    Ok(missing)
}

/// The cache files of [`Stores`], each opened once, when first needed.
struct Opened<'a> {
    stores: &'a Stores<'a>,
    replies: HashMap<StoreKind, Arc<Store<CachedReply>>>,
    vectors: Option<Arc<Store<Vec<f32>>>>,
}

impl<'a> Opened<'a> {
    fn new(stores: &'a Stores<'a>) -> Self {
        Opened {
            stores,
            replies: HashMap::new(),
            vectors: None,
        }
    }

    fn replies(&mut self, kind: StoreKind) -> Result<&Arc<Store<CachedReply>>> {
        Ok(match self.replies.entry(kind) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => e.insert((self.stores.replies)(kind)?),
        })
    }

    fn vectors(&mut self) -> Result<&Arc<Store<Vec<f32>>>> {
        Ok(match &mut self.vectors {
            Some(s) => s,
            slot => slot.insert((self.stores.vectors)()?),
        })
    }

    /// Put `a` into its cache file: whether it was new there. An empty vector is no answer
    /// (the cache skips it too).
    fn put(&mut self, a: Answer) -> Result<bool> {
        Ok(match a.value {
            Cached::Reply(reply) => {
                let store = self.replies(a.store)?;
                let new = store.get(&a.key).is_none();
                if new {
                    store.put(a.key, reply)?;
                }
                new
            }
            Cached::Vector(v) => {
                let store = self.vectors()?;
                let new = store.vector(&a.key).is_none();
                if new {
                    store.put(a.key, v)?;
                }
                new
            }
        })
    }
}

/// Hand `each` every line of the batch file `file`, read: a line that is not a batch line
/// stops the import, naming the file and line. The file must be a regular file (a FIFO would
/// block, a device never end), and a line longer than [`MAX_LINE_BYTES`] is refused unread.
fn each_line(
    file: &Path,
    ledger: &Ledger,
    mut each: impl FnMut(At, Line) -> Result<()>,
) -> Result<()> {
    each_json(file, |at, v, custom_id| {
        each(at, read_line(v, custom_id, ledger))
    })
}

/// Hand `each` every line of the batch file `file` as JSON, with its `custom_id`, checked as
/// [`each_line`] says.
fn each_json(file: &Path, mut each: impl FnMut(At, &Value, &str) -> Result<()>) -> Result<()> {
    let cannot = |e: &dyn std::fmt::Display| {
        InputError::new(file, format!("cannot read the batch file: {e}"))
    };
    crate::base::input::check_regular(file).map_err(|e| cannot(&e))?;
    let f = std::fs::File::open(file).map_err(|e| cannot(&e))?;
    let mut reader = BufReader::new(f);
    let mut buf = Vec::new();
    for n in 1.. {
        buf.clear();
        let read = (&mut reader)
            .take(MAX_LINE_BYTES as u64 + 1)
            .read_until(b'\n', &mut buf)
            .map_err(|e| cannot(&e))?;
        if read == 0 {
            break;
        }
        let bad = |message: String| InputError::new(file, message).at(Some(n));
        if buf.len() > MAX_LINE_BYTES {
            return Err(bad(format!(
                "the line is longer than {} MiB: this is not a batch output or error file",
                MAX_LINE_BYTES >> 20
            ))
            .into());
        }
        let text = std::str::from_utf8(&buf).map_err(|_| {
            bad("the line is not UTF-8 text: this is not a batch output or error file".into())
        })?;
        if text.trim().is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(text).map_err(|e| {
            bad(format!(
                "the line is not JSON ({e}): a batch output or error file has one JSON object a line"
            ))
        })?;
        let Some(custom_id) = v["custom_id"].as_str() else {
            return Err(bad(
                "the line has no `custom_id`: a batch output or error file line names the request it answers"
                    .into(),
            )
            .into());
        };
        let at = At {
            file: file.to_path_buf(),
            line: n,
        };
        each(at, &v, custom_id)?;
    }
    Ok(())
}

/// What the line `v`, naming `custom_id`, is.
fn read_line(v: &Value, custom_id: &str, ledger: &Ledger) -> Line {
    let Some(store) = ledger.store_of(custom_id) else {
        return Line::Unknown(custom_id.to_string());
    };
    let read = if store == StoreKind::Embedding {
        vector(v).map(Cached::Vector)
    } else {
        answer(v, store, ledger.prompt_tokens(custom_id)).map(Cached::Reply)
    };
    match read {
        Ok(value) => Line::Answer(Answer {
            store,
            key: custom_id.to_string(),
            value,
        }),
        Err(message) => Line::Failed(custom_id.to_string(), message),
    }
}

/// The body of a line's successful response, or the engine's error.
fn success(v: &Value) -> Result<&Value, String> {
    if let Some(e) = v.get("error").filter(|e| !e.is_null()) {
        return Err(error_text(e));
    }
    let response = &v["response"];
    let status = response["status_code"].as_u64();
    let body = &response["body"];
    if status != Some(200) {
        let what = match status {
            Some(s) => s.to_string(),
            None => "no status".into(),
        };
        return Err(match body.get("error") {
            Some(e) => format!("{what}: {}", error_text(e)),
            None => format!("{what}: the engine gave no error"),
        });
    }
    Ok(body)
}

/// The vector an embedding line carries (its one input's), or the engine's error.
fn vector(v: &Value) -> Result<Vec<f32>, String> {
    let body = success(v)?;
    serde_json::from_value::<Vec<f32>>(body["data"][0]["embedding"].clone())
        .ok()
        .filter(|v| !v.is_empty())
        .ok_or_else(|| {
            "the body is not an embedding (no `data[0].embedding` list of numbers)".to_string()
        })
}

/// The cached reply a line carries, or the engine's error, or why the reply cannot be taken:
/// the check every live reply passes ([`reply_problem`]), so an import holds only what the
/// cache will serve.
fn answer(v: &Value, store: StoreKind, prompt_estimate: u64) -> Result<CachedReply, String> {
    let body = success(v)?;
    let text = match &body["choices"][0]["message"]["content"] {
        Value::String(s) => s.clone(),
        _ => {
            return Err(
                "the body is not a chat completion (no `choices[0].message.content`)".into(),
            )
        }
    };
    let reported = crate::adapters::chat::openai::parse_usage(body);
    // The judge's grades are formatted replies; chat lines are answers and rewrites.
    let limit = match store {
        StoreKind::Judge => (MAX_FORMATTED_REPLY_BYTES, "a judge's grade"),
        StoreKind::Chat | StoreKind::Embedding => (MAX_ANSWER_BYTES, "one answer"),
    };
    if let Some(why) = reply_problem(&text, reported.as_ref(), limit) {
        return Err(why);
    }
    let usage = reported.unwrap_or(Usage {
        prompt_tokens: prompt_estimate,
        completion_tokens: estimate_tokens(&text),
        cached_prompt_tokens: 0,
        estimated: true,
    });
    Ok(CachedReply {
        text,
        usage,
        latency_ms: 0.0,
        batch: true,
    })
}

/// `code: message` of an engine's error object, or the object itself.
fn error_text(e: &Value) -> String {
    let message = e["message"].as_str();
    let code = e["code"].as_str().or(e["type"].as_str());
    match (code, message) {
        (Some(c), Some(m)) => format!("{c}: {m}"),
        (None, Some(m)) => m.to_string(),
        _ => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Line, Pending, CHAT_URL};
    use super::*;
    use serde_json::json;

    fn ledger_with(dir: &Path, ids: &[(&str, StoreKind)]) {
        let pending: Vec<Pending> = ids
            .iter()
            .map(|(id, store)| Pending {
                line: Line {
                    custom_id: id.to_string(),
                    method: "POST".into(),
                    url: CHAT_URL.into(),
                    body: json!({}),
                },
                store: *store,
                prompt_tokens: 7,
                rewrite: false,
                section: store.default_section(),
            })
            .collect();
        Ledger::open(dir).unwrap().record(&pending).unwrap();
    }

    fn ok(id: &str, content: &str) -> String {
        json!({"id": "r", "custom_id": id, "error": null, "response": {"status_code": 200, "body": {
            "choices": [{"message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 30, "completion_tokens": 4}}}})
        .to_string()
    }

    /// Answers go into their own cache file under their key; failures, non-answers and
    /// strangers are counted, not cached; a second import changes nothing.
    #[test]
    fn answers_are_cached_under_their_key_and_a_second_import_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("cache");
        ledger_with(
            &cache,
            &[
                ("a", StoreKind::Chat),
                ("j", StoreKind::Judge),
                ("f", StoreKind::Chat),
                ("x", StoreKind::Chat),
                ("e", StoreKind::Chat),
            ],
        );
        let output = dir.path().join("out.jsonl");
        let errors = dir.path().join("err.jsonl");
        std::fs::write(
            &output,
            [
                ok("a", "Room B2."),
                ok("j", "{\"grade\": 1}"),
                ok("stranger", "hi"),
                json!({"custom_id": "x", "response": {"status_code": 200, "body": {"data": []}}})
                    .to_string(),
            ]
            .join("\n")
                + "\n",
        )
        .unwrap();
        std::fs::write(
            &errors,
            [
                json!({"custom_id": "f", "response": {"status_code": 500, "body": {"error": {"message": "injected failure", "type": "server_error"}}}, "error": null}).to_string(),
                json!({"custom_id": "e", "response": null, "error": {"code": "batch_expired", "message": "This request could not be executed before the completion window expired."}}).to_string(),
            ]
            .join("\n"),
        )
        .unwrap();
        let files = [output.clone(), errors.clone()];
        let first = import(&files, &cache).unwrap();
        assert_eq!((first.imported, first.already), (2, 0));
        let failed: Vec<(String, String, usize)> = first
            .failed
            .iter()
            .map(|f| (f.custom_id.clone(), f.message.clone(), f.at.line))
            .collect();
        assert_eq!(
            failed,
            [
                ("x".into(), "the body is not a chat completion (no `choices[0].message.content`)".into(), 4),
                ("f".into(), "500: server_error: injected failure".into(), 1),
                ("e".into(), "batch_expired: This request could not be executed before the completion window expired.".into(), 2),
            ]
        );
        assert_eq!(
            first.unknown,
            [(
                At {
                    file: output.clone(),
                    line: 3
                },
                "stranger".to_string()
            )]
        );
        let chat: Store<CachedReply> =
            Store::open(&cache.join("chat.jsonl"), CacheMode::Use).unwrap();
        let a = chat.get("a").unwrap();
        assert_eq!(
            (a.text.as_str(), a.usage.prompt_tokens, a.batch),
            ("Room B2.", 30, true)
        );
        assert_eq!(chat.len(), 1, "only the answer of its own request");
        let judge: Store<CachedReply> =
            Store::open(&cache.join("judge.jsonl"), CacheMode::Use).unwrap();
        assert_eq!(judge.get("j").unwrap().text, "{\"grade\": 1}");
        let before = std::fs::read(cache.join("chat.jsonl")).unwrap();
        let second = import(&files, &cache).unwrap();
        assert_eq!((second.imported, second.already), (0, 2));
        assert_eq!(std::fs::read(cache.join("chat.jsonl")).unwrap(), before);
    }

    /// A line that is no batch line stops the import before anything is written, naming the
    /// file and line; so does a file with one endless line (as a 2 GB file of anything else
    /// would be), read no further than the limit.
    #[test]
    fn a_broken_file_is_refused_naming_its_line_and_nothing_is_cached() {
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("cache");
        ledger_with(&cache, &[("a", StoreKind::Chat)]);
        let file = dir.path().join("out.jsonl");
        std::fs::write(&file, ok("a", "fine") + "\n{\"custom_id\": \"a\", \"resp\n").unwrap();
        let e = import(std::slice::from_ref(&file), &cache).unwrap_err();
        let e = e.downcast::<InputError>().unwrap();
        assert_eq!(e.line, Some(2));
        assert!(
            e.message.starts_with("the line is not JSON ("),
            "{}",
            e.message
        );
        assert!(!cache.join("chat.jsonl").exists(), "nothing written");
        std::fs::write(&file, "{\"response\": {}}\n").unwrap();
        let e = import(std::slice::from_ref(&file), &cache).unwrap_err();
        assert_eq!(
            e.to_string(),
            InputError::new(&file, "the line has no `custom_id`: a batch output or error file line names the request it answers").at(Some(1)).to_string()
        );
        let huge = dir.path().join("huge.jsonl");
        std::fs::File::create(&huge)
            .unwrap()
            .set_len(2 * 1024 * 1024 * 1024)
            .unwrap();
        let e = import(std::slice::from_ref(&huge), &cache).unwrap_err();
        assert!(e.to_string().contains("longer than 32 MiB"), "{e}");
    }

    /// An embedding line's vector goes into `embeddings.jsonl` under its key; a body that is
    /// no embedding is a failure, and a second import changes nothing.
    #[test]
    fn embedding_answers_are_cached_as_vectors() {
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("cache");
        ledger_with(
            &cache,
            &[("v", StoreKind::Embedding), ("w", StoreKind::Embedding)],
        );
        let output = dir.path().join("out.jsonl");
        std::fs::write(
            &output,
            [
                json!({"custom_id": "v", "response": {"status_code": 200, "body": {"object": "list",
                    "data": [{"object": "embedding", "index": 0, "embedding": [0.6, 0.8]}]}}}),
                json!({"custom_id": "w", "response": {"status_code": 200, "body": {
                    "choices": [{"message": {"content": "not a vector"}}]}}}),
            ]
            .map(|v| v.to_string())
            .join("\n"),
        )
        .unwrap();
        let files = [output];
        let first = import(&files, &cache).unwrap();
        assert_eq!((first.imported, first.already), (1, 0));
        assert_eq!(
            first.failed[0].message,
            "the body is not an embedding (no `data[0].embedding` list of numbers)"
        );
        let vectors: Store<Vec<f32>> =
            Store::open(&cache.join("embeddings.jsonl"), CacheMode::Use).unwrap();
        assert_eq!(vectors.get("v").unwrap(), [0.6, 0.8]);
        assert_eq!(vectors.len(), 1);
        assert!(!cache.join("chat.jsonl").exists(), "no reply written");
        let second = import(&files, &cache).unwrap();
        assert_eq!((second.imported, second.already), (0, 1));
    }
}
