//! Real models' needs: `corpus.max_chunk_tokens` splits sections longer than an embedding model
//! reads, `embedder.max_input_tokens` names a chunk still too long before any request is made,
//! a base URL's query (Azure) reaches the server, and `--cache-dir` keeps the response cache
//! where CI keeps it.

use crate::harness::Test;
use crate::http::{keyed, MockLlm, KEY_ENV};
use crate::support::{col, default_prompt, read_csv, Project};

/// Four paragraphs of 20 to 23 estimated tokens under a 3-token heading: a limit of 40 puts
/// each paragraph in a part of its own.
const GUIDE: &str = "# Install\nDownload the tool and run it once.\n\n# Long section\n\
Membership fees are paid by bank transfer before the first meeting of each term.\n\n\
The robotics lab opens at nine in the morning on weekdays for every member.\n\n\
Lost badges are replaced for five dollars at the office with a photo card.\n\n\
Parking permits for the north garage cost twelve dollars monthly and are sold online.\n";

const QUESTION: &str = "How much do parking permits for the north garage cost?";

fn project(config: &str) -> Project {
    Project::with_files(&[
        ("docs/guide.md", GUIDE),
        (
            "set.yaml",
            &format!(
                "corpus: docs\nanswerable:\n  - id: parking\n    question: {QUESTION}\n    expect: {{sources: [guide.md#Long section], answer: [twelve dollars]}}\n"
            ),
        ),
        ("rageval.yaml", &format!("evalsets: [set.yaml]\n{config}")),
    ])
}

/// `rageval sweep -q --min-score 0.1 --k K EXTRA` with the mock's key.
fn sweep<'p>(p: &'p Project, k: &str, extra: &[&str]) -> Test<'p> {
    keyed(p, &["sweep", "-q", "--min-score", "0.1", "--k", k]).args(extra)
}

/// (passages, expected_in_top_k, outcome) of the one run of a k=1 sweep.
fn one_run(p: &Project) -> (String, String, String) {
    sweep(p, "1", &[]).run();
    let (header, rows) = read_csv(&p.read("reports/latest/runs.csv"));
    assert_eq!(rows.len(), 1);
    let get = |name| col(&header, &rows[0], name).to_string();
    (get("passages"), get("expected_in_top_k"), get("outcome"))
}

#[test]
fn a_long_section_is_split_and_its_heading_still_names_the_expected_source() {
    let split = project("corpus: {max_chunk_tokens: 40}\n");
    assert_eq!(
        one_run(&split),
        ("guide.md#1.4".into(), "true".into(), "answer".into())
    );
    let whole = project("corpus: {max_chunk_tokens: 0}\n");
    assert_eq!(
        one_run(&whole),
        ("guide.md#1".into(), "true".into(), "answer".into())
    );
}

#[test]
fn the_prompt_holds_only_the_part_that_matched_under_the_section_heading() {
    let p = project("corpus: {max_chunk_tokens: 40}\n");
    let passage = "[1] (source: guide.md#Long section) Parking permits for the north garage cost twelve dollars monthly and are sold online.";
    let text = p
        .rageval(["prompt", QUESTION, "--k", "1", "--min-score", "0.1"])
        .stdout_lacks("Lost badges")
        .stdout(default_prompt(&[passage], QUESTION))
        .run()
        .stdout;
    assert!(text.lines().any(|l| l == passage), "{text}");
}

fn http_project(url: &str, config: &str) -> Project {
    project(&format!(
        "embedder: {{kind: openai, base_url: \"{url}\", model: hash-1024, api_key_env: {KEY_ENV}, max_input_tokens: 40}}\n{config}"
    ))
}

#[test]
fn a_chunk_over_the_embedders_limit_is_named_before_any_request() {
    let server = MockLlm::start(&[]);
    let p = http_project(&server.url, "corpus: {max_chunk_tokens: 0}\n");
    keyed(&p, &["sweep", "-q"])
        .fails(
            "chunk `guide.md#1` (`guide.md#Long section`) of corpus `docs` is about 88 tokens, \
             more than the embedder reads (`embedder.max_input_tokens`: 40); split its longest \
             paragraph or code block, or lower `corpus.max_chunk_tokens`",
        )
        .absent("reports")
        .run();
    assert_eq!(server.stats()["embedding_requests"], 0);

    // Split to fit, the same corpus goes through.
    let p = http_project(&server.url, "corpus: {max_chunk_tokens: 40}\n");
    keyed(&p, &["sweep", "-q"])
        .stderr(crate::support::TINY_CORPUS_WARNINGS)
        .run();
}

