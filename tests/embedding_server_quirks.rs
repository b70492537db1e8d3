//! Real embedding servers' quirks do not stop a sweep: a loopback server that behaves as
//! llama-server does refuses an input its tokenizer counts over its context (whatever rageval
//! estimated), and returns an empty embedding for one input of a batch that it embeds fine alone.

use std::sync::{Arc, Mutex};

use axum::extract::{Json, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use serde_json::{json, Value};

use crate::harness::HashEmbedder;
use crate::http::{keyed, KEY_ENV};
use crate::support::{col, read_csv, Project};

/// How the server misbehaves.
#[derive(Clone, Copy)]
struct Quirks {
    /// Inputs its tokenizer counts over this many tokens are refused, as llama-server refuses
    /// them: `400`, `input (N tokens) is larger than the max context size (M tokens)`.
    context: usize,
    /// In a batch of more than one input, the second gets an empty embedding.
    empty_second: bool,
    /// An input holding this word gets an empty embedding, alone too.
    always_empty: Option<&'static str>,
}

/// The server's state: its quirks and every request's inputs, in order.
struct Llama {
    quirks: Quirks,
    requests: Mutex<Vec<Vec<String>>>,
}

/// A llama-server-like `/v1/embeddings` on loopback, alive as long as this value.
struct Server {
    url: String,
    state: Arc<Llama>,
    _runtime: tokio::runtime::Runtime,
}

impl Server {
    fn start(quirks: Quirks) -> Self {
        let runtime = crate::support::server_runtime();
        let state = Arc::new(Llama {
            quirks,
            requests: Mutex::new(Vec::new()),
        });
        let app = Router::new()
            .route("/v1/embeddings", post(embeddings))
            .with_state(state.clone());
        let addr = crate::support::serve(&runtime, app);
        Server {
            url: format!("http://{addr}/v1"),
            state,
            _runtime: runtime,
        }
    }

    /// The inputs of every request since the last call.
    fn take_requests(&self) -> Vec<Vec<String>> {
        std::mem::take(&mut self.state.requests.lock().unwrap())
    }
}

/// A WordPiece-like count, above rageval's estimate on short words: `[CLS]` and `[SEP]`, one
/// token per started three characters of a word, one per mark.
fn real_tokens(text: &str) -> usize {
    let mut tokens = 2;
    for piece in text.split(|c: char| !c.is_alphanumeric()) {
        tokens += piece.chars().count().div_ceil(3);
    }
    tokens
        + text
            .chars()
            .filter(|c| !c.is_alphanumeric() && !c.is_whitespace())
            .count()
}

async fn embeddings(State(state): State<Arc<Llama>>, Json(body): Json<Value>) -> Response {
    let inputs: Vec<String> = match &body["input"] {
        Value::String(s) => vec![s.clone()],
        v => serde_json::from_value(v.clone()).unwrap(),
    };
    state.requests.lock().unwrap().push(inputs.clone());
    let q = state.quirks;
    if let Some(n) = inputs
        .iter()
        .map(|t| real_tokens(t))
        .find(|&n| n > q.context)
    {
        let message = format!(
            "input ({n} tokens) is larger than the max context size ({} tokens)",
            q.context
        );
        let error =
            json!({"error": {"code": 400, "message": message, "type": "invalid_request_error"}});
        return (StatusCode::BAD_REQUEST, Json(error)).into_response();
    }
    let embedder = HashEmbedder::default();
    let data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let empty = (q.empty_second && inputs.len() > 1 && i == 1)
                || q.always_empty.is_some_and(|w| text.contains(w));
            let vector = if empty {
                Vec::new()
            } else {
                embedder.vector(text)
            };
            json!({"object": "embedding", "index": i, "embedding": vector})
        })
        .collect();
    Json(json!({"object": "list", "model": "all-MiniLM-L6-v2", "data": data})).into_response()
}

