//! `sweep --until-certified` (issue 39) against `rageval mock-llm`, counting calls at the
//! server: on a seeded pool of 600 questions per class with a clear best setting it certifies
//! with at most half of the full sweep's calls and writes the runs a plain sweep of the same
//! questions writes (but for the settings it dropped); a setting that is out gets no call
//! after it was dropped (the server never sees its later prompts) and keeps its rates so far;
//! a pool where nothing can be certified stops as `futile` with a count; a run killed
//! mid-round resumes from the cache without repeating a call; its flags are checked.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::http::{keyed, MockLlm, KEY_ENV};
use crate::support::{read_csv, Project};

const WORDS: [&str; 20] = [
    "amber", "birch", "cobalt", "dune", "ember", "fjord", "garnet", "harbor", "indigo", "juniper",
    "kestrel", "lagoon", "marble", "nectar", "onyx", "pebble", "quartz", "raven", "saffron",
    "tundra",
];

/// Questions as (id, question).
type Items = Vec<(String, String)>;

/// A pool of `n` lockers: one section each, an answerable question about its code, and an
/// unanswerable one about a roof that shares its words (so a low minScore sends passages for
/// it, and the mock answers some of them). With `answers`, the unanswerable questions ask
/// about the code too: every setting answers them.
fn pool(n: usize, answers: bool) -> (String, Items, Items) {
    let mut corpus = String::new();
    let (mut answerable, mut unanswerable) = (Vec::new(), Vec::new());
    for i in 0..n {
        let (a, b, c) = (WORDS[i % 20], WORDS[(i / 20) % 20], format!("unit{i}"));
        corpus.push_str(&format!(
            "# Locker {a} {b} {c}\nThe {a} {b} locker {c} opens with code {}.\n\n",
            1000 + i
        ));
        answerable.push((
            format!("a{i}"),
            format!("Which code opens the {a} {b} locker {c}?"),
        ));
        let asked = if answers {
            format!("Which code opens the {a} {b} locker {c}, please?")
        } else {
            format!("Who repaired the {a} roof of hall {c} last winter?")
        };
        unanswerable.push((format!("u{i}"), asked));
    }
    (corpus, answerable, unanswerable)
}

/// The question set of `answerable` and `unanswerable` (id, question) over `../docs`.
fn set(answerable: &[(String, String)], unanswerable: &[(String, String)]) -> String {
    let items = |qs: &[(String, String)]| -> String {
        qs.iter()
            .map(|(id, q)| format!("  - id: {id}\n    question: \"{q}\"\n"))
            .collect()
    };
    format!(
        "corpus: ../docs\nanswerable:\n{}unanswerable:\n{}",
        items(answerable),
        items(unanswerable)
    )
}

/// A project over the mock's chat, sweeping minScore 0.3 and 0.5 at k 1 and 3, sequential.
fn project(mock: &MockLlm, n: usize, answers: bool) -> (Project, Items, Items) {
    let (corpus, answerable, unanswerable) = pool(n, answers);
    let p = Project::empty();
    p.write("docs/pool.md", &corpus);
    p.write("sets/pool.yaml", &set(&answerable, &unanswerable));
    p.write(
        "rageval.yaml",
        &format!(
            "evalsets: [sets/pool.yaml]\nchat: {{kind: openai, base_url: \"{}\", model: mock, api_key_env: {KEY_ENV}}}\nsweep: {{min_score: \"0.3,0.5\", k: \"1,3\"}}\nrecommend: {{sequential: true}}\n",
            mock.url
        ),
    );
    (p, answerable, unanswerable)
}

/// An adaptive sweep in rounds of 20 questions per class, in the order of seed 7.
const SEEDED: [&str; 6] = ["sweep", "--until-certified", "--seed", "7", "--step", "20"];

fn chat_requests(mock: &MockLlm) -> u64 {
    mock.stats()["chat_requests"].as_u64().unwrap()
}

