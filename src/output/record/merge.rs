//! Joining the partial records of `sweep --shard I/N` into the record of the whole sweep.
//!
//! Records merge only when they describe the same sweep: the same rageval, configuration,
//! models, question sets, corpora and grid, and together every shard exactly once. A foreign
//! retriever's corpus is the passages retrieved, so shards hold different parts of it: they
//! are joined, in id order. Questions
//! are then put back in the whole sweep's order, calls joined by digest and runs concatenated;
//! everything derived is recomputed by whoever reads the merged record.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use indexmap::IndexMap;

use super::{CorpusRecord, QuestionRecord, Record, RunRecord};
use crate::results::Meta;
use crate::vocab::call::CallRecord;

/// Why records cannot be merged: one line naming the files and the difference.
#[derive(Debug, thiserror::Error)]
#[error("cannot merge: {0}")]
pub struct MergeError(pub String);

fn fail<T>(message: String) -> Result<T, MergeError> {
    Err(MergeError(message))
}

/// Merge the records of every shard of one sweep. `parts` pairs each record with its file;
/// the merged record is the first one, with every shard's questions, calls and runs (and a
/// foreign retriever's passages) moved into it.
pub fn merge(parts: Vec<(PathBuf, Record)>) -> Result<Record, MergeError> {
    let Some(((first_path, first), rest)) = parts.split_first() else {
        return fail("no results to merge".into());
    };
    for (path, r) in rest {
        same_sweep((first_path, first), (path, r))?;
    }
    check_shards(&parts)?;
    let joined = foreign(first);
    let (paths, mut records): (Vec<PathBuf>, Vec<Record>) = parts.into_iter().unzip();
    let shards: Vec<Part> = records.iter_mut().map(|r| Part::take(r, joined)).collect();
    let Some(mut merged) = records.into_iter().next() else {
        return fail("no results to merge".into());
    };
    merged.shard = None;
    merged.summary = None;
    let name = |i: usize| format!("`{}`", paths[i].display());
    let mut owner: HashMap<String, usize> = HashMap::new();
    // The shard whose record of each call is kept.
    let mut caller: HashMap<String, usize> = HashMap::new();
    for (i, part) in shards.into_iter().enumerate() {
        for (id, q) in part.questions {
            if let Some(other) = owner.insert(id.clone(), i) {
                return fail(format!(
                    "question `{id}` is in both {} and {}",
                    name(other),
                    name(i)
                ));
            }
            merged.questions.insert(id, q);
        }
        for (digest, call) in part.calls {
            match merged.calls.get(&digest) {
                None => {
                    caller.insert(digest.clone(), i);
                    merged.calls.insert(digest, call);
                }
                // The same call made by two shards: the same reply, or the runs of one shard
                // would show a reply that contradicts their outcome.
                Some(kept) if !same_call(kept, &call) => {
                    return fail(format!(
                        "call `{digest}` has different records in {} and {}",
                        name(caller.get(&digest).copied().unwrap_or(0)),
                        name(i)
                    ));
                }
                Some(_) => {}
            }
        }
        merged.runs.extend(part.runs);
        merged.question_embeddings += part.question_embeddings;
        join_passages(&mut merged.corpora, part.corpora);
    }
    if joined {
        // The order a whole sweep writes them in (see `sweep::rank::passages_by_id`).
        for corpus in merged.corpora.values_mut() {
            corpus.chunks.sort_keys();
        }
    }
    merged
        .questions
        .sort_by(|_, a, _, b| a.position.cmp(&b.position));
    let expected: usize = merged
        .identity
        .evalsets
        .iter()
        .map(|s| s.answerable + s.unanswerable)
        .sum();
    if merged.questions.len() != expected {
        return fail(format!(
            "the shards hold {} questions, but their question sets have {expected}",
            merged.questions.len()
        ));
    }
    // Each shard was checked on reading; their token counts must also add up together.
    merged.check().map_err(MergeError)?;
    Ok(merged)
}

