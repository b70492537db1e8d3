//! results.json written straight from [`Results`]: the head of the record is built as usual,
//! and the runs are serialized one at a time from borrowed fields, so a million-run sweep does
//! not hold a second copy of its runs (ids, passages, verdicts) while the file is written.
//!
//! The bytes are exactly those of `Record::of(r).write(..)`; a test holds the two together.

use serde::ser::{SerializeStruct, Serializer};
use serde::Serialize;
use std::io::Write as _;

use super::{LinesFormatter, Passage, Record, RepeatRecord, RunRecord};
use crate::adapters::classify::{Labelled, Verdict};
use crate::results::Results;
use crate::sweep::Run;

/// A run as [`RunRecord`] serializes it, borrowing from the results.
#[derive(Serialize)]
pub(super) struct RunRef<'a> {
    question: &'a str,
    setting: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    call: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    passages: Vec<(&'a str, f64)>,
    #[serde(flatten)]
    verdict: &'a Verdict,
    #[serde(skip_serializing_if = "Option::is_none")]
    judge_call: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    repeats: Vec<RepeatRef<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rerank_call: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    labelled: Option<&'a Labelled>,
}

#[derive(Serialize)]
struct RepeatRef<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    call: Option<&'a str>,
    outcome: crate::adapters::classify::Outcome,
}

impl<'a> RunRef<'a> {
    pub(super) fn of(r: &'a Results, run: &'a Run) -> RunRef<'a> {
        let call_id = |i: u32| r.call_log.get_index(i as usize).map(|(k, _)| k.as_str());
        RunRef {
            question: &r.questions[run.question].id,
            setting: r.setting_id(run.setting),
            call: run.call.and_then(call_id),
            passages: run
                .passages
                .iter()
                .map(|h| (r.chunk_id(run.question, h.chunk), h.score))
                .collect(),
            verdict: &run.verdict,
            judge_call: run.judge_call.and_then(call_id),
            repeats: run
                .repeats
                .iter()
                .map(|rep| RepeatRef {
                    call: rep.call.and_then(call_id),
                    outcome: rep.outcome,
                })
                .collect(),
            rerank_call: run.rerank_call.and_then(call_id),
            labelled: run.labelled.as_ref(),
        }
    }

    pub(super) fn to_owned(&self) -> RunRecord {
        RunRecord {
            question: self.question.to_string(),
            setting: self.setting.to_string(),
            call: self.call.map(str::to_string),
            passages: self
                .passages
                .iter()
                .map(|&(id, score)| Passage(id.to_string(), score))
                .collect(),
            verdict: self.verdict.clone(),
            judge_call: self.judge_call.map(str::to_string),
            repeats: self
                .repeats
                .iter()
                .map(|rep| RepeatRecord {
                    call: rep.call.map(str::to_string),
                    outcome: rep.outcome,
                })
                .collect(),
            rerank_call: self.rerank_call.map(str::to_string),
            labelled: self.labelled.cloned(),
        }
    }
}

/// The runs of `r`, serialized as they are visited.
struct Runs<'a>(&'a Results);

impl Serialize for Runs<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let r = self.0;
        s.collect_seq(r.runs.iter().map(|run| RunRef::of(r, run)))
    }
}

/// A head record (no runs) and the runs to write in its place; fields in [`Record`]'s order,
/// skipped where its derive skips them.
struct Streamed<'a> {
    head: &'a Record,
    runs: Runs<'a>,
}

impl Serialize for Streamed<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let h = self.head;
        let fields = 9
            + usize::from(h.shard.is_some())
            + usize::from(h.summary.is_some())
            + usize::from(!h.dropped.is_empty());
        let mut st = s.serialize_struct("Record", fields)?;
        st.serialize_field("schema", &h.schema)?;
        st.serialize_field("identity", &h.identity)?;
        if let Some(shard) = &h.shard {
            st.serialize_field("shard", shard)?;
        }
        if let Some(summary) = &h.summary {
            st.serialize_field("summary", summary)?;
        }
        st.serialize_field("dimensions", &h.dimensions)?;
        st.serialize_field("corpora", &h.corpora)?;
        st.serialize_field("questions", &h.questions)?;
        st.serialize_field("settings", &h.settings)?;
        if !h.dropped.is_empty() {
            st.serialize_field("dropped", &h.dropped)?;
        }
        st.serialize_field("calls", &h.calls)?;
        st.serialize_field("runs", &self.runs)?;
        st.serialize_field("question_embeddings", &h.question_embeddings)?;
        st.end()
    }
}

/// Write `r` as results.json, the same bytes as `Record::of(r).write(out)`.
pub fn write(r: &Results, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    let head = Record::head(r);
    let record = Streamed {
        head: &head,
        runs: Runs(r),
    };
    // A buffer of a concrete type: serde_json writes a few bytes at a time, and through
    // `dyn Write` each would be a call that cannot be inlined.
    let mut buffered = std::io::BufWriter::with_capacity(1 << 16, out);
    let mut ser = serde_json::Serializer::with_formatter(&mut buffered, LinesFormatter::default());
    record.serialize(&mut ser).map_err(std::io::Error::other)?;
    buffered.write_all(b"\n")?;
    buffered.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::report::fixture;

    #[test]
    fn streamed_results_are_the_bytes_of_the_whole_record() {
        let r = fixture::results();
        let mut whole = Vec::new();
        Record::of(&r).write(&mut whole).unwrap();
        let mut streamed = Vec::new();
        write(&r, &mut streamed).unwrap();
        assert_eq!(
            String::from_utf8(streamed).unwrap(),
            String::from_utf8(whole).unwrap()
        );
    }
}
