//! A small hand-built [`Results`] for the exporters' snapshot tests: two answerable questions and
//! one unanswerable over a 2 x 2 grid, with every outcome the writers must show (an answer, an
//! answer that misses the expected text and cites another source, an invalid citation, a false
//! refusal by retrieval and by threshold, an unwanted answer, early refusals).
//!
//! Runs go through the real `build_run` (and so `classify`) from chunks, hits and replies written
//! here, so the fixture cannot hold a verdict the pipeline would never give.

use std::time::Duration;

use super::{Meta, Results, SetMeta};
use crate::adapters::chat::{CallError, ChatReply, Usage};
use crate::adapters::classify::Rules;
use crate::adapters::corpus::{chunk_markdown, Corpus};
use crate::adapters::evalset::{Expect, Question};
use crate::adapters::prompt::{RefusalMatch, REFUSAL};
use crate::adapters::search::Hit;
use crate::analysis::insight::config::RecommendConfig;
use crate::analysis::stats::{per_setting, Pricing};
use crate::output::record::{CallRecord, CallRole};
use crate::sweep::{build_run, CallLog, CallStats, PlannedRun, Run, Setting, View};

/// Chunks: 0 `a.md > Fee`, 1 `a.md > Refunds`, 2 `b.md > Other`.
fn corpus() -> Corpus {
    let mut chunks = chunk_markdown(
        "a.md",
        "# Fee\nThe fee is ten dollars.\n# Refunds\nHalf back in month one.\n",
    );
    chunks.extend(chunk_markdown(
        "b.md",
        "# Other\nThe club <b>meets</b> on Saturdays.\n",
    ));
    Corpus {
        root: "docs".into(),
        roots: vec!["docs".into()],
        chunks,
    }
}

fn question(id: &str, text: &str, source: Option<(&str, &str)>) -> Question {
    Question {
        id: id.into(),
        question: text.into(),
        answerable: source.is_some(),
        expect: source
            .map(|(s, a)| Expect {
                sources: vec![s.into()],
                answers: vec![a.into()],
            })
            .unwrap_or_default(),
        tags: vec![],
        history: vec![],
        attack: None,
        origin: None,
        corpus: 0,
    }
}

fn hit(chunk: usize, score: f64) -> Hit {
    Hit { chunk, score }
}

/// The one retrieval of each question (k = 2), best first.
fn ranked() -> [Vec<Hit>; 3] {
    [
        vec![hit(0, 0.5), hit(2, 0.2)],
        vec![hit(2, 0.3), hit(1, 0.25)],
        vec![hit(2, 0.35), hit(0, 0.2)],
    ]
}

/// The reply of question `q` at setting `s` (`None`: no passage passed), and its prompt tokens.
fn reply(q: usize, s: usize) -> Option<(&'static str, u64)> {
    match (q, s) {
        (0, 0) | (0, 2) | (0, 3) => Some(("The fee is ten dollars. [1]", 100)),
        (0, 1) => Some(("The fee is ten dollars. [1] [3]", 150)),
        (1, 0) => Some((REFUSAL, 100)),
        (1, 1) => Some(("The club meets on Saturdays. [1]", 150)),
        (2, 0) => Some(("The club <b>meets</b> on Saturdays. [1]", 100)),
        (2, 1) => Some(("The club meets on Saturdays. [1]", 150)),
        _ => None,
    }
}

/// The fixture, with its insight computed under the default policy.
pub fn results() -> Results {
    results_with(&RecommendConfig::default())
}

