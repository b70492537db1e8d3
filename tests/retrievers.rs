//! Bring-your-own retrieval, for real: an HTTP search service served inside the test over the
//! builtin index, and a PostgreSQL table with pgvector (scripts/postgres.sh) loaded by
//! `rageval index`. Each must sweep the sample exactly as the builtin retriever does.

use std::net::SocketAddr;

use axum::extract::{Json, Path as UrlPath, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use serde_json::{json, Value};

use crate::harness::{Corpus, Embedder, HashEmbedder, Index, Output, Test, DEFAULT_DIMENSIONS};
use crate::support::{read_csv, repo, require_database, Project, SAMPLE_SWEEP};

/// runs.csv without the columns that time calls: what must match run for run.
pub(crate) fn runs_without_timings(p: &Project, out: &str) -> Vec<Vec<String>> {
    let (header, rows) = read_csv(&p.read(&format!("{out}/runs.csv")));
    let keep: Vec<usize> = (0..header.len())
        .filter(|&i| !matches!(header[i].as_str(), "latency_ms" | "ttft_ms"))
        .collect();
    rows.iter()
        .map(|r| keep.iter().map(|&i| r[i].clone()).collect())
        .collect()
}

/// The sample sweep under `config` into `out`.
fn sample_sweep<'p>(p: &'p Project, config: &str, out: &str) -> Test<'p> {
    p.rageval(["--config", config])
        .args(SAMPLE_SWEEP)
        .args(["--out", out])
}

fn sweep<'p>(p: &'p Project, config: &str, out: &str) -> Test<'p> {
    sample_sweep(p, config, out).arg("--quiet")
}

/// `rageval --config CONFIG index --replace` into the test database, which loads the sample's
/// 23 chunks into `table`, embedded by `embedder`.
fn index<'p>(p: &'p Project, config: &str, dsn: &str, table: &str, embedder: &str) -> Output<'p> {
    p.rageval(["--config", config, "index", "--replace"])
        .env("RAGEVAL_TEST_DSN", dsn)
        .stdout(format!(
            "loaded 23 chunks into `{table}` at {dsn} (embedder `{embedder}`)\n"
        ))
        .run()
}

/// The builtin sweep of the sample, as the reference every other retriever must equal.
fn builtin_runs(p: &Project) -> Vec<Vec<String>> {
    p.write("builtin.yaml", "evalsets: [evalsets/club.yaml]\n");
    sweep(p, "builtin.yaml", "builtin").run();
    runs_without_timings(p, "builtin")
}

/// A search service over the builtin index of the sample corpus. `/ok` follows the contract;
/// the other paths break it one way each.
struct SearchServer {
    addr: SocketAddr,
    _runtime: tokio::runtime::Runtime,
}

impl SearchServer {
    fn start() -> Self {
        let runtime = crate::support::server_runtime();
        let corpus = Corpus::load(&repo().join("evalsets/club")).unwrap();
        let embedder = HashEmbedder::new(DEFAULT_DIMENSIONS);
        let index = runtime.block_on(async {
            let texts: Vec<String> = corpus.chunks.iter().map(|c| c.embed_text()).collect();
            Index::new(corpus, embedder.embed(&texts).await.unwrap())
        });
        let state = std::sync::Arc::new((index, embedder));
        let app = Router::new()
            .route("/{mode}", post(search))
            .with_state(state);
        let addr = crate::support::serve(&runtime, app);
        SearchServer {
            addr,
            _runtime: runtime,
        }
    }

    fn url(&self, mode: &str) -> String {
        format!("http://{}/{mode}", self.addr)
    }
}

type Shared = std::sync::Arc<(Index, HashEmbedder)>;

