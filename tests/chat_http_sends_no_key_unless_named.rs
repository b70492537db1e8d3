//! `chat: {kind: http}` is a team's own chain, perhaps on another host: it gets no API key
//! unless its section names `api_key_env` (issue 41 item 10; it used to send
//! `$OPENAI_API_KEY` by default). Tested against a loopback server that records the
//! `Authorization` header of every request.

use std::sync::{Arc, Mutex};

use axum::http::HeaderMap;
use serde_json::json;

use crate::support::Project;

const SET: &str = "corpus: docs\nanswerable:\n  - id: fee\n    question: What is the fee per term?\n    expect: {answer: [ten dollars]}\n";

/// A chain answering every request, and the `Authorization` header each carried ("" if none).
fn recording_chain() -> (String, Arc<Mutex<Vec<String>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let app = axum::Router::new().route(
        "/generate",
        axum::routing::post(move |headers: HeaderMap| {
            let log = log.clone();
            async move {
                let auth = headers
                    .get("authorization")
                    .map(|v| v.to_str().unwrap_or("?").to_string())
                    .unwrap_or_default();
                log.lock().unwrap().push(auth);
                axum::Json(json!({"answer": "The fee is ten dollars [1]."}))
            }
        }),
    );
    let base = crate::support::serve_forever(app);
    (base.replace("/v1", "/generate"), seen)
}

fn project(url: &str, key_line: &str) -> Project {
    let p = Project::one_doc(SET);
    p.write(
        "rageval.yaml",
        &format!(
            "evalsets: [set.yaml]\nsweep: {{min_score: \"0.1\", k: \"1\"}}\nchat:\n  kind: http\n  url: {url}\n{key_line}"
        ),
    );
    p
}

#[test]
fn a_generation_endpoint_gets_no_openai_key_by_default() {
    let (url, seen) = recording_chain();
    let p = project(&url, "");
    p.rageval(["sweep", "-q", "--no-cache"])
        .env("OPENAI_API_KEY", "sk-openai-secret-1234")
        .run();
    let seen = seen.lock().unwrap().clone();
    assert!(!seen.is_empty(), "the chain was called");
    assert!(seen.iter().all(String::is_empty), "{seen:?}");
}

#[test]
fn a_generation_endpoint_gets_the_key_its_section_names() {
    let (url, seen) = recording_chain();
    let p = project(&url, "  api_key_env: CHAIN_TOKEN\n");
    p.rageval(["sweep", "-q", "--no-cache"])
        .env("OPENAI_API_KEY", "sk-openai-secret-1234")
        .env("CHAIN_TOKEN", "chain-token-77")
        .run();
    let seen = seen.lock().unwrap().clone();
    assert!(!seen.is_empty(), "the chain was called");
    assert!(
        seen.iter().all(|a| a == "Bearer chain-token-77"),
        "{seen:?}"
    );
    // Named as OPENAI_API_KEY on purpose, that one is sent.
    let (url, seen) = recording_chain();
    let p = project(&url, "  api_key_env: OPENAI_API_KEY\n");
    p.rageval(["sweep", "-q", "--no-cache"])
        .env("OPENAI_API_KEY", "sk-openai-secret-1234")
        .run();
    let seen = seen.lock().unwrap().clone();
    assert!(
        seen.iter().all(|a| a == "Bearer sk-openai-secret-1234"),
        "{seen:?}"
    );
}