/// The fixture under `policy`.
pub fn results_with(policy: &RecommendConfig) -> Results {
    let questions = questions();
    let settings: Vec<Setting> = [("0.2", 1), ("0.2", 2), ("0.4", 1), ("0.4", 2)]
        .iter()
        .map(|&(m, k)| Setting::new(m.parse().expect("a decimal"), k))
        .collect();
    let corpus = corpus();
    let (runs, call_log) = runs(&corpus, &questions, &settings);
    let pricing = Pricing {
        prompt_per_million: 0.15,
        cached_prompt_per_million: Some(0.075),
        completion_per_million: 0.6,
        ..Pricing::default()
    };
    let stats = per_setting(&runs, &questions, settings.len(), &pricing);
    let calls = CallStats::of(&call_log, &runs, 3);
    Results {
        meta: meta(policy, pricing),
        chunk_ids: vec![corpus.chunks.iter().map(|c| c.id.clone()).collect()],
        chunk_labels: vec![corpus.chunks.iter().map(ToString::to_string).collect()],
        chunk_texts: vec![corpus
            .chunks
            .iter()
            .map(|c| crate::adapters::corpus::squash(&c.text))
            .collect()],
        expected_scores: vec![Some(0.5), Some(0.25), None],
        expected_by_retrieval: Vec::new(),
        questions,
        settings,
        stats,
        runs,
        calls,
        call_log,
        corpora: vec!["docs".into()],
        shard: None,
        positions: vec![0, 1, 2],
        question_set: vec![0, 0, 0],
        flagged: vec![Default::default()],
        insight: Default::default(),
        setting_text: Default::default(),
        tag_stats: Default::default(),
    }
    .with_insight(policy)
}

/// The fixture as an adaptive sweep that dropped setting 1 (`min_score=0.2,k=2`) after the
/// questions `fee` and `vp` leaves it: it has no run of `refund`.
pub fn dropped() -> Results {
    let mut r = results();
    let at = |run: &Run| (run.setting, run.question) == (1, 1);
    // Its call was never made: out of the log, which keeps the order of the others.
    let gone = r.runs.iter().find(|run| at(run)).and_then(|run| run.call);
    r.runs.retain(|run| !at(run));
    if let Some(c) = gone {
        r.call_log.shift_remove_index(c as usize);
        for run in &mut r.runs {
            run.call = run.call.map(|x| if x > c { x - 1 } else { x });
        }
    }
    r.stats = per_setting(&r.runs, &r.questions, r.settings.len(), &r.meta.pricing);
    r.calls = CallStats::of(&r.call_log, &r.runs, 3);
    r.tag_stats = Default::default();
    r.with_insight(&RecommendConfig::default())
}

/// Two answerable questions and one the corpus does not answer.
fn questions() -> Vec<Question> {
    vec![
        question(
            "fee",
            "How much is the fee?",
            Some(("a.md#Fee", "ten dollars")),
        ),
        question(
            "refund",
            "Can I get a refund?",
            Some(("a.md#Refunds", "half")),
        ),
        question("vp", "Who is the vice president?", None),
    ]
}

/// Every run, setting-major, and the call log: one call per run that needs one, so that each
/// keeps its own latency.
fn runs(corpus: &Corpus, questions: &[Question], settings: &[Setting]) -> (Vec<Run>, CallLog) {
    let rules = Rules {
        refusal: REFUSAL.into(),
        refusal_match: RefusalMatch::Lenient,
        ..Rules::default()
    };
    let ranked = ranked();
    let mut runs: Vec<Run> = Vec::new();
    let mut call_log = CallLog::new();
    for (s, setting) in settings.iter().enumerate() {
        for (q, question) in questions.iter().enumerate() {
            let passages: Vec<Hit> =
                crate::adapters::search::passing(&ranked[q], setting.k, setting.min_score.to_f64())
                    .to_vec();
            let answer = chat_reply(q, s, setting);
            assert_eq!(
                answer.is_some(),
                !passages.is_empty(),
                "fixture reply for q{q} s{s}"
            );
            let planned = PlannedRun {
                question: q,
                setting: s,
                view: q,
                passages,
                call: None,
            };
            let view = View {
                question: q,
                text: question.question.clone(),
                ranked: ranked[q].clone(),
                variant: 0,
                best_retrieval_score: None,
                by_k: Vec::new(),
            };
            let mut run = build_run(
                &planned,
                question,
                corpus,
                &view,
                setting.k,
                answer.as_ref(),
                &rules,
                None,
            );
            if let Some(Ok(reply)) = &answer {
                let (i, _) =
                    call_log.insert_full(format!("{:016x}", s * 10 + q), call_record(reply));
                run.call = Some(i as u32);
            }
            runs.push(run);
        }
    }
    (runs, call_log)
}

