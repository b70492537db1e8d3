//! Between the record (ids) and [`Results`] (positions, which the reports index by): both
//! directions, so that a record read back gives the reports a sweep would have written.

use crate::vocab::call::from_ms;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use indexmap::IndexMap;

use super::{
    AskedRecord, AttackRecord, CallRecord, ChunkRecord, CorpusRecord, Derived, DroppedRecord,
    Passage, QuestionRecord, Record, RetrievalRecord, RunRecord, SCHEMA,
};
use crate::adapters::evalset::{Attack, Expect, Question};
use crate::adapters::rewrite::Rewrite;
use crate::adapters::search::Hit;
use crate::analysis::stats::per_setting;
use crate::results::Results;
use crate::sweep::{CallStats, Run, Setting};

impl Record {
    /// The record of `r`, with its summary.
    pub fn of(r: &Results) -> Record {
        let mut record = Record::head(r);
        record.runs = r
            .runs
            .iter()
            .map(|run| super::stream::RunRef::of(r, run).to_owned())
            .collect();
        record
    }

    /// The record of `r` without its runs, which [`super::stream`] writes one at a time.
    pub(super) fn head(r: &Results) -> Record {
        let strategies = rewrite_strategies(r);
        let groups = r.retrieval_groups();
        let questions = r
            .questions
            .iter()
            .enumerate()
            .map(|(i, q)| (q.id.clone(), question_record(r, &strategies, &groups, i)))
            .collect();
        Record {
            schema: SCHEMA.into(),
            identity: r.meta.clone(),
            shard: r.shard,
            summary: Some(Derived::of(r)),
            dimensions: r.recorded_names().iter().map(|c| c.to_string()).collect(),
            corpora: corpus_records(r),
            questions,
            settings: r
                .settings
                .iter()
                .enumerate()
                .map(|(i, s)| (r.setting_id(i).to_string(), s.to_map(r.recorded())))
                .collect(),
            dropped: (0..r.settings.len())
                .filter_map(|s| {
                    let [answerable, unanswerable] = r.dropped_after(s)?;
                    let d = DroppedRecord {
                        answerable,
                        unanswerable,
                    };
                    Some((r.setting_id(s).to_string(), d))
                })
                .collect(),
            calls: calls_in_order(r, &strategies),
            runs: Vec::new(),
            question_embeddings: r.calls.question_embeddings,
        }
    }

    /// The positional results the reports are written from, with statistics and insight
    /// computed afresh. Errors name what is missing or malformed.
    pub fn into_results(mut self) -> Result<Results, String> {
        let records = std::mem::take(&mut self.runs);
        let corpora: Vec<String> = self.corpora.keys().cloned().collect();
        let corpus_index: HashMap<&str, usize> = corpora
            .iter()
            .enumerate()
            .map(|(i, c)| (c.as_str(), i))
            .collect();
        let questions = question_values(&self.questions, &corpus_index);
        let settings: Vec<Setting> = self
            .settings
            .iter()
            .map(|(id, values)| {
                Setting::from_map(values).map_err(|e| format!("setting `{id}`: {e}"))
            })
            .collect::<Result<_, _>>()?;
        let expected_by_retrieval =
            expected_by_retrieval(&self.questions, &settings, &self.dimensions);
        let question_set = question_sets(&self.questions, &self.identity.evalsets);
        let slots = RunReader::new(&self, &questions, &settings).place(records)?;
        let runs = every_run(slots, &questions, &self.settings, &self.dropped)?;
        let calls = CallStats::of(&self.calls, &runs, self.question_embeddings);
        let pricing = self.identity.pricing;
        let stats = per_setting(&runs, &questions, settings.len(), &pricing);
        let expected_scores = self.questions.values().map(|q| q.expected_score).collect();
        let policy = self.identity.policy.clone();
        let positions = self.questions.values().map(|q| q.position).collect();
        let (chunk_ids, chunk_labels, flagged) = chunk_tables(&self.corpora);
        let chunk_texts = self
            .corpora
            .values()
            .map(|c| c.chunks.values().map(|ch| ch.text.clone()).collect())
            .collect();
        Ok(Results {
            meta: self.identity,
            corpora,
            shard: self.shard,
            positions,
            question_set,
            questions,
            settings,
            stats,
            runs,
            calls,
            call_log: self.calls,
            chunk_ids,
            flagged,
            chunk_labels,
            chunk_texts,
            expected_scores,
            expected_by_retrieval,
            insight: Default::default(),
            setting_text: Default::default(),
            tag_stats: Default::default(),
        }
        .with_insight(&policy))
    }
}

