//! `results.json` as one typed record, `rageval.results/2`: written by the sweep and by
//! `merge`, read back by the gate and `merge`, keyed by ids so that nothing depends on
//! positions.
//!
//! Questions are keyed by id, settings by setting id (each an ordered map of its dimension
//! values), every distinct model call appears once keyed by its request digest, and a run is
//! (question, setting, call, passages, verdict): no text is repeated per run. The `summary`
//! (per-setting statistics, recommendation, separability) is derived from the rest; it is
//! written for readers and recomputed on reading, never trusted. [`Results`] is the positional
//! index that reports are written from; [`Record::of`] and [`Record::into_results`] convert
//! between the two, and the round-trip test proves they lose nothing.

mod convert;
pub mod merge;
pub mod stream;
mod summary;

use std::path::{Path, PathBuf};

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::adapters::classify::Verdict;
use crate::adapters::prompt::Message;
use crate::base::input::FileError;
use crate::results::Meta;

pub use crate::vocab::call::{from_ms, to_ms, CallRecord, CallRole};
pub use summary::Derived;

/// The schema of results.json; a reader refuses any other.
pub const SCHEMA: &str = "rageval.results/2";

/// The previous schema, which only a refresh can bring forward.
pub const SCHEMA_V1: &str = "rageval.results/1";

/// A whole sweep's results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(title = "rageval results", rename = "Results")]
pub struct Record {
    /// Always `rageval.results/2`.
    pub schema: String,
    /// What produced the results: tool version, configuration digest, models, question sets.
    pub identity: Meta,
    /// The shard of the sweep these results cover (`--shard I/N`): a partial record that
    /// `rageval merge` joins with the other shards'. Absent for a whole sweep.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<crate::sweep::Shard>,
    /// Derived from the fields below (statistics, recommendation, separability); written for
    /// readers, recomputed whenever the record is read.
    #[serde(default, skip_deserializing, skip_serializing_if = "Option::is_none")]
    pub summary: Option<Derived>,
    /// Names of the setting dimensions, in column order.
    pub dimensions: Vec<String>,
    /// Every corpus by its folder (as the question sets name it), with its chunks by id.
    pub corpora: IndexMap<String, CorpusRecord>,
    /// Every question by id, in question-set order.
    pub questions: IndexMap<String, QuestionRecord>,
    /// Every setting by id: its value in each dimension, in [`Record::dimensions`] order.
    pub settings: IndexMap<String, IndexMap<String, serde_json::Value>>,
    /// The settings an adaptive sweep dropped (`sweep --until-certified`, docs/adaptive.md),
    /// by id: the questions each ran before it was out. Such a setting has runs of those
    /// questions only; every other setting has a run of every question. Absent when none was.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub dropped: IndexMap<String, DroppedRecord>,
    /// Every distinct model call by request digest (the first 16 hex digits of its cache key).
    pub calls: IndexMap<String, CallRecord>,
    /// One per (question, setting), setting-major; none of a dropped setting's later
    /// questions (see [`Record::dropped`]).
    pub runs: Vec<RunRecord>,
    /// Question texts embedded (one per distinct question or rewrite).
    pub question_embeddings: usize,
}

/// The questions a dropped setting ran, per class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DroppedRecord {
    pub answerable: usize,
    pub unanswerable: usize,
}

/// One corpus.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CorpusRecord {
    /// Chunk ids (`file.md#N`) in corpus order.
    pub chunks: IndexMap<String, ChunkRecord>,
}

/// One chunk of a corpus.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ChunkRecord {
    /// `file.md > Heading`, as reports show it.
    pub label: String,
    /// The chunk's text, whitespace squashed as prompts send it: what a person labelling a
    /// reply reads (`rageval label`). Absent in records written before labels.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub text: String,
    /// The scan pattern the chunk matches, when the scan flags it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flagged: Option<String>,
}

