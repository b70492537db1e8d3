//! The grader noticing its own failures, end to end against a scripted server on loopback that
//! replies as Gemma 3 270M did: the refusal sentence followed by the prompt copied (expected
//! answer and all), and as a judge, grades that contradict the rubric or call every answer
//! correct.

use serde_json::Value;

use crate::harness::Test;
use crate::http::KEY_ENV;
use crate::support::{col, read_csv, Project};

use crate::grading::{DOC, SET};

const REFUSAL: &str = "I don't know based on the provided documents.";

/// The system message of a judge request begins so (the rubric).
const RUBRIC_START: &str = "You grade one reply";

/// A scripted chat server: `model(user message)` answers the model's requests and
/// `judge(user message)` the judge's. Serves until the test process ends; its base URL.
fn scripted(model: fn(&str) -> String, judge: fn(&str) -> &'static str) -> String {
    use axum::routing::post;
    crate::support::serve_forever(axum::Router::new().route(
        "/v1/chat/completions",
        post(move |body: axum::body::Bytes| async move {
            let req: Value = serde_json::from_slice(&body).unwrap();
            let system = req["messages"][0]["content"].as_str().unwrap_or("");
            let user = req["messages"][1]["content"].as_str().unwrap_or("");
            let content = if system.starts_with(RUBRIC_START) {
                judge(user).to_string()
            } else {
                model(user)
            };
            axum::Json(serde_json::json!({
                "choices": [{"message": {"role": "assistant", "content": content}}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 10},
            }))
        }),
    ))
}

fn project(url: &str, set: &str, doc: &str) -> Project {
    let p = Project::empty();
    p.write("docs/a.md", doc);
    p.write("set.yaml", set);
    p.write(
        "rageval.yaml",
        &format!(
            "evalsets: [set.yaml]\nchat:\n  kind: openai\n  base_url: {url}\n  model: small\n  api_key_env: {KEY_ENV}\n  max_retries: 0\njudge:\n  base_url: {url}\n  model: small-judge\n  api_key_env: {KEY_ENV}\n  max_retries: 0\nsweep:\n  min_score: 0\n  k: 1\n"
        ),
    );
    p
}

/// `rageval sweep --wide` with the server's key; the table is not compared.
fn sweep(p: &Project) -> Test<'_> {
    p.rageval(["sweep", "--wide"])
        .env(KEY_ENV, "test-key")
        .stdout_any("the table's latencies are the scripted server's")
}

/// runs.csv's `columns` per question id, `|`-separated, one line per run.
fn runs(p: &Project, columns: &[&str]) -> String {
    let (h, rows) = read_csv(&p.read("reports/latest/runs.csv"));
    rows.iter()
        .map(|r| {
            let cells: Vec<&str> = columns.iter().map(|c| col(&h, r, c)).collect();
            format!("{} | {}\n", col(&h, r, "question_id"), cells.join(" | "))
        })
        .collect()
}

/// Gemma 3 270M's replies: the refusal sentence and the prompt copied, for every question but
/// two, which it answers (wrongly) in a sentence of its own.
fn small_model(user: &str) -> String {
    if user.ends_with("Who is the club president?") {
        "The president is Dara. [1]".into()
    } else if user.ends_with("Is there a bus stop?") {
        "There is a bus stop at the gate. [1]".into()
    } else {
        format!("{REFUSAL}\n\n{user}")
    }
}

/// Gemma 3 270M as a judge: `refused` and `correct` both true where an answer is expected,
/// `correct` where none is.
fn rubric_breaking_judge(user: &str) -> &'static str {
    if user.contains("Expected answers:\n(none given)") {
        r#"{"refused": false, "correct": true, "supported": true}"#
    } else {
        r#"{"refused": true, "correct": true, "supported": false}"#
    }
}