/// Turns the record's runs (ids) into [`Run`]s (positions), with their calls' usage added.
struct RunReader<'a> {
    record: &'a Record,
    questions: &'a [Question],
    settings: &'a [Setting],
    setting_index: HashMap<&'a str, usize>,
    /// Per setting: its rewrite strategy's name and its retrieval variant's label, the keys
    /// of a question's `asked` and `retrieval` (worked out once, not per run).
    keys: Vec<(String, String)>,
    /// Per corpus, each chunk id's position.
    chunk_index: Vec<HashMap<&'a str, usize>>,
    texts: Vec<AskedTexts<'a>>,
    /// Each call's reply, shared by the runs that made it.
    replies: Vec<Arc<str>>,
    /// The answer of a run without a call (an early refusal).
    refusal: Arc<str>,
    /// The answer of a run whose call failed.
    empty: Arc<str>,
}

impl<'a> RunReader<'a> {
    fn new(record: &'a Record, questions: &'a [Question], settings: &'a [Setting]) -> Self {
        RunReader {
            record,
            questions,
            settings,
            setting_index: record
                .settings
                .keys()
                .enumerate()
                .map(|(i, id)| (id.as_str(), i))
                .collect(),
            keys: settings
                .iter()
                .map(|s| (s.rewrite.to_string(), s.retrieval_label(&record.dimensions)))
                .collect(),
            chunk_index: record
                .corpora
                .values()
                .map(|c| {
                    c.chunks
                        .keys()
                        .enumerate()
                        .map(|(i, id)| (id.as_str(), i))
                        .collect()
                })
                .collect(),
            texts: asked_texts(&record.questions),
            replies: record
                .calls
                .values()
                .map(|c| c.reply.as_str().into())
                .collect(),
            refusal: record.identity.refusal.as_str().into(),
            empty: "".into(),
        }
    }

    /// Every run in its setting-major slot; a run naming what the record lacks, or a second
    /// run of a question at a setting, is an error.
    fn place(&self, records: Vec<RunRecord>) -> Result<Vec<Option<Run>>, String> {
        let n = self.questions.len();
        let mut slots: Vec<Option<Run>> = vec![None; n * self.settings.len()];
        for rec in records {
            let run = self.run(rec)?;
            let slot = &mut slots[run.setting * n + run.question];
            if slot.is_some() {
                return Err(format!(
                    "question `{}` has two runs at setting `{}`",
                    self.record
                        .questions
                        .get_index(run.question)
                        .map_or("", |(id, _)| id),
                    self.record
                        .settings
                        .get_index(run.setting)
                        .map_or("", |(id, _)| id)
                ));
            }
            *slot = Some(run);
        }
        Ok(slots)
    }

    /// The call `id` names, with its position; `what` says who names it in the error.
    fn call(&self, id: &str, what: &str) -> Result<(usize, &'a CallRecord), String> {
        let (i, _, c) = self
            .record
            .calls
            .get_full(id)
            .ok_or_else(|| format!("{what} `{id}`"))?;
        Ok((i, c))
    }

    fn call_index(&self, id: Option<&String>, what: &str) -> Result<Option<u32>, String> {
        id.map(|c| self.call(c, what).map(|(i, _)| i as u32))
            .transpose()
    }