/// Seventeen sentences of four-letter words (estimated at 6 tokens each, counted at 11 by the
/// server), the last one the answer: about 105 tokens by rageval's estimate, under a 128-token
/// embedder's cut, and 194 by the server's count.
fn long_section() -> String {
    const WORDS: [&str; 20] = [
        "club", "fees", "paid", "each", "term", "bank", "card", "work", "here", "also", "desk",
        "open", "mail", "post", "form", "sign", "name", "date", "time", "room",
    ];
    let mut sentences: Vec<String> = (0..16)
        .map(|k| {
            let words: Vec<&str> = (0..5).map(|j| WORDS[(k * 7 + j * 3) % 20]).collect();
            format!("{}.", words.join(" "))
        })
        .collect();
    sentences.push("Cars park near gate nine.".into());
    sentences.join(" ")
}

/// A project of one guide, one question whose answer is in the long section's last sentence,
/// and the server as its embedder.
fn project(server: &Server, read: usize) -> Project {
    let p = Project::empty();
    p.write(
        "docs/guide.md",
        &format!(
            "# Install\nDownload the tool and run it once.\n\n# Long section\n{}\n",
            long_section()
        ),
    );
    p.write(
        "set.yaml",
        "corpus: docs\nanswerable:\n  - id: park\n    question: Where do cars park?\n    \
         expect: {sources: [guide.md#Long section], answer: [gate nine]}\n  \
         - id: install\n    question: How do I download the tool?\n    \
         expect: {sources: [guide.md#Install]}\n",
    );
    p.write(
        "rageval.yaml",
        &format!(
            "evalsets: [set.yaml]\nembedder: {{kind: openai, base_url: \"{}\", model: all-MiniLM-L6-v2, \
             api_key_env: {KEY_ENV}, max_input_tokens: {read}, max_retries: 2}}\n",
            server.url
        ),
    );
    p
}

/// runs.csv's (question id, passages, expected_in_top_k) at k=1.
fn runs(p: &Project) -> Vec<(String, String, String)> {
    let (h, rows) = read_csv(&p.read("reports/latest/runs.csv"));
    rows.iter()
        .map(|r| {
            let get = |c| col(&h, r, c).to_string();
            (
                get("question_id"),
                get("passages"),
                get("expected_in_top_k"),
            )
        })
        .collect()
}

#[test]
fn a_chunk_the_server_counts_too_long_is_split_embedded_and_named_in_a_note() {
    let server = Server::start(Quirks {
        context: 128,
        empty_second: false,
        always_empty: None,
    });
    let p = project(&server, 128);
    let sweep = || keyed(&p, &["sweep", "--min-score", "0", "--k", "1"]);
    sweep()
        .stderr_contains(
            "note: chunk `guide.md#1` (`guide.md#Long section`) is longer than the embedder \
             reads, by its count (client at http://127.0.0.1:",
        )
        .stderr_contains(
            "/v1/embeddings: 400 Bad Request: input (194 tokens) is larger than the max context \
             size (128 tokens)): split into 3 parts, `guide.md#1.1` to `guide.md#1.3`",
        )
        .stdout_snapshot("embedding_server_quirks__a_chunk_the_server_counts_too_long_is_split_embedded_and_named_in_a_note")
        .stderr(
            "note: chunk `guide.md#1` (`guide.md#Long section`) is longer than the embedder reads, by its count (client at http://127.0.0.1:[PORT]/v1/embeddings: 400 Bad Request: input (194 tokens) is larger than the max context size (128 tokens)): split into 3 parts, `guide.md#1.1` to `guide.md#1.3`\n",
        )
        .run();
    assert_eq!(
        runs(&p),
        [
            ("park".into(), "guide.md#1.3".into(), "true".into()),
            ("install".into(), "guide.md#0".into(), "true".into()),
        ]
    );
    let requests = server.take_requests();
    // The batch was refused, its texts asked alone, the refused one split and its parts sent
    // in one batch; then the questions.
    let sizes: Vec<usize> = requests.iter().map(Vec::len).collect();
    assert_eq!(sizes, [2, 1, 1, 3, 2], "{requests:?}");
    assert_eq!(requests[2], [requests[0][1].clone()]);
    assert!(requests[3].iter().all(|t| real_tokens(t) <= 128));
    let record = crate::harness::results(&p, "reports/latest");
    let chunks: Vec<&String> = record
        .corpora
        .values()
        .flat_map(|c| c.chunks.keys())
        .collect();
    assert_eq!(
        chunks,
        ["guide.md#0", "guide.md#1.1", "guide.md#1.2", "guide.md#1.3"]
    );

    // The split is the same on a rerun: the parts come from the cache, and only the whole
    // chunk is asked again (and refused again).
    sweep()
        .stdout_snapshot("embedding_server_quirks__a_chunk_the_server_counts_too_long_is_split_embedded_and_named_in_a_note")
        .stderr(
            "note: chunk `guide.md#1` (`guide.md#Long section`) is longer than the embedder reads, by its count (client at http://127.0.0.1:[PORT]/v1/embeddings: 400 Bad Request: input (194 tokens) is larger than the max context size (128 tokens)): split into 3 parts, `guide.md#1.1` to `guide.md#1.3`\n",
        )
        .run();
    let again = server.take_requests();
    assert_eq!(again.len(), 1, "{again:?}");
    assert_eq!(again[0].len(), 1);
    assert!(again[0][0].starts_with("Long section\n"));
    assert_eq!(runs(&p)[0].1, "guide.md#1.3");
}