#[test]
fn a_refusal_with_the_copied_prompt_and_a_judge_against_its_rubric_are_counted_and_warned() {
    let url = scripted(small_model, rubric_breaking_judge);
    let p = project(&url, SET, DOC);
    let out = sweep(&p)
        .stdout_contains("grader checks: 4 prefix refusals (4 replies: the refusal sentence, then more text); 6 judge grades set aside (contradicting the rubric); 4 of 6 replied runs copy the prompt (4 replies)\n")
        .stdout_contains("judge `small-judge`: 6 calls (0 from cache, 0 failed) graded 0 runs; agrees with the string rules on refusals - and with answer_match on answers -; it overrode answer_match on 0 answers (0 to correct, 0 to wrong)\n")
        .stderr(concat!(
            "warning: 4 of 6 replied runs (4 replies) start with the refusal sentence and go on, e.g. `I don't know based on the provided documents. Context: [1] (source: a.md#Members...`; they count as refusals (tier `prefix`), but rule 3 asks for the sentence alone: check the model's chat template and stop sequences\n",
            "warning: the judge contradicted its rubric in 6 of 6 grades (2 `refused` and `correct` both true, 4 `correct` true with no expected answer given); those grades were set aside and the string rules decide those runs\n",
            "warning: 4 of 6 replied runs (4 replies) copy the prompt back (its labels such as `Context:`, or passages word for word), e.g. `I don't know based on the provided documents. Context: [1] (source: a.md#Members...`: the chat template or the prompt is probably misconfigured (a base model, a template the server does not apply, no stop sequence)\n",
        ))
        .run();
    // The fee's copied passage holds `10 US dollars`: a refusal all the same, never a right
    // answer. No contradictory grade is taken: the president's wrong answer stays an answer
    // (taken, "refused" would make it a judge-tier refusal, "correct" a right answer) and the
    // bus stop (`exact`) an unwanted answer.
    assert_eq!(
        runs(
            &p,
            &[
                "outcome",
                "refusal_match",
                "answer_match",
                "wrong_answer",
                "judge_refused",
                "judge_correct"
            ]
        ),
        "\
fee | false_refusal | prefix |  |  |  | 
president | answer |  | false | true |  | 
exact | unwanted_answer |  |  |  |  | 
lenient | model_refusal | prefix |  |  |  | 
pattern | model_refusal | prefix |  |  |  | 
judge | model_refusal | prefix |  |  |  | 
"
    );
    let (h, rows) = read_csv(&p.read("reports/latest/runs.csv"));
    let errors: Vec<&str> = rows.iter().map(|r| col(&h, r, "judge_error")).collect();
    assert_eq!(
        errors,
        [
            "rubric: `refused` and `correct` both true (`{\"refused\":true,\"correct\":true,\"supported\":false}`); the string rules stand",
            "rubric: `refused` and `correct` both true (`{\"refused\":true,\"correct\":true,\"supported\":false}`); the string rules stand",
            "rubric: `correct` true with no expected answer given (`{\"refused\":false,\"correct\":true,\"supported\":true}`); the string rules stand",
            "rubric: `correct` true with no expected answer given (`{\"refused\":false,\"correct\":true,\"supported\":true}`); the string rules stand",
            "rubric: `correct` true with no expected answer given (`{\"refused\":false,\"correct\":true,\"supported\":true}`); the string rules stand",
            "rubric: `correct` true with no expected answer given (`{\"refused\":false,\"correct\":true,\"supported\":true}`); the string rules stand",
        ]
    );
    let checks = &out.summary()["grader_checks"];
    for (field, value) in [
        ("prefix_refusals", 4),
        ("prefix_replies", 4),
        ("judge_rubric_errors", 6),
        ("judge_refused_and_correct", 2),
        ("judge_correct_without_expected", 4),
        ("judged", 0),
        ("judge_overrides", 0),
        ("judge_answers", 0),
        ("replied_runs", 6),
        ("prompt_copies", 4),
        ("prompt_copy_replies", 4),
    ] {
        assert_eq!(checks[field], value, "{field}");
    }
    assert_eq!(checks["warnings"].as_array().unwrap().len(), 3);
    let setting = &out.summary()["settings"]["min_score=0,k=1"];
    assert_eq!(
        (
            &setting["false_refusal"],
            &setting["wrong_answer"],
            &setting["unwanted_answer"]
        ),
        (&Value::from(1), &Value::from(1), &Value::from(1)),
        "the counts are the string rules'"
    );
    // The record read back (the gate, merge) counts the same.
    let record = crate::harness::results(&p, "reports/latest");
    assert_eq!(
        format!("{:?}", record.runs[0].verdict.refusal_match),
        "Some(Prefix)"
    );
}