    /// One run: where it sits, what it was asked, its passages and verdict, then the usage of
    /// its answer, judge and rewrite calls.
    fn run(&self, rec: RunRecord) -> Result<Run, String> {
        let (Some(q), Some(&s)) = (
            self.record.questions.get_index_of(&rec.question),
            self.setting_index.get(rec.setting.as_str()),
        ) else {
            return Err(format!(
                "a run names unknown question `{}` or setting `{}`",
                rec.question, rec.setting
            ));
        };
        let question = &self.record.questions[q];
        let setting = &self.settings[s];
        let (strategy, label) = &self.keys[s];
        let asked = question.asked.get(strategy);
        let within = question.retrieval.get(label);
        let passages = self.passages(q, &rec)?;
        let call = rec
            .call
            .as_ref()
            .map(|c| self.call(c, "a run names unknown call"))
            .transpose()?;
        let rerank_call =
            self.call_index(rec.rerank_call.as_ref(), "a run names unknown rerank call")?;
        let repeats = self.repeats(&rec)?;
        let asked_text = self.texts[q]
            .1
            .get(strategy.as_str())
            .unwrap_or(&self.texts[q].0)
            .clone();
        let mut run = Run {
            best_score: match within {
                Some(w) => w.asked.get(strategy).copied().unwrap_or(w.best_score),
                None => asked.map_or(question.best_score, |a| a.best_score),
            },
            best_retrieval_score: match within {
                Some(w) => w.best_retrieval_score,
                None => question.best_retrieval_score,
            },
            passages,
            call: call.map(|(i, _)| i as u32),
            rerank_call,
            repeats,
            labelled: rec.labelled.map(|mut l| {
                l.graded = upgraded(l.graded);
                l
            }),
            ..Run::new(
                q,
                s,
                asked_text,
                upgraded(rec.verdict),
                self.refusal.clone(),
            )
        };
        if let Some((i, c)) = call {
            self.add_answer(&mut run, i, c);
        }
        if let Some(c) = &rec.judge_call {
            let (i, c) = self.call(c, "a run names unknown judge call")?;
            run.judge_call = Some(i as u32);
            run.judge_calls = 1;
            run.judge_prompt_tokens = c.usage.prompt_tokens;
            run.judge_completion_tokens = c.usage.completion_tokens;
        }
        if setting.rewrite == Rewrite::Model {
            self.add_rewrite(&mut run, asked);
        }
        Ok(run)
    }

    /// The passages the run sent, as chunk positions in question `q`'s corpus.
    fn passages(&self, q: usize, rec: &RunRecord) -> Result<Vec<Hit>, String> {
        let chunks = &self.chunk_index[self.questions[q].corpus];
        rec.passages
            .iter()
            .map(|Passage(id, score)| {
                chunks
                    .get(id.as_str())
                    .map(|&chunk| Hit {
                        chunk,
                        score: *score,
                    })
                    .ok_or_else(|| format!("a run names unknown chunk `{id}`"))
            })
            .collect()
    }

    fn repeats(&self, rec: &RunRecord) -> Result<Vec<crate::sweep::repeat::Repeat>, String> {
        rec.repeats
            .iter()
            .map(|rep| {
                Ok(crate::sweep::repeat::Repeat {
                    call: self.call_index(rep.call.as_ref(), "a repeat names unknown call")?,
                    outcome: rep.outcome,
                })
            })
            .collect()
    }

    /// The answer call `i`: its reply and usage, or its error.
    fn add_answer(&self, run: &mut Run, i: usize, c: &CallRecord) {
        run.model_calls = 1;
        match &c.error {
            Some(e) => {
                run.answer = self.empty.clone();
                run.error = Some(e.clone());
            }
            None => {
                run.answer = self.replies[i].clone();
                run.prompt_tokens = c.usage.prompt_tokens;
                run.cached_prompt_tokens = c.usage.cached_prompt_tokens;
                run.completion_tokens = c.usage.completion_tokens;
                run.tokens_estimated = c.usage.estimated;
                run.latency = c.latency_ms.map(from_ms);
                run.ttft = c.ttft_ms.map(from_ms);
            }
        }
    }