/// One question and the facts that do not depend on a setting.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct QuestionRecord {
    /// Its position in the whole sweep's question order (question sets in order, each in file
    /// order), which a shard keeps so that merged shards list questions as one sweep does.
    pub position: usize,
    pub question: String,
    /// The question set file it comes from.
    pub set: String,
    /// Its corpus, a key of [`Record::corpora`].
    pub corpus: String,
    pub answerable: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expect_sources: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expect_answers: Vec<String>,
    /// Earlier turns of the conversation, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(with = "Vec<TurnSchema>")]
    pub history: Vec<Message>,
    /// The injection probe's marker and poisoned source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attack: Option<AttackRecord>,
    /// For a question `rageval generate` wrote: its model, chunk, seed, and whether it was
    /// reviewed. Absent for a hand-written question.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generated: Option<crate::adapters::evalset::Origin>,
    /// The best score of the text the first setting asks, whatever minScore and k: the best
    /// rerank score when a reranker is configured, else the best retrieval score.
    pub best_score: Option<f64>,
    /// With a reranker: the best retrieval score before reranking. Absent without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub best_retrieval_score: Option<f64>,
    /// The best score of an expected chunk within the largest k searched: the highest
    /// minScore at which an expected source still reaches the prompt.
    pub expected_score: Option<f64>,
    /// Follow-up questions only: the text asked under each rewrite strategy of the grid.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub asked: IndexMap<String, AskedRecord>,
    /// With more than one retrieval variant (`--embedder`, `--chunk-tokens`): per variant
    /// (`embedder=NAME`, `chunk_tokens=N` or both, in the order settings name them), the
    /// scores above under its retrieval; absent otherwise.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub retrieval: IndexMap<String, RetrievalRecord>,
}

/// A question's scores under one retrieval variant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RetrievalRecord {
    /// As [`QuestionRecord::best_score`], under this variant.
    pub best_score: Option<f64>,
    /// As [`QuestionRecord::expected_score`], under this variant.
    pub expected_score: Option<f64>,
    /// As [`QuestionRecord::best_retrieval_score`] (with a reranker), under this variant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub best_retrieval_score: Option<f64>,
    /// Follow-up questions only: the best score of the text asked under each rewrite strategy.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub asked: IndexMap<String, Option<f64>>,
}

/// The schema of one conversation turn.
#[derive(JsonSchema)]
#[allow(dead_code)]
struct TurnSchema {
    /// `system`, `user` or `assistant`.
    role: String,
    content: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AttackRecord {
    pub marker: String,
    pub source: String,
}

/// A follow-up question under one rewrite strategy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AskedRecord {
    /// The text searched and asked.
    pub text: String,
    /// Its best retrieval score.
    pub best_score: Option<f64>,
    /// Why a `model` rewrite was not used, when it was not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The `model` rewrite call, a key of [`Record::calls`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<String>,
}

/// A passage sent: its chunk id and its retrieval score.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Passage(pub String, pub f64);

/// One (question, setting) run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunRecord {
    /// A key of [`Record::questions`].
    pub question: String,
    /// A key of [`Record::settings`].
    pub setting: String,
    /// The answer call, a key of [`Record::calls`]; absent for an early refusal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<String>,
    /// Passages sent, in prompt order: `[n]` is the n-th.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub passages: Vec<Passage>,
    #[serde(flatten)]
    pub verdict: Verdict,
    /// The judge call that graded the reply, a key of [`Record::calls`]; absent when no judge
    /// graded it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_call: Option<String>,
    /// `--repeat N`: repeats 1 to N-1 of this run (the run itself is repeat 0), each its
    /// answer call and outcome; absent for a sweep without repeats.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repeats: Vec<RepeatRecord>,
    /// The rerank call that scored the passages of the text this run asked, a key of
    /// [`Record::calls`]; absent without a reranker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rerank_call: Option<String>,
    /// When a person labelled the reply (docs/labels.md): the grader's verdict before the
    /// label replaced it (the verdict above is the label's) and the reply's inclusion
    /// probability in the labelled sample. Absent for a run nobody labelled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labelled: Option<crate::adapters::classify::Labelled>,
}

impl RunRecord {
    /// The calls the run names itself: its answer, judge and rerank calls and its repeats'
    /// answers (a question's rewrite calls are the question's).
    fn calls(&self) -> impl Iterator<Item = &String> {
        self.call
            .iter()
            .chain(&self.judge_call)
            .chain(&self.rerank_call)
            .chain(self.repeats.iter().filter_map(|r| r.call.as_ref()))
    }
}

/// One later repeat of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RepeatRecord {
    /// The answer call, a key of [`Record::calls`]; absent for an early refusal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<String>,
    pub outcome: crate::adapters::classify::Outcome,
}

