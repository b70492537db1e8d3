//! The record round-trips and says exactly what is wrong with a file it cannot use.

use std::path::Path;

use super::*;
use crate::output::report::fixture;

fn bytes(record: &Record) -> String {
    let mut out = Vec::new();
    record.write(&mut out).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn write_read_write_gives_the_same_bytes() {
    let first = bytes(&Record::of(&fixture::results()));
    let read = Record::parse(Path::new("r.json"), &first).unwrap();
    assert_eq!(read.summary, None, "the summary is recomputed, never read");
    let results = read.into_results().unwrap();
    let second = bytes(&Record::of(&results));
    assert_eq!(first, second);
}

#[test]
fn reading_back_gives_the_reports_the_same_results() {
    let r = fixture::results();
    let back = Record::parse(Path::new("r.json"), &bytes(&Record::of(&r)))
        .unwrap()
        .into_results()
        .unwrap();
    assert_eq!(back.runs, r.runs);
    assert_eq!(back.stats, r.stats);
    assert_eq!(back.questions, r.questions);
    assert_eq!(back.settings, r.settings);
    assert_eq!(back.calls, r.calls);
    assert_eq!(back.insight, r.insight);
    assert_eq!(back.expected_scores, r.expected_scores);
    assert_eq!(back.chunk_labels, r.chunk_labels);
    assert_eq!(back.chunk_texts, r.chunk_texts);
}

#[test]
fn a_dropped_setting_round_trips_with_the_runs_it_had() {
    let r = fixture::dropped();
    let text = bytes(&Record::of(&r));
    assert!(
        text.contains("  \"dropped\": {\n    \"min_score=0.2,k=2\": {\"answerable\":1,\"unanswerable\":1}\n  },\n"),
        "{text}"
    );
    let back = Record::parse(Path::new("r.json"), &text)
        .unwrap()
        .into_results()
        .unwrap();
    assert_eq!(back.runs, r.runs);
    assert_eq!(back.runs.len(), 11);
    assert_eq!(back.dropped_after(1), Some([1, 1]));
    assert_eq!(back.dropped_after(0), None);
    assert_eq!(back.stats, r.stats);
    assert_eq!(back.insight, r.insight);
    assert_eq!(bytes(&Record::of(&back)), text);
    // Without `dropped`, a missing run is still a broken file.
    let mut record = Record::parse(Path::new("r.json"), &text).unwrap();
    record.dropped.clear();
    assert_eq!(
        record.into_results().unwrap_err(),
        "question `refund` has no run at setting `min_score=0.2,k=2`"
    );
    // A plain sweep's record has no `dropped`.
    assert!(!bytes(&Record::of(&fixture::results())).contains("\"dropped\""));
}

#[test]
fn runs_carry_ids_and_the_answer_text_is_written_once() {
    let text = bytes(&Record::of(&fixture::results()));
    // One line per run, no question text or answer in it.
    let runs: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("    {\"question\":"))
        .collect();
    assert_eq!(runs.len(), 12);
    assert_eq!(
        runs[1],
        r#"    {"question":"refund","setting":"min_score=0.2,k=1","call":"0000000000000001","passages":[["b.md#0",0.3]],"outcome":"false_refusal","refusal":"model","stage":"retrieval","expected_in_top_k":false,"expected_in_prompt":false,"expected_recall":0.0,"refusal_match":"exact"},"#
    );
    assert_eq!(text.matches("The fee is ten dollars. [1]\"").count(), 3);
}