async fn search(
    State(state): State<Shared>,
    UrlPath(mode): UrlPath<String>,
    Json(body): Json<Value>,
) -> Response {
    let (index, embedder) = &*state;
    let query = body["query"].as_str().unwrap().to_string();
    let k = body["k"].as_u64().unwrap() as usize;
    let vector = embedder
        .embed(std::slice::from_ref(&query))
        .await
        .unwrap()
        .remove(0);
    let mut hits: Vec<Value> = index
        .search(&vector, k)
        .iter()
        .map(|h| {
            let c = &index.corpus.chunks[h.chunk];
            json!({"id": c.id, "source": c.source, "heading": c.heading, "text": c.text, "score": h.score})
        })
        .collect();
    match mode.as_str() {
        "ok" => {}
        "too-many" => hits.push(hits[0].clone()),
        "repeated-id" => {
            let id = hits[0]["id"].clone();
            hits[1]["id"] = id;
        }
        // Ids by rank, texts by query: an id that names a different text per question.
        "query-text" => {
            for (i, h) in hits.iter_mut().enumerate() {
                h["id"] = json!(format!("p{i}"));
                h["text"] = json!(format!("about {query}"));
            }
        }
        "missing" => {
            hits[0].as_object_mut().unwrap().remove("text");
        }
        "fail" => return (StatusCode::INTERNAL_SERVER_ERROR, "down").into_response(),
        // A passage of 2 MiB, past the limit of one passage's text.
        "long-text" => hits[0]["text"] = json!("x".repeat(2 << 20)),
        // A chunked reply that never ends: spaces, 64 KiB at a time.
        "endless" => {
            let spaces = axum::body::Bytes::from(vec![b' '; 1 << 16]);
            let body = futures_util::stream::repeat(Ok::<_, std::convert::Infallible>(spaces));
            return axum::body::Body::from_stream(body).into_response();
        }
        _ => return StatusCode::NOT_FOUND.into_response(),
    }
    Json(json!({ "hits": hits })).into_response()
}

fn http_config(url: &str) -> String {
    format!(
        "evalsets: [evalsets/club.yaml]\nretriever:\n  kind: http\n  url: {url}\n  max_retries: 1\n  backoff_ms: 1\n"
    )
}

#[test]
fn an_http_retriever_over_the_builtin_index_sweeps_as_builtin_does() {
    let p = Project::sample();
    let want = builtin_runs(&p);
    let server = SearchServer::start();
    p.write("http.yaml", &http_config(&server.url("ok")));
    sweep(&p, "http.yaml", "http").run();
    assert_eq!(want.len(), 520);
    assert_eq!(runs_without_timings(&p, "http"), want);
}

/// An id names one passage: repeated ids in one reply, or an id whose text changes with the
/// question, put the wrong text into prompts (the first text won, silently, exit 0).
#[test]
fn an_http_retriever_whose_ids_name_two_texts_is_refused() {
    let p = Project::sample();
    let server = SearchServer::start();
    for (mode, why) in [
        (
            "repeated-id",
            "retrieval for question `fee-per-term` failed: hits 0 and 1 share the id `membership.md#1`: an id must name one passage",
        ),
        (
            "query-text",
            "retrieval for question `scholarship` failed: passage `p0` came back with another text than for question `fee-per-term`: an id must name one text",
        ),
    ] {
        p.write("bad.yaml", &http_config(&server.url(mode)));
        sweep(&p, "bad.yaml", mode).fails(why).run();
        assert!(!p.path().join(mode).exists(), "{mode}: no report");
    }
}

#[test]
fn an_http_retriever_that_breaks_the_contract_names_the_question() {
    let p = Project::sample();
    let server = SearchServer::start();
    let first = "fee-per-term";
    for (mode, why) in [
        (
            "too-many",
            "9 hits for k = 8: a retriever must return at most k".to_string(),
        ),
        (
            "missing",
            format!(
                "malformed at {}: the reply is not `{{\"hits\": [{{id, source, heading?, text, score}}]}}`: hit 0: missing field `text`",
                server.url("missing")
            ),
        ),
        (
            "fail",
            format!(
                "server at {}: 500 Internal Server Error (after 2 attempts)",
                server.url("fail")
            ),
        ),
    ] {
        p.write("bad.yaml", &http_config(&server.url(mode)));
        sweep(&p, "bad.yaml", mode)
            .fails(&format!("retrieval for question `{first}` failed: {why}"))
            .run();
        assert!(!p.path().join(mode).exists(), "{mode}: no report");
    }
}