    /// A model rewrite's call counts toward the run, and its note is the run's.
    fn add_rewrite(&self, run: &mut Run, asked: Option<&AskedRecord>) {
        if let Some((i, _, c)) = asked
            .and_then(|a| a.call.as_ref())
            .and_then(|c| self.record.calls.get_full(c))
        {
            run.model_calls += 1;
            run.prompt_tokens += c.usage.prompt_tokens;
            run.cached_prompt_tokens += c.usage.cached_prompt_tokens;
            run.completion_tokens += c.usage.completion_tokens;
            run.tokens_estimated |= c.usage.estimated;
            run.rewrite_call = Some(i as u32);
        }
        run.rewrite_note = asked.and_then(|a| a.note.clone());
    }
}

/// The rewrite strategies in grid order, each with the first setting that uses it.
fn rewrite_strategies(r: &Results) -> Vec<(Rewrite, usize)> {
    let mut strategies: Vec<(Rewrite, usize)> = Vec::new();
    for (s, setting) in r.settings.iter().enumerate() {
        if !strategies.iter().any(|(w, _)| *w == setting.rewrite) {
            strategies.push((setting.rewrite, s));
        }
    }
    strategies
}

/// The call log in a canonical order: rewrites by question, then rerank calls, answers and then
/// judge calls by first use in run order, which is the order a sweep makes them in; merged
/// shards write the same.
fn calls_in_order(r: &Results, strategies: &[(Rewrite, usize)]) -> IndexMap<String, CallRecord> {
    let mut order: indexmap::IndexSet<u32> = indexmap::IndexSet::new();
    for q in 0..r.questions.len() {
        for &(_, s) in strategies {
            if let Some(c) = r.run_like(s, q).and_then(|run| run.rewrite_call) {
                order.insert(c);
            }
        }
    }
    order.extend(r.runs.iter().filter_map(|run| run.rerank_call));
    order.extend(r.runs.iter().filter_map(|run| run.call));
    order.extend(r.runs.iter().filter_map(|run| run.judge_call));
    order.extend(0..r.call_log.len() as u32);
    order
        .iter()
        .filter_map(|&i| r.call_log.get_index(i as usize))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Question `i` as the record keeps it: its text and expectations, and its scores overall, per
/// rewrite strategy and per retrieval variant (`groups`: each variant's label and settings).
fn question_record(
    r: &Results,
    strategies: &[(Rewrite, usize)],
    groups: &[(String, Vec<usize>)],
    i: usize,
) -> QuestionRecord {
    let q = &r.questions[i];
    QuestionRecord {
        position: r.positions.get(i).copied().unwrap_or(i),
        question: q.question.clone(),
        set: r
            .question_set
            .get(i)
            .and_then(|&set| r.meta.evalsets.get(set))
            .map(|set| set.path.clone())
            .unwrap_or_default(),
        corpus: r.corpora.get(q.corpus).cloned().unwrap_or_default(),
        answerable: q.answerable,
        tags: q.tags.clone(),
        expect_sources: q.expect.sources.clone(),
        expect_answers: q.expect.answers.clone(),
        history: q.history.clone(),
        attack: q.attack.as_ref().map(|a| AttackRecord {
            marker: a.marker.clone(),
            source: a.source.clone(),
        }),
        generated: q.origin.clone(),
        best_score: r.best_score(i),
        best_retrieval_score: r.best_retrieval_score(i),
        expected_score: r.expected_scores.get(i).copied().flatten(),
        asked: asked_records(r, strategies, i),
        retrieval: groups
            .iter()
            .enumerate()
            .map(|(g, (label, members))| {
                let scores = retrieval_record(r, strategies, g, members, i);
                (label.clone(), scores)
            })
            .collect(),
    }
}

/// What follow-up question `i` was asked as under each rewrite strategy (nothing for a
/// question without history).
fn asked_records(
    r: &Results,
    strategies: &[(Rewrite, usize)],
    i: usize,
) -> IndexMap<String, AskedRecord> {
    if r.questions[i].history.is_empty() {
        return IndexMap::new();
    }
    let call_id = |c: u32| r.call_log.get_index(c as usize).map(|(k, _)| k.clone());
    strategies
        .iter()
        .filter_map(|&(w, s)| {
            let run = r.run_like(s, i)?;
            let asked = AskedRecord {
                text: run.asked.to_string(),
                best_score: run.best_score,
                note: run.rewrite_note.clone(),
                call: run.rewrite_call.and_then(call_id),
            };
            Some((w.to_string(), asked))
        })
        .collect()
}

/// Question `i`'s scores under retrieval variant `g`, whose settings are `members`.
fn retrieval_record(
    r: &Results,
    strategies: &[(Rewrite, usize)],
    g: usize,
    members: &[usize],
    i: usize,
) -> RetrievalRecord {
    let best = |s: usize| r.run_like(s, i).and_then(|run| run.best_score);
    let asked = if r.questions[i].history.is_empty() {
        IndexMap::new()
    } else {
        strategies
            .iter()
            .filter_map(|&(w, _)| {
                let s = members.iter().find(|&&s| r.settings[s].rewrite == w)?;
                Some((w.to_string(), best(*s)))
            })
            .collect()
    };
    RetrievalRecord {
        best_score: best(members[0]),
        best_retrieval_score: r
            .run_like(members[0], i)
            .and_then(|run| run.best_retrieval_score),
        expected_score: r
            .expected_by_retrieval
            .get(g)
            .and_then(|e| e.get(i).copied().flatten()),
        asked,
    }
}

/// Each corpus with its chunks' labels and injection flags, by chunk id.
fn corpus_records(r: &Results) -> IndexMap<String, CorpusRecord> {
    r.corpora
        .iter()
        .enumerate()
        .map(|(c, name)| {
            let chunks = r.chunk_ids[c]
                .iter()
                .enumerate()
                .map(|(i, id)| {
                    let chunk = ChunkRecord {
                        label: r.chunk_labels[c].get(i).cloned().unwrap_or_default(),
                        text: r
                            .chunk_texts
                            .get(c)
                            .and_then(|t| t.get(i))
                            .cloned()
                            .unwrap_or_default(),
                        flagged: r.flagged.get(c).and_then(|f| f.get(&i)).cloned(),
                    };
                    (id.clone(), chunk)
                })
                .collect();
            (name.clone(), CorpusRecord { chunks })
        })
        .collect()
}

/// A question's text, and the text it is asked as under each rewrite strategy.
type AskedTexts<'a> = (Arc<str>, HashMap<&'a str, Arc<str>>);