/// What one shard adds to the merged record, moved out of its record.
struct Part {
    questions: IndexMap<String, QuestionRecord>,
    calls: IndexMap<String, CallRecord>,
    runs: Vec<RunRecord>,
    question_embeddings: usize,
    /// A foreign retriever's passages; empty otherwise (the first record's corpora stay).
    corpora: IndexMap<String, CorpusRecord>,
}

impl Part {
    fn take(r: &mut Record, foreign: bool) -> Part {
        Part {
            questions: std::mem::take(&mut r.questions),
            calls: std::mem::take(&mut r.calls),
            runs: std::mem::take(&mut r.runs),
            question_embeddings: std::mem::take(&mut r.question_embeddings),
            corpora: if foreign {
                std::mem::take(&mut r.corpora)
            } else {
                IndexMap::new()
            },
        }
    }
}

/// Two records of one call digest tell the same story: the same role, repeat, reply and
/// error. Timings and whether the cache answered may differ between the shards that made it.
fn same_call(a: &CallRecord, b: &CallRecord) -> bool {
    (a.role, a.repeat, &a.reply, &a.error) == (b.role, b.repeat, &b.reply, &b.error)
}

/// `m` without the servers' addresses: which server answered does not change a result, so the
/// digest leaves them out and shards sent to different servers merge (as a baseline made
/// against another server gates).
fn without_servers(m: &Meta) -> Meta {
    let mut m = m.clone();
    m.identity.config = m.identity.config.digested();
    m
}

/// The first place where `a` and `b` differ: its path (`config.chat.temperature`) and both
/// values as compact JSON.
fn first_difference(a: &Value, b: &Value, path: &str) -> Option<(String, String, String)> {
    let at = |key: &str| match path {
        "" => key.to_string(),
        _ => format!("{path}.{key}"),
    };
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys = x.keys().chain(y.keys().filter(|k| !x.contains_key(*k)));
            keys.map(|k| {
                let none = Value::Null;
                let (va, vb) = (x.get(k).unwrap_or(&none), y.get(k).unwrap_or(&none));
                first_difference(va, vb, &at(k))
            })
            .find_map(|d| d)
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (va, vb))| first_difference(va, vb, &format!("{path}[{i}]"))),
        _ if a == b => None,
        _ => Some((path.to_string(), a.to_string(), b.to_string())),
    }
}