#[test]
fn a_first_version_file_says_how_to_refresh_it() {
    let err = Record::parse(
        Path::new("reports/baseline.json"),
        r#"{"schema": "rageval.results/1", "runs": []}"#,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "`reports/baseline.json` has schema `rageval.results/1`, written by an older rageval: rerun `rageval sweep`, and refresh a baseline with `rageval gate --update-baseline --baseline reports/baseline.json`"
    );
    let err = Record::parse(Path::new("r.json"), r#"{"schema": "rageval.results/3"}"#).unwrap_err();
    assert_eq!(
        err.to_string(),
        "`r.json` has schema `rageval.results/3`, but this rageval reads `rageval.results/2`; rerun the sweep with this version, or read it with the rageval that wrote it"
    );
}

/// The error reading `good` with its first `from` replaced by `to`.
fn refused(good: &str, from: &str, to: &str) -> String {
    assert!(good.contains(from), "{from}");
    Record::parse(Path::new("r.json"), &good.replacen(from, to, 1))
        .unwrap_err()
        .to_string()
}

#[test]
fn inconsistent_records_name_the_problem() {
    let good = bytes(&Record::of(&fixture::results()));
    let check = |from: &str, to: &str| refused(&good, from, to);
    assert_eq!(
        check(r#""question":"refund""#, r#""question":"nope""#),
        "`r.json` is inconsistent: a run names unknown question `nope`"
    );
    assert_eq!(
        check(r#""passages":[["b.md#0""#, r#""passages":[["b.md#9""#),
        "`r.json` is inconsistent: a run of question `refund` names unknown chunk `b.md#9`"
    );
    assert_eq!(
        check(r#""call":"0000000000000001""#, r#""call":"ffff""#),
        "`r.json` is inconsistent: a run names unknown call `ffff`"
    );
    assert_eq!(
        check(
            r#"{"question":"refund","setting":"min_score=0.2,k=1""#,
            r#"{"question":"refund","setting":"min_score=0.2,k=2""#
        ),
        "`r.json` is inconsistent: question `refund` has two runs at setting `min_score=0.2,k=2`"
    );
    // A run left out is found when the record is turned into results.
    let line = good
        .lines()
        .find(|l| l.starts_with(r#"    {"question":"refund","setting":"min_score=0.2,k=1""#))
        .unwrap();
    let err = Record::parse(
        Path::new("r.json"),
        &good.replacen(&format!("{line}\n"), "", 1),
    )
    .unwrap()
    .into_results()
    .unwrap_err();
    assert_eq!(
        err,
        "question `refund` has no run at setting `min_score=0.2,k=1`"
    );
}

/// A record is validated on read (issue 23 item 7): an outcome its question's class cannot
/// have, times that are no duration of a call, and token counts whose total overflows are each
/// refused, naming the run or call and the field.
#[test]
fn records_that_no_sweep_writes_are_refused_naming_the_field() {
    let good = bytes(&Record::of(&fixture::results()));
    let check = |from: &str, to: &str| refused(&good, from, to);
    let run = r#"{"question":"refund","setting":"min_score=0.2,k=1","call":"0000000000000001","passages":[["b.md#0",0.3]],"outcome":"false_refusal""#;
    assert_eq!(
        check(run, &run.replace("false_refusal", "unwanted_answer")),
        "`r.json` is inconsistent: the run of question `refund` at setting `min_score=0.2,k=1`: `outcome` is `unwanted_answer`, but the question is answerable, whose runs are `answer`, `false_refusal` or `error`"
    );
    let vp = r#"{"question":"vp","setting":"min_score=0.2,k=1","call":"0000000000000002","passages":[["b.md#0",0.35]],"outcome":"unwanted_answer""#;
    for outcome in ["false_refusal", "answer"] {
        assert_eq!(
            check(vp, &vp.replace("unwanted_answer", outcome)),
            format!("`r.json` is inconsistent: the run of question `vp` at setting `min_score=0.2,k=1`: `outcome` is `{outcome}`, but the question is unanswerable, whose runs are `early_refusal`, `model_refusal`, `unwanted_answer` or `error`")
        );
    }
    let call = good
        .lines()
        .find(|l| l.contains(r#""latency_ms":"#))
        .unwrap();
    let id = call.split('"').nth(1).unwrap();
    let latency = call.split(r#""latency_ms":"#).nth(1).unwrap();
    let latency = &latency[..latency.find(',').unwrap()];
    for (bad, shown) in [
        ("-5", "-5"),
        ("1e300", "1e300"),
        ("10000000001", "10000000001"),
    ] {
        assert_eq!(
            check(
                &format!(r#""latency_ms":{latency}"#),
                &format!(r#""latency_ms":{bad}"#)
            ),
            format!("`r.json` is inconsistent: call `{id}`: `latency_ms` is {shown}, not a duration from 0 to 1e10 ms")
        );
    }
    // One count of u64::MAX and any other makes the total overflow.
    assert_eq!(
        check(
            r#""usage":{"prompt_tokens":100"#,
            &format!(r#""usage":{{"prompt_tokens":{}"#, u64::MAX)
        ),
        "`r.json` is inconsistent: `usage.prompt_tokens` of the calls the runs name adds up past the largest count, 18446744073709551615; call `0000000000000000` alone has 18446744073709551615"
    );
    // A server cannot have reused more of a prompt than the prompt: the cost would be negative.
    assert_eq!(
        check(
            r#""prompt_tokens":150,"completion_tokens":10,"cached_prompt_tokens":75"#,
            r#""prompt_tokens":150,"completion_tokens":10,"cached_prompt_tokens":151"#
        ),
        "`r.json` is inconsistent: call `000000000000000a`: `usage.cached_prompt_tokens` is 151, more than its `prompt_tokens`, 150"
    );
}

#[test]
fn the_committed_schema_is_the_generated_one() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/results.schema.json");
    let generated = Record::json_schema();
    if std::env::var_os("UPDATE_SCHEMA").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "docs/results.schema.json is stale: regenerate it with `UPDATE_SCHEMA=1 cargo test --lib record::`"
    );
}

#[test]
fn scores_round_trip_to_the_last_bit() {
    // Floats whose shortest form has 17 digits: serde_json's default parser may miss them by
    // one bit; the record reads them with `float_roundtrip`.
    let mut r = fixture::results();
    r.runs[0].passages[0].score = 0.223_606_792_420_072_86;
    r.expected_scores[1] = Some(0.195_180_016_008_302_81);
    let r = r.with_insight(&crate::analysis::insight::config::RecommendConfig::default());
    let first = bytes(&Record::of(&r));
    let back = Record::parse(Path::new("r.json"), &first)
        .unwrap()
        .into_results()
        .unwrap();
    assert_eq!(back.runs[0].passages[0].score, 0.223_606_792_420_072_86);
    assert_eq!(back.expected_scores[1], Some(0.195_180_016_008_302_81));
    assert_eq!(bytes(&Record::of(&back)), first);
}

/// The fixture with a judge: runs 0 and 2 of setting 0 and the fee question's runs at setting
/// 2 and 3 graded, the last two by one shared call, one call's reply not the rubric's JSON.
fn judged() -> crate::output::report::Results {
    use crate::adapters::chat::{CallError, ErrorKind, Usage};
    let mut r = fixture::results();
    let call = |reply: &str, prompt_tokens, error: Option<CallError>| CallRecord {
        role: CallRole::Judge,
        reply: reply.into(),
        usage: Usage {
            prompt_tokens,
            completion_tokens: 7,
            cached_prompt_tokens: 0,
            estimated: false,
        },
        latency_ms: Some(3.0),
        ttft_ms: None,
        error,
        cached: prompt_tokens == 300,
        repeat: 0,
        batch: false,
    };
    let grade = r#"{"refused": false, "correct": true, "supported": true}"#;
    let malformed = CallError {
        kind: ErrorKind::Malformed,
        message: "the judge's reply is not the rubric's JSON".into(),
        deferred: false,
    };
    let graded = [
        (0, call(grade, 200, None)),
        (2, call("I cannot tell.", 100, Some(malformed))),
        (6, call(grade, 300, None)),
    ];
    for (run, record) in graded {
        let (i, _) = r.call_log.insert_full(format!("j{run:015}"), record);
        r.runs[run].judge_call = Some(i as u32);
    }
    r.runs[9].judge_call = r.runs[6].judge_call;
    for run in &mut r.runs {
        if let Some(c) = run.judge_call {
            let usage = r.call_log[c as usize].usage;
            run.judge_calls = 1;
            run.judge_prompt_tokens = usage.prompt_tokens;
            run.judge_completion_tokens = usage.completion_tokens;
        }
    }
    r.meta.pricing.judge_prompt_per_million = 1.0;
    r.stats = (0..r.settings.len())
        .map(|s| crate::analysis::stats::aggregate(r.runs_of(s), &r.questions, &r.meta.pricing))
        .collect();
    r.calls = crate::sweep::CallStats::of(&r.call_log, &r.runs, 3);
    r.with_insight(&crate::analysis::insight::config::RecommendConfig::default())
}

#[test]
fn judge_calls_are_listed_once_and_their_counts_and_costs_read_back() {
    let r = judged();
    assert_eq!(
        (
            r.calls.judge_calls,
            r.calls.judge_cache_hits,
            r.calls.judge_failed
        ),
        (3, 1, 1)
    );
    assert_eq!(
        r.calls.judge_errors_by_kind[&crate::vocab::call::ErrorKind::Malformed],
        1
    );
    assert_eq!(
        r.calls.distinct_prompts, 8,
        "judge calls are not answer calls"
    );
    let text = bytes(&Record::of(&r));
    let record = Record::parse(Path::new("r.json"), &text).unwrap();
    let judge: Vec<(&String, u64)> = record
        .calls
        .iter()
        .filter(|(_, c)| c.role == CallRole::Judge)
        .map(|(k, c)| (k, c.usage.prompt_tokens))
        .collect();
    assert_eq!(
        judge,
        [
            (&"j000000000000000".to_string(), 200),
            (&"j000000000000002".to_string(), 100),
            (&"j000000000000006".to_string(), 300),
        ]
    );
    assert_eq!(
        text.lines()
            .filter(|l| l.contains(r#""judge_call":"j000000000000006""#))
            .count(),
        2,
        "two runs share one judge call"
    );
    assert!(text.contains(
        r#"    "j000000000000002": {"role":"judge","reply":"I cannot tell.","usage":{"prompt_tokens":100,"completion_tokens":7,"estimated":false},"latency_ms":3.0,"ttft_ms":null,"error":{"kind":"malformed","message":"the judge's reply is not the rubric's JSON"},"cached":false}"#
    ));
    let back = record.into_results().unwrap();
    assert_eq!(back.runs, r.runs);
    assert_eq!(back.calls, r.calls);
    assert_eq!(back.stats, r.stats);
    assert_eq!(
        (back.stats[0].judge_calls, back.stats[0].judge_prompt_tokens),
        (2, 300)
    );
    assert_eq!(back.stats[0].judge_cost, 300.0 / 1e6);
    assert_eq!(bytes(&Record::of(&back)), text);
}

#[test]
fn a_run_naming_an_unknown_judge_call_is_refused() {
    let text = bytes(&Record::of(&judged()));
    refuses_an_unknown_call(&text, "judge_call", "j000000000000000");
}

#[test]
fn rerank_calls_are_counted_apart_from_model_calls_and_read_back() {
    use crate::adapters::chat::{CallError, ErrorKind, Usage};
    let mut r = fixture::results();
    let rerank = |cached: bool, error: Option<CallError>| CallRecord {
        role: CallRole::Rerank,
        reply: String::new(),
        usage: Usage {
            prompt_tokens: if cached { 0 } else { 41 },
            ..Usage::default()
        },
        latency_ms: (!cached).then_some(2.0),
        ttft_ms: None,
        error,
        cached,
        repeat: 0,
        batch: false,
    };
    let failed = CallError {
        kind: ErrorKind::Connect,
        message: "cannot connect".into(),
        deferred: false,
    };
    let n = r.questions.len();
    let calls = [
        r.call_log
            .insert_full("r000000000000000".into(), rerank(false, None))
            .0,
        r.call_log
            .insert_full("r000000000000001".into(), rerank(true, None))
            .0,
        r.call_log
            .insert_full("r000000000000002".into(), rerank(false, Some(failed)))
            .0,
    ];
    // Question q's runs at every setting name its call (the first two questions' only).
    for run in &mut r.runs {
        run.rerank_call = calls.get(run.question % n).map(|&c| c as u32);
    }
    let before = r.calls.clone();
    r.calls = crate::sweep::CallStats::of(&r.call_log, &r.runs, 3);
    assert_eq!(
        (
            r.calls.rerank_calls,
            r.calls.rerank_cache_hits,
            r.calls.rerank_failed
        ),
        (3, 1, 1)
    );
    // Answer-call counters and their errors are the fixture's own.
    assert_eq!(
        crate::sweep::CallStats {
            rerank_calls: 0,
            rerank_cache_hits: 0,
            rerank_failed: 0,
            ..r.calls.clone()
        },
        before
    );
    let text = bytes(&Record::of(&r));
    let record = Record::parse(Path::new("r.json"), &text).unwrap();
    assert_eq!(
        record
            .runs
            .iter()
            .filter(|run| run.rerank_call.as_deref() == Some("r000000000000001"))
            .count(),
        r.settings.len()
    );
    let back = record.into_results().unwrap();
    // Read back, calls are in the record's order (rerank calls before answers), so runs are
    // compared by the digests they name.
    let named = |r: &crate::output::report::Results| -> Vec<(Option<String>, Option<String>)> {
        let digest =
            |c: Option<u32>| c.map(|c| r.call_log.get_index(c as usize).unwrap().0.clone());
        r.runs
            .iter()
            .map(|run| (digest(run.call), digest(run.rerank_call)))
            .collect()
    };
    assert_eq!(named(&back), named(&r));
    assert_eq!(back.calls, r.calls);
    assert_eq!(bytes(&Record::of(&back)), text);
    refuses_an_unknown_call(&text, "rerank_call", "r000000000000000");
}

/// A record whose first run's `field` names a call not in `calls` (instead of `known`) is
/// refused, naming the unknown call.
fn refuses_an_unknown_call(text: &str, field: &str, known: &str) {
    let changed = text.replacen(
        &format!(r#""{field}":"{known}""#),
        &format!(r#""{field}":"nope""#),
        1,
    );
    assert_ne!(changed, text, "the record has a run with {field} {known}");
    let err = Record::parse(Path::new("r.json"), &changed).unwrap_err();
    assert_eq!(
        err.to_string(),
        "`r.json` is inconsistent: a run names unknown call `nope`"
    );
}

/// The answer calls' errors counted by kind are written in the summary by kind name, whatever
/// order the kinds are declared or failed in: the order results.json has always had.
#[test]
fn errors_by_kind_are_written_by_kind_name() {
    use crate::adapters::chat::{CallError, ErrorKind};
    let mut r = fixture::results();
    let kinds = [
        ErrorKind::Timeout,
        ErrorKind::Connect,
        ErrorKind::Server,
        ErrorKind::Auth,
        ErrorKind::Timeout,
    ];
    for (call, kind) in r.call_log.values_mut().zip(kinds) {
        call.error = Some(CallError {
            kind,
            message: "failed".into(),
            deferred: false,
        });
    }
    r.calls = crate::sweep::CallStats::of(&r.call_log, &r.runs, 3);
    let text = bytes(&Record::of(&r));
    assert!(
        text.contains(r#""errors_by_kind":{"auth":1,"connect":1,"server":1,"timeout":2}"#),
        "{text}"
    );
    assert!(text.contains(r#""judge_errors_by_kind":{}"#), "{text}");
}

/// An error kind no rageval writes is refused naming the file, the field, the kind and the
/// kinds there are, with the line of its call; never a panic.
#[test]
fn an_unknown_error_kind_is_refused_naming_it() {
    let text = bytes(&Record::of(&judged()));
    let err = refused(&text, r#""kind":"malformed""#, r#""kind":"garbled""#);
    let line = text
        .lines()
        .position(|l| l.contains(r#""kind":"malformed""#))
        .unwrap()
        + 1;
    assert!(
        err.starts_with(&format!(
            "`r.json` is not a rageval results file: `error.kind` is `garbled`, not an error kind: one of `auth`, `client`, `connect`, `malformed`, `rate_limited`, `server`, `timeout`, `transport` at line {line} column "
        )),
        "{err}"
    );
}
