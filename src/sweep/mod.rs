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
mod grade;
pub mod health;
pub mod inert;
mod order;
mod plan;
mod rank;
pub mod repeat;
mod rewrites;
mod run;
mod runs;
pub mod shard;
mod slots;
mod variants;

pub use crate::vocab::grid::{Grid, Setting};
pub use build::{build_read_run, build_run, Run, RunInputs, RunTexts};
pub(crate) use calls::{log_calls, rerank_record};
pub use calls::{request_digest, CallLog, CallStats};
pub use dry_run::DryRun;
pub use plan::{Plan, PlannedRun, View};
pub use rank::{build_index, Query, Ranking};
pub(crate) use rank::{distinct_ks, fit_chunks, too_long, Fitted};
pub(crate) use rewrites::rewrite_requests;
pub use run::{execute, CallEvent, ProgressFn};
pub use runs::{Coverage, SettingRuns};
pub use shard::Shard;
pub use slots::{ChatSlots, ChatVariant};
pub(crate) use variants::Source;
pub use variants::{chunk_union, RetrievalVariant};

use std::collections::HashMap;
use std::sync::Arc;

use anyhow::{bail, Context, Result};

use crate::adapters::chat::{CallError, ChatModel, ChatReply, ChatRequest, Usage};
use crate::adapters::classify::{classify_read, Needles, Passages, Read, Reading, Rules};
use crate::adapters::corpus::Corpus;
use crate::adapters::embed::Embedder;
use crate::adapters::evalset::{Question, Workspace};
use crate::adapters::judge::{self, Judged};
use crate::adapters::prompt::RefusalTier;
use crate::adapters::rerank::Reranker;
use crate::adapters::retriever::{PassageTable, Retriever};
use crate::adapters::rewrite::{self, Rewrite};
use crate::adapters::search::{check_dimensions, Hit, Index};
use crate::vocab::call::CallRole;

/// Most runs (questions x settings) a sweep plans unless `--max-runs` allows more: each run
/// costs memory in every report, and a typo in a range should not cost an hour.
pub const DEFAULT_MAX_RUNS: u64 = 10_000_000;

pub use crate::base::input::{concurrency_problem, MAX_CONCURRENCY};

/// Everything a sweep produced.
#[derive(Debug)]
pub struct Sweep {
    pub settings: Vec<Setting>,
    /// Every distinct model call; runs name theirs by index.
    pub call_log: CallLog,
    /// Setting-major: the runs of setting 0, then setting 1, ..., each in question order; a
    /// setting the engine's [`Coverage`] restricts has runs for its questions only. Read one
    /// setting's with [`Sweep::runs_of`].
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
#[derive(Clone)]
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
    /// The (setting, question) pairs to run: every one, but for the settings an adaptive
    /// sweep dropped; the others are not planned, called or counted.
    pub coverage: Coverage,
}

impl Sweep {
    /// Setting `s`'s runs.
    pub fn runs_of(&self, s: usize) -> SettingRuns<'_> {
        SettingRuns::of(&self.runs, s)
    }
}

/// A sweep planned up to its answer calls (see [`Engine::prepare`]).
pub(crate) struct Prepared {
    /// What the plan was made from, as the planner handed it back.
    planning: Planning,
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
    /// One line per chunk a server refused as too long and that was split further.
    pub notes: Vec<String>,
}

/// Where the planner sends the distinct requests (see [`run::execute_stream`]).
pub(crate) struct RequestSink {
    pub tx: tokio::sync::mpsc::Sender<Vec<ChatRequest>>,
    /// Send them all at once when the plan is complete, in prefix order ([`order`]), for a
    /// model whose server may keep a prompt cache; else each as soon as it is planned.
    pub prefix_order: bool,
}

impl Engine {
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
        let variant_of = variant_of_settings(&variants, &settings)?;
        let Views { mut views, view_of } = Views::of(&questions, grid, variants.len(), rewritten);
        crate::base::timing::mark("views");
        let variants::Ranked {
            corpora,
            question_embeddings,
            reranks,
            view_rerank,
            notes,
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
        let expected = expected_scores(&questions, &corpora, &views, variants.len(), |q, v| {
            view_of[&(q, first_rewrite, v)]
        });
        // The variant of setting 0 is what single-variant reports show.
        let expected_scores = expected[variant_of.first().copied().unwrap_or(0)].clone();
        let expected_by_retrieval = if variants.len() > 1 {
            expected
        } else {
            Vec::new()
        };
        let slots = self.slots();
        let rewrite_of: Vec<Rewrite> = settings.iter().map(|s| s.rewrite).collect();
        let lookup = move |q: usize, s: usize| view_of[&(q, rewrite_of[s], variant_of[s])];
        crate::base::timing::mark("retrieval");
        let planning = Planning {
            questions,
            corpora,
            views,
            settings,
        };
        let (plan, planning) = self.plan(planning, &slots, lookup, sink).await?;
        crate::base::timing::mark("plan");
        Ok(Prepared {
            planning,
            plan,
            expected_scores,
            expected_by_retrieval,
            question_embeddings,
            slots,
            reranks,
            view_rerank,
            notes,
        })
    }

