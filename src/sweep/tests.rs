//! The planner's contract: a planned sweep equals evaluating every setting on its own.

use std::sync::Arc;

use proptest::prelude::*;

use super::*;
use crate::adapters::corpus::{chunk_markdown, Corpus};
use crate::adapters::embed::HashEmbedder;
use crate::adapters::evalset::{EvalSet, Expect, Question};
use crate::adapters::mock::MockModel;
use crate::adapters::prompt::{self, Format, Message, Order, RefusalMatch, Role, REFUSAL};
use crate::adapters::rewrite::{self, Rewrite};
use crate::adapters::search::passing;
use crate::vocab::dim::Dim;
use crate::vocab::grid::Decimal;

const VOCAB: &[&str] = &[
    "fee", "term", "laptop", "club", "prize", "team", "minutes", "refund", "pay", "room", "the",
    "how", "day", "loan", "it",
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
        prop::collection::btree_set(prop::sample::select(vec![Order::Score, Order::Edge]), 1..3),
        prop::collection::btree_set(
            prop::sample::select(vec![Format::Numbered, Format::Tagged]),
            1..3,
        ),
        prop::collection::btree_set(
            prop::sample::select(vec![Rewrite::None, Rewrite::Heuristic, Rewrite::Model]),
            1..4,
        ),
    )
        .prop_map(|(mins, ks, orders, formats, rewrites)| {
            Grid::new(
                mins.iter()
                    .map(|m| format!("0.{m}").parse::<Decimal>().unwrap())
                    .collect(),
                ks.into_iter().collect(),
            )
            .with(Dim::Order, orders)
            .with(Dim::Format, formats)
            .with(Dim::Rewrite, rewrites)
        })
}

/// A question for [`workspace`]: its words, whether it is answerable, the chunk (modulo their
/// count) that answers it, and the topic of an earlier user turn when it is a follow-up.
type Q = (Vec<&'static str>, bool, usize, Option<Vec<&'static str>>);

fn questions() -> impl Strategy<Value = Vec<Q>> {
    prop::collection::vec(
        (
            prop::collection::vec(prop::sample::select(VOCAB), 1..5),
            any::<bool>(),
            0usize..100,
            prop::option::of(prop::collection::vec(prop::sample::select(VOCAB), 1..4)),
        ),
        1..8,
    )
}

fn workspace(docs: Vec<String>, qs: Vec<Q>) -> Workspace {
    let chunks: Vec<_> = docs
        .iter()
        .enumerate()
        .flat_map(|(i, d)| chunk_markdown(&format!("f{i}.md"), d))
        .collect();
    let questions = qs
        .into_iter()
        .enumerate()
        .map(|(i, (words, answerable, source, topic))| Question {
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
            // A follow-up: the earlier user turn holds the topic.
            history: topic
                .map(|t| {
                    vec![Message {
                        role: Role::User,
                        content: format!("{}?", t.join(" ")),
                    }]
                })
                .unwrap_or_default(),
            attack: None,
            origin: None,
            corpus: 0,
        })
        .collect();
    Workspace {
        sets: vec![EvalSet {
            path: "t.yaml".into(),
            corpus_paths: vec![".".into()],
            questions,
            text: String::new(),
        }],
        corpora: vec![Corpus {
            root: ".".into(),
            roots: vec![".".into()],
            chunks,
        }]
        .into(),
    }
}

pub(crate) fn engine() -> Engine {
    Engine {
        embedder: Arc::new(HashEmbedder::new(64)),
        model: Arc::new(MockModel::default()),
        chat_variants: Vec::new(),
        retrieval: Vec::new(),
        judge: None,
        rules: Rules {
            refusal: REFUSAL.into(),
            refusal_match: RefusalMatch::Lenient,
            ..Rules::default()
        },
        concurrency: 3,
        progress: None,
        retriever: None,
        reranker: None,
        repeat: 1,
        coverage: Coverage::all(),
    }
}

