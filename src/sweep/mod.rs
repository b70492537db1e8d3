//! The sweep: plan every (question, setting) run from one retrieval per question text, make
//! one model call per distinct prompt, classify every run.
//!
//! A sweep of Q questions over S settings costs one embedding per distinct question text (the
//! question, or its rewrite for follow-ups), one search per text (at the largest k) and at most
//! one call per distinct prompt. Because search results are sorted, a setting's hits are a
//! prefix of that one result filtered by minScore; the property test in this module checks
//! that the planned sweep equals evaluating every setting on its own.

mod build;
mod calls;
mod dry_run;
mod plan;
pub mod repeat;
mod run;
pub mod shard;
mod slots;
mod variants;

pub use crate::vocab::grid::{Grid, Setting};
pub use build::{build_graded_run, build_read_run, build_run, Run, RunInputs, RunTexts};
pub(crate) use calls::{log_calls, rerank_record};
pub use calls::{request_digest, CallLog, CallStats};
pub use dry_run::DryRun;
pub use plan::{Plan, PlannedRun, View};
pub use run::{execute, CallEvent, ProgressFn};
pub use shard::Shard;
pub use slots::{ChatSlots, ChatVariant};
pub(crate) use variants::Source;
pub use variants::{chunk_union, RetrievalVariant};

use std::collections::HashMap;
use std::sync::Arc;

use anyhow::{bail, Context, Result};

use crate::adapters::chat::{CallError, ChatModel, ChatReply, ChatRequest, Usage};
use crate::adapters::classify::{classify_read, Needles, Read, Reading, Rules};
use crate::adapters::corpus::Corpus;
use crate::adapters::embed::Embedder;
use crate::adapters::evalset::{Question, Workspace};
use crate::adapters::judge::{self, Judged};
use crate::adapters::prompt::RefusalTier;
use crate::adapters::rerank::Reranker;
use crate::adapters::retrieve::{check_dimensions, Hit, Index};
use crate::adapters::retriever::{PassageTable, Retriever};
use crate::adapters::rewrite::{self, Rewrite};
use crate::vocab::call::CallRole;

/// Most runs (questions x settings) a sweep plans unless `--max-runs` allows more: each run
/// costs memory in every report, and a typo in a range should not cost an hour.
pub const DEFAULT_MAX_RUNS: u64 = 10_000_000;

/// Everything a sweep produced.
#[derive(Debug)]
pub struct Sweep {
    pub settings: Vec<Setting>,
    /// Every distinct model call; runs name theirs by index.
    pub call_log: CallLog,
    /// Setting-major: all questions of setting 0, then setting 1, ...
    pub runs: Vec<Run>,
    pub calls: CallStats,
    /// Per question: the best score of an expected chunk among the top k of the largest k
    /// searched, which is the highest minScore at which that source still reaches the prompt.
    /// `None` when the question names no source or none ranks that high.
    pub expected_scores: Vec<Option<f64>>,
    /// With more than one retrieval variant (`--embedder`, `--chunk-tokens`): per variant, in
    /// the order settings first name them, [`Sweep::expected_scores`] under it; else empty.
    pub expected_by_retrieval: Vec<Vec<Option<f64>>>,
    /// Notes for the person running the sweep (a `model` rewrite not used, and why), without
    /// a `note: ` prefix; the command prints them unless `--quiet`.
    pub notes: Vec<String>,
    /// Warnings (a response that could not be cached), without a `warning: ` prefix; the
    /// command prints them always.
    pub warnings: Vec<String>,
    /// Per corpus of the workspace, the passages runs point into: the corpus itself for the
    /// builtin retriever, the passages a foreign retriever returned otherwise.
    pub corpora: Vec<Corpus>,
}

/// What the sweep needs besides the question sets.
pub struct Engine {
    pub embedder: Arc<dyn Embedder>,
    pub model: Arc<dyn ChatModel>,
    /// The chat models settings name besides `model` (`--chat`, `--temperature`); empty when
    /// every setting uses `model`.
    pub chat_variants: Vec<ChatVariant>,
    /// The judge that grades replies, when one is configured.
    pub judge: Option<Arc<dyn ChatModel>>,
    pub rules: Rules,
    pub concurrency: usize,
    pub progress: Option<ProgressFn>,
    /// A foreign retriever (`http`, `pgvector`); `None` searches the builtin index.
    pub retriever: Option<Arc<dyn Retriever>>,
    /// The retrieval variants settings name (`--embedder`, `--chunk-tokens`); empty: one, of
    /// `embedder` and `retriever` over every chunk.
    pub retrieval: Vec<RetrievalVariant>,
    /// The reranker that rescores each question's retrieved passages, when one is configured.
    pub reranker: Option<Arc<dyn Reranker>>,
    /// `--repeat N`: every distinct answer call is made this many times (at least 1).
    pub repeat: u32,
}