/// 24 answerable questions, each with a passage of its own: `Item N costs N dollars.`
fn priced_items() -> (String, String) {
    let mut doc = String::new();
    let mut set = String::from("corpus: docs\nanswerable:\n");
    for n in 1..=24 {
        doc.push_str(&format!("# Item {n}\nItem {n} costs {n}0 dollars.\n\n"));
        set.push_str(&format!(
            "  - {{id: item{n}, question: \"How much does item {n} cost?\", expect: {{answer: [\"{n}0 dollars\"]}}}}\n"
        ));
    }
    (set, doc)
}

/// Answers right for odd items and wrong for even ones.
fn half_right(user: &str) -> String {
    let n: u32 = user
        .rsplit("item ")
        .next()
        .and_then(|t| t.trim_end_matches(" cost?").parse().ok())
        .unwrap();
    if n % 2 == 1 {
        format!("It costs {n}0 dollars. [1]")
    } else {
        "It costs 5 dollars. [1]".into()
    }
}

/// A judge that calls every answer correct, within the rubric.
fn yes_judge(_: &str) -> &'static str {
    r#"{"refused": false, "correct": true, "supported": true}"#
}

#[test]
fn a_judge_that_calls_every_answer_correct_is_warned_about_and_its_overrides_counted() {
    let (set, doc) = priced_items();
    let url = scripted(half_right, yes_judge);
    let p = project(&url, &set, &doc);
    let out = sweep(&p)
        .stdout_contains("; it overrode answer_match on 12 answers (12 to correct, 0 to wrong; Cohen's kappa 0.00 over 24 distinct answers)\n")
        .stdout_contains("grader checks: judge vs answer_match kappa 0.00 over 24 answers\n")
        .stderr("warning: the judge's grades of answers look unreliable: it calls 24 of 24 graded answers correct where answer_match finds the expected text in 12, and it agrees with answer_match no better than chance (Cohen's kappa 0.00 over 24 distinct answers, at most 0.2 warns); its `correct` decides wrong answers, so read some replies before trusting them (docs/judge.md)\n")
        .run();
    let checks = &out.summary()["grader_checks"];
    assert_eq!(
        (
            &checks["judge_answers"],
            &checks["judge_answers_correct"],
            &checks["judge_answers_matched"]
        ),
        (&Value::from(24), &Value::from(24), &Value::from(12))
    );
    assert_eq!(checks["judge_kappa"], 0.0);
    // The judge's grades are within the rubric, so they decide: no wrong answer.
    assert_eq!(
        out.summary()["settings"]["min_score=0,k=1"]["wrong_answer"],
        0
    );
}

#[test]
fn the_sample_sweep_warns_of_nothing_and_records_zero_counts() {
    let p = Project::sample();
    let config = std::fs::read_to_string(crate::support::repo().join("rageval.yaml")).unwrap();
    p.write("rageval.yaml", &config);
    let out = p.sweep::<_, &str>([]).run();
    let checks = &out.summary()["grader_checks"];
    for field in [
        "prefix_refusals",
        "judge_rubric_errors",
        "judge_overrides",
        "prompt_copies",
    ] {
        assert_eq!(checks[field], 0, "{field}");
    }
    assert_eq!(checks["warnings"], serde_json::json!([]));
}