/// The questions of the record, in its order, each in the corpus `corpus_index` names.
fn question_values(
    questions: &IndexMap<String, QuestionRecord>,
    corpus_index: &HashMap<&str, usize>,
) -> Vec<Question> {
    questions
        .iter()
        .map(|(id, q)| Question {
            id: id.clone(),
            question: q.question.clone(),
            answerable: q.answerable,
            expect: Expect {
                sources: q.expect_sources.clone(),
                answers: q.expect_answers.clone(),
            },
            tags: q.tags.clone(),
            history: q.history.clone(),
            attack: q.attack.as_ref().map(|a| Attack {
                marker: a.marker.clone(),
                source: a.source.clone(),
            }),
            origin: q.generated.clone(),
            corpus: corpus_index.get(q.corpus.as_str()).copied().unwrap_or(0),
        })
        .collect()
}

/// The text each question is asked as, per strategy (shared by all its runs).
fn asked_texts(questions: &IndexMap<String, QuestionRecord>) -> Vec<AskedTexts<'_>> {
    questions
        .values()
        .map(|q| {
            let by_strategy = q
                .asked
                .iter()
                .map(|(w, a)| (w.as_str(), Arc::from(a.text.as_str())))
                .collect();
            (Arc::from(q.question.as_str()), by_strategy)
        })
        .collect()
}

