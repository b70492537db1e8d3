//! The planner: derive every setting's hits from one retrieval per question text, order them,
//! and collapse identical prompts into one call.

use std::collections::HashMap;
use std::hash::BuildHasher;

use super::Setting;
use crate::chat::ChatRequest;
use crate::corpus::Corpus;
use crate::evalset::Question;
use crate::prompt;
use crate::retrieve::{passing, Hit};

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
    pub requests: Vec<ChatRequest>,
}

impl Plan {
    /// `view_of(q, setting)` names the view a question uses under a setting's rewrite strategy
    /// (and retrieval variant); `slots[s]` is the chat model that answers setting `s` (see
    /// [`super::ChatSlots`]).
    pub fn new(
        questions: &[Question],
        corpora: &[Corpus],
        views: &[View],
        view_of: impl Fn(usize, &Setting) -> usize,
        settings: &[Setting],
        slots: &[u32],
        prompt: &prompt::Prompt,
    ) -> Plan {
        // Two levels of deduplication: (view, chunk ids in order, format) is cheap to hash and
        // avoids building the same prompt text twice; the request itself catches equal prompts
        // of different questions (the same question asked twice, say).
        let mut by_key: HashMap<(usize, Vec<usize>, prompt::Format, u32), usize> = HashMap::new();
        // Requests by their hash, each bucket checked for equality: a map keyed by the request
        // itself held a second copy of every prompt (400 MB at a million runs).
        let hasher = std::collections::hash_map::RandomState::new();
        let mut by_request: HashMap<u64, Vec<usize>> = HashMap::new();
        let mut requests = Vec::new();
        let mut runs = Vec::with_capacity(questions.len() * settings.len());
        for (s, setting) in settings.iter().enumerate() {
            let min_score = setting.min_score.to_f64();
            for (q, question) in questions.iter().enumerate() {
                let v = view_of(q, setting);
                let view = &views[v];
                let passages =
                    setting
                        .order
                        .apply(passing(view.top(setting.k), setting.k, min_score));
                let call = (!passages.is_empty()).then(|| {
                    let key = (
                        v,
                        passages.iter().map(|h| h.chunk).collect::<Vec<_>>(),
                        setting.format,
                        slots[s],
                    );
                    *by_key.entry(key).or_insert_with(|| {
                        let corpus = &corpora[question.corpus];
                        let chunks: Vec<_> =
                            passages.iter().map(|h| &corpus.chunks[h.chunk]).collect();
                        let request = ChatRequest {
                            messages: prompt.build(&view.text, &chunks, setting.format),
                            seed: None,
                            slot: slots[s],
                        };
                        let bucket = by_request.entry(hasher.hash_one(&request)).or_default();
                        match bucket.iter().find(|&&i| requests[i] == request) {
                            Some(&i) => i,
                            None => {
                                requests.push(request);
                                bucket.push(requests.len() - 1);
                                requests.len() - 1
                            }
                        }
                    })
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
        Plan { runs, requests }
    }
}
