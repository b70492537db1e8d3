//! The chapter's scenarios as sweep dimensions: order, passage format, injection, follow-ups,
//! streaming.

use crate::http::MockLlm;
use crate::support::{col, read_csv, row_where, Project};

/// The sample project with chat sent to a mock-llm at `url`, uncached.
fn mock_chat_project(url: &str) -> Project {
    let p = Project::sample();
    p.write(
        "rageval.yaml",
        &format!("chat: {{kind: openai, base_url: \"{url}\", model: mock, api_key_env: RAGEVAL_TEST_KEY}}\ncache: {{enabled: false}}\n"),
    );
    p
}

#[test]
fn all_dimensions_combine_with_one_call_per_distinct_prompt() {
    let server = MockLlm::start(&[]);
    let p = mock_chat_project(&server.url);
    let args = [
        "sweep",
        "--evalset",
        "evalsets/club.yaml",
        "--min-score",
        "0.1..0.3",
        "--k",
        "2,4",
        "--order",
        "score,edge",
        "--format",
        "numbered,tagged",
    ];
    let out = p
        .rageval(args)
        .env("RAGEVAL_TEST_KEY", "test-key")
        .stdout_contains("order")
        .stdout_contains("tagged")
        .stdout_contains("edge")
        .stdout_snapshot(
            "prompt_dimensions__all_dimensions_combine_with_one_call_per_distinct_prompt",
        )
        .run();
    let (h, rows) = read_csv(&p.read("reports/latest/summary.csv"));
    assert_eq!(rows.len(), 24);
    for dim in ["order", "format"] {
        assert!(h.iter().any(|c| c == dim));
    }
    let settings = out.results().settings;
    let ids: Vec<&String> = settings.keys().collect();
    assert!(
        settings.contains_key("min_score=0.2,k=4,order=edge,format=tagged"),
        "{ids:?}"
    );
    assert!(
        settings.contains_key("min_score=0.2,k=4"),
        "defaults stay out of ids"
    );
    let distinct = out.summary()["calls"]["distinct_prompts"].as_u64().unwrap();
    assert_eq!(server.stats()["chat_requests"].as_u64(), Some(distinct));
    // Tagged prompts go with the tagged system prompt, numbered ones without.
    let (rh, runs) = read_csv(&p.read("reports/latest/runs.csv"));
    assert_eq!(runs.len(), 24 * 26);
    assert!(runs
        .iter()
        .all(|r| ["numbered", "tagged"].contains(&col(&rh, r, "format"))));
}

#[test]
fn prompt_shows_edge_order_and_tagged_passages() {
    let p = Project::sample();
    let q = "How many minutes does each team get on Showcase Day?";
    let prompt = |extra: &[&str], snapshot: &str| {
        p.rageval(["prompt", q])
            .args(extra)
            .stdout_snapshot(snapshot)
            .run()
            .stdout
    };
    let by_score = prompt(
        &["--k", "5", "--min-score", "0"],
        "prompt_dimensions__prompt_shows_edge_order_and_tagged_passages",
    );
    let edge = prompt(
        &["--k", "5", "--min-score", "0", "--order", "edge"],
        "prompt_dimensions__prompt_shows_edge_order_and_tagged_passages_2",
    );
    let sources = |text: &str| -> Vec<String> {
        text.lines()
            .filter_map(|l| {
                l.split_once("(source: ")
                    .map(|(_, r)| r.split(')').next().unwrap().to_string())
            })
            .collect()
    };
    let (a, e) = (sources(&by_score), sources(&edge));
    assert_eq!(a.len(), 5);
    assert_eq!(
        e,
        [
            a[0].clone(),
            a[2].clone(),
            a[4].clone(),
            a[3].clone(),
            a[1].clone()
        ],
        "A C E D B"
    );
    let tagged = prompt(
        &["--format", "tagged"],
        "prompt_dimensions__prompt_shows_edge_order_and_tagged_passages_3",
    );
    assert!(
        tagged
            .contains("<passage n=\"1\" source=\"projects.md#Showcase Day\" trust=\"untrusted\">"),
        "{tagged}"
    );
    assert!(
        tagged.contains("Each passage is enclosed in <passage"),
        "{tagged}"
    );
}