#[test]
fn a_base_url_query_reaches_the_server_on_every_request() {
    let server = MockLlm::start(&[]);
    let url = format!("{}?api-version=2024-06-01", server.url);
    let p = project(&format!(
        "embedder: {{kind: openai, base_url: \"{url}\", model: hash-1024, api_key_env: {KEY_ENV}}}\n\
         chat: {{kind: openai, base_url: \"{url}\", model: mock, api_key_env: {KEY_ENV}}}\n"
    ));
    sweep(&p, "1,2", &["--no-cache"])
        .stderr(crate::support::same_k_warning("1 and 2", 1))
        .run();
    let stats = server.stats();
    // The corpus and the question embedded; one chat call (`Install` scores under 0.1, so k=2
    // sends the prompt k=1 sends).
    assert_eq!(
        (&stats["embedding_requests"], &stats["chat_requests"]),
        (&serde_json::json!(2), &serde_json::json!(1))
    );
    assert_eq!(
        stats["queries"],
        serde_json::json!({"api-version=2024-06-01": 3})
    );
}

#[test]
fn cache_dir_moves_the_response_cache_and_a_rerun_makes_no_call() {
    let server = MockLlm::start(&[]);
    let p = project(&format!(
        "chat: {{kind: openai, base_url: \"{}\", model: mock, api_key_env: {KEY_ENV}}}\n",
        server.url
    ));
    let moved = || sweep(&p, "1", &["--cache-dir", "kept/cache"]).run();
    moved();
    assert_eq!(server.stats()["chat_requests"], 1);
    assert_eq!(p.read("kept/cache/chat.jsonl").lines().count(), 1);
    assert!(!p.path().join(".rageval").exists(), "cache.dir is not used");
    moved();
    assert_eq!(
        server.stats()["chat_requests"],
        1,
        "the rerun reads the moved cache"
    );
}

/// A changelog as crates write them: a release's notes one numbered list of over 2,000
/// characters with no blank line, a long code block, and a long single sentence; a question
/// for each, whose answer is one item, one line or one clause.
fn changelog() -> String {
    let topics = [
        "parser", "lexer", "printer", "encoder", "decoder", "reader", "writer", "runtime",
    ];
    let items: Vec<String> = (1..=40)
        .map(|n| {
            let topic = topics[n % topics.len()];
            let rare = if n == 37 { " and the quokka flag" } else { "" };
            format!("{n}. Fixed the {topic} for input {n} when a setting is repeated{rare}.")
        })
        .collect();
    let code: Vec<String> = (0..80)
        .map(|n| {
            let name = if n == 61 { "frobnicate" } else { "compute" };
            format!("    let value_{n} = {name}(&input[{n}..], options.clone())?;")
        })
        .collect();
    let words: Vec<String> = (0..300).map(|n| format!("clause{n}")).collect();
    format!(
        "# Changelog\n\n## 0.4.0\n\n{}\n\n## Migrating\n\n```rust\nfn main() {{\n{}\n}}\n```\n\n\
         ## Thanks\n\nThanks go to {} and to the marzipan bakery for the cake.\n",
        items.join("\n"),
        code.join("\n"),
        words.join(" ")
    )
}

#[test]
fn real_documents_fit_an_embedder_that_reads_512_or_128_tokens() {
    let server = MockLlm::start(&[]);
    for read in [512, 128] {
        let p = Project::empty();
        p.write("docs/CHANGELOG.md", &changelog());
        p.write(
            "set.yaml",
            "corpus: docs\nanswerable:\n\
             \x20 - {id: quokka, question: Which release fixed the quokka flag?, expect: {sources: [CHANGELOG.md#0.4.0]}}\n\
             \x20 - {id: frobnicate, question: Which migrating step calls frobnicate?, expect: {sources: [CHANGELOG.md#Migrating]}}\n\
             \x20 - {id: marzipan, question: Which bakery made the marzipan cake?, expect: {sources: [CHANGELOG.md#3]}}\n",
        );
        p.write(
            "rageval.yaml",
            &format!(
                "evalsets: [set.yaml]\nembedder: {{kind: openai, base_url: \"{}\", model: hash-1024, \
                 api_key_env: {KEY_ENV}, max_input_tokens: {read}}}\n",
                server.url
            ),
        );
        sweep(&p, "2", &[]).run();
        let (header, rows) = read_csv(&p.read("reports/latest/runs.csv"));
        assert_eq!(rows.len(), 3, "{read}");
        for row in &rows {
            assert_eq!(
                col(&header, row, "expected_in_top_k"),
                "true",
                "{} at {read}: {}",
                col(&header, row, "question_id"),
                col(&header, row, "passages")
            );
        }
    }
}
