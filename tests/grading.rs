//! Grading end to end: a custom prompt reaches the server byte for byte; mock-llm's
//! paraphrasing mode exercises each refusal tier and the judge's grades; bad templates,
//! patterns and a judge that is down stop with one line.

use serde_json::Value;

use crate::harness::{CallRole, Test};
use crate::http::{MockLlm, KEY_ENV};
use crate::support::{col, read_csv, Project};

pub(crate) const DOC: &str = "# Membership fee\nMembership costs 10 US dollars per term.\n\n# President\nThe club president is Sophea.\n";

/// Two answerable questions (one whose expected text has a digit, which the paraphrasing mode
/// writes as a word) and four unanswerable ones whose lengths are 0, 1, 2 and 3 modulo 4, so
/// that their paraphrased refusals need the exact, lenient, pattern and judge tiers.
pub(crate) const SET: &str = "corpus: docs
answerable:
  - id: fee
    question: How much does membership cost per term?
    expect: {sources: [\"a.md#Membership fee\"], answer: [\"10 US dollars\"]}
  - id: president
    question: Who is the club president?
    expect: {sources: [a.md#President], answer: [Sophea]}
unanswerable:
  - {id: exact, question: Is there a bus stop?}
  - {id: lenient, question: Where is the lab?}
  - {id: pattern, question: Is there a gym nearby?}
  - {id: judge, question: Is there a bus?}
";

/// A project whose chat (and, with `judge`, judge) is the server at `url`.
pub(crate) fn project(url: &str, judge: bool, prompt: &str) -> Project {
    let p = Project::empty();
    p.write("docs/a.md", DOC);
    p.write("set.yaml", SET);
    let judge = if judge {
        format!("judge:\n  base_url: {url}\n  model: mock-judge\n  api_key_env: {KEY_ENV}\n  max_retries: 1\n  prompt_per_million: 1\n  headers: {{X-Judge-Token: judge-secret-77}}\n")
    } else {
        String::new()
    };
    p.write(
        "rageval.yaml",
        &format!(
            "evalsets: [set.yaml]\nchat:\n  kind: openai\n  base_url: {url}\n  model: mock\n  api_key_env: {KEY_ENV}\n  max_retries: 1\n{judge}prompt:\n{prompt}sweep:\n  min_score: 0\n  k: 1\n"
        ),
    );
    p
}

/// `rageval sweep -q` with the server's key.
pub(crate) fn sweep(p: &Project) -> Test<'_> {
    p.sweep::<_, &str>([]).env(KEY_ENV, "test-key")
}

/// runs.csv as (question id, [values of `columns`]) in file order.
fn runs(p: &Project, columns: &[&str]) -> Vec<(String, Vec<String>)> {
    let (h, rows) = read_csv(&p.read("reports/latest/runs.csv"));
    rows.iter()
        .map(|r| {
            let values = columns.iter().map(|c| col(&h, r, c).to_string()).collect();
            (col(&h, r, "question_id").to_string(), values)
        })
        .collect()
}

fn summary(p: &Project, column: &str) -> String {
    let (h, rows) = read_csv(&p.read("reports/latest/summary.csv"));
    assert_eq!(rows.len(), 1);
    col(&h, &rows[0], column).to_string()
}

/// Expected [`runs`], one a line: the question id, then the values, separated by `|`.
fn table(text: &str) -> Vec<(String, Vec<String>)> {
    text.lines()
        .map(|l| {
            let mut cells = l.split('|').map(|c| c.trim().to_string());
            (cells.next().unwrap(), cells.collect())
        })
        .collect()
}

pub(crate) const PATTERNS: &str = "  refusal_patterns:\n    - do(es)? not mention\n";
const COLUMNS: &[&str] = &[
    "outcome",
    "refusal_match",
    "answer_match",
    "wrong_answer",
    "judge_refused",
    "judge_correct",
    "judge_supported",
];

#[test]
fn paraphrased_replies_take_each_tier_and_the_judge_grades_them() {
    let server = MockLlm::start(&["--paraphrase"]);
    let p = project(&server.url, true, PATTERNS);
    let out = sweep(&p).run();
    // "... costs ten US dollars ...": the answer match reads number words as digits, as the
    // judge does, so both find `10 US dollars`. The exact sentence is never sent to the judge.
    assert_eq!(
        runs(&p, COLUMNS),
        table(
            "\
        fee       | answer        |         | true  | false | false | true  | true
        president | answer        |         | true  | false | false | true  | true
        exact     | model_refusal | exact   |       |       |       |       |
        lenient   | model_refusal | lenient |       |       | true  | false | false
        pattern   | model_refusal | pattern |       |       | true  | false | false
        judge     | model_refusal | judge   |       |       | true  | false | false"
        )
    );
    for (column, value) in [
        ("paraphrased_refusal", "3"),
        ("wrong_answer", "0"),
        ("answer_match_rate", "1.0000"),
        ("judged", "5"),
        ("judge_errors", "0"),
        ("judged_correct_rate", "1.0000"),
        ("judged_supported_rate", "1.0000"),
        // The judge says "refused" where the string tiers do, except for the judge's own tier.
        ("judge_refusal_agreement", "0.8000"),
        // It calls the reworded fee answer right, and so does answer_match.
        ("judge_answer_agreement", "1.0000"),
        ("judge_calls", "5"),
    ] {
        assert_eq!(summary(&p, column), value, "{column}");
    }
    let record = out.results();
    let written = out.summary();
    assert_eq!(record.identity.judge.as_deref(), Some("mock-judge"));
    assert_eq!(written["calls"]["judge_calls"], 5);
    let setting = &written["settings"]["min_score=0,k=1"];
    let judge_tokens = setting["judge_prompt_tokens"].as_u64().unwrap();
    assert!(judge_tokens > 0);
    assert_eq!(
        setting["judge_cost"].as_f64(),
        Some(judge_tokens as f64 / 1e6),
        "priced at judge.prompt_per_million, apart from the model's cost"
    );
    assert_eq!(setting["cost"].as_f64(), Some(0.0));
    assert_eq!(server.stats()["judge_requests"], 5);
    // Each distinct judge call is in the call log once, with its usage, and the runs it
    // graded name it.
    let judge_calls: Vec<_> = record
        .calls
        .iter()
        .filter(|(_, c)| c.role == CallRole::Judge)
        .collect();
    assert_eq!(judge_calls.len(), 5);
    let named: std::collections::BTreeSet<&str> = record
        .runs
        .iter()
        .filter_map(|r| r.judge_call.as_deref())
        .collect();
    let logged: std::collections::BTreeSet<&str> =
        judge_calls.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(named, logged);
    let logged_tokens: u64 = judge_calls.iter().map(|(_, c)| c.usage.prompt_tokens).sum();
    assert_eq!(logged_tokens, judge_tokens);
    for (digest, c) in &judge_calls {
        assert!(c.usage.completion_tokens > 0, "{digest}");
        let grade: Value = serde_json::from_str(&c.reply).unwrap();
        assert!(grade["refused"].is_boolean(), "{digest}: {grade}");
    }
    let judge = record.identity.identity.config.judge.as_ref().unwrap();
    assert_eq!(
        judge.endpoint.as_ref().unwrap().headers,
        ["X-Judge-Token"],
        "header names only"
    );
    for f in [
        "reports/latest/results.json",
        "reports/latest/report.html",
        ".rageval/cache/judge.jsonl",
    ] {
        let text = p.read(f);
        assert!(
            !text.contains("judge-secret-77") && !text.contains("test-key"),
            "{f} holds a secret"
        );
    }

    // A rerun grades from the judge's cache.
    let out = sweep(&p).run();
    assert_eq!(out.summary()["calls"]["judge_cache_hits"], 5);
    assert_eq!(
        server.stats()["judge_requests"],
        5,
        "no judge call repeated"
    );
    assert_eq!(p.read(".rageval/cache/judge.jsonl").lines().count(), 5);
}

#[test]
fn without_a_judge_the_string_tiers_decide() {
    let server = MockLlm::start(&["--paraphrase"]);
    let p = project(&server.url, false, PATTERNS);
    sweep(&p).run();
    // Only a judge reads the last one as a refusal.
    assert_eq!(
        runs(&p, &COLUMNS[..4]),
        table(
            "\
        fee       | answer          |         | true  | false
        president | answer          |         | true  | false
        exact     | model_refusal   | exact   |       |
        lenient   | model_refusal   | lenient |       |
        pattern   | model_refusal   | pattern |       |
        judge     | unwanted_answer |         |       |"
        )
    );
    assert_eq!(summary(&p, "paraphrased_refusal"), "2");
    // `ten US dollars` holds `10 US dollars` once number words read as digits.
    assert_eq!(summary(&p, "wrong_answer"), "0");
    assert_eq!(summary(&p, "wrong_answer_rate"), "0.0000");
    assert_eq!(summary(&p, "judged"), "0");
    assert_eq!(server.stats()["judge_requests"], 0);

    // With the strict flag only the exact sentence and the patterns count.
    sweep(&p).arg("--strict-refusal").run();
    let tiers: Vec<String> = runs(&p, &["refusal_match"])
        .into_iter()
        .map(|(_, v)| v[0].clone())
        .collect();
    assert_eq!(tiers, ["", "", "exact", "", "pattern", ""]);
}

#[test]
fn the_builtin_mock_judge_grades_in_process() {
    let p = Project::empty();
    p.write("docs/a.md", DOC);
    p.write("set.yaml", SET);
    p.write(
        "rageval.yaml",
        "evalsets: [set.yaml]\njudge: {kind: mock}\nsweep: {min_score: 0, k: 1}\n",
    );
    p.rageval(["sweep", "--wide"])
        .stdout_contains(
            "judge `mock`: 2 calls (0 from cache, 0 failed) graded 2 runs; agrees with the string rules on refusals 100% (2/2) and with answer_match on answers 100% (2/2); it overrode answer_match on 0 answers (0 to correct, 0 to wrong)\n",
        )
        .stdout_snapshot("grading__the_builtin_mock_judge_grades_in_process")
        .run();
    // The builtin model does not paraphrase: every refusal is the sentence, never judged.
    assert_eq!(
        runs(&p, &COLUMNS[..5]),
        table(
            "\
        fee       | answer        |       | true | false | false
        president | answer        |       | true | false | false
        exact     | model_refusal | exact |      |       |
        lenient   | model_refusal | exact |      |       |
        pattern   | model_refusal | exact |      |       |
        judge     | model_refusal | exact |      |       |"
        )
    );
}

#[test]
fn a_custom_prompt_reaches_the_server_byte_for_byte_and_is_its_own_cache_key() {
    let server = MockLlm::start(&["--keep-requests", "1"]);
    let templates = "  refusal: Not in the docs.\n  system: \"Answer from the notes. If they say nothing, write: {refusal}\"\n  user: \"<notes>\\n{context}\\n</notes>\\nQ: {question} {{verbatim}}\"\n  passage: \"({n}) {heading} in {source}: {text}\"\n";
    let p = project(&server.url, false, templates);
    p.write(
        "one.yaml",
        "corpus: docs\nanswerable:\n  - question: Who is the club president?\n",
    );
    let run = |p: &Project| sweep(p).args(["--evalset", "one.yaml"]).run().results();
    run(&p);
    let kept = server.get("/requests");
    let body: Value = serde_json::from_str(kept["requests"][0].as_str().unwrap()).unwrap();
    assert_eq!(
        body["messages"],
        serde_json::json!([
            {"role": "system", "content": "Answer from the notes. If they say nothing, write: Not in the docs."},
            {"role": "user", "content": "<notes>\n(1) President in a.md: The club president is Sophea.\n</notes>\nQ: Who is the club president? {verbatim}"},
        ])
    );
    let calls = || server.stats()["chat_requests"].as_u64().unwrap();
    let before = calls();
    run(&p);
    assert_eq!(
        calls(),
        before,
        "the same prompt is answered from the cache"
    );
    let first = run(&p).identity.identity.digest;
    let config = p
        .read("rageval.yaml")
        .replace("Q: {question}", "Question: {question}");
    p.write("rageval.yaml", &config);
    let changed = run(&p);
    assert_eq!(
        calls(),
        before + 1,
        "a changed template never reuses a cached reply"
    );
    assert_ne!(
        changed.identity.identity.digest, first,
        "the template is part of the config digest"
    );
}

/// Rewrite the config of `p` from its `judge:` section on (the chat section comes before it).
fn edit_judge(p: &Project, edit: impl FnOnce(&str) -> String) {
    let config = p.read("rageval.yaml");
    let at = config.find("judge:").unwrap();
    p.write(
        "rageval.yaml",
        &format!("{}{}", &config[..at], edit(&config[at..])),
    );
}

/// `rageval sweep` on `config` must exit 2 with exactly `line` on stderr and write nothing.
fn fails_with(config: &str, line: &str) {
    let p = Project::empty();
    p.write("docs/a.md", DOC);
    p.write("set.yaml", SET);
    p.write("rageval.yaml", config);
    p.rageval(["sweep"])
        .env(KEY_ENV, "test-key")
        .fails(line)
        .absent("reports")
        .run();
}

#[test]
fn an_unknown_placeholder_is_named_with_its_field_and_line() {
    fails_with(
        "evalsets: [set.yaml]\nprompt:\n  refusal: No.\n  user: \"Context: {context} Question: {qestion}\"\n",
        "rageval.yaml:4: `prompt.user`: unknown placeholder `{qestion}`; this template takes `{context}`, `{question}`, `{refusal}` (write `{{` and `}}` for literal braces)",
    );
    fails_with(
        "evalsets: [set.yaml]\nprompt:\n  passage: \"[{n}] {context}\"\n",
        "rageval.yaml:3: `prompt.passage`: unknown placeholder `{context}`; this template takes `{n}`, `{source}`, `{heading}`, `{text}` (write `{{` and `}}` for literal braces)",
    );
}

#[test]
fn a_refusal_pattern_that_is_not_a_regex_is_named_with_its_line() {
    fails_with(
        "evalsets: [set.yaml]\nprompt:\n  refusal_patterns:\n    - do not mention\n    - \"(cannot|can't\"\n",
        "rageval.yaml:5: `prompt.refusal_patterns[1]`: `(cannot|can't` is not a valid regular expression: unclosed group",
    );
}

#[test]
fn a_judge_that_is_down_stops_the_sweep_after_retries_without_a_report() {
    let server = MockLlm::start(&["--paraphrase"]);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let down = format!("http://127.0.0.1:{port}/v1");
    let p = project(&server.url, true, PATTERNS);
    edit_judge(&p, |judge_section| {
        judge_section.replacen(&server.url, &down, 1)
    });
    sweep(&p)
        .fails(&format!("every judge call failed (5 connect); no report written; is the judge server at `{down}` running?"))
        .absent("reports")
        .run();
    assert_eq!(server.stats()["judge_requests"], 0);

    // With more retries the attempts pass the dead-server limit: the judge is given up early.
    let config = p.read("rageval.yaml").replace(
        "max_retries: 1\n  prompt",
        "max_retries: 4\n  backoff_ms: 0\n  prompt",
    );
    p.write("rageval.yaml", &config);
    sweep(&p)
        .fails(&format!("the sweep stopped early: 20 connection attempts in a row to the judge failed (5 connect); no report written; is the judge server at `{down}` running?"))
        .absent("reports")
        .run();
}

#[test]
fn a_malformed_judge_reply_is_an_error_for_that_grade() {
    let chat = MockLlm::start(&["--paraphrase"]);
    let judge = MockLlm::start(&["--malformed-rate", "0.5", "--seed", "4"]);
    let p = project(&chat.url, true, PATTERNS);
    edit_judge(&p, |judge_section| {
        judge_section
            .replacen(&chat.url, &judge.url, 1)
            .replace("max_retries: 1", "max_retries: 0")
    });
    let out = sweep(&p).arg("--allow-errors")
        .stderr(
            "warning: 2 of 5 judge calls failed (2 malformed); those grades are errors and the string rules stand\n",
        )
        .run();
    let failed = judge.stats()["faults"]["malformed"].as_u64().unwrap();
    assert!(failed > 0 && failed < 5, "{failed}");
    let (h, rows) = read_csv(&p.read("reports/latest/runs.csv"));
    let errors: Vec<&Vec<String>> = rows
        .iter()
        .filter(|r| !col(&h, r, "judge_error").is_empty())
        .collect();
    assert_eq!(errors.len() as u64, failed);
    for r in errors {
        assert!(
            col(&h, r, "judge_error").starts_with("malformed: "),
            "{r:?}"
        );
        assert_eq!(col(&h, r, "judge_refused"), "", "never a guess");
        // The string tiers stand: the judge's own tier cannot apply without a grade.
        assert_ne!(col(&h, r, "refusal_match"), "judge");
    }
    assert_eq!(summary(&p, "judge_errors"), failed.to_string());
    assert_eq!(
        out.stderr,
        format!("warning: {failed} of 5 judge calls failed ({failed} malformed); those grades are errors and the string rules stand\n")
    );
}

/// A judge server of the test's own: it answers prose to a reply holding "Sorry" and the
/// rubric's JSON to every other (correct when an answer is expected, as the rubric says).
/// Serves until the test process ends; returns its base URL.
fn prose_judge() -> String {
    use axum::routing::post;
    crate::support::serve_forever(axum::Router::new().route(
        "/v1/chat/completions",
        post(|body: axum::body::Bytes| async move {
            let req: Value = serde_json::from_slice(&body).unwrap();
            let user = req["messages"][1]["content"].as_str().unwrap_or("");
            let content = if user.contains("Sorry") {
                "I cannot tell."
            } else if user.contains("(none given)") {
                r#"{"refused": false, "correct": false, "supported": true}"#
            } else {
                r#"{"refused": false, "correct": true, "supported": true}"#
            };
            axum::Json(serde_json::json!({
                "choices": [{"message": {"role": "assistant", "content": content}}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 10},
            }))
        }),
    ))
}

#[test]
fn a_judge_reply_that_is_not_the_rubric_json_is_an_error_never_a_guess() {
    let chat = MockLlm::start(&["--paraphrase"]);
    let judge = prose_judge();
    let p = project(&chat.url, true, PATTERNS);
    edit_judge(&p, |judge_section| {
        judge_section.replacen(&chat.url, &judge, 1)
    });
    sweep(&p)
        .status(2)
        .stderr("error: 1 of 5 judge calls failed (1 malformed); those grades are errors and the string rules stand (pass --allow-errors to accept them)\n")
        .run();
    let (h, rows) = read_csv(&p.read("reports/latest/runs.csv"));
    let judged = rows
        .iter()
        .find(|r| col(&h, r, "question_id") == "judge")
        .unwrap();
    assert_eq!(
        [
            "outcome",
            "refusal_match",
            "judge_refused",
            "judge_correct",
            "judge_supported",
            "judge_error",
            "judge_prompt_tokens",
        ]
        .map(|c| col(&h, judged, c)),
        [
            "unwanted_answer",
            "",
            "",
            "",
            "",
            "malformed: the judge's reply is not the rubric's JSON (expected value at line 1 column 1): `I cannot tell.`",
            "100",
        ]
    );
    assert_eq!(summary(&p, "judge_errors"), "1");
    assert_eq!(summary(&p, "judged"), "4");
}

#[test]
fn judge_and_wrong_answer_fields_are_checked_at_load() {
    fails_with(
        "evalsets: [set.yaml]\njudge:\n  base_url: localhost:8787\n",
        "rageval.yaml:3: `judge.base_url`: `localhost:8787` must start with http:// or https://",
    );
    fails_with(
        "evalsets: [set.yaml]\njudge:\n  kind: mock\n  completion_per_million: -1\n",
        "rageval.yaml:4: `judge.completion_per_million`: must be a price of 0 or more",
    );
    fails_with(
        "evalsets: [set.yaml]\nrecommend:\n  max_wrong_answer_rate: 1.5\n",
        "rageval.yaml:3: `recommend.max_wrong_answer_rate`: must be a rate from 0 to 1, got 1.5",
    );
}

#[test]
fn rageval_prompt_shows_what_the_templates_make() {
    let p = Project::empty();
    p.write("docs/a.md", DOC);
    p.write(
        "rageval.yaml",
        "prompt:\n  system: \"Notes only. Else: {refusal}\"\n  user: \"{context}\\n\\n> {question}\"\n  passage: \"<{n}|{heading}> {text}\"\n",
    );
    p.rageval([
        "prompt",
        "Who is the club president?",
        "--corpus",
        "docs",
        "--k",
        "1",
    ])
    .stdout(
        "--- system\nNotes only. Else: I don't know based on the provided documents.\n--- user\n<1|President> The club president is Sophea.\n\n> Who is the club president?\n",
    )
    .run();
}

#[test]
fn judge_calls_ask_for_the_grade_schema_unless_structured_output_is_off() {
    let chat = MockLlm::start(&["--keep-requests", "100"]);
    let p = project(&chat.url, true, PATTERNS);
    sweep(&p).run();
    let judge_formats = |server: &MockLlm| -> Vec<Value> {
        server.get("/requests")["requests"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| serde_json::from_str::<Value>(b.as_str().unwrap()).unwrap())
            .filter(|b| b["model"] == "mock-judge")
            .map(|b| b["response_format"].clone())
            .collect()
    };
    let formats = judge_formats(&chat);
    assert!(!formats.is_empty());
    for f in &formats {
        assert_eq!(f["type"], "json_schema");
        assert_eq!(f["json_schema"]["name"], "rageval_grade");
        assert_eq!(
            f["json_schema"]["schema"]["required"],
            serde_json::json!(["refused", "correct", "supported"])
        );
    }
    // The sweep's own calls carry none.
    let bodies = chat.get("/requests");
    assert!(bodies["requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| serde_json::from_str::<Value>(b.as_str().unwrap()).unwrap())
        .filter(|b| b["model"] == "mock")
        .all(|b| b.get("response_format").is_none()));
    let grades = runs(&p, &["judge_refused", "judge_correct", "judge_supported"]);
    // Off: no schema sent, the same grades (the mock judge reads the rubric).
    let plain = MockLlm::start(&["--keep-requests", "100"]);
    let q = project(&plain.url, true, PATTERNS);
    edit_judge(&q, |j| {
        j.replacen("judge:\n", "judge:\n  structured_output: false\n", 1)
    });
    sweep(&q).run();
    assert!(judge_formats(&plain).iter().all(Value::is_null));
    assert_eq!(
        runs(&q, &["judge_refused", "judge_correct", "judge_supported"]),
        grades
    );
}