/// Why a results file cannot be used. Always exit status 2.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    // The causes are named `reason`, not `source`: the message holds them already, and as
    // an error's source they were printed a second (and third) time after it.
    #[error("cannot read results `{}`: {reason}", path.display())]
    Read { path: PathBuf, reason: FileError },
    #[error("`{}` is not a rageval results file: {reason}", path.display())]
    Json {
        path: PathBuf,
        reason: serde_json::Error,
    },
    #[error(
        "`{}` has schema `{SCHEMA_V1}`, written by an older rageval: rerun `rageval sweep`, and refresh a baseline with `rageval gate --update-baseline --baseline {}`",
        path.display(), path.display()
    )]
    Old { path: PathBuf },
    #[error(
        "`{}` has schema `{found}`, but this rageval reads `{SCHEMA}`; rerun the sweep with this version, or read it with the rageval that wrote it",
        path.display()
    )]
    Schema { path: PathBuf, found: String },
    #[error("`{}` is inconsistent: {message}", path.display())]
    Inconsistent { path: PathBuf, message: String },
}

/// The schema line alone, read first so that another version gets a clear message instead of
/// a complaint about some field.
#[derive(Deserialize)]
struct SchemaOnly {
    schema: Option<String>,
}

impl Record {
    /// Read and check a results file: a regular file of at most
    /// [`MAX_RESULTS_BYTES`](crate::base::input::MAX_RESULTS_BYTES), parsed as it is read.
    pub fn load(path: &Path) -> Result<Record, RecordError> {
        use crate::base::input::{open_limited, Limited, MAX_RESULTS_BYTES};
        let read = |reason| RecordError::Read {
            path: path.to_path_buf(),
            reason,
        };
        // Parse from a reader that stops at the limit: a large file is never held as text.
        fn from<T: serde::de::DeserializeOwned>(
            mut reader: std::io::BufReader<Limited<std::fs::File>>,
        ) -> Result<Result<T, serde_json::Error>, FileError> {
            let parsed = serde_json::from_reader(&mut reader);
            match reader.get_ref() {
                r if r.exceeded() => Err(FileError::TooLarge(r.limit())),
                _ => Ok(parsed),
            }
        }
        let open = || {
            open_limited(path, MAX_RESULTS_BYTES)
                .map(|r| std::io::BufReader::with_capacity(1 << 16, r))
                .map_err(read)
        };
        let full = from::<Record>(open()?).map_err(read)?;
        Record::checked(path, full, || from::<SchemaOnly>(open()?).map_err(read))
    }

    /// Parse and check the text of a results file (`path` names it in errors).
    pub fn parse(path: &Path, text: &str) -> Result<Record, RecordError> {
        Record::checked(path, serde_json::from_str(text), || {
            Ok(serde_json::from_str(text))
        })
    }

    /// The record parsed whole (`full`), checked: a file of another schema is named by its
    /// schema line (`head`, read only then), not by a complaint about some field.
    fn checked(
        path: &Path,
        full: Result<Record, serde_json::Error>,
        head: impl FnOnce() -> Result<Result<SchemaOnly, serde_json::Error>, RecordError>,
    ) -> Result<Record, RecordError> {
        let json = |reason| RecordError::Json {
            path: path.to_path_buf(),
            reason,
        };
        let record = match full {
            Ok(record) if record.schema == SCHEMA => record,
            full => {
                let head = head()?.map_err(json)?;
                match head.schema.as_deref() {
                    Some(SCHEMA) => {}
                    Some(old) if old == SCHEMA_V1 || old.starts_with("rageval.results/1.") => {
                        return Err(RecordError::Old {
                            path: path.to_path_buf(),
                        })
                    }
                    other => {
                        return Err(RecordError::Schema {
                            path: path.to_path_buf(),
                            found: other.unwrap_or_default().to_string(),
                        })
                    }
                }
                full.map_err(json)?
            }
        };
        record
            .check()
            .map_err(|message| RecordError::Inconsistent {
                path: path.to_path_buf(),
                message,
            })?;
        Ok(record)
    }

    /// Write the record as results.json: pretty JSON, one run per line.
    pub fn write(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        let mut ser = serde_json::Serializer::with_formatter(&mut *out, LinesFormatter::default());
        self.serialize(&mut ser).map_err(std::io::Error::other)?;
        out.write_all(b"\n")
    }