/// The obvious implementation: every setting, every question, from scratch.
async fn naive(engine: &Engine, ws: &Workspace, grid: &Grid) -> Vec<Run> {
    let indexes = engine.index(&ws.corpora).await.unwrap();
    let questions: Vec<_> = ws.questions().cloned().collect();
    let mut runs = Vec::new();
    for (s, setting) in grid.settings().iter().enumerate() {
        for (qi, q) in questions.iter().enumerate() {
            let index = &indexes[q.corpus];
            let mut rewrite_usage = None;
            let text = match setting.rewrite {
                _ if q.history.is_empty() => q.question.clone(),
                Rewrite::None => q.question.clone(),
                Rewrite::Heuristic => rewrite::heuristic(&q.question, &q.history),
                Rewrite::Model => {
                    let r = engine
                        .model
                        .complete(&rewrite::request(&q.question, &q.history))
                        .await
                        .unwrap();
                    rewrite_usage = Some(r.usage);
                    rewrite::accept(&r.text, &q.question).unwrap_or_else(|_| q.question.clone())
                }
            };
            let v = engine
                .embedder
                .embed(std::slice::from_ref(&text))
                .await
                .unwrap()
                .remove(0);
            let top_k = index.search(&v, setting.k);
            let sent = setting
                .order
                .apply(passing(&top_k, setting.k, setting.min_score.to_f64()));
            let reply = if sent.is_empty() {
                None
            } else {
                let chunks: Vec<_> = sent.iter().map(|h| &index.corpus.chunks[h.chunk]).collect();
                let request = crate::adapters::chat::ChatRequest {
                    messages: prompt::build(&text, &chunks, REFUSAL, setting.format),
                    seed: None,
                    grounded: None,
                    slot: 0,
                    format: None,
                };
                Some(engine.model.complete(&request).await)
            };
            let view = View {
                question: qi,
                text,
                ranked: top_k,
                variant: 0,
                best_retrieval_score: None,
                by_k: Vec::new(),
            };
            let planned = PlannedRun {
                question: qi,
                setting: s,
                view: 0,
                passages: sent,
                call: None,
            };
            // Every reply but the exact sentence is graded on its own, when there is a judge.
            let judged = match (&engine.judge, &reply) {
                (Some(judge), Some(Ok(r)))
                    if engine.rules.refusal_tier(&r.text) != Some(RefusalTier::Exact) =>
                {
                    let chunks: Vec<_> = planned
                        .passages
                        .iter()
                        .map(|h| &index.corpus.chunks[h.chunk])
                        .collect();
                    let request = crate::adapters::judge::request(
                        &view.text,
                        &q.expect.answers,
                        &chunks,
                        &r.text,
                    );
                    let reply = judge.complete(&request).await;
                    Some(Judged {
                        usage: reply.as_ref().map(|r| r.usage).unwrap_or_default(),
                        grade: reply.and_then(|r| crate::adapters::judge::parse(&r.text)),
                    })
                }
                _ => None,
            };
            let mut run = build_run(
                &planned,
                q,
                &index.corpus,
                &view,
                setting.k,
                reply.as_ref(),
                &engine.rules,
                judged.as_ref(),
            );
            if let Some(u) = rewrite_usage {
                run.model_calls += 1;
                run.prompt_tokens += u.prompt_tokens;
                run.cached_prompt_tokens += u.cached_prompt_tokens;
                run.completion_tokens += u.completion_tokens;
            }
            runs.push(run);
        }
    }
    runs
}