/// A passage past 1 MiB of text is refused naming the question and the id; a reply that
/// never ends is cut at 32 MiB naming the URL, under a bound of 512 MiB and 60 s (it used to
/// be read to its end: a 2 GB reply took 2 GB). Issue 23 item 4.
#[test]
fn a_passage_or_a_reply_past_its_size_limit_is_refused_naming_it() {
    let p = Project::sample();
    let server = SearchServer::start();
    p.write("long.yaml", &http_config(&server.url("long-text")));
    let out = sweep(&p, "long.yaml", "long").status(2)
        .stderr(
            "error: retrieval for question `fee-per-term` failed: passage `membership.md#1` has 2097152 bytes of text, more than the limit of 1 MiB for one passage\n",
        )
        .run();
    assert_eq!(
        out.stderr,
        "error: retrieval for question `fee-per-term` failed: passage `membership.md#1` has 2097152 bytes of text, more than the limit of 1 MiB for one passage\n"
    );
    // One question: one reply read at a time.
    p.write(
        "evalsets/one.yaml",
        "corpus: club\nanswerable:\n  - id: fee\n    question: What is the fee?\n",
    );
    p.write(
        "endless.yaml",
        &http_config(&server.url("endless")).replace("club.yaml", "one.yaml"),
    );
    let args = [
        "--config",
        "endless.yaml",
        "sweep",
        "--evalset",
        "evalsets/one.yaml",
    ];
    let (status, stderr) =
        p.run_bounded(&[&args[..], &["--out", "endless", "-q"]].concat(), 512, 60);
    assert_eq!(
        (status, stderr.as_str()),
        (Some(2), format!(
            "error: retrieval for question `fee` failed: malformed at {url}: the reply from {url} is larger than the limit of 32 MiB\n",
            url = server.url("endless")
        ).as_str())
    );
    assert!(!p.path().join("endless").exists() && !p.path().join("long").exists());
}

fn pg_config(extra: &str) -> String {
    format!("evalsets: [evalsets/club.yaml]\nretriever:\n  kind: pgvector\n  dsn_env: RAGEVAL_TEST_DSN\n  ef_search: 1000\n{extra}")
}

#[test]
fn rageval_index_then_a_pgvector_sweep_equals_the_builtin_sweep() {
    let Some(dsn) = require_database() else {
        return;
    };
    let p = Project::sample();
    let want = builtin_runs(&p);
    let table = "table: rv_equal\n";
    p.write("pg.yaml", &pg_config(&format!("  {table}")));
    index(&p, "pg.yaml", &dsn, "rv_equal", "hash-1024");
    // A second load without --replace leaves the table alone.
    p.rageval(["--config", "pg.yaml", "index"])
        .env("RAGEVAL_TEST_DSN", &dsn)
        .status(2)
        .stderr("error: table `rv_equal` already holds 23 rows: pass `--replace` to reload it\n")
        .run();
    sweep(&p, "pg.yaml", "pg")
        .env("RAGEVAL_TEST_DSN", &dsn)
        .run();
    assert_eq!(runs_without_timings(&p, "pg"), want);
}