    /// The plan, made on a thread of its own, so that with a `sink` the executor's calls run
    /// on the runtime while the rest of the plan is built; `view_of(q, s)` is question q's
    /// view at setting s. The planner's inputs come back with it.
    async fn plan(
        &self,
        planning: Planning,
        slots: &ChatSlots,
        view_of: impl Fn(usize, usize) -> usize + Send + 'static,
        sink: Option<RequestSink>,
    ) -> Result<(Plan, Planning)> {
        let slot_of = slots.of_settings(&planning.settings)?;
        let grounded = slots.take_passages();
        let prompt = self.rules.prompt.clone();
        let coverage = self.coverage.clone();
        let planner = tokio::task::spawn_blocking(move || {
            let plan = Plan::new(
                &planning.questions,
                &planning.corpora,
                &planning.views,
                view_of,
                &planning.settings,
                &slot_of,
                &grounded,
                &prompt,
                &coverage,
                sink.as_ref(),
            );
            (plan, planning)
        });
        match planner.await {
            Ok(planned) => Ok(planned),
            // The planner only panics on a bug: crash as if it had run here.
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(e) => bail!("the planner was stopped: {e}"),
        }
    }

    /// Run the whole grid.
    pub async fn sweep(&self, ws: &Workspace, grid: &Grid) -> Result<Sweep> {
        let questions: Vec<_> = ws.questions().cloned().collect();
        let mut log = CallLog::new();
        let rewrites = self.model_rewrites(&questions, grid, &mut log).await;
        let mut notes = rewrites::notes(&questions, &rewrites);
        let (prepared, answered) = self.plan_while_calling(ws, grid, &rewrites).await;
        let Prepared {
            planning:
                Planning {
                    questions,
                    corpora,
                    views,
                    settings,
                },
            plan:
                Plan {
                    runs: mut planned,
                    distinct,
                    sent,
                    ..
                },
            expected_scores,
            expected_by_retrieval,
            question_embeddings,
            slots,
            reranks,
            view_rerank,
            notes: split_notes,
        } = prepared?;
        // The calls' log and every result after this are in plan order, whatever the order
        // the calls were made in.
        let answered = order::in_plan_order(answered, &sent, distinct);
        let (digests, replies): (Vec<_>, Vec<_>) = answered.into_iter().unzip();
        let rerank_of = log_reranks(&mut log, reranks, &view_rerank);
        crate::base::timing::mark("calls");
        run::release_freed_memory();
        let logged = self.log_answers(&mut log, digests, &replies, distinct);
        let grades = self
            .grade(&planned, &questions, &corpora, &views, &replies, &mut log)
            .await;
        let runs = RunBuilder {
            repeat: self.repeat as usize,
            distinct,
            questions: &questions,
            views: &views,
            settings: &settings,
            replies: &replies,
            texts: SharedTexts::of(&views, &replies, &self.rules.refusal),
            readings: read_replies(&replies, &self.rules),
            needles: questions.iter().map(Needles::of).collect(),
            passages: corpora.iter().map(Passages::new).collect(),
            grades: &grades,
            logged: &logged,
            rerank_of: &rerank_of,
            rewrites: &rewrites,
        }
        .build(&mut planned);
        drop(planned);
        crate::base::timing::mark("runs");
        // The planned runs and their passages are gone; the reports allocate next.
        run::release_freed_memory();
        let calls = CallStats::of(&log, &runs, question_embeddings);
        notes.extend(split_notes);
        let (mut corpora, mut runs) = (corpora, runs);
        if self.retriever.is_some() {
            rank::passages_by_id(&mut corpora, &questions, &mut runs);
        }
        let mut warnings = self.warnings(&slots);
        warnings.extend(inert::warnings(grid, &settings, &runs));
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

    /// Plan the sweep and make its answer calls at once: the calls start with the first
    /// planned request, while the rest is still planned; the planner waits while the executor
    /// has a few requests in hand. A server that may keep a prompt cache gets them all when
    /// the plan is complete instead, in prefix order and one lane per worker; the in-process
    /// mock has no cache to keep. (A slot table is a pure function of the engine's models:
    /// this one and `prepare`'s share them.)
    async fn plan_while_calling(
        &self,
        ws: &Workspace,
        grid: &Grid,
        rewrites: &[Option<rewrites::ModelRewrite>],
    ) -> (Result<Prepared>, run::Answered) {
        let slots = self.slots();
        let (tx, requests) = tokio::sync::mpsc::channel(4);
        let prefix_order = slots.prefix_cached();
        let sink = RequestSink { tx, prefix_order };
        let total = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let stream = run::Stream {
            requests,
            total: total.clone(),
            lanes: prefix_order,
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
        tokio::join!(planned, calls)
    }

    /// Log the answer calls (each repeat numbered); per call made, its index in the log.
    fn log_answers(
        &self,
        log: &mut CallLog,
        digests: Vec<String>,
        replies: &[Result<ChatReply, CallError>],
        distinct: usize,
    ) -> Vec<u32> {
        let logged = log_calls(log, CallRole::Answer, digests, replies);
        if self.repeat > 1 {
            for (i, &c) in logged.iter().enumerate() {
                if let Some((_, call)) = log.get_index_mut(c as usize) {
                    call.repeat = (i / distinct) as u32;
                }
            }
        }
        logged
    }

    /// The warnings of the embedder, the chat models and the reranker.
    fn warnings(&self, slots: &ChatSlots) -> Vec<String> {
        let mut warnings = self.embedder.warnings();
        warnings.extend(slots.warnings());
        if let Some(r) = &self.reranker {
            warnings.extend(r.warnings());
        }
        warnings
    }
}

/// Log the rerank calls, which were made while ranking, before any answer call; per view, its
/// rerank call's index in the log. (Also how each profile's rerank calls join the sweep's.)
fn log_reranks(
    log: &mut CallLog,
    reranks: CallLog,
    view_rerank: &[Option<u32>],
) -> Vec<Option<u32>> {
    let reranked: Vec<u32> = reranks
        .into_iter()
        .map(|(digest, record)| log.insert_full(digest, record).0 as u32)
        .collect();
    view_rerank
        .iter()
        .map(|c| c.map(|c| reranked[c as usize]))
        .collect()
}

/// Each reply read once, not once per run it answers.
fn read_replies(replies: &[Result<ChatReply, CallError>], rules: &Rules) -> Vec<Option<Reading>> {
    let mut each_reply: Vec<_> = replies.iter().collect();
    run::par_map(&mut each_reply, |_, r| {
        r.as_ref().ok().map(|r| Reading::of(&r.text, rules))
    })
}

/// The texts runs share instead of each holding a copy: a million runs held 200 MB of repeated
/// answers.
struct SharedTexts {
    /// Per view, the text it asks.
    asked: Vec<Arc<str>>,
    /// Per answer call, its reply's text (empty for a failed call).
    answers: Vec<Arc<str>>,
    /// The answer of an early refusal.
    refusal: Arc<str>,
}

impl SharedTexts {
    fn of(views: &[View], replies: &[Result<ChatReply, CallError>], refusal: &str) -> Self {
        SharedTexts {
            asked: views.iter().map(|v| Arc::from(v.text.as_str())).collect(),
            answers: replies
                .iter()
                .map(|r| Arc::from(r.as_ref().map_or("", |r| r.text.as_str())))
                .collect(),
            refusal: Arc::from(refusal),
        }
    }
}

/// Builds every run from its plan, its reply, its grade and its calls, on every core.
struct RunBuilder<'a> {
    /// `--repeat N`.
    repeat: usize,
    /// Distinct answer calls per repeat.
    distinct: usize,
    questions: &'a [Question],
    views: &'a [View],
    settings: &'a [Setting],
    replies: &'a [Result<ChatReply, CallError>],
    texts: SharedTexts,
    /// Per answer call, its reply read (`None` for a failed call).
    readings: Vec<Option<Reading>>,
    /// Per question, its expected texts squashed once.
    needles: Vec<Needles>,
    /// Per corpus, its passages as the classifier compares replies with them.
    passages: Vec<Passages<'a>>,
    /// Per planned run, its judge's grade and call (empty without a judge).
    grades: &'a [Option<(Judged, u32)>],
    /// Per answer call made, its index in the call log.
    logged: &'a [u32],
    /// Per view, its rerank call in the call log.
    rerank_of: &'a [Option<u32>],
    /// Per question, its `model` rewrite.
    rewrites: &'a [Option<rewrites::ModelRewrite>],
}

impl RunBuilder<'_> {
    /// Every run; each plan's passages move into its run.
    fn build(&self, planned: &mut [PlannedRun]) -> Vec<Run> {
        run::par_map(planned, |i, p| self.run(i, p))
    }