/// Per retrieval variant, in the order settings name them, each question's expected score
/// under it; empty with one variant.
fn expected_by_retrieval(
    questions: &IndexMap<String, QuestionRecord>,
    settings: &[Setting],
    dimensions: &[String],
) -> Vec<Vec<Option<f64>>> {
    let mut labels: Vec<String> = Vec::new();
    for s in settings {
        let label = s.retrieval_label(dimensions);
        if !labels.contains(&label) {
            labels.push(label);
        }
    }
    if labels.len() < 2 {
        return Vec::new();
    }
    labels
        .iter()
        .map(|l| {
            questions
                .values()
                .map(|q| q.retrieval.get(l).and_then(|w| w.expected_score))
                .collect()
        })
        .collect()
}

/// Each question's set, by its position among the identity's sets.
fn question_sets(
    questions: &IndexMap<String, QuestionRecord>,
    sets: &[crate::results::SetMeta],
) -> Vec<usize> {
    questions
        .values()
        .map(|q| sets.iter().position(|set| set.path == q.set).unwrap_or(0))
        .collect()
}

/// The runs in setting-major order; a missing one names its question and setting.
fn every_run(
    slots: Vec<Option<Run>>,
    questions: &[Question],
    settings: &IndexMap<String, IndexMap<String, serde_json::Value>>,
    dropped: &IndexMap<String, DroppedRecord>,
) -> Result<Vec<Run>, String> {
    let n = questions.len();
    let id = |i: usize| settings.get_index(i / n).map_or("", |(id, _)| id.as_str());
    if let Some(unknown) = dropped.keys().find(|d| !settings.contains_key(*d)) {
        return Err(format!(
            "`dropped` names setting `{unknown}`, which `settings` lacks"
        ));
    }
    let mut runs = Vec::with_capacity(slots.len());
    for (i, slot) in slots.into_iter().enumerate() {
        match slot {
            Some(run) => runs.push(run),
            // A dropped setting has no run of the questions after it was out.
            None if dropped.contains_key(id(i)) => {}
            None => {
                return Err(format!(
                    "question `{}` has no run at setting `{}`",
                    questions[i % n].id,
                    id(i)
                ))
            }
        }
    }
    Ok(runs)
}

type ChunkTables = (
    Vec<Vec<String>>,
    Vec<Vec<String>>,
    Vec<BTreeMap<usize, String>>,
);

/// A verdict as this version writes it. A record written before runs carried `wrong_answer`
/// (and before the judge) gets the rule the classifier applies to an ungraded answer, so that
/// an old baseline is compared with what it would have said.
fn upgraded(mut verdict: crate::adapters::classify::Verdict) -> crate::adapters::classify::Verdict {
    if verdict.wrong_answer.is_none()
        && verdict.outcome == crate::adapters::classify::Outcome::Answer
    {
        verdict.wrong_answer = verdict.ungraded_wrong_answer();
    }
    verdict
}

/// Chunk ids, labels and flags by corpus.
fn chunk_tables(corpora: &IndexMap<String, CorpusRecord>) -> ChunkTables {
    let ids = corpora
        .values()
        .map(|c| c.chunks.keys().cloned().collect())
        .collect();
    let labels = corpora
        .values()
        .map(|c| c.chunks.values().map(|ch| ch.label.clone()).collect())
        .collect();
    let flagged = corpora
        .values()
        .map(|c| {
            c.chunks
                .values()
                .enumerate()
                .filter_map(|(i, ch)| ch.flagged.clone().map(|p| (i, p)))
                .collect()
        })
        .collect();
    (ids, labels, flagged)
}