/// One search: the corpus slot it belongs to, the text searched, and the question it is for
/// (named in errors).
pub struct Query<'a> {
    pub corpus: usize,
    /// Which retrieval variant of the call searches it (0 when there is one).
    pub variant: usize,
    pub text: &'a str,
    pub question: &'a str,
}

/// What retrieval gave: the passages per corpus slot, and per query its hits at the largest k.
pub struct Ranking {
    pub corpora: Vec<Corpus>,
    pub ranked: Vec<Vec<Hit>>,
    /// Distinct texts embedded or searched.
    pub searched: usize,
    /// With a reranker, per query the best retrieval score before reranking (`ranked` then
    /// holds rerank scores); `None` everywhere without one.
    pub retrieval_best: Vec<Option<f64>>,
    /// With `retriever.query_per_k`, per query the hits of each smaller k retrieved on its own
    /// (`ranked` holds the largest); empty otherwise.
    pub by_k: Vec<Vec<(usize, Vec<Hit>)>>,
    /// With a reranker, every distinct rerank call made, by digest, in the order of the
    /// queries that first asked it; empty without one.
    pub rerank_calls: CallLog,
    /// With a reranker, per query its rerank call, an index into `rerank_calls` (`None`: no
    /// passage to rerank); empty without one.
    pub rerank_of: Vec<Option<u32>>,
}

/// A sweep planned up to its answer calls (see [`Engine::prepare`]).
pub(crate) struct Prepared {
    pub questions: Vec<Question>,
    /// Per corpus slot, the passages runs point into (see [`Sweep::corpora`]).
    pub corpora: Vec<Corpus>,
    pub views: Vec<View>,
    pub settings: Vec<Setting>,
    pub plan: Plan,
    pub expected_scores: Vec<Option<f64>>,
    /// Per retrieval variant (see [`Sweep::expected_by_retrieval`]).
    pub expected_by_retrieval: Vec<Vec<Option<f64>>>,
    pub question_embeddings: usize,
    /// The chat models the plan's requests name by slot.
    pub slots: Arc<ChatSlots>,
    /// With a reranker, every distinct rerank call, by digest; empty without one.
    pub reranks: CallLog,
    /// Per view, its rerank call, an index into `reranks`.
    pub view_rerank: Vec<Option<u32>>,
}

/// Where the planner sends each distinct request as it finds it (see [`run::execute_stream`]).
pub(crate) type RequestSink = tokio::sync::mpsc::Sender<Vec<ChatRequest>>;

/// The `model` rewrite requests of the follow-up questions.
pub(crate) struct RewriteRequests {
    /// The follow-up questions, by index.
    pub wanted: Vec<usize>,
    /// Distinct requests: equal follow-ups (same turns, same question) share one.
    pub requests: Vec<ChatRequest>,
    /// Per wanted question, its request.
    pub slot: Vec<usize>,
}

pub(crate) fn rewrite_requests(questions: &[Question]) -> RewriteRequests {
    let wanted: Vec<usize> = (0..questions.len())
        .filter(|&q| !questions[q].history.is_empty())
        .collect();
    let mut requests: Vec<ChatRequest> = Vec::new();
    let mut index: HashMap<ChatRequest, usize> = HashMap::new();
    let slot: Vec<usize> = wanted
        .iter()
        .map(|&q| {
            let r = rewrite::request(&questions[q].question, &questions[q].history);
            *index.entry(r.clone()).or_insert_with(|| {
                requests.push(r);
                requests.len() - 1
            })
        })
        .collect();
    RewriteRequests {
        wanted,
        requests,
        slot,
    }
}

/// The outcome of a `model` rewrite of one follow-up question.
struct ModelRewrite {
    text: String,
    note: Option<String>,
    usage: Usage,
    /// Its call, an index into the call log.
    call: u32,
}

impl Engine {
    /// Embed each corpus (one request per corpus) into a search index.
    pub async fn index(&self, corpora: &[Corpus]) -> Result<Vec<Index>> {
        let mut indexes = Vec::with_capacity(corpora.len());
        for corpus in corpora {
            indexes.push(build_index(self.embedder.as_ref(), corpus.clone()).await?);
        }
        Ok(indexes)
    }