/// Runs without what an independent evaluation cannot know: timings and call-log indices.
fn without_latency(mut runs: Vec<Run>) -> Vec<Run> {
    for r in &mut runs {
        r.latency = None;
        r.call = None;
        r.rewrite_call = None;
        r.judge_call = None;
    }
    runs
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn planned_grades_equal_independent_grading(
        docs in prop::collection::vec(document(), 1..4),
        qs in questions(),
        grid in grid(),
    ) {
        // A paraphrasing model, so that replies take every tier, and the mock judge.
        let ws = workspace(docs, qs);
        let mut engine = engine();
        engine.model = Arc::new(MockModel::default().paraphrasing(true));
        engine.judge = Some(Arc::new(MockModel::default()));
        engine.rules.patterns =
            crate::adapters::prompt::RefusalPatterns::new(&["do not mention".into()]).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let planned = rt.block_on(engine.sweep(&ws, &grid)).unwrap();
        let expected = rt.block_on(naive(&engine, &ws, &grid));
        prop_assert_eq!(without_latency(planned.runs.clone()), without_latency(expected));
        let graded = planned.runs.iter().filter(|r| r.judge_calls > 0).count();
        prop_assert!(planned.calls.judge_calls <= graded);
    }

    #[test]
    fn planned_sweep_equals_independent_evaluation(
        docs in prop::collection::vec(document(), 1..4),
        qs in questions(),
        grid in grid(),
    ) {
        let ws = workspace(docs, qs);
        let engine = engine();
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let planned = rt.block_on(engine.sweep(&ws, &grid)).unwrap();
        let expected = rt.block_on(naive(&engine, &ws, &grid));
        prop_assert_eq!(planned.runs.len(), grid.settings().len() * ws.questions().count());
        prop_assert_eq!(without_latency(planned.runs.clone()), without_latency(expected));
        // Every run that needed the model names the logged call whose reply it shows.
        for run in &planned.runs {
            let logged = run.call.map(|c| planned.call_log[c as usize].reply.as_str());
            prop_assert_eq!(logged, (!run.passages.is_empty()).then_some(&*run.answer));
        }
        // One call per distinct prompt, and never more calls than runs that need one.
        prop_assert!(planned.calls.distinct_prompts <= planned.calls.runs_with_call);
    }
}

#[test]
fn identical_prompts_collapse_into_one_call() {
    let ws = workspace(
        vec!["## fee\nfee term pay.\n\n## laptop\nlaptop loan day.\n".into()],
        vec![
            (vec!["fee", "term"], true, 0, None),
            (vec!["fee", "term"], false, 0, None),
        ],
    );
    // k=1..4 all send the single matching passage at minScore 0.5 (the other scores at most 0.41).
    let grid = Grid::new(vec!["0.5".parse().unwrap()], vec![1, 2, 3, 4]);
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let sweep = rt.block_on(engine().sweep(&ws, &grid)).unwrap();
    assert_eq!(sweep.calls.runs_with_call, 8);
    assert_eq!(
        sweep.calls.distinct_prompts, 1,
        "same question text, same passages: one prompt"
    );
    assert_eq!(
        sweep.calls.question_embeddings, 1,
        "one embedding per distinct text"
    );
}

#[test]
fn citations_follow_the_order_sent() {
    // Three chunks ranked A > B > C for the question (B is long, so its cosine is lower), but
    // B's sentence shares the most words, so the mock answers from B.
    let ws = workspace(
        vec!["## a\nfee term pay.\n\n## b\nfee term pay room laptop club prize team minutes day loan.\n\n## c\nfee laptop.\n".into()],
        vec![(vec!["fee", "term", "pay", "room"], true, 1, None)],
    );
    let grid = Grid::new(vec!["0".parse().unwrap()], vec![3])
        .with(Dim::Order, [Order::Score, Order::Edge]);
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let sweep = rt.block_on(engine().sweep(&ws, &grid)).unwrap();
    let ids = |run: &Run| -> Vec<String> {
        run.passages
            .iter()
            .map(|h| ws.corpora[0].chunks[h.chunk].id.clone())
            .collect()
    };
    let (by_score, edge) = (&sweep.runs[0], &sweep.runs[1]);
    let best = ids(by_score);
    assert_eq!(
        ids(edge),
        [best[0].clone(), best[2].clone(), best[1].clone()],
        "edge: A C B"
    );
    // The mock cites the passage that holds the sentence, by its number in *this* prompt...
    let b = ws.corpora[0]
        .chunks
        .iter()
        .find(|c| c.heading == "b")
        .unwrap()
        .id
        .clone();
    let n_score = best.iter().position(|id| *id == b).unwrap() + 1;
    let n_edge = ids(edge).iter().position(|id| *id == b).unwrap() + 1;
    assert_ne!(n_score, n_edge, "the reorder moves the answer's passage");
    assert!(
        by_score.answer.ends_with(&format!("[{n_score}]")),
        "{}",
        by_score.answer
    );
    assert!(
        edge.answer.ends_with(&format!("[{n_edge}]")),
        "{}",
        edge.answer
    );
    // ...and both map back to the same chunk.
    assert_eq!(by_score.verdict.cited, std::slice::from_ref(&b));
    assert_eq!(edge.verdict.cited, [b]);
}