    fn read(&self, slot: Option<usize>) -> Read<'_> {
        Read::of(slot.map(|c| self.readings[c].as_ref()))
    }

    /// Planned run `i`: classified, with its repeats, grade, and the calls it made.
    fn run(&self, i: usize, p: &mut PlannedRun) -> Run {
        let judged = self.grades.get(i).and_then(Option::as_ref);
        let q = &self.questions[p.question];
        let setting = &self.settings[p.setting];
        let inputs = RunInputs {
            question: q,
            needles: &self.needles[p.question],
            passages: &self.passages[q.corpus],
            view: &self.views[p.view],
            k: setting.k,
        };
        let texts = RunTexts {
            asked: self.texts.asked[p.view].clone(),
            answer: p.call.map_or_else(
                || self.texts.refusal.clone(),
                |c| self.texts.answers[c].clone(),
            ),
        };
        // Repeats first: the run takes the plan's passages.
        let repeats = self.repeats(p, &inputs);
        let reply = p.call.map(|c| &self.replies[c]);
        let mut run = build_read_run(
            p,
            &inputs,
            texts,
            reply,
            self.read(p.call),
            judged.map(|(j, _)| j),
        );
        run.judge_call = judged.map(|&(_, c)| c);
        run.rerank_call = self.rerank_of[p.view];
        if setting.rewrite == Rewrite::Model {
            if let Some(r) = self.rewrites[p.question].as_ref() {
                run.model_calls += 1;
                run.prompt_tokens += r.usage.prompt_tokens;
                run.cached_prompt_tokens += r.usage.cached_prompt_tokens;
                run.completion_tokens += r.usage.completion_tokens;
                run.tokens_estimated |= r.usage.estimated;
                run.rewrite_note = r.note.clone();
                run.rewrite_call = Some(r.call);
            }
        }
        run.call = p.call.map(|c| self.logged[c]);
        run.repeats = repeats;
        run
    }

    /// Repeats 1 to N-1 of the run: each its answer call and outcome.
    fn repeats(&self, p: &PlannedRun, inputs: &RunInputs<'_>) -> Vec<repeat::Repeat> {
        (1..self.repeat)
            .map(|r| {
                let slot = p.call.map(|c| r * self.distinct + c);
                repeat::Repeat {
                    call: slot.map(|i| self.logged[i]),
                    outcome: classify_read(
                        inputs.question,
                        inputs.needles,
                        inputs.passages,
                        inputs.view.top(inputs.k),
                        &p.passages,
                        self.read(slot),
                        None,
                    )
                    .outcome,
                }
            })
            .collect()
    }
}

