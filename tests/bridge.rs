//! The Python bridge (`python/src/rageval_bridge`) for real: a LangChain `InMemoryVectorStore`
//! and a LlamaIndex `VectorStoreIndex` retriever over the sample's own chunks, embedded by
//! the fixture's port of the builtin `hash` embedder, must sweep as the builtin index does;
//! a LangChain chain with its own prompt answers through `/generate`.
//!
//! The bridge runs on the Python of `$RAGEVAL_BRIDGE_PYTHON`, which must have `./python`,
//! `langchain-core` and `llama-index-core` installed (.ci/run makes that venv).

use std::process::{Child, Command};

use crate::harness::{Corpus, Embedder, HashEmbedder, Index};
use crate::retrievers::runs_without_timings;
use crate::support::{col, read_csv, repo, spawn_announced, Project, SAMPLE_SWEEP};

/// The hash embedder's dimensions for these tests: at 41 buckets no sample question has two
/// passages tied in its top 9 or a score within [`MARGIN`] of a grid threshold (at 1024,
/// questions sharing no word with most passages tie at 0). The stores score in numpy from
/// the same f32 vectors, a few units in the 7th decimal from the builtin index's sums, so a
/// tie or a score on a threshold could fall either way; `the_grid_leaves_room` checks there
/// is none.
const DIMENSIONS: usize = 41;
const MARGIN: f64 = 1e-6;
const THRESHOLDS: [f64; 5] = [0.1, 0.2, 0.3, 0.4, 0.5];

/// `$RAGEVAL_BRIDGE_PYTHON`, checked to import the bridge and both libraries; `None` (the
/// test returns) when unset outside CI. Under `CI=true` an unset or broken one fails.
fn require_bridge() -> Option<String> {
    const HOW: &str = "set RAGEVAL_BRIDGE_PYTHON to a Python with `pip install ./python -r python/requirements-ci.txt` done (.ci/run makes one in ~/.cache/rageval/bridge-venv)";
    let Some(python) = std::env::var("RAGEVAL_BRIDGE_PYTHON")
        .ok()
        .filter(|p| !p.is_empty())
    else {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("no bridge Python: {HOW} (CI=true does not skip tests)");
        }
        println!("skipped: no bridge Python ({HOW})");
        return None;
    };
    let out = Command::new(&python)
        .args([
            "-c",
            "import rageval_bridge, langchain_core, llama_index.core",
        ])
        .output()
        .unwrap_or_else(|e| panic!("cannot run `{python}`: {e}; {HOW}"));
    assert!(
        out.status.success(),
        "`{python}` cannot import the bridge and its libraries ({HOW}):\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(python)
}

/// A fixture bridge process (python/tests/fixture.py), killed when dropped.
struct Bridge {
    child: Child,
    url: String,
    /// The line it printed at start.
    line: String,
}

impl Bridge {
    fn start(python: &str, p: &Project, args: &[&str]) -> Self {
        Bridge::start_with_env(python, p, args, &[])
    }

