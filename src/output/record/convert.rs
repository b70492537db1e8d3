//! Between the record (ids) and [`Results`] (positions, which the reports index by): both
//! directions, so that a record read back gives the reports a sweep would have written.

use crate::vocab::call::from_ms;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use indexmap::IndexMap;

use super::{
    AskedRecord, AttackRecord, ChunkRecord, CorpusRecord, Passage, QuestionRecord, Record,
    RetrievalRecord, Summary, SCHEMA,
};
use crate::adapters::evalset::{Attack, Expect, Question};
use crate::adapters::rewrite::Rewrite;
use crate::adapters::search::Hit;
use crate::analysis::stats::aggregate;
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
        // The rewrite strategies in grid order, each with the first setting that uses it.
        let mut strategies: Vec<(Rewrite, usize)> = Vec::new();
        for (s, setting) in r.settings.iter().enumerate() {
            if !strategies.iter().any(|(w, _)| *w == setting.rewrite) {
                strategies.push((setting.rewrite, s));
            }
        }
        let call_id = |i: u32| r.call_log.get_index(i as usize).map(|(k, _)| k.clone());
        let groups = r.retrieval_groups();
        // Calls in a canonical order: rewrites by question, then rerank calls, answers and then
        // judge calls by first use in run order, which is the order a sweep makes them in; merged shards
        // write the same.
        let mut order: indexmap::IndexSet<u32> = indexmap::IndexSet::new();
        for q in 0..r.questions.len() {
            for &(_, s) in &strategies {
                if let Some(c) = r.runs_of(s).get(q).and_then(|run| run.rewrite_call) {
                    order.insert(c);
                }
            }
        }
        order.extend(r.runs.iter().filter_map(|run| run.rerank_call));
        order.extend(r.runs.iter().filter_map(|run| run.call));
        order.extend(r.runs.iter().filter_map(|run| run.judge_call));
        order.extend(0..r.call_log.len() as u32);
        let calls = order
            .iter()
            .filter_map(|&i| r.call_log.get_index(i as usize))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let questions = r
            .questions
            .iter()
            .enumerate()
            .map(|(i, q)| {
                let asked = if q.history.is_empty() {
                    IndexMap::new()
                } else {
                    strategies
                        .iter()
                        .map(|&(w, s)| {
                            let run = &r.runs_of(s)[i];
                            let asked = AskedRecord {
                                text: run.asked.to_string(),
                                best_score: run.best_score,
                                note: run.rewrite_note.clone(),
                                call: run.rewrite_call.and_then(call_id),
                            };
                            (w.to_string(), asked)
                        })
                        .collect()
                };
                let record = QuestionRecord {
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
                    best_retrieval_score: r.runs.get(i).and_then(|run| run.best_retrieval_score),
                    expected_score: r.expected_scores.get(i).copied().flatten(),
                    asked,
                    retrieval: groups
                        .iter()
                        .enumerate()
                        .map(|(g, (label, members))| {
                            let best =
                                |s: usize| r.runs_of(s).get(i).and_then(|run| run.best_score);
                            let asked = if q.history.is_empty() {
                                IndexMap::new()
                            } else {
                                strategies
                                    .iter()
                                    .filter_map(|&(w, _)| {
                                        let s = members
                                            .iter()
                                            .find(|&&s| r.settings[s].rewrite == w)?;
                                        Some((w.to_string(), best(*s)))
                                    })
                                    .collect()
                            };
                            let scores = RetrievalRecord {
                                best_score: best(members[0]),
                                best_retrieval_score: r
                                    .runs_of(members[0])
                                    .get(i)
                                    .and_then(|run| run.best_retrieval_score),
                                expected_score: r
                                    .expected_by_retrieval
                                    .get(g)
                                    .and_then(|e| e.get(i).copied().flatten()),
                                asked,
                            };
                            (label.clone(), scores)
                        })
                        .collect(),
                };
                (q.id.clone(), record)
            })
            .collect();
        let corpora = r
            .corpora
            .iter()
            .enumerate()
            .map(|(c, name)| {
                let chunks = r.chunk_ids[c]
                    .iter()
                    .enumerate()
                    .map(|(i, id)| {
                        let chunk = ChunkRecord {
                            label: r.chunk_labels[c].get(i).cloned().unwrap_or_default(),
                            flagged: r.flagged.get(c).and_then(|f| f.get(&i)).cloned(),
                        };
                        (id.clone(), chunk)
                    })
                    .collect();
                (name.clone(), CorpusRecord { chunks })
            })
            .collect();
        Record {
            schema: SCHEMA.into(),
            identity: r.meta.clone(),
            shard: r.shard,
            summary: Some(Summary::of(r)),
            dimensions: r.recorded_names().iter().map(|c| c.to_string()).collect(),
            corpora,
            questions,
            settings: r
                .settings
                .iter()
                .enumerate()
                .map(|(i, s)| (r.setting_id(i).to_string(), s.to_map(r.recorded())))
                .collect(),
            calls,
            runs: Vec::new(),
            question_embeddings: r.calls.question_embeddings,
        }
    }

    /// The positional results the reports are written from, with statistics and insight
    /// computed afresh. Errors name what is missing or malformed.
    pub fn into_results(self) -> Result<Results, String> {
        let corpora: Vec<String> = self.corpora.keys().cloned().collect();
        let corpus_index: HashMap<&str, usize> = corpora
            .iter()
            .enumerate()
            .map(|(i, c)| (c.as_str(), i))
            .collect();
        let chunk_index: Vec<HashMap<&str, usize>> = self
            .corpora
            .values()
            .map(|c| {
                c.chunks
                    .keys()
                    .enumerate()
                    .map(|(i, id)| (id.as_str(), i))
                    .collect()
            })
            .collect();
        let questions: Vec<Question> = self
            .questions
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
            .collect();
        let settings: Vec<Setting> = self
            .settings
            .iter()
            .map(|(id, values)| {
                Setting::from_map(values).map_err(|e| format!("setting `{id}`: {e}"))
            })
            .collect::<Result<_, _>>()?;
        let setting_index: HashMap<&str, usize> = self
            .settings
            .keys()
            .enumerate()
            .map(|(i, id)| (id.as_str(), i))
            .collect();
        let refusal: Arc<str> = self.identity.refusal.as_str().into();
        let empty: Arc<str> = "".into();
        let replies: Vec<Arc<str>> = self
            .calls
            .values()
            .map(|c| c.reply.as_str().into())
            .collect();
        // The text each question is asked as, per strategy (shared by all its runs).
        let texts: Vec<AskedTexts> = self
            .questions
            .values()
            .map(|q| {
                let by_strategy = q
                    .asked
                    .iter()
                    .map(|(w, a)| (w.as_str(), Arc::from(a.text.as_str())))
                    .collect();
                (Arc::from(q.question.as_str()), by_strategy)
            })
            .collect();

        let n = questions.len();
        let mut slots: Vec<Option<Run>> = vec![None; n * settings.len()];
        for rec in self.runs {
            let (Some(q), Some(&s)) = (
                self.questions.get_index_of(&rec.question),
                setting_index.get(rec.setting.as_str()),
            ) else {
                return Err(format!(
                    "a run names unknown question `{}` or setting `{}`",
                    rec.question, rec.setting
                ));
            };
            let question = &self.questions[q];
            let setting = &settings[s];
            let strategy = setting.rewrite.to_string();
            let asked = question.asked.get(&strategy);
            let within = question
                .retrieval
                .get(&setting.retrieval_label(&self.dimensions));
            let chunks = &chunk_index[questions[q].corpus];
            let passages = rec
                .passages
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
                .collect::<Result<Vec<_>, _>>()?;
            let call = match &rec.call {
                None => None,
                Some(c) => Some(
                    self.calls
                        .get_full(c)
                        .ok_or_else(|| format!("a run names unknown call `{c}`"))?,
                ),
            };
            let mut run =
                Run {
                    question: q,
                    setting: s,
                    asked: texts[q]
                        .1
                        .get(strategy.as_str())
                        .unwrap_or(&texts[q].0)
                        .clone(),
                    rewrite_note: None,
                    best_score: match within {
                        Some(w) => w.asked.get(&strategy).copied().unwrap_or(w.best_score),
                        None => asked.map_or(question.best_score, |a| a.best_score),
                    },
                    best_retrieval_score: match within {
                        Some(w) => w.best_retrieval_score,
                        None => question.best_retrieval_score,
                    },
                    passages,
                    verdict: upgraded(rec.verdict),
                    answer: refusal.clone(),
                    model_calls: 0,
                    prompt_tokens: 0,
                    cached_prompt_tokens: 0,
                    completion_tokens: 0,
                    tokens_estimated: false,
                    latency: None,
                    ttft: None,
                    error: None,
                    call: call.map(|(i, _, _)| i as u32),
                    rewrite_call: None,
                    judge_call: None,
                    rerank_call: match &rec.rerank_call {
                        None => None,
                        Some(c) => Some(
                            self.calls
                                .get_index_of(c)
                                .ok_or_else(|| format!("a run names unknown rerank call `{c}`"))?
                                as u32,
                        ),
                    },
                    judge_calls: 0,
                    judge_prompt_tokens: 0,
                    judge_completion_tokens: 0,
                    repeats: rec
                        .repeats
                        .iter()
                        .map(|rep| {
                            let call =
                                match &rep.call {
                                    None => None,
                                    Some(c) => Some(self.calls.get_index_of(c).ok_or_else(|| {
                                        format!("a repeat names unknown call `{c}`")
                                    })? as u32),
                                };
                            Ok(crate::sweep::repeat::Repeat {
                                call,
                                outcome: rep.outcome,
                            })
                        })
                        .collect::<Result<_, String>>()?,
                };
            if let Some((i, _, c)) = call {
                run.model_calls = 1;
                match &c.error {
                    Some(e) => {
                        run.answer = empty.clone();
                        run.error = Some(e.clone());
                    }
                    None => {
                        run.answer = replies[i].clone();
                        run.prompt_tokens = c.usage.prompt_tokens;
                        run.cached_prompt_tokens = c.usage.cached_prompt_tokens;
                        run.completion_tokens = c.usage.completion_tokens;
                        run.tokens_estimated = c.usage.estimated;
                        run.latency = c.latency_ms.map(from_ms);
                        run.ttft = c.ttft_ms.map(from_ms);
                    }
                }
            }
            if let Some(c) = &rec.judge_call {
                let (i, _, c) = self
                    .calls
                    .get_full(c)
                    .ok_or_else(|| format!("a run names unknown judge call `{c}`"))?;
                run.judge_call = Some(i as u32);
                run.judge_calls = 1;
                run.judge_prompt_tokens = c.usage.prompt_tokens;
                run.judge_completion_tokens = c.usage.completion_tokens;
            }
            if setting.rewrite == Rewrite::Model {
                if let Some((i, _, c)) = asked
                    .and_then(|a| a.call.as_ref())
                    .and_then(|c| self.calls.get_full(c))
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
            let slot = &mut slots[s * n + q];
            if slot.is_some() {
                return Err(format!(
                    "question `{}` has two runs at setting `{}`",
                    rec.question, rec.setting
                ));
            }
            *slot = Some(run);
        }
        let mut runs = Vec::with_capacity(slots.len());
        for (i, slot) in slots.into_iter().enumerate() {
            match slot {
                Some(run) => runs.push(run),
                None => {
                    return Err(format!(
                        "question `{}` has no run at setting `{}`",
                        questions[i % n].id,
                        self.settings.get_index(i / n).map_or("", |(id, _)| id)
                    ))
                }
            }
        }
        let calls = CallStats::of(&self.calls, &runs, self.question_embeddings);
        let pricing = self.identity.pricing;
        let stats = (0..settings.len())
            .map(|s| aggregate(&runs[s * n..(s + 1) * n], &questions, &pricing))
            .collect();
        let expected_scores = self.questions.values().map(|q| q.expected_score).collect();
        // Per retrieval variant, in the order settings name them.
        let mut labels: Vec<String> = Vec::new();
        for s in &settings {
            let label = s.retrieval_label(&self.dimensions);
            if !labels.contains(&label) {
                labels.push(label);
            }
        }
        let expected_by_retrieval = if labels.len() > 1 {
            labels
                .iter()
                .map(|l| {
                    self.questions
                        .values()
                        .map(|q| q.retrieval.get(l).and_then(|w| w.expected_score))
                        .collect()
                })
                .collect()
        } else {
            Vec::new()
        };
        let policy = self.identity.policy.clone();
        let positions = self.questions.values().map(|q| q.position).collect();
        let question_set = self
            .questions
            .values()
            .map(|q| {
                self.identity
                    .evalsets
                    .iter()
                    .position(|set| set.path == q.set)
                    .unwrap_or(0)
            })
            .collect();
        let (chunk_ids, chunk_labels, flagged) = chunk_tables(&self.corpora);
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
            expected_scores,
            expected_by_retrieval,
            insight: Default::default(),
            setting_text: Default::default(),
        }
        .with_insight(&policy))
    }
}

/// A question's text, and the text it is asked as under each rewrite strategy.
type AskedTexts<'a> = (Arc<str>, HashMap<&'a str, Arc<str>>);

type ChunkTables = (
    Vec<Vec<String>>,
    Vec<Vec<String>>,
    Vec<BTreeMap<usize, String>>,
);

/// Chunk ids, labels and flags by corpus.
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