    /// Every name a run, a question or a rewrite uses is defined, every setting names each
    /// dimension, no (question, setting) has two runs, every outcome is one its question's
    /// class can have, every call's times are durations in range and its cached prompt tokens
    /// at most its prompt tokens, and the token counts of the
    /// runs add up without overflow. A message names the call, run or question and its field.
    fn check(&self) -> Result<(), String> {
        self.check_calls()?;
        self.check_questions()?;
        for (id, values) in &self.settings {
            if let Some(d) = self.dimensions.iter().find(|d| !values.contains_key(*d)) {
                return Err(format!("setting `{id}` has no value for dimension `{d}`"));
            }
        }
        let mut seen = std::collections::HashSet::new();
        let mut tokens = TokenTotals::default();
        for run in &self.runs {
            let Some(q) = self.questions.get(&run.question) else {
                return Err(format!("a run names unknown question `{}`", run.question));
            };
            if !self.settings.contains_key(&run.setting) {
                return Err(format!("a run names unknown setting `{}`", run.setting));
            }
            for c in run.calls() {
                if !self.calls.contains_key(c) {
                    return Err(format!("a run names unknown call `{c}`"));
                }
            }
            check_outcomes(run, q)?;
            // Every total a reader forms (per setting, per run) is part of this one, which
            // counts a question's rewrite calls once per run of it.
            let asked = q.asked.values().filter_map(|a| a.call.as_ref());
            for c in run.calls().chain(asked) {
                tokens.add(c, &self.calls[c].usage)?;
            }
            let chunks = &self.corpora[&q.corpus].chunks;
            if let Some(p) = run.passages.iter().find(|p| !chunks.contains_key(&p.0)) {
                return Err(format!(
                    "a run of question `{}` names unknown chunk `{}`",
                    run.question, p.0
                ));
            }
            if !seen.insert((run.question.as_str(), run.setting.as_str())) {
                return Err(format!(
                    "question `{}` has two runs at setting `{}`",
                    run.question, run.setting
                ));
            }
        }
        Ok(())
    }

    /// Every call's cached prompt tokens are at most its prompt tokens, and its times are
    /// durations in range.
    fn check_calls(&self) -> Result<(), String> {
        for (id, call) in &self.calls {
            let u = &call.usage;
            if u.cached_prompt_tokens > u.prompt_tokens {
                return Err(format!(
                    "call `{id}`: `usage.cached_prompt_tokens` is {}, more than its `prompt_tokens`, {}",
                    u.cached_prompt_tokens, u.prompt_tokens
                ));
            }
            for (field, ms) in [("latency_ms", call.latency_ms), ("ttft_ms", call.ttft_ms)] {
                if let Some(ms) = ms.filter(|ms| !(0.0..=MAX_CALL_MS).contains(ms)) {
                    return Err(format!(
                        "call `{id}`: `{field}` is {}, not a duration from 0 to {MAX_CALL_MS:e} ms",
                        number(ms)
                    ));
                }
            }
        }
        Ok(())
    }

    /// Every question names a known corpus, and its rewrites known calls.
    fn check_questions(&self) -> Result<(), String> {
        for (id, q) in &self.questions {
            if !self.corpora.contains_key(&q.corpus) {
                return Err(format!(
                    "question `{id}` names unknown corpus `{}`",
                    q.corpus
                ));
            }
            for a in q.asked.values() {
                if let Some(c) = &a.call {
                    if !self.calls.contains_key(c) {
                        return Err(format!("question `{id}` names unknown call `{c}`"));
                    }
                }
            }
        }
        Ok(())
    }

    /// The JSON Schema of results.json, as docs/results.schema.json holds it.
    pub fn json_schema() -> String {
        let schema = schemars::generate::SchemaSettings::draft2020_12()
            .for_serialize()
            .into_generator()
            .into_root_schema_for::<Record>();
        let mut text = serde_json::to_string_pretty(&schema).expect("a schema serializes");
        text.push('\n');
        text
    }
}

/// Every outcome of `run` (and of its repeats) is one its question's class can have.
fn check_outcomes(run: &RunRecord, q: &QuestionRecord) -> Result<(), String> {
    if let Some(l) = run
        .labelled
        .as_ref()
        .filter(|l| !(l.inclusion > 0.0 && l.inclusion <= 1.0))
    {
        return Err(format!(
            "the run of question `{}` at setting `{}`: `labelled.inclusion` is {}, not a probability above 0 and at most 1",
            run.question, run.setting, number(l.inclusion)
        ));
    }
    let graded = run
        .labelled
        .iter()
        .map(|l| ("labelled.graded.outcome".to_string(), l.graded.outcome));
    let outcomes = std::iter::once(("outcome".to_string(), run.verdict.outcome))
        .chain(graded)
        .chain(
            run.repeats
                .iter()
                .enumerate()
                .map(|(i, r)| (format!("repeats[{i}].outcome"), r.outcome)),
        );
    for (field, outcome) in outcomes {
        if !outcome.possible_for(q.answerable) {
            let class = if q.answerable {
                "answerable"
            } else {
                "unanswerable"
            };
            let can: Vec<String> = crate::adapters::classify::Outcome::ALL
                .into_iter()
                .filter(|o| o.possible_for(q.answerable))
                .map(|o| format!("`{o}`"))
                .collect();
            let can = match can.split_last() {
                Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
                None => String::new(),
            };
            return Err(format!(
                "the run of question `{}` at setting `{}`: `{field}` is `{outcome}`, but the question is {class}, whose runs are {can}",
                run.question, run.setting
            ));
        }
    }
    Ok(())
}