#[test]
fn an_empty_vector_inside_a_batch_is_asked_for_again_alone() {
    let server = Server::start(Quirks {
        context: 100_000,
        empty_second: true,
        always_empty: None,
    });
    let p = project(&server, 512);
    keyed(&p, &["sweep", "-q", "--min-score", "0", "--k", "1"]).run();
    assert_eq!(runs(&p)[0].2, "true");
    let requests = server.take_requests();
    // Chunks: the batch, then its second text alone; the questions likewise.
    let sizes: Vec<usize> = requests.iter().map(Vec::len).collect();
    assert_eq!(sizes, [2, 1, 2, 1], "{requests:?}");
    assert_eq!(requests[1][0], requests[0][1]);
    assert_eq!(requests[3][0], requests[2][1]);
    let cache = p.read(".rageval/cache/embeddings.jsonl");
    assert_eq!(cache.lines().count(), 4);
    assert!(!cache.contains("[]"), "no empty vector is cached: {cache}");

    // An input the server never embeds fails the sweep, naming its chunk, once asked alone.
    let server = Server::start(Quirks {
        context: 100_000,
        empty_second: false,
        always_empty: Some("Download"),
    });
    let p = project(&server, 512);
    keyed(&p, &["sweep", "-q"])
        .fails("cannot embed corpus `docs`: the embedder returned an empty vector for chunk `guide.md#0`")
        .absent("reports")
        .run();
}

/// Two chunks with the same text (a code block or a changelog line that appears twice, as in
/// ripgrep's guide at 128 tokens) are embedded once, and both take the vector from an empty
/// cache (issue 33 item 1): the repeat used to take its own empty slot, and the first sweep
/// failed with `the embedder returned 0 dimensions for chunk ...`; the second, from the cache,
/// passed.
#[test]
fn repeated_chunks_take_one_vector_from_an_empty_cache() {
    let server = Server::start(Quirks {
        context: 100_000,
        empty_second: false,
        always_empty: None,
    });
    let p = project(&server, 512);
    let same = "```\nrg --files | rg guide\n```";
    p.write(
        "docs/guide.md",
        &format!(
            "# Example\n{same}\n\n# Example\n{same}\n\n# Parking\nCars park near gate nine.\n"
        ),
    );
    p.write(
        "set.yaml",
        "corpus: docs\nanswerable:\n  - id: park\n    question: Where do cars park?\n    \
         expect: {sources: [guide.md#Parking], answer: [gate nine]}\n",
    );
    keyed(&p, &["sweep", "-q", "--min-score", "0", "--k", "1"]).run();
    // The two distinct chunk texts, then the question.
    let sizes: Vec<usize> = server.take_requests().iter().map(Vec::len).collect();
    assert_eq!(sizes, [2, 1]);
    assert_eq!(runs(&p)[0].2, "true", "{:?}", runs(&p));
    // From the cache, the same.
    keyed(&p, &["sweep", "-q", "--min-score", "0", "--k", "1"]).run();
    assert_eq!(server.take_requests().len(), 0);
}