/// `b` records the same sweep as `a`, or an error names the first difference.
fn same_sweep(a: (&Path, &Record), b: (&Path, &Record)) -> Result<(), MergeError> {
    let ((pa, ra), (pb, rb)) = (a, b);
    let both = format!("`{}` and `{}`", pa.display(), pb.display());
    let (ia, ib) = (&ra.identity, &rb.identity);
    if ia.identity.tool_version != ib.identity.tool_version {
        return fail(format!(
            "{both} were written by different rageval versions ({} and {})",
            ia.identity.tool_version, ib.identity.tool_version
        ));
    }
    let sets = |r: &Record| -> Vec<String> {
        r.identity.evalsets.iter().map(|s| s.path.clone()).collect()
    };
    if sets(ra) != sets(rb) {
        return fail(format!(
            "{both} ran different question sets ({} and {})",
            sets(ra).join(", "),
            sets(rb).join(", ")
        ));
    }
    for (sa, sb) in ia.evalsets.iter().zip(&ib.evalsets) {
        if sa != sb {
            let what = if sa.digest != sb.digest {
                "its file differs"
            } else {
                "its corpus differs"
            };
            return fail(format!(
                "{both} ran different versions of question set `{}`: {what}",
                sa.path
            ));
        }
    }
    if ra.dimensions != rb.dimensions || ra.settings != rb.settings {
        // Name a setting one side lacks first: a setting both hold whose values differ only
        // because the other side sweeps one more dimension would point at the wrong setting.
        let only = |x: &Record, y: &Record| {
            x.settings
                .keys()
                .find(|id| !y.settings.contains_key(*id))
                .cloned()
        };
        let changed = ra
            .settings
            .iter()
            .find(|(id, values)| rb.settings.get(*id).is_some_and(|v| v != *values))
            .map(|(id, _)| id.clone());
        let detail = match (only(ra, rb), only(rb, ra), changed) {
            (Some(id), _, _) => format!("setting `{id}` is in `{}` only", pa.display()),
            (None, Some(id), _) => format!("setting `{id}` is in `{}` only", pb.display()),
            _ if ra.dimensions != rb.dimensions => format!(
                "their dimensions differ ({} and {})",
                ra.dimensions.join(", "),
                rb.dimensions.join(", ")
            ),
            (None, None, Some(id)) => format!("setting `{id}` has different values"),
            (None, None, None) => "their settings are in another order".into(),
        };
        return fail(format!("{both} swept different grids: {detail}"));
    }
    if ia.identity.digest != ib.identity.digest {
        return fail(format!(
            "{both} were made with different configurations (config digest {} and {})",
            ia.identity.digest, ib.identity.digest
        ));
    }
    let (sa, sb) = (without_servers(ia), without_servers(ib));
    if sa != sb {
        // Plain structs with string keys: serialising cannot fail.
        let value = |m: &Meta| serde_json::to_value(m).expect("the identity serialises");
        let detail = first_difference(&value(&sa), &value(&sb), "")
            .map(|(field, a, b)| format!(": `{field}` is {a} and {b}"))
            .unwrap_or_default();
        return fail(format!(
            "{both} were made with different models or policies{detail}"
        ));
    }
    if !foreign(ra) && ra.corpora != rb.corpora {
        return fail(format!("{both} searched different corpora"));
    }
    if foreign(ra) {
        // A foreign retriever's corpus is the passages its questions found: each shard holds
        // some of them. The same store, and the same passage wherever both hold one.
        if !ra.corpora.keys().eq(rb.corpora.keys()) {
            return fail(format!("{both} searched different corpora"));
        }
        for (name, ca) in &ra.corpora {
            let cb = &rb.corpora[name];
            if let Some((id, _)) = ca
                .chunks
                .iter()
                .find(|(id, c)| cb.chunks.get(*id).is_some_and(|other| other != *c))
            {
                return fail(format!(
                    "{both} hold passage `{id}` of `{name}` with different labels or flags"
                ));
            }
        }
    }
    Ok(())
}

/// Whether `r`'s passages came from a foreign retriever (`http`, `pgvector`): its corpora
/// hold the passages retrieved, which differ from shard to shard.
fn foreign(r: &Record) -> bool {
    r.identity.identity.config.retriever.is_some()
}

/// A foreign retriever's corpora joined: every passage any shard holds, the first shard's
/// where two hold one (the same, as `same_sweep` checked).
fn join_passages(
    merged: &mut IndexMap<String, CorpusRecord>,
    part: IndexMap<String, CorpusRecord>,
) {
    for (name, corpus) in part {
        let all = merged.entry(name).or_default();
        for (id, chunk) in corpus.chunks {
            all.chunks.entry(id).or_insert(chunk);
        }
    }
}

/// Every part is a shard of the same N, and together they are shards 1 to N once each.
fn check_shards(parts: &[(PathBuf, Record)]) -> Result<(), MergeError> {
    let mut count = None;
    let mut seen: HashMap<u32, &Path> = HashMap::new();
    for (path, r) in parts {
        let Some(shard) = r.shard else {
            return fail(format!(
                "`{}` holds a whole sweep, not a shard: merge joins the results of `rageval sweep --shard I/N`",
                path.display()
            ));
        };
        match count {
            None => count = Some((shard.count, path)),
            Some((n, other)) if n != shard.count => {
                return fail(format!(
                    "`{}` is a shard of {n} but `{}` is shard {shard}",
                    other.display(),
                    path.display()
                ))
            }
            Some(_) => {}
        }
        if let Some(other) = seen.insert(shard.index, path) {
            return fail(format!(
                "shard {shard} is given twice (`{}` and `{}`)",
                other.display(),
                path.display()
            ));
        }
    }
    if let Some((n, _)) = count {
        let missing: Vec<String> = (1..=n)
            .filter(|i| !seen.contains_key(i))
            .map(|i| format!("{i}/{n}"))
            .collect();
        if !missing.is_empty() {
            return fail(format!("shard {} is missing", missing.join(", ")));
        }
    }
    Ok(())
}
