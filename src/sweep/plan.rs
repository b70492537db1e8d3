//! The planner: derive every setting's hits from one retrieval per question text, order them,
//! and collapse identical prompts into one call.

use std::collections::HashMap;
use std::hash::BuildHasher;

use super::Setting;
use crate::adapters::chat::{ChatRequest, Grounded};
use crate::adapters::corpus::{squash, Chunk, Corpus};
use crate::adapters::evalset::Question;
use crate::adapters::prompt;
use crate::adapters::search::{passing, Hit};

/// A fixed fast hash: the maps are the planner's own, keyed by data the user wrote.
type Fast = foldhash::fast::FixedState;

/// One question as retrieval sees it under a rewrite strategy: the text searched (and asked)
/// and its search result at the grid's largest k, best first.
#[derive(Debug, Clone, PartialEq)]
pub struct View {
    pub question: usize,
    pub text: String,
    pub ranked: Vec<Hit>,
    /// With a reranker, the best retrieval score before reranking (`ranked` holds rerank
    /// scores); `None` without one.
    pub best_retrieval_score: Option<f64>,
    /// With `retriever.query_per_k`: the hits of each smaller k of the grid, retrieved on its
    /// own; empty otherwise (every k takes a prefix of `ranked`).
    pub by_k: Vec<(usize, Vec<Hit>)>,
    /// The retrieval variant (embedder, chunk size) it was searched with; 0 when there is one.
    pub variant: usize,
}

impl View {
    /// The hits a setting with `k` sees, best first: its own retrieval with
    /// `retriever.query_per_k`, else the first k of `ranked`.
    pub fn top(&self, k: usize) -> &[Hit] {
        match self.by_k.iter().find(|(small, _)| *small == k) {
            Some((_, hits)) => &hits[..k.min(hits.len())],
            None => &self.ranked[..k.min(self.ranked.len())],
        }
    }
}

/// One (question, setting) pair: the passages it sends and the call that answers it.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedRun {
    pub question: usize,
    pub setting: usize,
    /// Index into the views: the text asked and its retrieval.
    pub view: usize,
    /// Passages in prompt order; empty means an early refusal.
    pub passages: Vec<Hit>,
    /// Index into [`Plan::requests`]; `None` for an early refusal.
    pub call: Option<usize>,
}

/// The runs of a sweep and the distinct requests they need.
#[derive(Debug, Clone)]
pub struct Plan {
    pub runs: Vec<PlannedRun>,
    /// The distinct requests, in the order planned; empty when they went to a sink instead
    /// (see [`Plan::new`]).
    pub requests: Vec<ChatRequest>,
    /// How many distinct requests the plan has, kept or sent.
    pub distinct: usize,
    /// When the requests went to a sink in prefix order ([`super::order`]): `sent[n]` is the
    /// plan index (the one runs name) of the n-th request sent; empty when they were sent in
    /// plan order.
    pub sent: Vec<usize>,
}

/// What a request is built from: (view, chunk ids in prompt order, format, chat slot).
type Recipe = (usize, Vec<usize>, prompt::Format, u32);

impl Plan {
    /// `view_of(q, s)` names the view question `q` uses under setting `s`'s rewrite strategy
    /// (and retrieval variant); `slots[s]` is the chat model that answers setting `s` (see
    /// [`super::ChatSlots`]), and `grounded[slot]` whether that model takes the question and
    /// passages instead of a prompt (a generation endpoint: its requests then differ by
    /// question and passages alone, whatever the setting's format). With a `sink`, each distinct request is sent to it as soon as it
    /// is planned (waiting while the sink is full) and not kept: the executor makes the calls
    /// while the plan is built, and a million-run plan does not hold every prompt at once. A
    /// sink that asks for prefix order gets every request at once when the plan is complete,
    /// sorted ([`Plan::sent`]): a model server's prompt cache is worth holding the prompts for.
    /// A pair `coverage` leaves out (a setting an adaptive sweep dropped) is not planned: no
    /// run, no request. `sink` blocks: call this off the async runtime.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        questions: &[Question],
        corpora: &[Corpus],
        views: &[View],
        view_of: impl Fn(usize, usize) -> usize,
        settings: &[Setting],
        slots: &[u32],
        grounded: &[bool],
        prompt: &prompt::Prompt,
        coverage: &super::Coverage,
        sink: Option<&super::RequestSink>,
    ) -> Plan {
        let prompts = Prompts::new(questions, corpora, views, grounded, prompt);
        let mut distinct = Distinct::default();
        let mut requests = Vec::new();
        let mut batch = Batch::default();
        let mut runs = Vec::with_capacity(questions.len() * settings.len());
        for (s, setting) in settings.iter().enumerate() {
            let min_score = setting.min_score.to_f64();
            for q in (0..questions.len()).filter(|&q| coverage.runs(s, q)) {
                let v = view_of(q, s);
                let passages =
                    setting
                        .order
                        .apply(passing(views[v].top(setting.k), setting.k, min_score));
                let call = (!passages.is_empty()).then(|| {
                    // A generation endpoint is sent no prompt: the format does not split it.
                    let format = if prompts.takes_passages(slots[s]) {
                        prompt::Format::default()
                    } else {
                        setting.format
                    };
                    let recipe: Recipe = (
                        v,
                        passages.iter().map(|h| h.chunk).collect(),
                        format,
                        slots[s],
                    );
                    let (i, new) = distinct.call(recipe, &prompts);
                    if let Some(request) = new {
                        match sink {
                            Some(sink) if !sink.prefix_order => batch.add(sink, request),
                            _ => requests.push(request),
                        }
                    }
                    i
                });
                runs.push(PlannedRun {
                    question: q,
                    setting: s,
                    view: v,
                    passages,
                    call,
                });
            }
        }
        let mut sent = Vec::new();
        if let Some(sink) = sink {
            if sink.prefix_order {
                let (order, sorted) = super::order::sort(std::mem::take(&mut requests));
                sent = order;
                batch.requests = sorted;
            }
            batch.flush(sink);
        }
        Plan {
            runs,
            requests,
            distinct: distinct.recipes.len(),
            sent,
        }
    }
}