/// `--shard 1/2`, `--shard 2/2` and `merge` over a pgvector table give the reports of the
/// whole sweep (apart from timings), as they do for the builtin index: each shard holds the
/// passages its questions retrieved, and both are written, and joined, in id order. They used
/// to be refused ("searched different corpora"). The HTTP retriever merges the same way.
/// Issue 23 item 8.
#[test]
fn sharded_pgvector_and_http_sweeps_merge_into_the_whole_sweep() {
    let Some(dsn) = require_database() else {
        return;
    };
    let server = SearchServer::start();
    let p = Project::sample();
    p.write("pg.yaml", &pg_config("  table: rv_shards\n"));
    index(&p, "pg.yaml", &dsn, "rv_shards", "hash-1024");
    p.write("http.yaml", &http_config(&server.url("ok")));
    for config in ["pg.yaml", "http.yaml"] {
        let run = |shard: &[&str], out: &str| {
            sweep(&p, config, out)
                .args(shard)
                .env("RAGEVAL_TEST_DSN", &dsn)
                .run();
        };
        run(&[], "whole");
        run(&["--shard", "1/2"], "shard-1");
        run(&["--shard", "2/2"], "shard-2");
        let (a, b) = (
            crate::harness::results(&p, "shard-1"),
            crate::harness::results(&p, "shard-2"),
        );
        let chunks = |r: &crate::harness::Record| r.corpora[0].chunks.len();
        assert_ne!(
            chunks(&a),
            chunks(&b),
            "{config}: the shards found different passages"
        );
        p.rageval(["merge", "-q", "shard-1", "shard-2", "--out", "merged"])
            .run();
        crate::shards::assert_same(&p);
    }
}

#[test]
fn pgvector_setup_errors_exit_2_with_one_line_and_no_secret() {
    let Some(dsn) = require_database() else {
        return;
    };
    let p = Project::sample();
    // A table of 3-dimensional vectors, so the dimension check has something to refuse.
    p.write(
        "small.yaml",
        "evalsets: [evalsets/club.yaml]\nembedder:\n  dimensions: 3\nretriever:\n  kind: pgvector\n  dsn_env: RAGEVAL_TEST_DSN\n  table: rv_small\n",
    );
    index(&p, "small.yaml", &dsn, "rv_small", "hash-3");
    let host_port_db = dsn.split('@').nth(1).unwrap().to_string();
    let wrong_password = format!("postgresql://rageval_pw:hunter2-secret@{host_port_db}");
    let down = format!(
        "postgresql://postgres:hunter2-secret@127.0.0.1:1/{}",
        "rageval_test"
    );
    let cases: Vec<(&str, String, String)> = vec![
        (
            "table: rv_small\n",
            dsn.clone(),
            "error: column `embedding` of table `rv_small` holds 3-dimensional vectors, the embedder `hash-1024` gives 1024: reload the table with `rageval index --replace` or configure the embedder it was built with\n".into(),
        ),
        (
            "table: rv_missing\n",
            dsn.clone(),
            format!("error: table `rv_missing` does not exist at {dsn} (create it with `rageval index`)\n"),
        ),
        (
            "table: rv_small\n  columns: {text: body}\n",
            dsn.clone(),
            "error: table `rv_small` has no column `body` (retriever.columns.text)\n".into(),
        ),
        (
            "table: rv_small\n",
            wrong_password,
            format!("error: cannot connect at postgresql://rageval_pw@{host_port_db}: password authentication failed for user \"rageval_pw\"\n"),
        ),
        (
            "table: rv_small\n",
            down,
            "error: cannot connect at postgresql://postgres@127.0.0.1:1/rageval_test: error connecting to server: Connection refused (os error 111)\n".into(),
        ),
    ];
    for (i, (extra, dsn, want)) in cases.iter().enumerate() {
        let out_dir = format!("out{i}");
        p.write("bad.yaml", &pg_config(&format!("  {extra}")));
        sample_sweep(&p, "bad.yaml", &out_dir)
            .env("RAGEVAL_TEST_DSN", dsn)
            .status(2)
            .stderr(want.as_str())
            .stderr_lacks("hunter2")
            .run();
        assert!(!p.path().join(&out_dir).exists(), "case {i}: no report");
    }
}