/// runs.csv without its latency column (a replayed call's wall time is its own).
fn runs_without_latency(text: &str) -> Vec<Vec<String>> {
    let (header, rows) = read_csv(text);
    let latency = header.iter().position(|h| h == "latency_ms").unwrap();
    let mut out = vec![header];
    out.extend(rows);
    for row in &mut out {
        row.remove(latency);
    }
    out
}

/// `sweep --until-certified --seed 7 --step STEP -q --out ad`, which must succeed quietly.
fn adaptive_sweep(p: &Project, step: &str) {
    let args = ["sweep", "--until-certified", "--seed", "7", "--step", step];
    keyed(p, &args).args(["-q", "--out", "ad"]).run();
}

fn adaptive_json(p: &Project, out: &str) -> Value {
    serde_json::from_str(&p.read(&format!("{out}/adaptive.json"))).unwrap()
}

#[test]
fn a_clear_winner_is_certified_with_at_most_half_the_calls_and_the_runs_of_a_plain_sweep() {
    let mock = MockLlm::start(&[]);
    let (p, answerable, unanswerable) = project(&mock, 600, false);
    adaptive_sweep(&p, "20");
    let made = chat_requests(&mock);
    let report = adaptive_json(&p, "ad");
    assert_eq!(report["stop"], "certified", "{report}");
    assert_eq!(report["calls"].as_u64(), Some(made), "{report}");
    let record: Value = serde_json::from_str(&p.read("ad/results.json")).unwrap();
    assert_eq!(record["summary"]["recommendation"]["certified"], true);
    // minScore 0.3 answers most unanswerable questions: its bound crossed the limit.
    let out = report["out"].as_array().unwrap();
    assert!(!out.is_empty(), "{report}");
    for o in out {
        assert!(
            o["setting"].as_str().unwrap().starts_with("min_score=0.3,"),
            "{report}"
        );
        assert_eq!(o["limit"], "max_unwanted_answer_rate");
    }

    // The full sweep makes only the calls the adaptive one did not (the rest are cached):
    // the two together are the full sweep's calls.
    keyed(&p, &["sweep", "-q", "--out", "full"]).run();
    let full = chat_requests(&mock);
    assert_eq!(report["full_calls"].as_u64(), Some(full), "{report}");
    assert!(2 * made <= full, "{made} of {full} calls");

    // A plain sweep of the questions the adaptive one used writes the same runs, from the
    // cache alone.
    let (_, rows) = read_csv(&p.read("ad/runs.csv"));
    let used: std::collections::HashSet<&str> = rows.iter().map(|r| r[0].as_str()).collect();
    let pick = |qs: &[(String, String)]| -> Vec<(String, String)> {
        qs.iter()
            .filter(|(id, _)| used.contains(id.as_str()))
            .cloned()
            .collect()
    };
    let (a, u) = (pick(&answerable), pick(&unanswerable));
    let per_class = report["used"][0].as_u64().unwrap() as usize;
    assert_eq!((a.len(), u.len()), (per_class, per_class));
    p.write("sets/pool.yaml", &set(&a, &u));
    keyed(&p, &["sweep", "-q", "--out", "plain"]).run();
    assert_eq!(
        chat_requests(&mock),
        full,
        "the plain sweep is answered from the cache"
    );
    // The same rows, but for the questions a dropped setting did not run.
    let (ad, plain) = (
        rows_by_pair(&p.read("ad/runs.csv")),
        rows_by_pair(&p.read("plain/runs.csv")),
    );
    for (pair, row) in &plain {
        let dropped = out
            .iter()
            .any(|o| o["setting"].as_str() == Some(&format!("min_score={},k={}", pair.1, pair.2)));
        match ad.get(pair) {
            Some(ran) => assert_eq!(ran, row, "{pair:?}"),
            None => assert!(dropped, "{pair:?} missing"),
        }
    }
    assert!(ad.keys().all(|pair| plain.contains_key(pair)));
    let plain: Value = serde_json::from_str(&p.read("plain/results.json")).unwrap();
    assert_eq!(
        record["summary"]["recommendation"],
        plain["summary"]["recommendation"]
    );
}