/// What requests are built from: the questions' views, the corpora (each chunk's text
/// squashed to one line once, not once per prompt it is sent in) and the prompt.
struct Prompts<'a> {
    questions: &'a [Question],
    corpora: &'a [Corpus],
    flat: Vec<Vec<Chunk>>,
    views: &'a [View],
    grounded: &'a [bool],
    prompt: &'a prompt::Prompt,
}

impl<'a> Prompts<'a> {
    fn new(
        questions: &'a [Question],
        corpora: &'a [Corpus],
        views: &'a [View],
        grounded: &'a [bool],
        prompt: &'a prompt::Prompt,
    ) -> Self {
        let flat = corpora
            .iter()
            .map(|c| {
                c.chunks
                    .iter()
                    .map(|chunk| Chunk {
                        text: squash(&chunk.text),
                        ..chunk.clone()
                    })
                    .collect()
            })
            .collect();
        Prompts {
            questions,
            corpora,
            flat,
            views,
            grounded,
            prompt,
        }
    }

    /// Whether the chat model in `slot` takes the question and passages instead of a prompt.
    fn takes_passages(&self, slot: u32) -> bool {
        self.grounded.get(slot as usize).copied().unwrap_or(false)
    }

    /// The request a recipe makes.
    fn build(&self, (v, chunks_of, format, slot): &Recipe) -> ChatRequest {
        let view = &self.views[*v];
        let corpus = self.questions[view.question].corpus;
        if self.takes_passages(*slot) {
            // As retrieved, line breaks kept: the endpoint formats passages itself.
            let hits = view
                .ranked
                .iter()
                .chain(view.by_k.iter().flat_map(|(_, h)| h));
            let score = |c: usize| hits.clone().find(|h| h.chunk == c).map_or(0.0, |h| h.score);
            let chunks = &self.corpora[corpus].chunks;
            return ChatRequest {
                grounded: Some(Grounded::of(
                    &view.text,
                    chunks_of.iter().map(|&c| (&chunks[c], score(c))),
                )),
                slot: *slot,
                ..ChatRequest::of(Vec::new())
            };
        }
        let chunks: Vec<&Chunk> = chunks_of.iter().map(|&c| &self.flat[corpus][c]).collect();
        ChatRequest {
            messages: self.prompt.build_squashed(&view.text, &chunks, *format),
            slot: *slot,
            ..ChatRequest::of(Vec::new())
        }
    }
}

/// The distinct requests planned so far, in two levels of deduplication: the recipe is cheap
/// to hash and avoids building the same prompt twice; the request's hash then catches equal
/// prompts of different recipes (the same question asked twice, say), each bucket checked for
/// equality by building its recipes again, so that no prompt is kept for the comparison.
#[derive(Default)]
struct Distinct {
    by_recipe: HashMap<Recipe, usize, Fast>,
    hasher: Fast,
    by_request: HashMap<u64, Vec<usize>, Fast>,
    /// The recipe of each distinct request, by plan index.
    recipes: Vec<Recipe>,
}

impl Distinct {
    /// The plan index of the request `recipe` makes, and the request when it is a new one.
    fn call(&mut self, recipe: Recipe, prompts: &Prompts) -> (usize, Option<ChatRequest>) {
        if let Some(&i) = self.by_recipe.get(&recipe) {
            return (i, None);
        }
        let request = prompts.build(&recipe);
        let bucket = self
            .by_request
            .entry(self.hasher.hash_one(&request))
            .or_default();
        let (i, new) = match bucket
            .iter()
            .find(|&&i| prompts.build(&self.recipes[i]) == request)
        {
            Some(&i) => (i, None),
            None => {
                bucket.push(self.recipes.len());
                self.recipes.push(recipe.clone());
                (self.recipes.len() - 1, Some(request))
            }
        };
        self.by_recipe.insert(recipe, i);
        (i, new)
    }
}

/// Requests on their way to the executor, sent a batch at a time: one hand-over per request
/// cost more than the in-process mock's call. Batches double from one request, so that the
/// first call starts at once, up to [`Batch::MAX`].
#[derive(Default)]
struct Batch {
    requests: Vec<ChatRequest>,
    limit: usize,
}

impl Batch {
    const MAX: usize = 64;

    fn add(&mut self, sink: &super::RequestSink, request: ChatRequest) {
        self.requests.push(request);
        if self.requests.len() >= self.limit.max(1) {
            self.limit = (self.limit * 2).clamp(1, Self::MAX);
            self.flush(sink);
        }
    }

    fn flush(&mut self, sink: &super::RequestSink) {
        if !self.requests.is_empty() {
            // A closed sink is an executor that has stopped; the plan is still wanted.
            let _ = sink.tx.blocking_send(std::mem::take(&mut self.requests));
        }
    }
}