#[test]
fn a_pgvector_table_sweeps_by_config_alone_without_a_markdown_folder() {
    let Some(dsn) = require_database() else {
        return;
    };
    let p = Project::sample();
    p.write("pg.yaml", &pg_config("  table: rv_alone\n"));
    index(&p, "pg.yaml", &dsn, "rv_alone", "hash-1024");
    // A second project holding only a question set: no corpus field, no folder.
    let alone = Project::empty();
    alone.write(
        "sets/store.yaml",
        "answerable:\n  - id: fee\n    question: How much does membership cost per term?\n    expect: {ids: [\"membership.md#1\"], answer: [\"10 US dollars\"]}\nunanswerable:\n  - id: parking\n    question: Where can I park my car?\n",
    );
    alone.write(
        "rageval.yaml",
        &pg_config("  table: rv_alone\n").replace("evalsets/club.yaml", "sets/store.yaml"),
    );
    alone
        .sweep(["--min-score", "0.3", "--k", "2"])
        .env("RAGEVAL_TEST_DSN", &dsn)
        .run();
    let (header, rows) = read_csv(&alone.read("reports/latest/runs.csv"));
    let cols = [
        "question_id",
        "outcome",
        "passages",
        "expected_in_top_k",
        "answer_match",
    ];
    let got: Vec<Vec<&str>> = rows
        .iter()
        .map(|r| {
            cols.iter()
                .map(|c| crate::support::col(&header, r, c))
                .collect()
        })
        .collect();
    assert_eq!(
        got,
        [
            ["fee", "answer", "membership.md#1", "true", "true"],
            ["parking", "early_refusal", "", "", ""],
        ]
    );
}

#[test]
fn ask_and_prompt_go_through_the_same_retriever() {
    let p = Project::sample();
    let server = SearchServer::start();
    p.write("builtin.yaml", "evalsets: [evalsets/club.yaml]\n");
    p.write("http.yaml", &http_config(&server.url("ok")));
    for (verb, snapshot) in [
        (
            "ask",
            "retrievers__ask_and_prompt_go_through_the_same_retriever",
        ),
        (
            "prompt",
            "retrievers__ask_and_prompt_go_through_the_same_retriever_2",
        ),
    ] {
        let q = "How much does membership cost per term?";
        let run = |config: &str| {
            p.rageval(["--config", config, verb, q, "--k", "2"])
                .stdout_snapshot(snapshot)
                .run()
                .stdout
        };
        let builtin = run("builtin.yaml");
        assert!(builtin.contains("membership.md"), "{builtin}");
        assert_eq!(run("http.yaml"), builtin, "{verb}");
    }
}

#[test]
fn pgvector_config_errors_name_the_variable_or_the_column_type_and_no_secret() {
    let Some(dsn) = require_database() else {
        return;
    };
    // A table whose `embedding` column is text, not a vector.
    execute_sql(
        &dsn,
        "DROP TABLE IF EXISTS rv_textcol; CREATE TABLE rv_textcol (id text, source text, heading text, text text, embedding text)",
    );
    let p = Project::sample();
    p.write("pg.yaml", &pg_config("  table: rv_textcol\n"));
    let cases: [(Option<&str>, &str); 3] = [
        (
            None,
            "error: `$RAGEVAL_TEST_DSN` is not set: export the PostgreSQL connection string there (retriever.dsn_env)\n",
        ),
        (
            Some("hunter2-secret not a dsn"),
            "error: `$RAGEVAL_TEST_DSN` is not a PostgreSQL connection string (postgresql://user@host:port/db)\n",
        ),
        (
            Some(&dsn),
            "error: column `embedding` of table `rv_textcol` is `text`, not a pgvector `vector`\n",
        ),
    ];
    for (i, (value, want)) in cases.iter().enumerate() {
        let out_dir = format!("out{i}");
        let run = sample_sweep(&p, "pg.yaml", &out_dir);
        let run = match value {
            Some(v) => run.env("RAGEVAL_TEST_DSN", v),
            None => run.env_remove("RAGEVAL_TEST_DSN"),
        };
        run.status(2).stderr(*want).run();
        assert!(!p.path().join(&out_dir).exists(), "case {i}: no report");
    }
}