    /// Retrieve every query at `k`, each distinct text once, and rerank the passages when a
    /// reranker is configured: the one retrieval the sweep, `ask` and `prompt` share.
    pub async fn rank(
        &self,
        corpora: &[Corpus],
        queries: &[Query<'_>],
        k: usize,
    ) -> Result<Ranking> {
        self.rank_at(corpora, queries, &[k]).await
    }

    /// [`Engine::rank_with`] with the engine's own embedder and retriever over every chunk.
    pub(crate) async fn rank_at(
        &self,
        corpora: &[Corpus],
        queries: &[Query<'_>],
        ks: &[usize],
    ) -> Result<Ranking> {
        let source = Source {
            embedder: self.embedder.as_ref(),
            retriever: self.retriever.as_ref(),
            members: vec![None],
        };
        self.rank_with(&source, corpora, queries, ks, &mut None)
            .await
    }

    /// [`Engine::rank`] from `source` for every k of `ks` (ascending, the largest last): one
    /// retrieval at the largest k, or one per k when the retriever asks for it
    /// (`retriever.query_per_k`; the config refuses it together with a reranker). A foreign
    /// retriever's passages are interned in `tables`, which calls for several sources share.
    pub(crate) async fn rank_with(
        &self,
        source: &Source<'_>,
        corpora: &[Corpus],
        queries: &[Query<'_>],
        ks: &[usize],
        tables: &mut Option<Vec<PassageTable>>,
    ) -> Result<Ranking> {
        let k = ks.last().copied().unwrap_or_default();
        let Some(reranker) = &self.reranker else {
            return self.retrieve(source, corpora, queries, ks, tables).await;
        };
        let candidates = reranker.candidates().unwrap_or(k);
        let mut ranking = self
            .retrieve(source, corpora, queries, &[candidates], tables)
            .await?;
        let top_n = reranker.top_n().unwrap_or(k);
        // One call per distinct text and corpus: its candidates are the same.
        let mut jobs: Vec<(String, Vec<String>)> = Vec::new();
        let mut job_of: HashMap<(usize, &str), usize> = HashMap::new();
        let slots: Vec<usize> = queries
            .iter()
            .enumerate()
            .map(|(q, query)| {
                *job_of.entry((query.corpus, query.text)).or_insert_with(|| {
                    let corpus = &ranking.corpora[query.corpus];
                    let documents = ranking.ranked[q]
                        .iter()
                        .map(|h| corpus.chunks[h.chunk].text.clone())
                        .collect();
                    jobs.push((query.text.to_string(), documents));
                    jobs.len() - 1
                })
            })
            .collect();
        let results = crate::adapters::rerank::rerank_all(reranker.as_ref(), &jobs, top_n).await;
        // Each job with passages is one call (a question without any makes none).
        let model = reranker.model();
        let call_of: Vec<Option<u32>> = jobs
            .iter()
            .zip(&results)
            .map(|((text, documents), reply)| {
                if documents.is_empty() {
                    return None;
                }
                let digest = crate::adapters::rerank::rerank_digest(&model, text, documents, top_n);
                let record = rerank_record(reply);
                Some(ranking.rerank_calls.insert_full(digest, record).0 as u32)
            })
            .collect();
        ranking.rerank_of = slots.iter().map(|&j| call_of[j]).collect();
        for (q, query) in queries.iter().enumerate() {
            let scored = &results[slots[q]]
                .as_ref()
                .map_err(|e| {
                    anyhow::anyhow!("reranking for question `{}` failed: {e}", query.question)
                })?
                .scored;
            let hits = std::mem::take(&mut ranking.ranked[q]);
            ranking.retrieval_best[q] = hits.first().map(|h| h.score);
            // Replies are checked against the documents sent; a cache file edited by hand is
            // not trusted to be.
            ranking.ranked[q] = scored
                .iter()
                .map(|s| {
                    hits.get(s.index)
                        .map(|h| Hit {
                            chunk: h.chunk,
                            score: s.score,
                        })
                        .ok_or_else(|| {
                            anyhow::anyhow!(
                                "reranking for question `{}` failed: the cached reply names passage {} of {}",
                                query.question,
                                s.index,
                                hits.len()
                            )
                        })
                })
                .collect::<Result<_>>()?;
        }
        Ok(ranking)
    }

    /// Retrieve every query at the largest of `ks` from `source`, each distinct text once; with
    /// `retriever.query_per_k`, at each of the smaller ones too.
    async fn retrieve(
        &self,
        source: &Source<'_>,
        corpora: &[Corpus],
        queries: &[Query<'_>],
        ks: &[usize],
        tables: &mut Option<Vec<PassageTable>>,
    ) -> Result<Ranking> {
        let k = ks.last().copied().unwrap_or_default();
        let mut texts: Vec<String> = Vec::new();
        let mut text_of: HashMap<&str, usize> = HashMap::new();
        let slots: Vec<usize> = queries
            .iter()
            .map(|q| {
                *text_of.entry(q.text).or_insert_with(|| {
                    texts.push(q.text.to_string());
                    texts.len() - 1
                })
            })
            .collect();
        let Some(retriever) = source.retriever else {
            let (ranked, searched) = self
                .search_builtin(source, corpora, queries, &texts, &slots, k)
                .await?;
            return Ok(Ranking {
                corpora: corpora.to_vec(),
                ranked,
                searched,
                retrieval_best: vec![None; queries.len()],
                by_k: Vec::new(),
                rerank_calls: CallLog::new(),
                rerank_of: Vec::new(),
            });
        };
        // One table per corpus slot for every k, so a passage has one index whatever k found it.
        let tables = tables.get_or_insert_with(|| {
            corpora
                .iter()
                .map(|_| PassageTable::new(&retriever.describe()))
                .collect()
        });
        let ranked = search(retriever.as_ref(), tables, queries, &texts, &slots, k).await?;
        let mut by_k: Vec<Vec<(usize, Vec<Hit>)>> = Vec::new();
        if retriever.query_per_k() {
            by_k = queries.iter().map(|_| Vec::new()).collect();
            for &small in ks.iter().filter(|&&small| small < k) {
                let hits =
                    search(retriever.as_ref(), tables, queries, &texts, &slots, small).await?;
                for (q, hits) in hits.into_iter().enumerate() {
                    by_k[q].push((small, hits));
                }
            }
        }
        Ok(Ranking {
            corpora: tables.iter().map(|t| t.corpus.clone()).collect(),
            ranked,
            searched: texts.len(),
            retrieval_best: vec![None; queries.len()],
            by_k,
            rerank_calls: CallLog::new(),
            rerank_of: Vec::new(),
        })
    }

    /// The engine's chat models, one slot per distinct identity.
    pub fn slots(&self) -> Arc<ChatSlots> {
        Arc::new(ChatSlots::new(self.model.clone(), &self.chat_variants))
    }

    /// Make every request with its slot's model, the engine's concurrency and progress; per
    /// request its log digest and its result.
    async fn call(
        &self,
        slots: &Arc<ChatSlots>,
        requests: Vec<ChatRequest>,
    ) -> (Vec<String>, Vec<Result<ChatReply, CallError>>) {
        execute(
            slots.clone(),
            requests,
            Self::digest_fn(slots),
            self.concurrency,
            self.progress.clone(),
        )
        .await
        .into_iter()
        .unzip()
    }

    /// Grade every reply that is not the exact refusal sentence with the judge: one call per
    /// distinct request, each added to `log`. Per planned run, its grade and its judge call's
    /// index in the log (`None`: not judged); empty without a judge, where a `None` per run
    /// cost 72 MB at a million runs.
    async fn grade(
        &self,
        planned: &[PlannedRun],
        questions: &[Question],
        corpora: &[Corpus],
        views: &[View],
        replies: &[Result<ChatReply, CallError>],
        log: &mut CallLog,
    ) -> Vec<Option<(Judged, u32)>> {
        let Some(judge) = &self.judge else {
            return Vec::new();
        };
        // As in the planner, two levels: (answer call, question, view, passages) is cheap to
        // hash and fixes the request (a template need not quote the question or the passages,
        // so the call alone does not), so most runs never build one; the request itself then
        // catches equal requests of different questions.
        let mut requests: Vec<ChatRequest> = Vec::new();
        let mut by_request: HashMap<ChatRequest, usize> = HashMap::new();
        type Key = (usize, usize, usize, Vec<usize>);
        let mut by_key: HashMap<Key, Option<usize>> = HashMap::new();
        let slots: Vec<Option<usize>> = planned
            .iter()
            .map(|p| {
                let c = p.call?;
                let chunk_ids = p.passages.iter().map(|h| h.chunk).collect();
                *by_key
                    .entry((c, p.question, p.view, chunk_ids))
                    .or_insert_with(|| {
                        let reply = replies[c].as_ref().ok()?;
                        if self.rules.refusal_tier(&reply.text) == Some(RefusalTier::Exact) {
                            return None;
                        }
                        let q = &questions[p.question];
                        let corpus = &corpora[q.corpus];
                        let chunks: Vec<_> =
                            p.passages.iter().map(|h| &corpus.chunks[h.chunk]).collect();
                        let text = &views[p.view].text;
                        let r = judge::request(text, &q.expect.answers, &chunks, &reply.text);
                        Some(*by_request.entry(r.clone()).or_insert_with(|| {
                            requests.push(r);
                            requests.len() - 1
                        }))
                    })
            })
            .collect();
        let digest: run::DigestFn = {
            let judge = judge.clone();
            Arc::new(move |r: &ChatRequest| request_digest(judge.as_ref(), r))
        };
        let (digests, replies): (Vec<_>, Vec<_>) = execute(
            judge.clone(),
            requests,
            digest,
            self.concurrency,
            self.progress.clone(),
        )
        .await
        .into_iter()
        .unzip();
        let logged = log_calls(log, CallRole::Judge, digests, &replies);
        let grades: Vec<(Judged, u32)> = replies
            .into_iter()
            .zip(logged)
            .map(|(reply, call)| {
                let usage = reply.as_ref().map(|r| r.usage).unwrap_or_default();
                let grade = reply.and_then(|r| judge::parse(&r.text));
                if let (Err(e), Some((_, record))) = (&grade, log.get_index_mut(call as usize)) {
                    // A reply that is not a grade is the call's error: counted as failed
                    // wherever the record is read, its text kept.
                    record.error = Some(e.clone());
                }
                (Judged { grade, usage }, call)
            })
            .collect();
        slots
            .into_iter()
            .map(|slot| slot.map(|i| grades[i].clone()))
            .collect()
    }

    /// The log digest of a request, by its slot's model.
    fn digest_fn(slots: &Arc<ChatSlots>) -> run::DigestFn {
        let slots = slots.clone();
        Arc::new(move |r: &ChatRequest| request_digest(slots.model(r.slot).as_ref(), r))
    }

    /// Ask the model to rewrite every follow-up question once (only when the grid asks for it).
    async fn model_rewrites(
        &self,
        questions: &[Question],
        grid: &Grid,
        log: &mut CallLog,
    ) -> Vec<Option<ModelRewrite>> {
        if !grid.rewrites().any(|r| r == Rewrite::Model) {
            return questions.iter().map(|_| None).collect();
        }
        let RewriteRequests {
            wanted,
            requests,
            slot,
        } = rewrite_requests(questions);
        // Rewrites are asked of the configured `chat:` model (slot 0).
        let slots = self.slots();
        let (digests, replies) = self.call(&slots, requests).await;
        let logged = log_calls(log, CallRole::Rewrite, digests, &replies);
        let mut out: Vec<Option<ModelRewrite>> = questions.iter().map(|_| None).collect();
        for (&q, &i) in wanted.iter().zip(&slot) {
            let question = &questions[q].question;
            let (text, note, usage) = match &replies[i] {
                Ok(r) => match rewrite::accept(&r.text, question) {
                    Ok(text) => (text, None, r.usage),
                    Err(why) => (question.clone(), Some(why), r.usage),
                },
                Err(e) => (
                    question.clone(),
                    Some(format!("the rewrite call failed: {e}")),
                    Usage::default(),
                ),
            };
            out[q] = Some(ModelRewrite {
                text,
                note,
                usage,
                call: logged[i],
            });
        }
        out
    }

    /// Everything before the first answer call: retrieval for every text a question is asked
    /// as (`rewritten(q)` is question q's `model` rewrite, when it has one) under every
    /// retrieval variant, and the plan. With a `sink`, each distinct request is sent to it as
    /// soon as it is planned (and the sender dropped when the plan is complete).
    pub(crate) async fn prepare(
        &self,
        ws: &Workspace,
        grid: &Grid,
        rewritten: impl Fn(usize) -> Option<String>,
        sink: Option<RequestSink>,
    ) -> Result<Prepared> {
        let questions: Vec<_> = ws.questions().cloned().collect();
        let variants = self.retrieval_variants();
        let settings = grid.settings();
        // The variant of each setting, by position in `variants`.
        let variant_of: Vec<usize> = settings
            .iter()
            .map(|s| {
                variants
                    .iter()
                    .position(|v| {
                        v.embedder_profile == s.embedder && v.chunk_tokens == s.chunk_tokens
                    })
                    .with_context(|| {
                        format!(
                            "no retrieval for embedder `{}` at chunk size {:?}",
                            s.embedder, s.chunk_tokens
                        )
                    })
            })
            .collect::<Result<_>>()?;

        // One view per distinct (text a question is asked as, retrieval variant).
        let mut views: Vec<View> = Vec::new();
        let mut view_of: HashMap<(usize, Rewrite, usize), usize> = HashMap::new();
        for (q, question) in questions.iter().enumerate() {
            // A question's views are contiguous: look only among its own.
            let first = views.len();
            for variant in 0..variants.len() {
                for strategy in grid.rewrites() {
                    let text = match strategy {
                        _ if question.history.is_empty() => question.question.clone(),
                        Rewrite::None => question.question.clone(),
                        Rewrite::Heuristic => {
                            rewrite::heuristic(&question.question, &question.history)
                        }
                        Rewrite::Model => rewritten(q).unwrap_or_else(|| question.question.clone()),
                    };
                    let v = match views[first..]
                        .iter()
                        .position(|v| v.text == text && v.variant == variant)
                    {
                        Some(v) => first + v,
                        None => {
                            views.push(View {
                                question: q,
                                text,
                                ranked: Vec::new(),
                                best_retrieval_score: None,
                                by_k: Vec::new(),
                                variant,
                            });
                            views.len() - 1
                        }
                    };
                    view_of.insert((q, strategy, variant), v);
                }
            }
        }

        crate::base::timing::mark("views");
        let variants::Ranked {
            corpora,
            question_embeddings,
            reranks,
            view_rerank,
        } = self
            .rank_views(
                &variants,
                &questions,
                &ws.corpora,
                &mut views,
                &distinct_ks(grid),
            )
            .await?;

        // Per variant, per question, from its retrieval under the grid's first rewrite strategy
        // (the one setting 0 uses, as for best scores in reports).
        let first_rewrite = grid
            .rewrites()
            .next()
            .expect("a grid has a rewrite strategy");
        let expected: Vec<Vec<Option<f64>>> = (0..variants.len())
            .map(|variant| {
                questions
                    .iter()
                    .enumerate()
                    .map(|(i, q)| (q, &views[view_of[&(i, first_rewrite, variant)]].ranked))
                    .map(|(q, hits)| {
                        let corpus = &corpora[q.corpus];
                        // Best first, so the first expected hit is the best one.
                        hits.iter()
                            .find(|h| {
                                q.expect
                                    .sources
                                    .iter()
                                    .any(|e| corpus.chunks[h.chunk].matches(e))
                            })
                            .map(|h| h.score)
                    })
                    .collect()
            })
            .collect();
        // The variant of setting 0 is what single-variant reports show.
        let expected_scores = expected[variant_of.first().copied().unwrap_or(0)].clone();
        let expected_by_retrieval = if variants.len() > 1 {
            expected
        } else {
            Vec::new()
        };

        let slots = self.slots();
        let slot_of = slots.of_settings(&settings)?;
        let rewrite_of: Vec<Rewrite> = settings.iter().map(|s| s.rewrite).collect();
        let lookup = move |q: usize, s: usize| view_of[&(q, rewrite_of[s], variant_of[s])];
        crate::base::timing::mark("retrieval");
        // Planned on a thread of its own, so that with a `sink` the executor's calls run on the
        // runtime while the rest of the plan is built.
        let prompt = self.rules.prompt.clone();
        let planner = tokio::task::spawn_blocking(move || {
            let plan = Plan::new(
                &questions,
                &corpora,
                &views,
                lookup,
                &settings,
                &slot_of,
                &prompt,
                sink.as_ref(),
            );
            (plan, questions, corpora, views, settings)
        });
        let (plan, questions, corpora, views, settings) = match planner.await {
            Ok(planned) => planned,
            // The planner only panics on a bug: crash as if it had run here.
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(e) => bail!("the planner was stopped: {e}"),
        };
        crate::base::timing::mark("plan");
        Ok(Prepared {
            questions,
            corpora,
            views,
            settings,
            plan,
            expected_scores,
            expected_by_retrieval,
            question_embeddings,
            slots,
            reranks,
            view_rerank,
        })
    }

    /// Run the whole grid.
    pub async fn sweep(&self, ws: &Workspace, grid: &Grid) -> Result<Sweep> {
        let questions: Vec<_> = ws.questions().cloned().collect();
        let mut log = CallLog::new();
        let rewrites = self.model_rewrites(&questions, grid, &mut log).await;
        let notes = questions
            .iter()
            .zip(&rewrites)
            .filter_map(|(q, r)| {
                let why = r.as_ref()?.note.as_ref()?;
                Some(format!(
                    "question `{}`: {why}; using the question as asked",
                    q.id
                ))
            })
            .collect();
        // The calls start with the first planned request, while the rest is still planned;
        // the planner waits while the executor has a few requests in hand. (A slot table is a
        // pure function of the engine's models: this one and `prepare`'s share them.)
        let slots = self.slots();
        let (sink, requests) = tokio::sync::mpsc::channel(4);
        let total = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let stream = run::Stream {
            requests,
            total: total.clone(),
        };
        let calls = run::execute_stream(
            slots.clone(),
            stream,
            self.repeat,
            Self::digest_fn(&slots),
            self.concurrency,
            self.progress.clone(),
        );
        let rewritten = |q: usize| rewrites[q].as_ref().map(|r| r.text.clone());
        let planned = async {
            let prepared = self.prepare(ws, grid, rewritten, Some(sink)).await;
            if let Ok(p) = &prepared {
                let calls = p.plan.distinct * self.repeat as usize;
                total.store(calls, std::sync::atomic::Ordering::Relaxed);
            }
            prepared
        };
        let (prepared, answered) = tokio::join!(planned, calls);
        let Prepared {
            questions,
            corpora,
            views,
            settings,
            plan:
                Plan {
                    runs: planned,
                    distinct,
                    ..
                },
            expected_scores,
            expected_by_retrieval,
            question_embeddings,
            slots,
            reranks,
            view_rerank,
        } = prepared?;
        let (digests, replies): (Vec<_>, Vec<_>) = answered.into_iter().unzip();
        // Rerank calls were made while ranking, before any answer call.
        let reranked: Vec<u32> = reranks
            .into_iter()
            .map(|(digest, record)| log.insert_full(digest, record).0 as u32)
            .collect();
        let rerank_of: Vec<Option<u32>> = view_rerank
            .iter()
            .map(|c| c.map(|c| reranked[c as usize]))
            .collect();
        crate::base::timing::mark("calls");
        run::release_freed_memory();
        let logged = log_calls(&mut log, CallRole::Answer, digests, &replies);
        if self.repeat > 1 {
            for (i, &c) in logged.iter().enumerate() {
                if let Some((_, call)) = log.get_index_mut(c as usize) {
                    call.repeat = (i / distinct) as u32;
                }
            }
        }
        let grades = self
            .grade(&planned, &questions, &corpora, &views, &replies, &mut log)
            .await;
        // Runs share the texts of their view and their reply instead of each holding a copy:
        // a million runs held 200 MB of repeated answers.
        let asked: Vec<Arc<str>> = views.iter().map(|v| Arc::from(v.text.as_str())).collect();
        let answers: Vec<Arc<str>> = replies
            .iter()
            .map(|r| Arc::from(r.as_ref().map_or("", |r| r.text.as_str())))
            .collect();
        let refusal: Arc<str> = Arc::from(self.rules.refusal.as_str());
        // Each reply is read once, not once per run it answers, and each question's expected
        // texts are squashed once.
        let mut each_reply: Vec<_> = replies.iter().collect();
        let readings: Vec<Option<Reading>> = run::par_map(&mut each_reply, |_, r| {
            r.as_ref().ok().map(|r| Reading::of(&r.text, &self.rules))
        });
        let needles: Vec<Needles> = questions.iter().map(Needles::of).collect();
        let read = |slot: Option<usize>| Read::of(slot.map(|c| readings[c].as_ref()));
        // Built on every core; each plan's passages move into its run.
        let mut planned = planned;
        let runs: Vec<Run> = run::par_map(&mut planned, |i, p| {
            let judged = grades.get(i).and_then(Option::as_ref);
            let q = &questions[p.question];
            let view = &views[p.view];
            let setting = &settings[p.setting];
            let reply = p.call.map(|c| &replies[c]);
            let rewrite = (setting.rewrite == Rewrite::Model)
                .then(|| rewrites[p.question].as_ref())
                .flatten();
            let inputs = RunInputs {
                question: q,
                needles: &needles[p.question],
                corpus: &corpora[q.corpus],
                view,
                k: setting.k,
            };
            let texts = RunTexts {
                asked: asked[p.view].clone(),
                answer: p
                    .call
                    .map_or_else(|| refusal.clone(), |c| answers[c].clone()),
            };
            // Repeats first: the run takes the plan's passages.
            let repeats = (1..self.repeat as usize)
                .map(|r| {
                    let slot = p.call.map(|c| r * distinct + c);
                    crate::sweep::repeat::Repeat {
                        call: slot.map(|i| logged[i]),
                        outcome: classify_read(
                            q,
                            inputs.needles,
                            inputs.corpus,
                            view.top(setting.k),
                            &p.passages,
                            read(slot),
                            None,
                        )
                        .outcome,
                    }
                })
                .collect();
            let mut run = build_read_run(
                p,
                &inputs,
                texts,
                reply,
                read(p.call),
                judged.map(|(j, _)| j),
            );
            run.judge_call = judged.map(|&(_, c)| c);
            run.rerank_call = rerank_of[p.view];
            if let Some(r) = rewrite {
                run.model_calls += 1;
                run.prompt_tokens += r.usage.prompt_tokens;
                run.completion_tokens += r.usage.completion_tokens;
                run.tokens_estimated |= r.usage.estimated;
                run.rewrite_note = r.note.clone();
                run.rewrite_call = Some(r.call);
            }
            run.call = p.call.map(|c| logged[c]);
            run.repeats = repeats;
            run
        });
        drop(planned);
        crate::base::timing::mark("runs");
        // The planned runs and their passages are gone; the reports allocate next.
        run::release_freed_memory();
        let calls = CallStats::of(&log, &runs, question_embeddings);
        let mut warnings = self.embedder.warnings();
        warnings.extend(slots.warnings());
        if let Some(r) = &self.reranker {
            warnings.extend(r.warnings());
        }
        Ok(Sweep {
            settings,
            call_log: log,
            runs,
            calls,
            expected_scores,
            expected_by_retrieval,
            notes,
            warnings,
            corpora,
        })
    }
}

/// The grid's distinct k values, ascending.
fn distinct_ks(grid: &Grid) -> Vec<usize> {
    let mut ks: Vec<usize> = grid.ks().collect();
    ks.sort_unstable();
    ks.dedup();
    ks
}

/// Search every distinct text of `texts` at `k` with a foreign retriever; per query its hits,
/// interned into its corpus slot's table.
async fn search(
    retriever: &dyn Retriever,
    tables: &mut [PassageTable],
    queries: &[Query<'_>],
    texts: &[String],
    slots: &[usize],
    k: usize,
) -> Result<Vec<Vec<Hit>>> {
    let results = retriever.retrieve(texts, k).await;
    let mut ranked = Vec::with_capacity(queries.len());
    for (q, &slot) in queries.iter().zip(slots) {
        let passages = results[slot]
            .as_ref()
            .map_err(|e| anyhow::anyhow!("retrieval for question `{}` failed: {e}", q.question))?;
        let table = &mut tables[q.corpus];
        ranked.push(passages.iter().map(|p| table.intern(p.clone())).collect());
    }
    Ok(ranked)
}

/// Embed every chunk of `corpus` into a search index.
pub async fn build_index(
    embedder: &dyn Embedder,
    corpus: crate::adapters::corpus::Corpus,
) -> Result<Index> {
    let vectors = embed_chunks(embedder, &corpus).await?;
    Ok(Index::new(corpus, vectors))
}

/// One checked vector per chunk of `corpus`.
async fn embed_chunks(embedder: &dyn Embedder, corpus: &Corpus) -> Result<Vec<Vec<f32>>> {
    let texts: Vec<String> = corpus.chunks.iter().map(|c| c.embed_text()).collect();
    if let Some((i, tokens, limit)) = too_long(embedder, &texts) {
        let c = &corpus.chunks[i];
        bail!(
            "chunk `{}` (`{}`) of corpus `{}` is about {tokens} tokens, more than the embedder reads \
             (`embedder.max_input_tokens`: {limit}); split its longest paragraph or code block, \
             or lower `corpus.max_chunk_tokens`",
            c.id,
            c.label(),
            corpus.describe()
        );
    }
    let vectors = embedder
        .embed(&texts)
        .await
        .with_context(|| format!("cannot embed corpus `{}`", corpus.root.display()))?;
    if vectors.len() != texts.len() {
        bail!(
            "cannot embed corpus `{}`: the embedder returned {} vectors for {} chunks",
            corpus.root.display(),
            vectors.len(),
            texts.len()
        );
    }
    check_dimensions(&vectors, |i| format!("chunk `{}`", corpus.chunks[i].id))
        .map_err(|why| anyhow::anyhow!("cannot embed corpus `{}`: {why}", corpus.root.display()))?;
    Ok(vectors)
}

/// The first text estimated longer than the embedder reads: (its index, its estimate, the limit).
/// Servers answer such an input with an error (llama-server: HTTP 500), not a truncation, so it
/// is named before any request instead of being retried as a server fault.
fn too_long(embedder: &dyn Embedder, texts: &[String]) -> Option<(usize, usize, usize)> {
    let limit = embedder.max_input_tokens()?;
    texts
        .iter()
        .map(|t| crate::adapters::corpus::estimate_tokens(t))
        .enumerate()
        .find(|&(_, tokens)| tokens > limit)
        .map(|(i, tokens)| (i, tokens, limit))
}

#[cfg(test)]
pub(crate) mod tests;