/// What the planner reads, moved onto its thread and handed back with the plan.
struct Planning {
    questions: Vec<Question>,
    /// Per corpus slot, the passages runs point into (see [`Sweep::corpora`]).
    corpora: Vec<Corpus>,
    views: Vec<View>,
    settings: Vec<Setting>,
}

/// The retrieval variant of each setting, by position in `variants`.
fn variant_of_settings(variants: &[RetrievalVariant], settings: &[Setting]) -> Result<Vec<usize>> {
    settings
        .iter()
        .map(|s| {
            variants
                .iter()
                .position(|v| v.embedder_profile == s.embedder && v.chunk_tokens == s.chunk_tokens)
                .with_context(|| {
                    format!(
                        "no retrieval for embedder `{}` at chunk size {:?}",
                        s.embedder, s.chunk_tokens
                    )
                })
        })
        .collect()
}

/// One view per distinct (text a question is asked as, retrieval variant), not yet ranked.
struct Views {
    views: Vec<View>,
    /// The view of each (question, rewrite strategy, retrieval variant).
    view_of: HashMap<(usize, Rewrite, usize), usize>,
}

impl Views {
    fn of(
        questions: &[Question],
        grid: &Grid,
        variants: usize,
        rewritten: impl Fn(usize) -> Option<String>,
    ) -> Views {
        let mut views: Vec<View> = Vec::new();
        let mut view_of = HashMap::new();
        for (q, question) in questions.iter().enumerate() {
            // A question's views are contiguous: look only among its own.
            let first = views.len();
            for variant in 0..variants {
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
        Views { views, view_of }
    }
}

/// Per retrieval variant, per question, the score of its best expected hit in the view
/// `view_of(question, variant)` names.
fn expected_scores(
    questions: &[Question],
    corpora: &[Corpus],
    views: &[View],
    variants: usize,
    view_of: impl Fn(usize, usize) -> usize,
) -> Vec<Vec<Option<f64>>> {
    (0..variants)
        .map(|variant| {
            questions
                .iter()
                .enumerate()
                .map(|(i, q)| {
                    let corpus = &corpora[q.corpus];
                    // Best first, so the first expected hit is the best one.
                    views[view_of(i, variant)]
                        .ranked
                        .iter()
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
        .collect()
}

#[cfg(test)]
pub(crate) mod tests;