/// The model's reply to question `q` at setting `s`, when it is asked.
fn chat_reply(q: usize, s: usize, setting: &Setting) -> Option<Result<ChatReply, CallError>> {
    reply(q, s).map(|(text, prompt_tokens)| {
        Ok(ChatReply {
            text: text.into(),
            usage: Usage {
                prompt_tokens,
                completion_tokens: 10,
                // As if a server had its prompt cache warm at the k=2 settings.
                cached_prompt_tokens: if setting.k == 2 { prompt_tokens / 2 } else { 0 },
                estimated: false,
            },
            latency: Duration::from_millis(20 + 10 * s as u64),
            ttft: None,
            cached: false,
            batch: false,
        })
    })
}

fn call_record(reply: &ChatReply) -> CallRecord {
    CallRecord {
        role: CallRole::Answer,
        reply: reply.text.clone(),
        usage: reply.usage,
        latency_ms: Some(crate::output::record::to_ms(reply.latency)),
        ttft_ms: None,
        error: None,
        cached: false,
        repeat: 0,
        batch: false,
    }
}

fn meta(policy: &RecommendConfig, pricing: Pricing) -> Meta {
    Meta {
        identity: crate::results::identity::RunIdentity {
            tool_version: "0.0.0-test".into(),
            digest: "sha256:0000".into(),
            config: crate::results::identity::EffectiveConfig::new(&Default::default()),
        },
        embedder: "hash-1024".into(),
        model: "mock".into(),
        models: Default::default(),
        embedders: Default::default(),
        judge: None,
        refusal: REFUSAL.into(),
        strict_refusal: false,
        currency: "USD".into(),
        pricing,
        policy: policy.clone(),
        evalsets: vec![SetMeta {
            path: "set.yaml".into(),
            corpus: "docs".into(),
            answerable: 2,
            unanswerable: 1,
            digest: "sha256:1111".into(),
            corpus_digest: "sha256:2222".into(),
        }],
    }
}

/// Results with one setting `min_score=0.2,k=4` and the given (id, answerable, outcome,
/// answer_match) runs, each a copy of the fixture's first run (an answer citing its expected
/// source, 100 prompt tokens); an answer is wrong when it misses its expected text, as without
/// a judge. Not yet written: see [`written`].
pub fn unwritten(runs: &[(&str, bool, &str, Option<bool>)]) -> Results {
    let mut r = results();
    let (question, run) = (r.questions[0].clone(), r.runs[0].clone());
    r.settings = vec![Setting::new("0.2".parse().unwrap(), 4)];
    r.questions = runs
        .iter()
        .map(
            |&(id, answerable, _, _)| crate::adapters::evalset::Question {
                id: id.into(),
                answerable,
                ..question.clone()
            },
        )
        .collect();
    r.runs = runs
        .iter()
        .enumerate()
        .map(|(q, &(_, _, outcome, answer_match))| {
            let mut run = run.clone();
            run.question = q;
            run.verdict.outcome = serde_json::from_value(serde_json::json!(outcome)).unwrap();
            run.verdict.answer_match = answer_match;
            run.verdict.wrong_answer = answer_match.filter(|_| outcome == "answer").map(|m| !m);
            run
        })
        .collect();
    let n = r.questions.len();
    (r.positions, r.question_set, r.expected_scores) =
        ((0..n).collect(), vec![0; n], vec![None; n]);
    r.stats = vec![crate::analysis::stats::aggregate(
        &r.runs,
        &r.questions,
        &r.meta.pricing,
    )];
    r.setting_text = Default::default();
    r.tag_stats = Default::default();
    r.with_insight(&Default::default())
}

/// `r` as the gate reads it: written as results.json by the sweep's writer, read back through
/// the record (statistics and insight computed afresh).
pub fn written(r: &Results) -> Results {
    let mut out = Vec::new();
    crate::output::record::stream::write(r, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    crate::output::record::Record::parse(std::path::Path::new("r.json"), &text)
        .unwrap()
        .into_results()
        .unwrap()
}

/// [`unwritten`] runs as the gate and `compare` read them: [`written`].
pub fn doc(runs: &[(&str, bool, &str, Option<bool>)]) -> Results {
    written(&unwritten(runs))
}