#[test]
fn a_pool_where_nothing_can_be_certified_stops_as_futile_with_a_count() {
    let mock = MockLlm::start(&[]);
    // Every unanswerable question is answered at every setting: no unwanted-answer rate can
    // be certified under 20%.
    let (p, _, _) = project(&mock, 100, true);
    keyed(
        &p,
        &["sweep", "--until-certified", "--step", "20", "--out", "ad"],
    )
    .stderr_contains("adaptive: futile after 20 of 100 questions per class (1 round); ")
    .stderr_contains("no setting can be certified with this pool: the closest, ")
    .stderr_contains("for `max_unwanted_answer_rate` (the pool has 100)")
    .stdout_any("the settings table of the last round, as every sweep prints it")
    .stderr_any("the stop line is checked in parts above")
    .run();
    let report = adaptive_json(&p, "ad");
    assert_eq!(report["stop"], "futile");
    assert_eq!(report["rounds"], 1);
    let needed = report["closest"]["questions_needed"].as_u64().unwrap();
    assert!(needed > 100, "{report}");
    assert!(chat_requests(&mock) < report["full_calls"].as_u64().unwrap());
}

#[test]
fn a_budget_stops_before_the_round_that_would_break_it() {
    let mock = MockLlm::start(&[]);
    let (p, _, _) = project(&mock, 200, false);
    let args = ["sweep", "--until-certified", "--step", "5", "-q"];
    // A budget smaller than the first round is refused before any call, naming the round.
    let refused = keyed(&p, &args)
        .args(["--max-calls", "1"])
        .unusable(&[
            "error: invalid --max-calls: the first round alone (5 questions of each class) needs ",
        ])
        .run();
    assert_eq!(chat_requests(&mock), 0);
    let first: u64 = refused
        .stderr
        .split("needs ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    // A budget of exactly the first round: one round, then `budget` (5 questions per class
    // certify nothing).
    keyed(&p, &args)
        .args(["--max-calls", &first.to_string()])
        .run();
    let report = adaptive_json(&p, "reports/latest");
    assert_eq!(report["stop"], "budget", "{report}");
    assert_eq!(report["rounds"], 1);
    assert_eq!(report["calls_made"].as_u64(), Some(first));
    assert_eq!(chat_requests(&mock), first);
}

#[test]
fn a_killed_adaptive_sweep_resumes_from_the_cache_without_repeating_a_call() {
    let mock = MockLlm::start(&["--delay-ms", "20", "--keep-requests", "100000"]);
    let (p, _, _) = project(&mock, 200, false);
    let args = [
        "sweep",
        "--until-certified",
        "--seed",
        "3",
        "--step",
        "10",
        "-q",
        "-j",
        "2",
    ];
    let mut child = p
        .process()
        .args(args)
        .env(KEY_ENV, "test-key")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while chat_requests(&mock) < 30 {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no call was made"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL, mid-round
    child.wait().unwrap();
    // A request the dead process had written is read by the server in a moment.
    std::thread::sleep(Duration::from_millis(200));
    let before = chat_requests(&mock);
    // The answers that reached the cache before the kill (a torn last record is none).
    let cached: std::collections::HashSet<String> = p
        .read(".rageval/cache/chat.jsonl")
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|r| r["key"].to_string())
        .collect();
    keyed(&p, &args).run();
    let requests = mock.get("/requests")["requests"]
        .as_array()
        .unwrap()
        .clone();
    let distinct: std::collections::HashSet<&str> =
        requests.iter().map(|r| r.as_str().unwrap()).collect();
    assert!(
        chat_requests(&mock) > before,
        "the rerun finished the sweep"
    );
    // No call whose answer reached the cache is made again: the only requests the server
    // sees twice are those in flight when the process died (two workers), whose answers it
    // sent to a dead process. Those no client can have; a batch engine keeps them instead.
    let repeated = requests.len() - distinct.len();
    let in_flight = before as usize - cached.len();
    assert_eq!(
        repeated, in_flight,
        "{repeated} calls repeated, {in_flight} were in flight"
    );
    assert!(
        in_flight <= 2,
        "{in_flight} calls in flight with two workers"
    );
    assert_eq!(adaptive_json(&p, "reports/latest")["stop"], "certified");
}

#[test]
fn an_adaptive_sweep_needs_sequential_tests_and_sane_flags() {
    let mock = MockLlm::start(&[]);
    let (p, _, _) = project(&mock, 20, false);
    p.write(
        "rageval.yaml",
        &p.read("rageval.yaml")
            .replace("recommend: {sequential: true}\n", ""),
    );
    keyed(&p, &["sweep", "--until-certified"])
        .fails("`--until-certified` stops the first time the recommendation is certified, which keeps its confidence only with tests valid at every number of questions: add `--sequential` (or set `recommend.sequential: true`)")
        .run();
    keyed(
        &p,
        &["sweep", "--until-certified", "--sequential", "--step", "0"],
    )
    .fails("invalid --step: must be at least 1 question of each class per round, got 0")
    .run();
    keyed(
        &p,
        &[
            "sweep",
            "--until-certified",
            "--sequential",
            "--max-calls",
            "0",
        ],
    )
    .fails("invalid --max-calls: must be at least 1 model call, got 0")
    .run();
    keyed(&p, &["sweep", "--step", "5"])
        .fails("--step applies only with `--until-certified`")
        .run();
    assert_eq!(chat_requests(&mock), 0);
}

/// `chat.batch: true` in `p`'s config.
fn batched(p: &Project) {
    let config = p.read("rageval.yaml");
    p.write(
        "rageval.yaml",
        &config.replace("model: mock,", "model: mock, batch: true,"),
    );
}

/// `p`'s questions and sections embedded by `mock`'s embedder (`extra`: more of its fields).
fn embedded_at(p: &Project, mock: &MockLlm, extra: &str) {
    let embedder = format!(
        "embedder: {{kind: openai, base_url: \"{}\", model: hash-1024, api_key_env: {KEY_ENV}{extra}}}\n",
        mock.url
    );
    p.write(
        "rageval.yaml",
        &p.read("rageval.yaml")
            .replace("chat: ", &(embedder + "chat: ")),
    );
}

fn count(v: &Value, path: &[&str]) -> u64 {
    path.iter().fold(v, |v, k| &v[*k]).as_u64().unwrap_or(0)
}

/// With `chat.batch: true` each round is one batch at the mock's Batches API and no call is
/// made live: the stop, the rounds, the counts and runs.csv are the live adaptive sweep's
/// with the same seed.
#[test]
fn a_batch_engine_sends_one_batch_per_round_and_ends_as_the_live_adaptive_sweep() {
    let args = [&SEEDED[..], &["-q", "--out", "ad"]].concat();
    let live = MockLlm::start(&[]);
    let (p, _, _) = project(&live, 600, false);
    keyed(&p, &args).run();
    let want = adaptive_json(&p, "ad");
    assert_eq!(want["stop"], "certified", "{want}");
    assert!(want["rounds"].as_u64().unwrap() >= 2, "{want}");

    let mock = MockLlm::start(&["--batch-delay", "100"]);
    let (b, _, _) = project(&mock, 600, false);
    batched(&b);
    keyed(&b, &args).env("RAGEVAL_BATCH_POLL_MS", "20").run();
    let got = adaptive_json(&b, "ad");
    assert_eq!(got, want);
    let stats = mock.stats();
    assert_eq!(
        count(&stats, &["batches", "created"]),
        got["rounds"].as_u64().unwrap(),
        "one batch per round"
    );
    assert_eq!(
        count(&stats, &["batches", "lines"]),
        got["calls"].as_u64().unwrap()
    );
    assert_eq!(
        count(&stats, &["chat_requests"]),
        count(&stats, &["batches", "lines"]),
        "every call a batch line, none live"
    );
    assert_eq!(
        runs_without_latency(&b.read("ad/runs.csv")),
        runs_without_latency(&p.read("ad/runs.csv"))
    );
}

/// A budget is checked before a round's batch is sent: a budget of the first round's calls
/// sends one batch and stops as `budget`; `--max-cost` counts the calls at the batch price
/// (`pricing.batch_discount` off). `--batch` sends the rounds through batches as
/// `chat.batch: true` does.
#[test]
fn a_batch_engine_checks_the_budget_before_each_batch_at_the_batch_price() {
    let mock = MockLlm::start(&["--batch-delay", "50"]);
    let (p, _, _) = project(&mock, 200, false);
    let priced =
        p.read("rageval.yaml") + "pricing: {prompt_per_million: 100000, batch_discount: 0.25}\n";
    p.write("rageval.yaml", &priced);
    let live = ["sweep", "--until-certified", "--step", "5", "-q"];
    let batch = [&live[..], &["--batch"]].concat();
    let needs = |args: &[&str], flag: &str, budget: &str| -> String {
        let out = keyed(&p, args)
            .args([flag, budget])
            .unusable(&[&format!(
                "error: invalid {flag}: the first round alone (5 questions of each class) needs "
            )])
            .run();
        out.stderr
            .split("needs ")
            .nth(1)
            .unwrap()
            .split(';')
            .next()
            .unwrap()
            .to_string()
    };
    let live_cost = needs(&live, "--max-cost", "0.0001");
    let first: u64 = needs(&live, "--max-calls", "1")
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let batch_cost = needs(&batch, "--max-cost", "0.0001");
    let amount = |t: &str| -> f64 { t.split(' ').next().unwrap().parse().unwrap() };
    assert!(
        (amount(&batch_cost) - 0.75 * amount(&live_cost)).abs() < 2e-4,
        "{batch_cost} at the batch price, {live_cost} live"
    );
    assert_eq!(chat_requests(&mock), 0, "no call for a refused budget");
    keyed(&p, &batch)
        .args(["--max-calls", &first.to_string()])
        .env("RAGEVAL_BATCH_POLL_MS", "20")
        .run();
    let report = adaptive_json(&p, "reports/latest");
    assert_eq!(report["stop"], "budget", "{report}");
    assert_eq!(report["rounds"], 1);
    assert_eq!(report["calls_made"].as_u64(), Some(first));
    let stats = mock.stats();
    assert_eq!(count(&stats, &["batches", "created"]), 1);
    assert_eq!(count(&stats, &["batches", "lines"]), first);
    assert_eq!(chat_requests(&mock), first);
}

/// With an embedder at a server, the adaptive sweep embeds the corpus and the questions it
/// used, never the rest of the pool: its full-sweep figure is then an estimate, flagged, and
/// close to what the full sweep makes.
#[test]
fn an_adaptive_sweep_embeds_only_the_questions_it_used() {
    let mock = MockLlm::start(&[]);
    let (p, _, _) = project(&mock, 300, false);
    embedded_at(&p, &mock, "");
    keyed(&p, &SEEDED).args(["-q", "--out", "ad"]).run();
    let report = adaptive_json(&p, "ad");
    let used = report["used"][0].as_u64().unwrap() + report["used"][1].as_u64().unwrap();
    assert!(used < 600, "{report}");
    assert_eq!(
        count(&mock.stats(), &["texts_embedded"]),
        300 + used,
        "the 300 sections and the questions used"
    );
    assert_eq!(report["full_calls_estimated"], true, "{report}");
    keyed(&p, &["sweep", "-q", "--out", "full"]).run();
    let full = chat_requests(&mock) as f64;
    let estimate = report["full_calls"].as_f64().unwrap();
    assert!(
        (estimate - full).abs() <= 0.1 * full,
        "estimated {estimate} of {full} calls"
    );
}

/// A batch adaptive sweep killed while its first round's batch runs resumes that batch when
/// run again with the same seed: no second batch for the round, no request sent twice, no
/// live call, and the stop of the run that was never killed.
#[test]
fn a_killed_batch_adaptive_sweep_resumes_its_open_batch_and_repeats_nothing() {
    let mock = MockLlm::start(&["--batch-delay", "2000"]);
    let (p, _, _) = project(&mock, 600, false);
    batched(&p);
    let args = [&SEEDED[..], &["-q"]].concat();
    // SIGKILL while the first round's batch runs.
    crate::batch::kill_while_a_batch_runs(&p, &args, "50");
    let killed = mock.stats();
    assert_eq!(count(&killed, &["batches", "created"]), 1);
    keyed(&p, &args).env("RAGEVAL_BATCH_POLL_MS", "50").run();
    let report = adaptive_json(&p, "reports/latest");
    assert_eq!(report["stop"], "certified", "{report}");
    let stats = mock.stats();
    assert_eq!(
        count(&stats, &["batches", "created"]),
        report["rounds"].as_u64().unwrap(),
        "the open batch resumed, one batch per round"
    );
    let calls = report["calls"].as_u64().unwrap();
    assert_eq!(
        count(&stats, &["batches", "lines"]),
        calls,
        "no line sent twice"
    );
    assert_eq!(count(&stats, &["chat_requests"]), calls, "no live call");
}

/// With a budget and an embedder that batches too, each round sends its new texts as a batch
/// of their own before its calls are counted, then its calls as a second batch: nothing is
/// embedded or called live, and only the sections and the questions used are embedded.
#[test]
fn a_budget_with_a_batching_embedder_embeds_each_round_through_a_batch_first() {
    let mock = MockLlm::start(&["--batch-delay", "50"]);
    let (p, _, _) = project(&mock, 300, false);
    batched(&p);
    embedded_at(&p, &mock, ", batch: true");
    keyed(&p, &SEEDED)
        .args(["--max-calls", "100000", "-q"])
        .env("RAGEVAL_BATCH_POLL_MS", "20")
        .run();
    let report = adaptive_json(&p, "reports/latest");
    let rounds = report["rounds"].as_u64().unwrap();
    let used = report["used"][0].as_u64().unwrap() + report["used"][1].as_u64().unwrap();
    let calls = report["calls"].as_u64().unwrap();
    let stats = mock.stats();
    assert_eq!(count(&stats, &["texts_embedded"]), 300 + used, "{report}");
    assert_eq!(
        count(&stats, &["embedding_requests"]),
        300 + used,
        "one batch line per text, no live request"
    );
    assert_eq!(count(&stats, &["chat_requests"]), calls, "no live call");
    assert_eq!(
        count(&stats, &["batches", "created"]),
        2 * rounds,
        "{report}"
    );
    assert_eq!(count(&stats, &["batches", "lines"]), 300 + used + calls);
}

/// The question a chat request body asks (the text after `Question: `).
fn asked(body: &str) -> String {
    let body: Value = serde_json::from_str(body).unwrap();
    let user = body["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    user.rsplit("Question: ").next().unwrap().to_string()
}

/// runs.csv rows (without latency) by (question id, min_score, k).
fn rows_by_pair(text: &str) -> std::collections::BTreeMap<(String, String, String), Vec<String>> {
    let rows = runs_without_latency(text);
    let at = |name: &str| rows[0].iter().position(|h| h == name).unwrap();
    let (q, m, k) = (at("question_id"), at("min_score"), at("k"));
    rows[1..]
        .iter()
        .map(|r| ((r[q].clone(), r[m].clone(), r[k].clone()), r.clone()))
        .collect()
}

#[test]
fn a_setting_that_is_out_gets_no_further_calls_and_keeps_its_rates_so_far() {
    let mock = MockLlm::start(&["--keep-requests", "100000"]);
    let (p, answerable, unanswerable) = project(&mock, 200, false);
    adaptive_sweep(&p, "10");
    let made = chat_requests(&mock) as usize;
    let report = adaptive_json(&p, "ad");
    assert_eq!(report["stop"], "certified", "{report}");
    assert_eq!(report["calls_made"].as_u64(), Some(made as u64));
    let used = report["used"][0].as_u64().unwrap();
    // minScore 0.3 answers most unanswerable questions: out, and dropped, before the last
    // round.
    let out = report["out"].as_array().unwrap();
    assert!(!out.is_empty(), "{report}");
    let mut dropped = std::collections::BTreeMap::new();
    for o in out {
        let setting = o["setting"].as_str().unwrap();
        assert!(setting.starts_with("min_score=0.3,"), "{report}");
        let after = o["after"][0].as_u64().unwrap();
        assert!(after < used, "dropped before the last round: {report}");
        let k = setting.rsplit("k=").next().unwrap().to_string();
        dropped.insert(("0.3".to_string(), k), after);
    }
    let record: Value = serde_json::from_str(&p.read("ad/results.json")).unwrap();
    for o in out {
        let after = &o["after"];
        assert_eq!(
            record["dropped"][o["setting"].as_str().unwrap()],
            serde_json::json!({"answerable": after[0], "unanswerable": after[1]}),
            "{}",
            record["dropped"]
        );
    }
    let md = p.read("ad/report.md");
    let n = 2 * out[0]["after"][0].as_u64().unwrap();
    assert!(md.contains(&format!("| dropped after {n} |")), "{md}");
    assert!(
        md.contains("**Adaptive sweep.** dropped: min_score=0.3,"),
        "{md}"
    );
    assert!(p.read("ad/report.html").contains("id=\"dropped\""));

    // A plain sweep of the same questions makes, beyond the cache, exactly the prompts the
    // dropped settings would have sent after they were out: each asks a question they did
    // not run, and the adaptive sweep sent none of them.
    let ad = rows_by_pair(&p.read("ad/runs.csv"));
    let ran = |q: &str, m: &str, k: &str| ad.contains_key(&(q.into(), m.into(), k.into()));
    let picked = |qs: &[(String, String)]| -> Vec<(String, String)> {
        qs.iter()
            .filter(|(id, _)| ran(id, "0.5", "1"))
            .cloned()
            .collect()
    };
    let (a, u) = (picked(&answerable), picked(&unanswerable));
    assert_eq!((a.len() as u64, u.len() as u64), (used, used));
    p.write("sets/pool.yaml", &set(&a, &u));
    keyed(&p, &["sweep", "-q", "--out", "plain"]).run();
    let bodies: Vec<String> = mock.get("/requests")["requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap().to_string())
        .collect();
    let (before, after) = bodies.split_at(made);
    assert!(!after.is_empty(), "dropping saved no call");
    let id_of: std::collections::HashMap<&str, &str> = a
        .iter()
        .chain(&u)
        .map(|(id, q)| (q.as_str(), id.as_str()))
        .collect();
    for body in after {
        let q = id_of[asked(body).as_str()];
        assert!(
            dropped.keys().any(|(m, k)| !ran(q, m, k)),
            "{q} was asked again, though every setting ran it"
        );
        assert!(!before.contains(body), "a prompt sent twice");
    }
    eprintln!(
        "calls: {made} with dropping, {} without (the plain sweep of the same questions made the other {})",
        made + after.len(),
        after.len()
    );
    // Every run the adaptive sweep made is the plain sweep's, and the plain sweep's other runs
    // are the dropped settings' questions after they were out.
    let plain = rows_by_pair(&p.read("plain/runs.csv"));
    for (pair, row) in &ad {
        assert_eq!(Some(row), plain.get(pair), "{pair:?}");
    }
    for (q, m, k) in plain.keys().filter(|pair| !ad.contains_key(*pair)) {
        assert!(dropped.contains_key(&(m.clone(), k.clone())), "{q} {m} {k}");
    }
}
