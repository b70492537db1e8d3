//! The planner's contract: a planned sweep equals evaluating every setting on its own.

use std::sync::Arc;

use proptest::prelude::*;

use super::*;
use crate::chat::MockModel;
use crate::corpus::{chunk_markdown, Corpus};
use crate::embed::HashEmbedder;
use crate::evalset::{EvalSet, Expect, Question};
use crate::prompt::{self, RefusalMatch, REFUSAL};
use crate::retrieve::passing;
use crate::sweep::grid::Decimal;

const VOCAB: &[&str] = &[
    "fee", "term", "laptop", "club", "prize", "team", "minutes", "refund", "pay", "room", "the",
    "how", "day", "loan",
];

fn sentence() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(VOCAB), 1..7)
        .prop_map(|w| format!("{}.", w.join(" ")))
}

fn document() -> impl Strategy<Value = String> {
    prop::collection::vec(
        (
            prop::sample::select(VOCAB),
            prop::collection::vec(sentence(), 1..4),
        ),
        1..6,
    )
    .prop_map(|sections| {
        sections
            .iter()
            .enumerate()
            .map(|(i, (h, s))| format!("## {h} {i}\n{}\n\n", s.join(" ")))
            .collect()
    })
}

fn grid() -> impl Strategy<Value = Grid> {
    (
        prop::collection::btree_set(0u8..9, 1..5),
        prop::collection::btree_set(1usize..9, 1..4),
    )
        .prop_map(|(mins, ks)| Grid {
            min_scores: mins
                .iter()
                .map(|m| format!("0.{m}").parse::<Decimal>().unwrap())
                .collect(),
            ks: ks.into_iter().collect(),
        })
}

fn workspace(docs: Vec<String>, qs: Vec<(Vec<&'static str>, bool, usize)>) -> Workspace {
    let chunks: Vec<_> = docs
        .iter()
        .enumerate()
        .flat_map(|(i, d)| chunk_markdown(&format!("f{i}.md"), d))
        .collect();
    let questions = qs
        .into_iter()
        .enumerate()
        .map(|(i, (words, answerable, source))| Question {
            id: format!("q{i}"),
            question: format!("{}?", words.join(" ")),
            answerable,
            expect: if answerable {
                Expect {
                    sources: vec![chunks[source % chunks.len()].label()],
                    answers: vec![words[0].to_string()],
                }
            } else {
                Expect::default()
            },
            tags: vec![],
            history: vec![],
            corpus: 0,
        })
        .collect();
    Workspace {
        sets: vec![EvalSet {
            path: "t.yaml".into(),
            corpus_path: ".".into(),
            questions,
            text: String::new(),
        }],
        corpora: vec![Corpus {
            root: ".".into(),
            chunks,
        }],
    }
}

fn engine() -> Engine {
    Engine {
        embedder: Arc::new(HashEmbedder::new(64)),
        model: Arc::new(MockModel::default()),
        rules: Rules {
            refusal: REFUSAL.into(),
            refusal_match: RefusalMatch::Lenient,
        },
        concurrency: 3,
        progress: None,
    }
}

/// The obvious implementation: every setting, every question, from scratch.
async fn naive(engine: &Engine, ws: &Workspace, grid: &Grid) -> Vec<Run> {
    let indexes = engine.index(ws).await.unwrap();
    let questions: Vec<_> = ws.questions().cloned().collect();
    let mut runs = Vec::new();
    for (s, setting) in grid.settings().iter().enumerate() {
        for (qi, q) in questions.iter().enumerate() {
            let index = &indexes[q.corpus];
            let v = engine
                .embedder
                .embed(std::slice::from_ref(&q.question))
                .await
                .unwrap()
                .remove(0);
            let top_k = index.search(&v, setting.k);
            let sent = passing(&top_k, setting.k, setting.min_score.to_f64()).to_vec();
            let reply = if sent.is_empty() {
                None
            } else {
                let chunks: Vec<_> = sent.iter().map(|h| &index.corpus.chunks[h.chunk]).collect();
                let request = crate::chat::ChatRequest {
                    messages: prompt::build(&q.question, &chunks, REFUSAL),
                };
                Some(engine.model.complete(&request).await)
            };
            let best = index.search(&v, 1);
            let planned = PlannedRun {
                question: qi,
                setting: s,
                passages: sent,
                call: None,
            };
            runs.push(build_run(
                &planned,
                q,
                &index.corpus,
                &best,
                &top_k,
                reply.as_ref(),
                &engine.rules,
            ));
        }
    }
    runs
}

fn without_latency(mut runs: Vec<Run>) -> Vec<Run> {
    for r in &mut runs {
        r.latency = None;
    }
    runs
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn planned_sweep_equals_independent_evaluation(
        docs in prop::collection::vec(document(), 1..4),
        qs in prop::collection::vec(
            (prop::collection::vec(prop::sample::select(VOCAB), 1..5), any::<bool>(), 0usize..100),
            1..8,
        ),
        grid in grid(),
    ) {
        let ws = workspace(docs, qs);
        let engine = engine();
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let planned = rt.block_on(engine.sweep(&ws, &grid)).unwrap();
        let expected = rt.block_on(naive(&engine, &ws, &grid));
        prop_assert_eq!(planned.runs.len(), grid.settings().len() * ws.questions().count());
        prop_assert_eq!(without_latency(planned.runs.clone()), without_latency(expected));
        // One call per distinct prompt, and never more calls than runs that need one.
        prop_assert!(planned.calls.distinct_prompts <= planned.calls.runs_with_call);
    }
}

#[test]
fn identical_prompts_collapse_into_one_call() {
    let ws = workspace(
        vec!["## fee\nfee term pay.\n\n## laptop\nlaptop loan day.\n".into()],
        vec![
            (vec!["fee", "term"], true, 0),
            (vec!["fee", "term"], false, 0),
        ],
    );
    // k=1..4 all send the single matching passage at minScore 0.5 (the other scores at most 0.41).
    let grid = Grid {
        min_scores: vec!["0.5".parse().unwrap()],
        ks: vec![1, 2, 3, 4],
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let sweep = rt.block_on(engine().sweep(&ws, &grid)).unwrap();
    assert_eq!(sweep.calls.runs_with_call, 8);
    assert_eq!(
        sweep.calls.distinct_prompts, 1,
        "same question text, same passages: one prompt"
    );
    assert_eq!(sweep.calls.question_embeddings, 2);
}