/// Per token field (prompt, completion): the total so far of the calls the runs name, and
/// the call with the largest count.
#[derive(Default)]
struct TokenTotals<'a>([(u64, Option<(&'a str, u64)>); 2]);

impl<'a> TokenTotals<'a> {
    /// Add call `c`'s counts; an error when a total would pass `u64::MAX`.
    fn add(&mut self, c: &'a str, usage: &crate::adapters::chat::Usage) -> Result<(), String> {
        let counts = [
            ("prompt_tokens", usage.prompt_tokens),
            ("completion_tokens", usage.completion_tokens),
        ];
        for ((total, largest), (field, n)) in self.0.iter_mut().zip(counts) {
            if largest.is_none_or(|(_, most)| n > most) {
                *largest = Some((c, n));
            }
            *total = total.checked_add(n).ok_or_else(|| {
                let (call, most) = largest.unwrap_or_default();
                format!(
                    "`usage.{field}` of the calls the runs name adds up past the largest count, {}; call `{call}` alone has {most}",
                    u64::MAX
                )
            })?;
        }
        Ok(())
    }
}

/// The longest `latency_ms` or `ttft_ms` a call may record: 10^10 ms (about 116 days, more
/// than every attempt of a call at the longest timeout takes). Past it, or below 0, the number
/// is no duration of a call.
pub const MAX_CALL_MS: f64 = 1e10;

/// A number from a file as a message shows it: short, in exponent form when it is huge.
fn number(x: f64) -> String {
    if x.abs() >= 1e15 {
        format!("{x:e}")
    } else {
        format!("{x}")
    }
}

/// serde_json's pretty layout, except that values nested deeper than two levels stay on one
/// line: each run, call and setting is one line, so the file is compact and still diffs and
/// greps well.
#[derive(Default)]
struct LinesFormatter {
    depth: usize,
    /// Whether the current container (at depth <= 2) has had a value yet.
    has_value: bool,
}

const FLAT_BELOW: usize = 2;

impl LinesFormatter {
    fn open<W: ?Sized + std::io::Write>(&mut self, w: &mut W, c: &[u8]) -> std::io::Result<()> {
        self.depth += 1;
        self.has_value = false;
        w.write_all(c)
    }

    fn close<W: ?Sized + std::io::Write>(&mut self, w: &mut W, c: &[u8]) -> std::io::Result<()> {
        self.depth -= 1;
        if self.depth < FLAT_BELOW && self.has_value {
            w.write_all(b"\n")?;
            indent(w, self.depth)?;
        }
        self.has_value = true;
        w.write_all(c)
    }

    fn item<W: ?Sized + std::io::Write>(&mut self, w: &mut W, first: bool) -> std::io::Result<()> {
        if !first {
            w.write_all(b",")?;
        }
        if self.depth <= FLAT_BELOW {
            w.write_all(b"\n")?;
            indent(w, self.depth)?;
        }
        Ok(())
    }
}

fn indent<W: ?Sized + std::io::Write>(w: &mut W, n: usize) -> std::io::Result<()> {
    for _ in 0..n {
        w.write_all(b"  ")?;
    }
    Ok(())
}

impl serde_json::ser::Formatter for LinesFormatter {
    fn begin_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.open(w, b"[")
    }
    fn end_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.close(w, b"]")
    }
    fn begin_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.item(w, first)
    }
    fn end_array_value<W: ?Sized + std::io::Write>(&mut self, _w: &mut W) -> std::io::Result<()> {
        self.has_value = true;
        Ok(())
    }
    fn begin_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.open(w, b"{")
    }
    fn end_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.close(w, b"}")
    }
    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.item(w, first)
    }
    fn begin_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        w.write_all(if self.depth <= FLAT_BELOW {
            b": "
        } else {
            b":"
        })
    }
    fn end_object_value<W: ?Sized + std::io::Write>(&mut self, _w: &mut W) -> std::io::Result<()> {
        self.has_value = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