/// Run `sql` against the test database, as a table's owner would.
fn execute_sql(dsn: &str, sql: &str) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let (client, connection) = tokio_postgres::connect(dsn, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(connection);
        client.batch_execute(sql).await.unwrap();
    });
}

/// A row with a NULL id or embedding names no passage: the sweep stops with one line naming
/// the table, the column and how many rows hold NULL (it used to panic).
#[test]
fn pgvector_rows_with_a_null_id_or_embedding_are_refused_by_name() {
    let Some(dsn) = require_database() else {
        return;
    };
    let vector = |x: f32| {
        let v: Vec<String> = (0..DEFAULT_DIMENSIONS)
            .map(|i| if i == 0 { x.to_string() } else { "0".into() })
            .collect();
        format!("'[{}]'", v.join(","))
    };
    for (table, rows) in [
        (
            "rv_null_id",
            format!(
                "('a', {}), (NULL, {}), ('c', {})",
                vector(1.0),
                vector(0.5),
                vector(0.2)
            ),
        ),
        (
            "rv_null_embedding",
            format!("('a', {}), ('b', NULL), ('c', NULL)", vector(1.0)),
        ),
    ] {
        execute_sql(
            &dsn,
            &format!(
                "DROP TABLE IF EXISTS {table}; CREATE TABLE {table} (id text, source text, heading text, text text, embedding vector({DEFAULT_DIMENSIONS})); INSERT INTO {table} (id, embedding) VALUES {rows}"
            ),
        );
    }
    let p = Project::sample();
    for (table, column, nulls) in [
        ("rv_null_id", "id", 1),
        ("rv_null_embedding", "embedding", 2),
    ] {
        p.write("pg.yaml", &pg_config(&format!("  table: {table}\n")));
        sample_sweep(&p, "pg.yaml", table)
            .env("RAGEVAL_TEST_DSN", &dsn)
            .fails(&format!(
                "retrieval for question `fee-per-term` failed: table `{table}`: {nulls} of the 3 rows found hold NULL in column `{column}`; every row needs an id and an embedding"
            ))
            .run();
        assert!(!p.path().join(table).exists(), "{table}: no report");
    }
}

#[test]
fn a_reranker_after_pgvector_or_http_sweeps_as_after_the_builtin_index() {
    let mock = crate::http::MockLlm::start(&["--no-auth"]);
    let reranker = format!(
        "reranker:\n  base_url: {}\n  model: mock-rerank\n  candidates: 8\n  max_retries: 0\n",
        mock.url
    );
    let p = Project::sample();
    p.write(
        "builtin.yaml",
        &format!("evalsets: [evalsets/club.yaml]\n{reranker}"),
    );
    sweep(&p, "builtin.yaml", "builtin").run();
    let want = runs_without_timings(&p, "builtin");
    let plain = builtin_runs(&p);
    assert_ne!(want, plain, "the reranker changes runs");
    let server = SearchServer::start();
    p.write("http.yaml", &(http_config(&server.url("ok")) + &reranker));
    sweep(&p, "http.yaml", "http").run();
    assert_eq!(runs_without_timings(&p, "http"), want);
    let Some(dsn) = require_database() else {
        return;
    };
    p.write(
        "pg.yaml",
        &(pg_config("  table: rv_rerank_equal\n") + &reranker),
    );
    index(&p, "pg.yaml", &dsn, "rv_rerank_equal", "hash-1024");
    sweep(&p, "pg.yaml", "pg")
        .env("RAGEVAL_TEST_DSN", &dsn)
        .run();
    assert_eq!(runs_without_timings(&p, "pg"), want);
}