    fn start_with_env(python: &str, p: &Project, args: &[&str], env: &[(&str, &str)]) -> Self {
        let (child, line) = spawn_announced(
            Command::new(python)
                .arg(repo().join("python/tests/fixture.py"))
                .args([
                    "--chunks",
                    "chunks.json",
                    "--dimensions",
                    &DIMENSIONS.to_string(),
                ])
                .args(args)
                .envs(env.iter().copied())
                .current_dir(p.path()),
            "start the bridge",
        );
        // `rageval-bridge on http://127.0.0.1:PORT serves ...`
        let url = line
            .split_whitespace()
            .nth(2)
            .filter(|u| u.starts_with("http://"))
            .unwrap_or_else(|| panic!("no URL in the bridge's first line {line:?}"))
            .to_string();
        Bridge { child, url, line }
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The sample project with its chunks, as rageval cuts them, in `chunks.json` for the
/// fixture's stores.
fn project_with_chunks() -> (Project, Corpus) {
    let p = Project::sample();
    let corpus = Corpus::load(&repo().join("evalsets/club")).unwrap();
    let chunks: Vec<serde_json::Value> = corpus
        .chunks
        .iter()
        .map(|c| serde_json::json!({"id": c.id, "source": c.source, "heading": c.heading, "text": c.text}))
        .collect();
    p.write("chunks.json", &serde_json::to_string(&chunks).unwrap());
    (p, corpus)
}

/// [`project_with_chunks`] and the builtin index's sweep of it in `builtin/`.
fn project() -> Project {
    let (p, corpus) = project_with_chunks();
    p.write(
        "builtin.yaml",
        &format!(
            "evalsets: [evalsets/club.yaml]\nembedder: {{kind: hash, dimensions: {DIMENSIONS}}}\n"
        ),
    );
    p.rageval(["--config", "builtin.yaml"])
        .args(SAMPLE_SWEEP)
        .args(["--out", "builtin", "-q"])
        .run();
    // The chunks the fixture loads are the ones the builtin sweep searched.
    let searched: Vec<String> = crate::harness::results(&p, "builtin").corpora[0]
        .chunks
        .keys()
        .cloned()
        .collect();
    let loaded: Vec<String> = corpus.chunks.iter().map(|c| c.id.clone()).collect();
    assert_eq!(searched, loaded);
    p
}

/// The sample sweep through a bridge at `url` (`retriever` and/or `chat` sections).
fn sweep_through(p: &Project, sections: &str, out: &str) {
    p.write(
        "bridge.yaml",
        &format!("evalsets: [evalsets/club.yaml]\nembedder: {{kind: hash, dimensions: {DIMENSIONS}}}\n{sections}"),
    );
    p.rageval(["--config", "bridge.yaml"])
        .args(SAMPLE_SWEEP)
        .args(["--out", out, "-q"])
        .run();
}

/// `got` equals `want` column for column, `best_score` within [`MARGIN`] (plus the printed
/// rounding).
fn assert_runs_match(p: &Project, want: &str, got: &str) {
    let (header, _) = read_csv(&p.read(&format!("{want}/runs.csv")));
    let best = header.iter().position(|h| h == "best_score").unwrap();
    let (want, got) = (runs_without_timings(p, want), runs_without_timings(p, got));
    assert_eq!(want.len(), 520);
    assert_eq!(got.len(), want.len());
    for (w, g) in want.iter().zip(&got) {
        let score = |r: &[String]| r[best].parse::<f64>().unwrap();
        assert!(
            (score(w) - score(g)).abs() <= MARGIN + 5e-7,
            "best_score {} against {}: {w:?}",
            g[best],
            w[best]
        );
        let rest = |r: &[String]| {
            let mut r = r.to_vec();
            r.remove(best);
            r
        };
        assert_eq!(rest(g), rest(w));
    }
}

/// No sample question has passages tied in its top 9, or a top-8 score on a threshold, by
/// the builtin index at [`DIMENSIONS`]: what two paths scoring a few units apart in the 7th
/// decimal may then disagree on.
#[test]
fn the_grid_leaves_room_between_scores_and_thresholds() {
    let corpus = Corpus::load(&repo().join("evalsets/club")).unwrap();
    let embedder = HashEmbedder::new(DIMENSIONS);
    let set: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(repo().join("evalsets/club.yaml")).unwrap())
            .unwrap();
    let questions: Vec<String> = ["answerable", "unanswerable"]
        .iter()
        .flat_map(|class| set[*class].as_sequence().unwrap().iter())
        .map(|q| q["question"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(questions.len(), 26);
    let runtime = crate::support::server_runtime();
    let texts: Vec<String> = corpus.chunks.iter().map(|c| c.embed_text()).collect();
    let index = Index::new(corpus, runtime.block_on(embedder.embed(&texts)).unwrap());
    let vectors = runtime.block_on(embedder.embed(&questions)).unwrap();
    for (q, v) in questions.iter().zip(&vectors) {
        let hits = index.search(v, 9);
        for (i, pair) in hits.windows(2).enumerate() {
            assert!(
                pair[0].score - pair[1].score >= MARGIN,
                "`{q}`: ranks {i} and {} score {} and {}; pick other DIMENSIONS",
                i + 1,
                pair[0].score,
                pair[1].score
            );
        }
        for h in &hits[..8] {
            assert!(
                THRESHOLDS.iter().all(|t| (h.score - t).abs() >= MARGIN),
                "`{q}`: a score of {} sits on a threshold; pick other DIMENSIONS",
                h.score
            );
        }
    }
}

#[test]
fn a_langchain_vector_store_through_the_bridge_sweeps_as_the_builtin_index_does() {
    let Some(python) = require_bridge() else {
        return;
    };
    let p = project();
    let bridge = Bridge::start(&python, &p, &["--retriever", "langchain"]);
    assert_eq!(
        bridge.line,
        format!("rageval-bridge on {} serves /retrieve from LangChain InMemoryVectorStore, its raw scores (similarity_search_with_score: the store has no relevance function; minScore gates them as they are, so they must grow with relevance)\n", bridge.url)
    );
    sweep_through(
        &p,
        &format!("retriever: {{kind: http, url: {}/retrieve}}\n", bridge.url),
        "langchain",
    );
    assert_runs_match(&p, "builtin", "langchain");
}

#[test]
fn a_llamaindex_retriever_through_the_bridge_sweeps_as_the_builtin_index_does() {
    let Some(python) = require_bridge() else {
        return;
    };
    let p = project();
    let bridge = Bridge::start(&python, &p, &["--retriever", "llamaindex"]);
    assert_eq!(
        bridge.line,
        format!("rageval-bridge on {} serves /retrieve from LlamaIndex VectorIndexRetriever, NodeWithScore scores, similarity_top_k set to each k\n", bridge.url)
    );
    sweep_through(
        &p,
        &format!("retriever: {{kind: http, url: {}/retrieve}}\n", bridge.url),
        "llamaindex",
    );
    assert_runs_match(&p, "builtin", "llamaindex");
}

/// The whole pipeline through one bridge: the store retrieves, the chain (its own prompt,
/// its own model) answers; rageval grades the answers by its refusal tiers.
#[test]
fn a_langchain_chain_with_its_own_prompt_answers_through_generate() {
    let Some(python) = require_bridge() else {
        return;
    };
    let p = project();
    let bridge = Bridge::start(
        &python,
        &p,
        &["--retriever", "langchain", "--generate", "chain"],
    );
    assert!(
        bridge.line.ends_with("; /generate from LangChain RunnableSequence, invoked with {'question': question, 'context': documents}\n"),
        "{}",
        bridge.line
    );
    let url = &bridge.url;
    sweep_through(
        &p,
        &format!("retriever: {{kind: http, url: {url}/retrieve}}\nchat: {{kind: http, url: {url}/generate, model: handbook-chain}}\n"),
        "chain",
    );
    let doc = crate::harness::results(&p, "chain");
    assert_eq!(doc.identity.model, "handbook-chain");
    let (header, rows) = read_csv(&p.read("chain/runs.csv"));
    let texts: std::collections::HashMap<String, String> =
        Corpus::load(&repo().join("evalsets/club"))
            .unwrap()
            .chunks
            .iter()
            .map(|c| {
                (
                    c.id.clone(),
                    c.text.split_whitespace().collect::<Vec<_>>().join(" "),
                )
            })
            .collect();
    let refusal = "I don't know based on the provided documents.";
    let (mut answered, mut refused) = (0, 0);
    for r in &rows {
        let answer = col(&header, r, "answer");
        let outcome = col(&header, r, "outcome");
        if col(&header, r, "model_calls") == "0" {
            assert_eq!(
                outcome,
                if col(&header, r, "answerable") == "true" {
                    "false_refusal"
                } else {
                    "early_refusal"
                }
            );
            continue;
        }
        if answer == refusal {
            refused += 1;
            assert!(
                matches!(outcome, "false_refusal" | "model_refusal"),
                "{r:?}"
            );
            continue;
        }
        answered += 1;
        assert!(matches!(outcome, "answer" | "unwanted_answer"), "{r:?}");
        // The chain quotes passage n of those sent, numbered in the order rageval sent them.
        let quoted = answer
            .strip_prefix("The handbook says: ")
            .unwrap_or_else(|| panic!("{answer}"));
        let (text, n) = quoted.rsplit_once(" [").unwrap();
        let n: usize = n.trim_end_matches(']').parse().unwrap();
        let passages: Vec<&str> = col(&header, r, "passages").split(' ').collect();
        assert_eq!(texts[passages[n - 1]], text, "{r:?}");
        assert_eq!(col(&header, r, "cited"), passages[n - 1]);
    }
    assert!(
        answered > 100 && refused > 10,
        "{answered} answered, {refused} refused"
    );
    // Usage is the chain's own (its prompt is longer than the question and passages).
    for call in doc.calls.values() {
        assert!(!call.usage.estimated);
        assert!(call.usage.prompt_tokens > 40, "{call:?}");
    }
}

/// docs/python.md's recipe for a shared token: the bridge started with
/// `$RAGEVAL_BRIDGE_TOKEN` refuses a request without it; rageval sends it from `api_key_env:
/// RAGEVAL_BRIDGE_TOKEN` in the retriever and chat sections, and the whole sample sweeps
/// through the bridge. The token is in nothing rageval prints or writes (reports, cache).
#[test]
fn the_bridge_token_flows_from_api_key_env_and_is_never_written() {
    const TOKEN: &str = "brt-canary-5c1e9a7d";
    let Some(python) = require_bridge() else {
        return;
    };
    let (p, _) = project_with_chunks();
    let bridge = Bridge::start_with_env(
        &python,
        &p,
        &["--retriever", "langchain", "--generate", "chain"],
        &[("RAGEVAL_BRIDGE_TOKEN", TOKEN)],
    );
    assert!(
        bridge
            .line
            .ends_with(" (requests need the token in $RAGEVAL_BRIDGE_TOKEN)\n"),
        "{}",
        bridge.line
    );
    let url = &bridge.url;
    p.write(
        "bridge.yaml",
        &format!(
            "evalsets: [evalsets/club.yaml]\nembedder: {{kind: hash, dimensions: {DIMENSIONS}}}\n\
             retriever: {{kind: http, url: {url}/retrieve, api_key_env: RAGEVAL_BRIDGE_TOKEN}}\n\
             chat: {{kind: http, url: {url}/generate, model: handbook-chain, api_key_env: RAGEVAL_BRIDGE_TOKEN}}\n"
        ),
    );
    let sweep = |out: &str| {
        p.rageval(["--config", "bridge.yaml"])
            .args(SAMPLE_SWEEP)
            .args(["--out", out, "-q"])
    };
    let mut printed = String::new();
    // No token, or another one: the first retrieval is refused, and the message names the
    // variable, never a value.
    for (token, why) in [
        (
            None,
            "401 Unauthorized rejected no API key (`$RAGEVAL_BRIDGE_TOKEN` is not set)",
        ),
        (
            Some("brt-wrong"),
            "401 Unauthorized rejected the API key from `$RAGEVAL_BRIDGE_TOKEN`",
        ),
    ] {
        let run = match token {
            None => sweep("refused").env_remove("RAGEVAL_BRIDGE_TOKEN"),
            Some(t) => sweep("refused").env("RAGEVAL_BRIDGE_TOKEN", t),
        };
        let out = run
            .fails(&format!(
                "retrieval for question `fee-per-term` failed: auth at {url}/retrieve: {why}"
            ))
            .run();
        assert_ne!(out.status, Some(0), "{}", out.stderr);
        assert!(!out.stderr.contains("brt-wrong"), "{}", out.stderr);
        printed += &(out.stdout + &out.stderr);
    }
    let out = sweep("chain").env("RAGEVAL_BRIDGE_TOKEN", TOKEN).run();
    printed += &(out.stdout + &out.stderr);
    let doc = crate::harness::results(&p, "chain");
    assert_eq!(doc.runs.len(), 520);
    assert!(
        doc.runs
            .iter()
            .all(|r| r.verdict.outcome != crate::harness::Outcome::Error),
        "a run failed through the bridge"
    );
    assert!(doc.calls.values().all(|c| !c.usage.estimated));
    assert!(!printed.contains(TOKEN), "{printed}");
    // Every file of the project: config, reports, the response cache.
    let mut stack = vec![p.path().to_path_buf()];
    let mut files = 0;
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            files += 1;
            let bytes = std::fs::read(&path).unwrap();
            assert!(
                !bytes.windows(TOKEN.len()).any(|w| w == TOKEN.as_bytes()),
                "{} holds the token",
                path.display()
            );
        }
    }
    assert!(
        p.path().join(".rageval/cache").is_dir(),
        "the response cache was not written where this test looks"
    );
    assert!(files > 10, "{files} files");
}

/// The bridge's own Python tests (`python -m unittest` in python/tests), so that `cargo test`
/// is the whole suite.
#[test]
fn the_bridges_python_tests_pass() {
    let Some(python) = require_bridge() else {
        return;
    };
    let out = Command::new(&python)
        .args(["-m", "unittest", "-v"])
        .current_dir(repo().join("python/tests"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "python -m unittest failed:\n{stderr}");
    // unittest reports on stderr: `Ran N tests` then `OK`.
    assert!(stderr.contains("\nOK"), "{stderr}");
    assert!(!stderr.contains("Ran 0 tests"), "{stderr}");
}
