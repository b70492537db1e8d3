//! `rageval generate`: the written set loads, sweeps and is right; every bad candidate is
//! rejected for its reason and counted; a rerun over the cache is the same file and no call.

use serde_json::Value;
use serde_yaml::Value as Yaml;

use crate::harness::Test;
use crate::http::MockLlm;
use crate::support::{Project, GENERATE_ONE_EACH};

/// The questions of a written set: (list, item) pairs.
fn items(text: &str) -> Vec<(&'static str, Yaml)> {
    let doc: Yaml = serde_yaml::from_str(text).unwrap();
    let mut out = Vec::new();
    for list in ["answerable", "unanswerable"] {
        for item in doc[list].as_sequence().cloned().unwrap_or_default() {
            out.push((list, item));
        }
    }
    out
}

fn text(v: &Yaml) -> String {
    v.as_str().unwrap_or_default().to_string()
}

/// The body of section `heading` of a markdown file, whitespace squashed and lowercased.
fn section(markdown: &str, heading: &str) -> String {
    let mut body = Vec::new();
    let mut inside = false;
    for line in markdown.lines() {
        if let Some(h) = line.strip_prefix('#') {
            inside = h.trim_start_matches('#').trim() == heading;
            continue;
        }
        if inside {
            body.push(line);
        }
    }
    body.join(" ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

#[test]
fn a_generated_set_validates_sweeps_and_its_answers_are_in_their_chunks() {
    let p = Project::sample();
    p.rageval(["generate", "--answerable", "8", "--unanswerable", "6"])
        .stdout(concat!(
            "wrote 14 of 14 questions asked for to evalsets/generated.yaml\n",
            "  answerable: 8 asked, 8 tried, 8 kept\n",
            "  near-miss: 5 asked, 5 tried, 5 kept\n",
            "  off-topic: 1 asked, 1 tried, 1 kept\n",
            "note: these questions are placeholders: the offline mock model (`chat: {kind: mock}`, the default) wrote them from the passages' words, to show the file's shape. For real ones, point `chat:` (or `generate.model`) at a model, e.g. `chat: {kind: openai, model: gpt-4o-mini, api_key_env: OPENAI_API_KEY}` or a local server's `base_url` (docs/generate.md), then run `rageval generate --force`\n",
            "next: review them (set `reviewed: true`), then `rageval validate` and `rageval sweep --only reviewed`\n",
        ))
        .stderr(concat!(
            "generate: round 1: tried 8, 5, 1 (answerable, near-miss, off-topic); kept 8, 5, 1\n",
            "generate: 14 generation and 6 verification calls, 0 answered from the cache\n",
        ))
        // The written set whole: the same seed, corpus and model write the same file.
        .file_snapshot("evalsets/generated.yaml", "generate__a_generated_set_validates_sweeps_and_its_answers_are_in_their_chunks")
        .run();
    let written = p.read("evalsets/generated.yaml");
    assert!(written.starts_with("# Written by `rageval generate` with mock, seed 0"));
    let all = items(&written);
    assert_eq!(all.len(), 14);
    let mut ids = std::collections::HashSet::new();
    for (list, item) in &all {
        assert!(ids.insert(text(&item["id"])), "ids are unique");
        assert_eq!(item["reviewed"], Yaml::Bool(false));
        assert_eq!(text(&item["generated"]["model"]), "mock");
        assert_eq!(item["generated"]["seed"].as_u64(), Some(0));
        if *list == "answerable" {
            // The source is a chunk of the corpus, and the answer is in it.
            let source = text(&item["expect"]["sources"][0]);
            assert_eq!(source, text(&item["generated"]["from"]));
            let (file, heading) = source.split_once('#').unwrap();
            let body = section(&p.read(&format!("evalsets/club/{file}")), heading);
            let answer = text(&item["expect"]["answer"][0]).to_lowercase();
            assert!(
                !answer.is_empty() && body.contains(&answer),
                "{answer:?} in {source}: {body}"
            );
        } else {
            assert!(item.get("expect").is_none());
            let tag = text(&item["tags"][0]);
            assert!(tag == "near-miss" || tag == "off-topic", "{tag}");
        }
    }
    p.rageval(["validate", "evalsets/generated.yaml"])
        .stdout(concat!(
            "ok    evalsets/generated.yaml: 8 answerable, 6 unanswerable; corpus `evalsets/club` (23 chunks); 14 generated, 14 not reviewed yet (set `reviewed: true` once checked)\n",
            "      at 95%, 6 unanswerable and 8 answerable questions can certify at best unwanted ≤ 39.3% and false refusals ≤ 31.2% for one setting\n",
            "      plan for a chance of 80% at 95% by ordered tests (level 2.5%, for one setting), if each true rate is half its limit: unwanted 10% needs 107 unanswerable questions (this set has 6), or 17 with none answered; false refusals 25% needs 30 answerable questions (this set has 8), or 6 with none refused\n",
        ))
        .run();
    // Swept with the hand-written set, and apart from it.
    p.write(
        "rageval.yaml",
        "evalsets: [evalsets/club.yaml, evalsets/generated.yaml]\n",
    );
    let r = p
        .sweep(["--only", "generated", "--k", "1,2"])
        .run()
        .results();
    assert_eq!(r.questions.len(), 14);
    assert!(r
        .questions
        .values()
        .all(|q| q.generated.as_ref().is_some_and(|g| !g.reviewed)));
    let r = p
        .sweep(["--only", "reviewed", "--k", "1,2"])
        .run()
        .results();
    assert_eq!(r.questions.len(), 26);
    assert!(r.questions.values().all(|q| q.generated.is_none()));
    // Reviewing one makes it count as reviewed.
    let reviewed =
        p.read("evalsets/generated.yaml")
            .replacen("\n  reviewed: false", "\n  reviewed: true", 1);
    p.write("evalsets/generated.yaml", &reviewed);
    let r = p.sweep(["--only", "reviewed", "--k", "1"]).run().results();
    assert_eq!(r.questions.len(), 27);
}

/// `rageval generate --answerable 4 --unanswerable 2 EXTRA` with the mock model into the
/// missing (or forced) evalsets/generated.yaml: the same seed writes the same six questions in
/// one round.
fn generate_four_and_two(p: &Project, extra: &[&str]) {
    p.rageval(["generate", "--answerable", "4", "--unanswerable", "2"])
        .args(extra)
        .stdout(concat!(
            "wrote 6 of 6 questions asked for to evalsets/generated.yaml\n",
            "  answerable: 4 asked, 4 tried, 4 kept\n",
            "  near-miss: 2 asked, 2 tried, 2 kept\n",
            "note: these questions are placeholders: the offline mock model (`chat: {kind: mock}`, the default) wrote them from the passages' words, to show the file's shape. For real ones, point `chat:` (or `generate.model`) at a model, e.g. `chat: {kind: openai, model: gpt-4o-mini, api_key_env: OPENAI_API_KEY}` or a local server's `base_url` (docs/generate.md), then run `rageval generate --force`\n",
            "next: review them (set `reviewed: true`), then `rageval validate` and `rageval sweep --only reviewed`\n",
        ))
        .stderr(concat!(
            "generate: round 1: tried 4, 2, 0 (answerable, near-miss, off-topic); kept 4, 2, 0\n",
            "generate: 6 generation and 2 verification calls, 0 answered from the cache\n",
        ))
        .run();
}

#[test]
fn an_existing_file_is_kept_unless_forced_and_append_adds_without_duplicates() {
    let p = Project::sample();
    generate_four_and_two(&p, &[]);
    let first = p.read("evalsets/generated.yaml");
    p.rageval(["generate"])
        .fails("`evalsets/generated.yaml` exists: pass --force to overwrite it, or --append to add to it")
        .run();
    assert_eq!(p.read("evalsets/generated.yaml"), first);
    // The same seed appended: the passages asked about first give the questions the file
    // holds, which are duplicates; the next ones are new.
    p.rageval([
        "generate",
        "--answerable",
        "4",
        "--unanswerable",
        "2",
        "--append",
    ])
    .stdout(concat!(
        "wrote 6 of 6 questions asked for to evalsets/generated.yaml (appended)\n",
        "  answerable: 4 asked, 8 tried, 4 kept; rejected: 4 duplicate\n",
        "  near-miss: 2 asked, 4 tried, 2 kept; rejected: 2 duplicate\n",
        "note: these questions are placeholders: the offline mock model (`chat: {kind: mock}`, the default) wrote them from the passages' words, to show the file's shape. For real ones, point `chat:` (or `generate.model`) at a model, e.g. `chat: {kind: openai, model: gpt-4o-mini, api_key_env: OPENAI_API_KEY}` or a local server's `base_url` (docs/generate.md), then run `rageval generate --force`\n",
        "next: review them (set `reviewed: true`), then `rageval validate` and `rageval sweep --only reviewed`\n",
    ))
    .stderr(concat!(
        "generate: round 1: tried 4, 2, 0 (answerable, near-miss, off-topic); kept 0, 0, 0\n",
        "generate: round 2: tried 8, 4, 0 (answerable, near-miss, off-topic); kept 4, 2, 0\n",
        "generate: 12 generation and 2 verification calls, 0 answered from the cache\n",
    ))
    .run();
    let appended = p.read("evalsets/generated.yaml");
    // The old header first, then this run's.
    assert!(appended.starts_with(&first[..first.find("corpus:").unwrap()]));
    assert_eq!(
        appended.matches("# Written by `rageval generate`").count(),
        2
    );
    let (old, new) = (items(&first), items(&appended));
    assert_eq!(new.len(), old.len() + 6);
    let questions: std::collections::HashSet<String> =
        new.iter().map(|(_, i)| text(&i["question"])).collect();
    assert_eq!(questions.len(), new.len(), "no question twice");
    for (list, o) in &old {
        assert!(
            new.iter().any(|(l, n)| l == list && n == o),
            "kept as it was"
        );
    }
    p.rageval(["validate", "evalsets/generated.yaml"])
        .stdout(concat!(
            "ok    evalsets/generated.yaml: 8 answerable, 4 unanswerable; corpus `evalsets/club` (23 chunks); 12 generated, 12 not reviewed yet (set `reviewed: true` once checked)\n",
            "      at 95%, 4 unanswerable and 8 answerable questions can certify at best unwanted ≤ 52.7% and false refusals ≤ 31.2% for one setting\n",
            "      plan for a chance of 80% at 95% by ordered tests (level 2.5%, for one setting), if each true rate is half its limit: unwanted 10% needs 107 unanswerable questions (this set has 4), or 17 with none answered; false refusals 25% needs 30 answerable questions (this set has 8), or 6 with none refused\n",
        ))
        .run();
    // --force replaces it: the same seed writes the first file again.
    generate_four_and_two(&p, &["--force"]);
    assert_eq!(p.read("evalsets/generated.yaml"), first);
}

/// A config whose chat model is `rageval mock-llm` at `url`, with the response cache.
fn served(p: &Project, url: &str, extra: &str) {
    p.write(
        "rageval.yaml",
        &format!(
            "evalsets: [evalsets/club.yaml]\nchat:\n  kind: openai\n  model: m\n  base_url: {url}\n  api_key_env: RAGEVAL_TEST_KEY\n{extra}"
        ),
    );
}

#[test]
fn a_rerun_with_the_same_seed_writes_the_same_file_and_makes_no_call() {
    let server = MockLlm::start(&["--keep-requests", "100"]);
    let p = Project::sample();
    served(&p, &server.url, "");
    // Ten questions in one round, the same whether called or answered from the cache.
    let generate = |extra: &[&str], cached: u64| {
        p.rageval(["generate", "--answerable", "5", "--unanswerable", "5"])
            .args(extra)
            .env("RAGEVAL_TEST_KEY", "test-key")
            .stdout(concat!(
                "wrote 10 of 10 questions asked for to evalsets/generated.yaml\n",
                "  answerable: 5 asked, 5 tried, 5 kept\n",
                "  near-miss: 4 asked, 4 tried, 4 kept\n",
                "  off-topic: 1 asked, 1 tried, 1 kept\n",
                "next: review them (set `reviewed: true`), then `rageval validate` and `rageval sweep --only reviewed`\n",
            ))
            .stderr(format!(
                "generate: round 1: tried 5, 4, 1 (answerable, near-miss, off-topic); kept 5, 4, 1\n\
                 generate: 10 generation and 5 verification calls, {cached} answered from the cache\n"
            ))
    };
    generate(&[], 0).run();
    let first = p.read("evalsets/generated.yaml");
    let calls = server.stats()["chat_requests"].as_u64().unwrap();
    // 10 generation calls and one verification per unanswerable candidate.
    assert_eq!(calls, 15, "{first}");
    // Each call asked for its reply's JSON Schema.
    let bodies: Vec<Value> = server.get("/requests")["requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| serde_json::from_str(b.as_str().unwrap()).unwrap())
        .collect();
    let names: std::collections::BTreeSet<&str> = bodies
        .iter()
        .map(|b| {
            b["response_format"]["json_schema"]["name"]
                .as_str()
                .unwrap()
        })
        .collect();
    assert_eq!(
        names.into_iter().collect::<Vec<_>>(),
        [
            "rageval_answerable_question",
            "rageval_near_miss_question",
            "rageval_off_topic_question",
            "rageval_verdict"
        ]
    );
    assert!(bodies
        .iter()
        .all(|b| b["response_format"]["type"] == "json_schema"));
    generate(&["--force"], 15)
        .stderr_contains(
            "generate: 10 generation and 5 verification calls, 15 answered from the cache\n",
        )
        .run();
    assert_eq!(p.read("evalsets/generated.yaml"), first, "byte for byte");
    assert_eq!(
        server.stats()["chat_requests"].as_u64().unwrap(),
        calls,
        "no call"
    );
    // --dry-run counts the first round's calls as cached and makes none.
    p.rageval([
        "generate",
        "--answerable",
        "5",
        "--unanswerable",
        "5",
        "--dry-run",
        "--force",
    ])
        .env("RAGEVAL_TEST_KEY", "test-key")
        .stdout_contains("dry run: the first round makes 10 generation calls (10 answered from the cache), then up to 5 verification calls")
        .stdout_contains("first call:\n--- user\nYou write test questions")
        .stdout_snapshot("generate__a_rerun_with_the_same_seed_writes_the_same_file_and_makes_no_call")
        .run();
    assert_eq!(server.stats()["chat_requests"].as_u64().unwrap(), calls);
}

#[test]
fn without_structured_output_the_mock_server_cannot_tell_and_every_reply_is_rejected() {
    let server = MockLlm::start(&["--keep-requests", "10"]);
    let p = Project::sample();
    served(&p, &server.url, "generate:\n  structured_output: false\n");
    p.rageval([
        "generate",
        "--answerable",
        "2",
        "--unanswerable",
        "0",
        "--no-cache",
    ])
    .env("RAGEVAL_TEST_KEY", "test-key")
    .status(2)
    .absent("evalsets/generated.yaml")
    .stderr(concat!(
        "generate: round 1: tried 2, 0, 0 (answerable, near-miss, off-topic); kept 0, 0, 0\n",
        "generate: round 2: tried 4, 0, 0 (answerable, near-miss, off-topic); kept 0, 0, 0\n",
        "generate: round 3: tried 6, 0, 0 (answerable, near-miss, off-topic); kept 0, 0, 0\n",
        "generate: round 4: tried 8, 0, 0 (answerable, near-miss, off-topic); kept 0, 0, 0\n",
        "generate: 8 generation and 0 verification calls, 0 answered from the cache\n",
        "error: no candidate passed, so `evalsets/generated.yaml` was not written:\n",
        "answerable: 2 asked, 8 tried, 0 kept; rejected: 8 malformed reply\n",
        "pass `--rejected FILE` to read each rejected candidate and its reason\n",
    ))
    .run();
    let bodies = server.get("/requests");
    assert!(bodies["requests"]
        .as_array()
        .unwrap()
        .iter()
        .all(|b| !b.as_str().unwrap().contains("response_format")));
}

/// A model server of the test's own that answers every generation and verification call with
/// a reply chosen by the passage's heading, the request's seed and the question, to make each
/// kind of bad candidate once. Returns its base URL.
fn scripted_server(reject_schema: bool) -> String {
    use axum::http::StatusCode;
    use axum::response::IntoResponse;
    use axum::routing::post;
    crate::support::serve_forever(axum::Router::new().route(
                "/v1/chat/completions",
                post(move |body: axum::body::Bytes| async move {
                    let req: Value = serde_json::from_slice(&body).unwrap();
                    if reject_schema && req.get("response_format").is_some() {
                        return (
                            StatusCode::BAD_REQUEST,
                            axum::Json(serde_json::json!({"error": {"message": "response_format is not supported"}})),
                        )
                            .into_response();
                    }
                    let name = req["response_format"]["json_schema"]["name"].as_str().unwrap_or("");
                    let prompt = req["messages"][0]["content"].as_str().unwrap_or("");
                    let heading = prompt
                        .split_once("(from a.md#")
                        .and_then(|(_, r)| r.split_once(')'))
                        .map_or("", |(h, _)| h);
                    let seed = req["seed"].as_u64().unwrap_or(0);
                    let question = prompt
                        .lines()
                        .find_map(|l| l.strip_prefix("Question: "))
                        .unwrap_or("");
                    let reply: Option<&str> = match (name, heading, seed) {
                        ("rageval_answerable_question", "Fee", 0) => Some(r#"{"question": "What does it cost?", "answer": "fifty dollars"}"#),
                        ("rageval_answerable_question", "Rules", 0) => Some(r#"{"question": "Must members always clean the workshop benches after every single session?", "answer": "clean"}"#),
                        ("rageval_answerable_question", "Hours", 0) => Some("Sure! Here is a question about the hours."),
                        ("rageval_answerable_question", "Guests", 0) => Some(r#"{"question": "How many guests may a member bring?", "answer": "two guests"}"#),
                        ("rageval_answerable_question", "Fee", 1) => None,
                        ("rageval_answerable_question", "Rules", 1) => Some(r#"{"question": "How many guests may a member bring?", "answer": "benches"}"#),
                        ("rageval_answerable_question", "Hours", 1) => Some("```json\n{\"question\": \"When does the workshop open?\", \"answer\": \"nine in the morning\"}\n```"),
                        ("rageval_answerable_question", "Guests", 1) => Some(r#"{"question": "how many GUESTS may a member bring", "answer": "two guests"}"#),
                        ("rageval_near_miss_question", "Fee", 0) => Some(r#"{"question": "Is there a discount for students?"}"#),
                        ("rageval_near_miss_question", "Rules", 0) => Some(r#"{"question": "Who cleans the benches?"}"#),
                        ("rageval_near_miss_question", "Hours", 0) => Some(r#"{"question": 7}"#),
                        ("rageval_near_miss_question", "Guests", 0) => None,
                        ("rageval_near_miss_question", "Fee", 1) => Some(r#"{"question": "Is there a discount for students?"}"#),
                        ("rageval_near_miss_question", "Rules", 1) => Some(r#"{"question": "Can I bring my dog?"}"#),
                        ("rageval_near_miss_question", "Hours", 1) => Some(r#"{"question": "Is there parking nearby?"}"#),
                        ("rageval_near_miss_question", "Guests", 1) => Some(r#"{"question": "Do guests need an id card?"}"#),
                        ("rageval_false_premise_question", "Fee", 0) => Some(r#"{"question": "Why does membership cost twenty dollars per term?", "premise": "membership costs twenty dollars per term", "truth": "ten dollars per term"}"#),
                        ("rageval_false_premise_question", "Rules", 0) => Some(r#"{"question": "Why must members clean the benches after every session?", "premise": "members clean the workshop benches after every single session", "truth": "after every single session"}"#),
                        ("rageval_false_premise_question", "Hours", 0) => Some(r#"{"question": "Why does the workshop open at ten?", "premise": "the workshop opens at ten"}"#),
                        ("rageval_false_premise_question", "Guests", 0) => Some(r#"{"question": "Why may a member bring five guests?", "premise": "a member may bring five guests", "truth": "members bring 2 friends"}"#),
                        ("rageval_premise_verdict", _, _) => {
                            let claim = prompt.lines().find_map(|l| l.strip_prefix("Claim: ")).unwrap_or("");
                            if claim.starts_with("members clean") {
                                Some(r#"{"premise": "supported"}"#)
                            } else {
                                Some(r#"{"premise": "false"}"#)
                            }
                        }
                        ("rageval_verdict", _, _) => match question {
                            "Who cleans the benches?" => Some(r#"{"answerable": true}"#),
                            "Can I bring my dog?" => Some("The passages do not say."),
                            "Do guests need an id card?" => None,
                            _ => Some(r#"{"answerable": false}"#),
                        },
                        _ => Some("unexpected request"),
                    };
                    match reply {
                        None => (StatusCode::INTERNAL_SERVER_ERROR, "boom").into_response(),
                        Some(content) => axum::Json(serde_json::json!({
                            "choices": [{"message": {"role": "assistant", "content": content}}],
                            "usage": {"prompt_tokens": 100, "completion_tokens": 10},
                        }))
                        .into_response(),
                    }
                }),
    ))
}

const DOC: &str =
    "# Fee\nMembership of the workshop costs ten dollars per term, paid to the treasurer.\n\n\
# Rules\nMembers clean the workshop benches after every single session and put tools back.\n\n\
# Hours\nThe workshop opens at nine in the morning and closes at six on weekdays.\n\n\
# Guests\nA member may bring two guests to any open evening of the workshop.\n";

fn scripted_project(url: &str) -> Project {
    scripted_project_over(url, DOC)
}

/// A project over `doc` whose generator is the scripted server at `url`.
pub(crate) fn scripted_project_over(url: &str, doc: &str) -> Project {
    Project::with_files(&[
        ("docs/a.md", doc),
        (
            "rageval.yaml",
            &format!(
                "chat:\n  kind: openai\n  model: scripted\n  base_url: {url}\n  max_retries: 0\n  api_key_env: RAGEVAL_TEST_NO_KEY\ngenerate:\n  max_candidates: 8\n"
            ),
        ),
    ])
}

#[test]
fn every_bad_candidate_is_rejected_for_its_reason_and_counted() {
    let url = scripted_server(false);
    let p = scripted_project(&url);
    p.rageval([
        "generate", "--corpus", "docs", "--answerable", "3", "--unanswerable", "3", "--off-topic", "0", "--no-cache", "--out", "set.yaml",
    ])
    .stdout(concat!(
        "wrote 4 of 6 questions asked for to set.yaml\n",
        "  answerable: 3 asked, 8 tried, 2 kept; rejected: 1 answer not in passage, 1 copies the passage, 2 duplicate, 1 malformed reply, 1 call failed\n",
        "  near-miss: 3 asked, 8 tried, 2 kept; rejected: 1 verifier said answerable, 1 duplicate, 2 malformed reply, 2 call failed\n",
        "warning: only 2 of 3 answerable questions passed within 8 candidates (`generate.max_candidates`)\n",
        "warning: only 2 of 3 near-miss questions passed within 8 candidates (`generate.max_candidates`)\n",
        "next: review them (set `reviewed: true`), then `rageval validate` and `rageval sweep --only reviewed`\n",
    ))
    .stderr(concat!(
        "generate: round 1: tried 3, 3, 0 (answerable, near-miss, off-topic); kept 1, 1, 0\n",
        "generate: round 2: tried 5, 5, 0 (answerable, near-miss, off-topic); kept 1, 2, 0\n",
        "generate: round 3: tried 7, 6, 0 (answerable, near-miss, off-topic); kept 2, 2, 0\n",
        "generate: round 4: tried 8, 7, 0 (answerable, near-miss, off-topic); kept 2, 2, 0\n",
        "generate: round 5: tried 8, 8, 0 (answerable, near-miss, off-topic); kept 2, 2, 0\n",
        "generate: 16 generation and 5 verification calls, 0 answered from the cache\n",
    ))
    .run();
    let written = p.read("set.yaml");
    assert!(written.contains("# answerable: 3 asked, 8 tried, 2 kept; rejected: 1 answer not in passage, 1 copies the passage, 2 duplicate, 1 malformed reply, 1 call failed\n"), "{written}");
    let kept: Vec<(String, String, String)> = items(&written)
        .iter()
        .map(|(list, i)| {
            (
                list.to_string(),
                text(&i["question"]),
                text(&i["expect"]["answer"][0]),
            )
        })
        .collect();
    let mut kept_sorted = kept.clone();
    kept_sorted.sort();
    assert_eq!(
        kept_sorted,
        [
            (
                "answerable".to_string(),
                "How many guests may a member bring?".to_string(),
                kept.iter()
                    .find(|k| k.1.starts_with("How many"))
                    .unwrap()
                    .2
                    .clone()
            ),
            (
                "answerable".into(),
                "When does the workshop open?".into(),
                "nine in the morning".into()
            ),
            (
                "unanswerable".into(),
                "Is there a discount for students?".into(),
                String::new()
            ),
            (
                "unanswerable".into(),
                "Is there parking nearby?".into(),
                String::new()
            ),
        ]
    );
    // The guests question was kept from whichever passage came first; its answer is in it.
    let guests = kept.iter().find(|k| k.1.starts_with("How many")).unwrap();
    assert!(
        guests.2 == "two guests" || guests.2 == "benches",
        "{guests:?}"
    );
    p.rageval(["validate", "set.yaml"])
        .stdout(concat!(
            "ok    set.yaml: 2 answerable, 2 unanswerable; corpus `docs` (4 chunks); 4 generated, 4 not reviewed yet (set `reviewed: true` once checked)\n",
            "      at 95%, 2 unanswerable and 2 answerable questions can certify at best unwanted ≤ 77.6% and false refusals ≤ 77.6% for one setting\n",
            "      plan for a chance of 80% at 95% by ordered tests (level 2.5%, for one setting), if each true rate is half its limit: unwanted 10% needs 107 unanswerable questions (this set has 2), or 17 with none answered; false refusals 25% needs 30 answerable questions (this set has 2), or 6 with none refused\n",
        ))
        .run();
}

#[test]
fn a_false_premise_is_kept_tagged_and_noted_and_a_supported_one_is_rejected() {
    let url = scripted_server(false);
    let p = scripted_project(&url);
    p.rageval([
        "generate", "--corpus", "docs", "--answerable", "0", "--unanswerable", "2", "--off-topic", "0", "--false-premise", "1", "--no-cache", "--out", "set.yaml",
    ])
    .stdout(concat!(
        "wrote 1 of 2 questions asked for to set.yaml\n",
        "  false-premise: 2 asked, 8 tried, 1 kept; rejected: 1 truth not in passage, 1 verifier said the premise holds, 5 malformed reply\n",
        "warning: only 1 of 2 false-premise questions passed within 8 candidates (`generate.max_candidates`)\n",
        "next: review them (set `reviewed: true`), then `rageval validate` and `rageval sweep --only reviewed`\n",
    ))
    .stderr(concat!(
        "generate: round 1: tried 0, 0, 0, 2 (answerable, near-miss, off-topic, false-premise); kept 0, 0, 0, 1\n",
        "generate: round 2: tried 0, 0, 0, 3 (answerable, near-miss, off-topic, false-premise); kept 0, 0, 0, 1\n",
        "generate: round 3: tried 0, 0, 0, 4 (answerable, near-miss, off-topic, false-premise); kept 0, 0, 0, 1\n",
        "generate: round 4: tried 0, 0, 0, 5 (answerable, near-miss, off-topic, false-premise); kept 0, 0, 0, 1\n",
        "generate: round 5: tried 0, 0, 0, 6 (answerable, near-miss, off-topic, false-premise); kept 0, 0, 0, 1\n",
        "generate: round 6: tried 0, 0, 0, 7 (answerable, near-miss, off-topic, false-premise); kept 0, 0, 0, 1\n",
        "generate: round 7: tried 0, 0, 0, 8 (answerable, near-miss, off-topic, false-premise); kept 0, 0, 0, 1\n",
        "generate: 8 generation and 2 verification calls, 0 answered from the cache\n",
    ))
    .run();
    let written = p.read("set.yaml");
    assert!(written.starts_with("# Written by `rageval generate` with scripted, seed 0, off-topic share 0, false-premise share 1.\n"), "{written}");
    let all = items(&written);
    assert_eq!(all.len(), 1, "{written}");
    let (list, item) = &all[0];
    assert_eq!(*list, "unanswerable");
    assert_eq!(
        text(&item["question"]),
        "Why does membership cost twenty dollars per term?"
    );
    assert_eq!(
        item["tags"],
        serde_yaml::from_str::<Yaml>("[false-premise]").unwrap()
    );
    assert_eq!(
        text(&item["note"]),
        "false premise: membership costs twenty dollars per term; the passage says: ten dollars per term"
    );
    p.rageval(["validate", "set.yaml"])
        .stdout(concat!(
            "ok    set.yaml: 0 answerable, 1 unanswerable; corpus `docs` (4 chunks); 1 generated, 1 not reviewed yet (set `reviewed: true` once checked)\n",
            "      at 95%, 1 unanswerable and 0 answerable questions can certify at best unwanted ≤ 95% and nothing on false refusals (no answerable questions) for one setting\n",
            "      plan for a chance of 80% at 95% by ordered tests (level 2.5%, for one setting), if each true rate is half its limit: unwanted 10% needs 107 unanswerable questions (this set has 1), or 17 with none answered; false refusals 25% needs 30 answerable questions (this set has 0), or 6 with none refused\n",
        ))
        .run();
    p.rageval([
        "generate",
        "--corpus",
        "docs",
        "--off-topic",
        "0.6",
        "--false-premise",
        "0.5",
        "--out",
        "x.yaml",
    ])
    .fails("invalid --false-premise: with --off-topic 0.6 the shares add up to more than 1")
    .run();
}

#[test]
fn a_server_that_rejects_structured_output_is_told_how_to_turn_it_off() {
    let url = scripted_server(true);
    let p = scripted_project(&url);
    p.rageval(["generate", "--corpus", "docs", "--no-cache"])
        .status(2)
        .stderr_contains(
            "error: every generation call of the first round failed; the first: 400 Bad Request",
        )
        .absent("evalsets/generated.yaml")
        .stderr(
            "error: every generation call of the first round failed; the first: 400 Bad Request: response_format is not supported (the request carried a JSON Schema as `response_format` (structured output); if this server does not accept it, set `structured_output: false` in this model's section)\n",
        )
        .run();
}

#[test]
fn bad_input_is_refused_before_any_call() {
    let p = Project::sample();
    p.rageval(["generate", "--answerable", "-1"])
        .status(2)
        .stderr(concat!(
            "error: unexpected argument '-1' found\n",
            "\n",
            "Usage: rageval generate [OPTIONS]\n",
            "\n",
            "For more information, try '--help'.\n",
        ))
        .run();
    p.rageval(["generate", "--answerable", "many"])
        .status(2)
        .stderr(concat!(
            "error: invalid value 'many' for '--answerable <N>': invalid digit found in string\n",
            "\n",
            "For more information, try '--help'.\n",
        ))
        .run();
    p.rageval(["generate", "--unanswerable", "10001"])
        .fails("invalid --unanswerable: at most 10000 questions per run, got 10001")
        .run();
    p.rageval(["generate", "--answerable", "0", "--unanswerable", "0"])
        .fails("nothing to generate: --answerable and --unanswerable are both 0")
        .run();
    p.rageval(["generate", "--off-topic", "1.5"])
        .fails("invalid --off-topic: must be a share from 0 to 1, got 1.5")
        .run();
    std::fs::create_dir_all(p.path().join("empty")).unwrap();
    p.rageval(["generate", "--corpus", "empty"])
        .fails("corpus `empty` holds no markdown sections (looked for `*.md` files with text)")
        .run();
    p.write("tiny/a.md", "# A\nYes.\n\n# B\nNo way.\n");
    p.rageval(["generate", "--corpus", "tiny"])
        .fails("corpus `tiny` has no passage of at least 5 content words to ask about")
        .run();
    // Config errors: (the `generate:` part of rageval.yaml, the one error line).
    let cases: [(&str, &str); 4] = [
        (
            "generate:\n  verify_prompt: \"Q: {question} {passage}\"\n",
            "rageval.yaml:3: `generate.verify_prompt`: unknown placeholder `{passage}`; this template takes `{question}`, `{passages}` (write `{{` and `}}` for literal braces)",
        ),
        (
            "generate:\n  model: big\n",
            "rageval.yaml:3: `generate.model`: unknown chat profile `big`; `models:` defines `default`",
        ),
        (
            "generate:\n  max_similarity: 1.5\n",
            "rageval.yaml:3: `generate.max_similarity`: must be a cosine above 0 and at most 1, got 1.5",
        ),
        (
            "models:\n  chain:\n    kind: http\n    url: http://127.0.0.1:9/generate\ngenerate:\n  model: chain\n",
            "rageval.yaml:7: `generate.model`: names a generation endpoint (kind: http), which builds its own prompt: the generator needs a model of kind openai or mock",
        ),
    ];
    for (section, message) in cases {
        p.write(
            "rageval.yaml",
            &format!("evalsets: [evalsets/club.yaml]\n{section}"),
        );
        p.rageval(["generate"]).fails(message).run();
    }
    // A generated question's `reviewed` needs its `generated`.
    p.write(
        "set.yaml",
        "corpus: evalsets/club\nanswerable:\n  - question: Who?\n    reviewed: true\n",
    );
    p.rageval(["validate", "set.yaml"])
        .status(2)
        .stderr(
            "error: set.yaml:4: `answerable[0].reviewed`: marks a generated question, and this one has no `generated`: remove it\n",
        )
        .run();
    assert!(!p.path().join("evalsets/generated.yaml").exists());
}

#[test]
fn init_generate_starts_a_project_with_generated_questions_that_sweep() {
    let t = Test::empty()
        .args(["init", "--generate"])
        .stdout_contains("wrote rageval.yaml, evalsets/starter.yaml")
        .stdout_contains("to evalsets/generated.yaml")
        // Said plainly: the offline mock's questions are placeholders, and how to get real ones.
        .stdout(concat!(
            "wrote rageval.yaml, evalsets/starter.yaml, docs/welcome.md, and the schemas .rageval/config.schema.json, .rageval/evalset.schema.json for editors\n",
            "next: rageval sweep\n",
            "then: write your own questions in evalsets/starter.yaml (`rageval validate` checks them)\n",
            "wrote 15 of 20 questions asked for to evalsets/generated.yaml\n",
            "  answerable: 10 asked, 40 tried, 5 kept; rejected: 35 duplicate\n",
            "  near-miss: 8 asked, 8 tried, 8 kept\n",
            "  off-topic: 2 asked, 2 tried, 2 kept\n",
            "warning: only 5 of 10 answerable questions passed within 40 candidates (`generate.max_candidates`)\n",
            "note: these questions are placeholders: the offline mock model (`chat: {kind: mock}`, the default) wrote them from the passages' words, to show the file's shape. For real ones, point `chat:` (or `generate.model`) at a model, e.g. `chat: {kind: openai, model: gpt-4o-mini, api_key_env: OPENAI_API_KEY}` or a local server's `base_url` (docs/generate.md), then run `rageval generate --force`\n",
            "next: review them (set `reviewed: true`), then `rageval validate` and `rageval sweep --only reviewed`\n",
        ))
        .stderr(concat!(
            "generate: round 1: tried 10, 8, 2 (answerable, near-miss, off-topic); kept 5, 8, 2\n",
            "generate: round 2: tried 15, 8, 2 (answerable, near-miss, off-topic); kept 5, 8, 2\n",
            "generate: round 3: tried 20, 8, 2 (answerable, near-miss, off-topic); kept 5, 8, 2\n",
            "generate: round 4: tried 25, 8, 2 (answerable, near-miss, off-topic); kept 5, 8, 2\n",
            "generate: round 5: tried 30, 8, 2 (answerable, near-miss, off-topic); kept 5, 8, 2\n",
            "generate: round 6: tried 35, 8, 2 (answerable, near-miss, off-topic); kept 5, 8, 2\n",
            "generate: round 7: tried 40, 8, 2 (answerable, near-miss, off-topic); kept 5, 8, 2\n",
            "generate: 50 generation and 10 verification calls, 0 answered from the cache\n",
        ))
        .run();
    assert!(t
        .project()
        .read("evalsets/generated.yaml")
        .contains("\n# Placeholders: the offline mock model wrote them;"));
    let p = t.project();
    p.rageval(["validate"])
        .stdout(concat!(
            "ok    evalsets/starter.yaml: 3 answerable, 2 unanswerable; corpus `evalsets/../docs` (4 chunks)\n",
            "      at 95%, 2 unanswerable and 3 answerable questions can certify at best unwanted ≤ 77.6% and false refusals ≤ 63.2% for one setting, unwanted ≤ 92.1% and false refusals ≤ 81.6% at the first setting of each of the 4 chains along min_score of the configured grid\n",
            "      plan for a chance of 80% at 95% by ordered tests (level 0.625%, at the first setting of each of the 4 chains along min_score of the configured grid), if each true rate is half its limit: unwanted 10% needs 145 unanswerable questions (this set has 2), or 23 with none answered; false refusals 25% needs 44 answerable questions (this set has 3), or 8 with none refused\n",
            "ok    evalsets/generated.yaml: 5 answerable, 10 unanswerable; corpus `evalsets/../docs` (4 chunks); 15 generated, 15 not reviewed yet (set `reviewed: true` once checked)\n",
            "      at 95%, 10 unanswerable and 5 answerable questions can certify at best unwanted ≤ 25.9% and false refusals ≤ 45.1% for one setting, unwanted ≤ 39.8% and false refusals ≤ 63.8% at the first setting of each of the 4 chains along min_score of the configured grid\n",
            "      plan for a chance of 80% at 95% by ordered tests (level 0.625%, at the first setting of each of the 4 chains along min_score of the configured grid), if each true rate is half its limit: unwanted 10% needs 145 unanswerable questions (this set has 10), or 23 with none answered; false refusals 25% needs 44 answerable questions (this set has 5), or 8 with none refused\n",
        ))
        .run();
    p.sweep(["--only", "generated"])
        .stderr(crate::support::same_k_warning("2, 4 and 8", 2))
        .run();
}

/// A model server that answers each chat request with `reply(format name, prompt)`, whatever
/// its `seed` (as llama-server does at temperature 0).
pub(crate) fn replying_server(reply: fn(&str, &str) -> String) -> String {
    use axum::routing::post;
    crate::support::serve_forever(axum::Router::new().route(
        "/v1/chat/completions",
        post(move |body: axum::body::Bytes| async move {
            let req: Value = serde_json::from_slice(&body).unwrap();
            let name = req["response_format"]["json_schema"]["name"]
                .as_str()
                .unwrap_or("");
            let prompt = req["messages"][0]["content"].as_str().unwrap_or("");
            axum::Json(serde_json::json!({
                "choices": [{"message": {"role": "assistant", "content": reply(name, prompt)}}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 10},
            }))
        }),
    ))
}

/// A model server that answers like a small model misreading the prompt (SmolLM2-135M did):
/// answerable questions that are the prompt's own instruction, or answers of a whole
/// sentence; near-miss questions that repeat their instruction.
fn echoing_server() -> String {
    replying_server(|name, prompt| {
        match name {
            "rageval_answerable_question" if prompt.contains("(from a.md#Fee)") || prompt.contains("(from a.md#Hours)") => {
                r#"{"question": "This is a short phrase of at most ten words, copied word for word from the passage.", "answer": "ten dollars per term"}"#
            }
            "rageval_answerable_question" => {
                r#"{"question": "What must members do after a session?", "answer": "Members clean the workshop benches after every single session and put tools back"}"#
            }
            "rageval_near_miss_question" => {
                r#"{"question": "Write one question on the same topic as this passage that the passage does not answer?"}"#
            }
            _ => "unexpected request",
        }
        .to_string()
    })
}

#[test]
fn a_question_echoing_the_prompt_and_an_answer_past_its_limit_are_rejected_and_listed() {
    let url = echoing_server();
    let p = scripted_project(&url);
    let args = GENERATE_ONE_EACH;
    // Nothing passes: exit 2, with the account, the calls made and where to read the rejected.
    // The server answers every pass alike: each kind stops when its second pass repeats
    // the first (3 replies), one candidate short of its budget of 8.
    let account = "answerable: 1 asked, 7 tried, 0 kept; rejected: 3 answer too long, 4 repeats the prompt\nnear-miss: 1 asked, 7 tried, 0 kept; rejected: 7 repeats the prompt\n";
    p.rageval(args)
        .status(2)
        .stderr_contains(
            "generate: 14 generation and 0 verification calls, 0 answered from the cache\n",
        )
        .stderr_contains(account)
        .stderr_contains("pass `--rejected FILE` to read each rejected candidate and its reason\n")
        .absent("evalsets/generated.yaml")
        .stderr_snapshot("generate__a_question_echoing_the_prompt_and_an_answer_past_its_limit_are_rejected_and_listed")
        .run();
    p.rageval(args)
        .args(["--rejected", "out/rejected.jsonl"])
        .status(2)
        .stderr_contains(
            "generate: 14 generation and 0 verification calls, 0 answered from the cache\n",
        )
        .stderr_contains(account)
        .stderr_contains("each rejected candidate and its reason: `out/rejected.jsonl`\n")
        .stderr_snapshot("generate__a_question_echoing_the_prompt_and_an_answer_past_its_limit_are_rejected_and_listed_2")
        .run();
    let lines: Vec<Value> = p
        .read("out/rejected.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 14);
    let fee = lines
        .iter()
        .find(|l| l["from"] == "a.md#Fee" && l["kind"] == "answerable")
        .unwrap();
    assert_eq!(
        fee,
        &serde_json::json!({
            "kind": "answerable",
            "reason": "repeats the prompt",
            "from": "a.md#Fee",
            "question": "This is a short phrase of at most ten words, copied word for word from the passage.",
            "answer": "ten dollars per term",
        })
    );
    let rules = lines
        .iter()
        .find(|l| l["from"] == "a.md#Rules" && l["kind"] == "answerable")
        .unwrap();
    assert_eq!(rules["reason"], "answer too long");
    assert!(lines
        .iter()
        .filter(|l| l["kind"] == "near-miss")
        .all(|l| l["reason"] == "repeats the prompt"));
}

#[test]
fn init_generate_asks_the_model_of_config_or_refuses() {
    let url = scripted_server(false);
    let p = Project::empty();
    p.write("docs/a.md", DOC);
    p.write(
        "models.yaml",
        &format!("chat:\n  kind: openai\n  model: scripted\n  base_url: {url}\n  max_retries: 0\n  api_key_env: RAGEVAL_TEST_NO_KEY\ngenerate:\n  max_candidates: 8\n"),
    );
    // --config without --generate would be ignored: refused.
    p.rageval(["init", "--config", "models.yaml"])
        .fails("`rageval init` writes rageval.yaml and reads no config: `--config` names the model of `--generate` only")
        .absent("rageval.yaml")
        .run();
    // A config that does not load: refused before anything is written.
    p.rageval(["init", "--generate", "--config", "missing.yaml"])
        .status(2)
        .absent("rageval.yaml")
        .absent("evalsets/starter.yaml")
        .stderr("error: missing.yaml: cannot read config: No such file or directory (os error 2)\n")
        .run();
    p.rageval(["init", "--generate", "--config", "models.yaml"])
        .env("RAGEVAL_TEST_NO_KEY", "")
        .stdout_lacks("placeholders")
        .stdout(concat!(
            "wrote rageval.yaml, evalsets/starter.yaml, and the schemas .rageval/config.schema.json, .rageval/evalset.schema.json for editors\n",
            "next: rageval sweep\n",
            "then: write your own questions in evalsets/starter.yaml (`rageval validate` checks them)\n",
            "wrote 4 of 20 questions asked for to evalsets/generated.yaml\n",
            "  answerable: 10 asked, 8 tried, 2 kept; rejected: 1 answer not in passage, 1 copies the passage, 2 duplicate, 1 malformed reply, 1 call failed\n",
            "  near-miss: 8 asked, 8 tried, 2 kept; rejected: 1 verifier said answerable, 1 duplicate, 2 malformed reply, 2 call failed\n",
            "  off-topic: 2 asked, 8 tried, 0 kept; rejected: 8 malformed reply\n",
            "warning: only 2 of 10 answerable questions passed within 8 candidates (`generate.max_candidates`)\n",
            "warning: only 2 of 8 near-miss questions passed within 8 candidates (`generate.max_candidates`)\n",
            "warning: only 0 of 2 off-topic questions passed within 8 candidates (`generate.max_candidates`)\n",
            "next: review them (set `reviewed: true`), then `rageval validate` and `rageval sweep --only reviewed`\n",
        ))
        .stderr_any("how many calls the cache answers depends on the order concurrent calls finish")
        .stderr_contains(concat!(
            "generate: round 1: tried 8, 8, 2 (answerable, near-miss, off-topic); kept 2, 2, 0\n",
            "generate: round 2: tried 8, 8, 4 (answerable, near-miss, off-topic); kept 2, 2, 0\n",
            "generate: round 3: tried 8, 8, 6 (answerable, near-miss, off-topic); kept 2, 2, 0\n",
            "generate: round 4: tried 8, 8, 8 (answerable, near-miss, off-topic); kept 2, 2, 0\n",
            "generate: 24 generation and 6 verification calls, ",
        ))
        .run();
    let written = p.read("evalsets/generated.yaml");
    assert!(
        written.starts_with("# Written by `rageval generate` with scripted, seed 0"),
        "{written}"
    );
    assert!(!written.contains("Placeholders"));
    let all = items(&written);
    assert!(!all.is_empty());
    assert!(all
        .iter()
        .all(|(_, i)| text(&i["generated"]["model"]) == "scripted"));
    p.rageval(["validate", "evalsets/generated.yaml"])
        .stdout(concat!(
            "ok    evalsets/generated.yaml: 2 answerable, 2 unanswerable; corpus `evalsets/../docs` (4 chunks); 4 generated, 4 not reviewed yet (set `reviewed: true` once checked)\n",
            "      at 95%, 2 unanswerable and 2 answerable questions can certify at best unwanted ≤ 77.6% and false refusals ≤ 77.6% for one setting\n",
            "      plan for a chance of 80% at 95% by ordered tests (level 2.5%, for one setting), if each true rate is half its limit: unwanted 10% needs 107 unanswerable questions (this set has 2), or 17 with none answered; false refusals 25% needs 30 answerable questions (this set has 2), or 6 with none refused\n",
        ))
        .run();
}