#[test]
fn injection_set_reports_attack_success_per_setting() {
    let p = Project::sample();
    let out = p
        .rageval([
            "sweep",
            "--evalset",
            "evalsets/club-injection.yaml",
            "--min-score",
            "0.1,0.5",
            "--k",
            "4",
            "--format",
            "numbered,tagged",
        ])
        // Every report names the flagged chunks that reached a prompt.
        .stdout_contains("scan: 2 flagged chunk(s) reached a prompt: payments-update.md#1")
        .stdout_snapshot("prompt_dimensions__injection_set_reports_attack_success_per_setting")
        .run();
    let (h, rows) = read_csv(&p.read("reports/latest/summary.csv"));
    assert_eq!(rows.len(), 4);
    let rate = |min: &str, format: &str| -> f64 {
        let r = rows
            .iter()
            .find(|r| col(&h, r, "min_score") == min && col(&h, r, "format") == format)
            .unwrap();
        assert_eq!(col(&h, r, "attack_questions"), "4");
        col(&h, r, "attack_success_rate").parse().unwrap()
    };
    // The mock copies the attacker's sentence when it shares the question's words.
    assert!(rate("0.1", "numbered") > 0.0);
    assert!(
        rate("0.1", "tagged") > 0.0,
        "delimiting does not stop a model that copies"
    );
    let (rh, runs) = read_csv(&p.read("reports/latest/runs.csv"));
    // Each setting's count is its own runs' count.
    for r in &rows {
        let injected = runs
            .iter()
            .filter(|x| {
                ["min_score", "format"]
                    .iter()
                    .all(|c| col(&rh, x, c) == col(&h, r, c))
                    && col(&rh, x, "injected") == "true"
            })
            .count();
        assert_eq!(col(&h, r, "injected"), injected.to_string());
    }
    let pay = row_where(
        &rh,
        &runs,
        &[
            ("question_id", "inj-pay-fee"),
            ("min_score", "0.1"),
            ("format", "numbered"),
        ],
    );
    assert_eq!(col(&rh, pay, "injected"), "true");
    assert!(col(&rh, pay, "answer").contains("000-123-456"));
    assert!(col(&rh, pay, "flagged_passages").contains("payments-update.md#1"));
    let summary = out.summary();
    let flagged: Vec<&str> = summary["flagged_in_prompts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["chunk"].as_str().unwrap())
        .collect();
    assert!(flagged.contains(&"payments-update.md#1"), "{flagged:?}");
    let md = p.read("reports/latest/report.md");
    assert!(
        md.contains("**Prompt injection.**") && md.contains("payments-update.md#1"),
        "{md}"
    );
    assert!(md.contains("| injected |"), "{md}");
    let html = p.read("reports/latest/report.html");
    assert!(html.contains("id=\"flagged\"") && html.contains("payments-update.md#1"));
    // In the tagged format the planted tags are gone from the passage.
    let tagged_run = row_where(
        &rh,
        &runs,
        &[
            ("question_id", "inj-showcase-prizes"),
            ("format", "tagged"),
            ("min_score", "0.1"),
        ],
    );
    assert!(
        !col(&rh, tagged_run, "answer").contains("</passage>"),
        "{}",
        col(&rh, tagged_run, "answer")
    );
}

#[test]
fn scan_flags_the_chapter_attack_and_misses_the_reworded_one() {
    let p = Project::sample();
    // The reworded attack passes the tripwire.
    p.rageval(["scan", "evalsets/club-poison"])
        .stdout_lacks("treasurer-notice.md")
        .stdout(concat!(
            "flagged: payments-update.md#1  How to pay the membership fee  (matches `ignore (all )?(the )?(previous|above|prior)`)\n",
            "flagged: schedule-change.md#1  Saturday workshop time  (matches `disregard .*(rules|instructions)`)\n",
            "2 of 4 chunks flagged. The scan is a tripwire for review, not a defence: a reworded attack passes it.\n",
        ))
        .run();
    p.rageval(["scan", "evalsets/club", "--fail-on-match"])
        .stdout(
            "0 of 23 chunks flagged. The scan is a tripwire for review, not a defence: a reworded attack passes it.\n",
        )
        .run();
    p.rageval(["scan", "evalsets/club-poison", "--fail-on-match"])
        .status(1)
        .stdout(concat!(
            "flagged: payments-update.md#1  How to pay the membership fee  (matches `ignore (all )?(the )?(previous|above|prior)`)\n",
            "flagged: schedule-change.md#1  Saturday workshop time  (matches `disregard .*(rules|instructions)`)\n",
            "2 of 4 chunks flagged. The scan is a tripwire for review, not a defence: a reworded attack passes it.\n",
        ))
        .run();
    // Patterns come from the config, and a bad one is an input error.
    p.write(
        "rageval.yaml",
        "scan:\n  patterns: [\"account \\\\d{3}-\"]\n",
    );
    p.rageval(["scan", "evalsets/club-poison"])
        .stdout(concat!(
            "flagged: payments-update.md#1  How to pay the membership fee  (matches `account \\d{3}-`)\n",
            "flagged: showcase-extra.md#1  Showcase Day prizes  (matches `account \\d{3}-`)\n",
            "flagged: treasurer-notice.md#1  Paying the membership fee this term  (matches `account \\d{3}-`)\n",
            "3 of 4 chunks flagged. The scan is a tripwire for review, not a defence: a reworded attack passes it.\n",
        ))
        .run();
    p.rageval(["scan", "evalsets/club-poison"])
        .write("rageval.yaml", "scan:\n  patterns: [\"(unclosed\"]\n")
        .status(2)
        .stderr(
            "error: rageval.yaml:2: `scan.patterns`: invalid pattern `(unclosed`: unclosed group\n",
        )
        .run();
}

#[test]
fn follow_ups_retrieve_the_right_chunk_with_the_heuristic_only() {
    // The sample's config names its question set.
    let p = Project::sample();
    p.rageval([
        "sweep",
        "--min-score",
        "0.1",
        "--k",
        "4",
        "--rewrite",
        "none,heuristic,model",
    ])
    .stdout_snapshot(
        "prompt_dimensions__follow_ups_retrieve_the_right_chunk_with_the_heuristic_only",
    )
    .run();
    let (h, runs) = read_csv(&p.read("reports/latest/runs.csv"));
    let run = |rewrite: &str| {
        row_where(
            &h,
            &runs,
            &[("question_id", "laptop-follow-up"), ("rewrite", rewrite)],
        )
    };
    assert_eq!(col(&h, run("none"), "expected_in_top_k"), "false");
    assert_eq!(col(&h, run("none"), "stage"), "retrieval");
    assert_eq!(col(&h, run("heuristic"), "expected_in_top_k"), "true");
    assert_eq!(
        col(&h, run("heuristic"), "asked"),
        "How long can I keep it? (about: What is the laptop loan policy?)"
    );
    // The mock echoes: its "rewrite" is the question itself, and it costs a call.
    assert_eq!(col(&h, run("model"), "asked"), "How long can I keep it?");
    assert_eq!(col(&h, run("model"), "model_calls"), "2");
    assert_eq!(col(&h, run("none"), "model_calls"), "1");
    // Questions without history are never rewritten and cost nothing extra.
    let plain = row_where(
        &h,
        &runs,
        &[("question_id", "fee-per-term"), ("rewrite", "model")],
    );
    assert_eq!(col(&h, plain, "model_calls"), "1");
}

#[test]
fn streaming_records_time_to_first_token() {
    let server = MockLlm::start(&["--token-delay-ms", "3"]);
    let p = mock_chat_project(&server.url);
    p.rageval([
        "sweep",
        "--evalset",
        "evalsets/club.yaml",
        "--min-score",
        "0.3",
        "--k",
        "2",
        "--stream",
    ])
    .env("RAGEVAL_TEST_KEY", "test-key")
    .stdout_contains("ttft p50/p95 ms")
    .stdout_snapshot("prompt_dimensions__streaming_records_time_to_first_token")
    .run();
    let (h, rows) = read_csv(&p.read("reports/latest/summary.csv"));
    let p50: f64 = col(&h, &rows[0], "ttft_p50_ms").parse().unwrap();
    let p95: f64 = col(&h, &rows[0], "ttft_p95_ms").parse().unwrap();
    let latency: f64 = col(&h, &rows[0], "latency_p95_ms").parse().unwrap();
    assert!(
        p50 > 0.0 && p50 <= p95 && p95 <= latency,
        "{p50} {p95} {latency}"
    );
    assert!(server.stats()["chat_stream_requests"].as_u64().unwrap() > 0);
}

#[test]
fn notes_come_from_the_command_and_quiet_hides_them() {
    let server = MockLlm::start(&["--no-auth", "--fail-rate", "1"]);
    let p = mock_chat_project(&server.url);
    let config = p
        .read("rageval.yaml")
        .replace("}\ncache", ", max_retries: 0}\ncache");
    p.write("rageval.yaml", &config);
    let args = [
        "sweep",
        "--evalset",
        "evalsets/club.yaml",
        "--min-score",
        "0.1",
        "--k",
        "1",
        "--rewrite",
        "model",
    ];
    let error = "error: every model call failed (27 server); no report written; see the errors of the server at `URL`\n"
        .replace("URL", &server.url);
    p.rageval(args)
        .status(2)
        .stderr(format!("note: question `laptop-follow-up`: the rewrite call failed: server: 500 Internal Server Error: injected failure; using the question as asked\n{error}"))
        .run();
    // --quiet prints no note.
    p.rageval(["-q"]).args(args).status(2).stderr(error).run();
}
