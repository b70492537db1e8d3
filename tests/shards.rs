//! `sweep --shard I/N` and `rageval merge`: merged shards give the reports of one unsharded
//! sweep (apart from timings), on the sample and on a generated set; bad specs and records of
//! different sweeps are refused with one line and no report.

use serde_json::Value;

use crate::grading;
use crate::harness::{results, summary, write_results};
use crate::http::{http_project, keyed, MockLlm, KEY_ENV};
use crate::support::{read_csv, Project};

/// A report without what varies from run to run: call timings and whether a reply came from
/// the cache (results.json), the latency and TTFT columns (CSV).
pub(crate) fn untimed(p: &Project, dir: &str) -> (Value, String, String, String) {
    let mut v: Value = serde_json::from_str(&p.read(&format!("{dir}/results.json"))).unwrap();
    for call in v["calls"].as_object_mut().unwrap().values_mut() {
        let call = call.as_object_mut().unwrap();
        for field in ["latency_ms", "ttft_ms", "cached"] {
            call.remove(field);
        }
    }
    for s in v["summary"]["settings"]
        .as_object_mut()
        .unwrap()
        .values_mut()
    {
        let s = s.as_object_mut().unwrap();
        s.retain(|k, _| !k.starts_with("latency") && !k.starts_with("ttft"));
    }
    v["summary"]["calls"]
        .as_object_mut()
        .unwrap()
        .remove("cache_hits");
    let csv = |name: &str| {
        let (header, rows) = read_csv(&p.read(&format!("{dir}/{name}")));
        let keep: Vec<usize> = (0..header.len())
            .filter(|&i| !header[i].starts_with("latency") && !header[i].starts_with("ttft"))
            .collect();
        std::iter::once(&header)
            .chain(&rows)
            .map(|row| {
                keep.iter()
                    .map(|&i| row[i].as_str())
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    (
        v,
        csv("summary.csv"),
        csv("runs.csv"),
        p.read(&format!("{dir}/report.md")),
    )
}

/// Sweep `args` whole into `whole`, and as `n` shards merged into `merged`.
pub(crate) fn whole_and_merged(p: &Project, args: &[&str], n: u32) {
    // The key matters only to a project whose models are served over HTTP.
    let run = |extra: &[&str]| keyed(p, &["sweep", "-q"]).args(args).args(extra).run();
    run(&["--out", "whole"]);
    let mut dirs = Vec::new();
    for i in 1..=n {
        let (spec, dir) = (format!("{i}/{n}"), format!("shard-{i}"));
        run(&["--shard", &spec, "--out", &dir]);
        dirs.push(dir);
    }
    p.rageval(["merge", "-q"])
        .args(&dirs)
        .args(["--out", "merged"])
        .run();
}

pub(crate) fn assert_same(p: &Project) {
    let (whole, merged) = (untimed(p, "whole"), untimed(p, "merged"));
    assert_eq!(whole.0, merged.0, "results.json");
    assert_eq!(whole.1, merged.1, "summary.csv");
    assert_eq!(whole.2, merged.2, "runs.csv");
    assert_eq!(whole.3, merged.3, "report.md");
}

#[test]
fn two_shards_merged_equal_the_whole_sample_sweep() {
    let p = Project::sample();
    whole_and_merged(
        &p,
        &[
            "--evalset",
            "evalsets/club.yaml",
            "--rewrite",
            "none,heuristic",
        ],
        2,
    );
    assert_same(&p);
    // Each shard is a partial record of its own questions, and says which shard it is.
    let shard = results(&p, "shard-1");
    assert_eq!(
        serde_json::json!(shard.shard),
        serde_json::json!({"index": 1, "count": 2})
    );
    let (a, b) = (
        shard.questions.len(),
        results(&p, "shard-2").questions.len(),
    );
    assert_eq!((a + b, a > 0, b > 0), (26, true, true));
    // The merged record gates as the whole one does.
    let gate = |dir: &str| {
        let out = p
            .rageval([
                "gate",
                &format!("{dir}/results.json"),
                "--setting",
                "min_score=0.2,k=4",
            ])
            .stdout(format!(
                "warning: no limits configured and no baseline: the gate checks only failed calls; set `gate.max_unwanted_answer_rate` and `gate.max_false_refusal_rate` (or pass `--max-unwanted-answer-rate` and `--max-false-refusal-rate`), see docs/ci.md\n\
                 gate: setting min_score=0.2,k=4 of {dir}/results.json (26 questions)\n\
                 PASS  error_runs 0 <= limit 0\n\
                 gate: PASS (1 check)\n"
            ))
            .run();
        (out.status, out.stdout.replace(dir, "DIR"))
    };
    assert_eq!(gate("whole"), gate("merged"));
}

#[test]
fn three_shards_merged_equal_the_whole_generated_sweep() {
    let p = Project::sample();
    let known = [
        "membership",
        "fee",
        "laptop",
        "loan",
        "showcase",
        "president",
        "refund",
        "term",
    ];
    let alien = ["parking", "wifi", "chess", "drone", "locker", "printer"];
    let mut yaml = String::from("corpus: club\nanswerable:\n");
    for i in 0..150 {
        let (a, b) = (known[i % known.len()], known[(i / 3) % known.len()]);
        yaml.push_str(&format!(
            "  - id: gen-a{i}\n    question: What about the {a} and the {b}, case {i}?\n"
        ));
    }
    yaml.push_str("unanswerable:\n");
    for i in 0..70 {
        let (a, b) = (alien[i % alien.len()], known[i % known.len()]);
        yaml.push_str(&format!(
            "  - id: gen-u{i}\n    question: Is there a {a} for the {b}, case {i}?\n"
        ));
    }
    p.write("evalsets/generated.yaml", &yaml);
    whole_and_merged(
        &p,
        &[
            "--evalset",
            "evalsets/club.yaml",
            "--evalset",
            "evalsets/generated.yaml",
        ],
        3,
    );
    assert_same(&p);
    assert_eq!(results(&p, "merged").questions.len(), 26 + 220);
}

#[test]
fn judged_shards_merged_keep_the_judge_calls_and_grades() {
    let server = MockLlm::start(&["--paraphrase"]);
    let p = grading::project(&server.url, true, grading::PATTERNS);
    whole_and_merged(&p, &[], 2);
    assert_same(&p);
    let (whole, merged) = (summary(&p, "whole"), summary(&p, "merged"));
    for part in ["shard-1", "shard-2"] {
        assert!(
            summary(&p, part)["calls"]["judge_calls"].as_u64().unwrap() > 0,
            "every shard judges some runs"
        );
    }
    let setting = &merged["settings"]["min_score=0,k=1"];
    assert_eq!(merged["calls"]["judge_calls"], 5);
    assert_eq!(
        [
            "judge_calls",
            "judged",
            "judged_correct_rate",
            "judge_refusal_agreement"
        ]
        .map(|k| setting[k].to_string()),
        ["5", "5", "1.0", "0.8"]
    );
    assert!(setting["judge_prompt_tokens"].as_u64().unwrap() > 0);
    assert_eq!(
        setting["judge_cost"],
        whole["settings"]["min_score=0,k=1"]["judge_cost"]
    );
    // The whole sweep and the two shards each asked the judge once per distinct reply.
    assert_eq!(server.stats()["judge_requests"], 10);
}

#[test]
fn bad_shard_specs_exit_2_without_a_report() {
    let p = Project::sample();
    for (spec, why) in [
        (
            "3/2",
            "`3/2` names no shard: I runs from 1 to N, and N is at least 1",
        ),
        (
            "0/2",
            "`0/2` names no shard: I runs from 1 to N, and N is at least 1",
        ),
        (
            "a/b",
            "`a/b` is not `I/N` with whole numbers (write e.g. `1/4`)",
        ),
    ] {
        p.rageval(["sweep", "--shard", spec])
            .fails(&format!("invalid --shard: {why}"))
            .run();
        assert!(!p.path().join("reports").exists());
    }
}

#[test]
fn records_of_different_sweeps_are_not_merged() {
    let p = Project::sample();
    let sweep = |extra: &[&str]| {
        p.sweep(["--evalset", "evalsets/club.yaml"])
            .args(extra)
            .run();
    };
    sweep(&["--shard", "1/2", "--out", "a1"]);
    sweep(&["--shard", "2/2", "--out", "a2"]);
    sweep(&["--shard", "2/2", "--k", "2", "--out", "grid"]);
    sweep(&["--shard", "2/2", "--strict-refusal", "--out", "config"]);
    sweep(&["--shard", "2/3", "--out", "three"]);
    let config = p.read("rageval.yaml") + "models:\n  alt:\n    kind: mock\n    model: mock-alt\n";
    p.write("profiles.yaml", &config);
    sweep(&[
        "--config",
        "profiles.yaml",
        "--shard",
        "1/2",
        "--out",
        "one",
    ]);
    sweep(&[
        "--config",
        "profiles.yaml",
        "--shard",
        "2/2",
        "--chat",
        "default,alt",
        "--out",
        "two",
    ]);
    sweep(&["--out", "whole"]);
    let merge = |dirs: &[&str]| p.rageval(["merge"]).args(dirs).args(["--out", "merged"]);
    let refused = |dirs: &[&str], line: &str| {
        merge(dirs)
            .unusable(&[line])
            .stderr(format!("{line}\n"))
            .run();
        assert!(!p.path().join("merged").exists(), "no report");
    };
    refused(
        &["a1", "grid"],
        "error: cannot merge: `a1/results.json` and `grid/results.json` swept different grids: setting `min_score=0.1,k=1` is in `a1/results.json` only",
    );
    // One more dimension: the setting named is the one the other shard lacks, not a shared
    // one whose map differs by the new dimension's default.
    refused(
        &["one", "two"],
        "error: cannot merge: `one/results.json` and `two/results.json` swept different grids: setting `min_score=0.1,k=1,chat=alt` is in `two/results.json` only",
    );
    let digest = |dir: &str| results(&p, dir).identity.identity.digest;
    refused(
        &["a1", "config"],
        &format!(
            "error: cannot merge: `a1/results.json` and `config/results.json` were made with different configurations (config digest {} and {})",
            digest("a1"),
            digest("config")
        ),
    );
    refused(&["a1"], "error: cannot merge: shard 2/2 is missing");
    refused(
        &["a1", "three"],
        "error: cannot merge: `a1/results.json` is a shard of 2 but `three/results.json` is shard 2/3",
    );
    refused(
        &["a1", "whole"],
        "error: cannot merge: `whole/results.json` holds a whole sweep, not a shard: merge joins the results of `rageval sweep --shard I/N`",
    );
    merge(&["a1", "a2"])
        .stdout(concat!(
            "merged 2 shards: 26 questions x 20 settings = 520 runs\n",
            "wrote merged/summary.csv, merged/runs.csv, merged/tags.csv, merged/results.json, merged/report.md, merged/report.html\n",
        ))
        .run();
}

#[test]
fn shards_keep_their_own_cache_files() {
    let server = MockLlm::start(&[]);
    let p = http_project(&server.url, true, "");
    for spec in ["1/2", "2/2"] {
        keyed(&p, &["sweep", "-q", "--shard", spec]).run();
    }
    for shard in ["shard-1-of-2", "shard-2-of-2"] {
        for file in ["chat.jsonl", "embeddings.jsonl"] {
            let path = p.path().join(".rageval/cache").join(shard).join(file);
            assert!(path.metadata().unwrap().len() > 0, "{}", path.display());
        }
    }
    assert!(!p.path().join(".rageval/cache/chat.jsonl").exists());
}

#[test]
fn reranked_shards_merged_count_the_rerank_calls_of_the_whole_sweep() {
    let server = MockLlm::start(&[]);
    let p = Project::sample();
    p.write(
        "rageval.yaml",
        &format!(
            "evalsets: [evalsets/club.yaml]\nreranker:\n  base_url: {}\n  api_key_env: {KEY_ENV}\n  candidates: 8\n",
            server.url
        ),
    );
    whole_and_merged(&p, &["--rewrite", "none,heuristic"], 2);
    assert_same(&p);
    let counters = |dir: &str| -> [u64; 3] {
        let c = &summary(&p, dir)["calls"];
        ["rerank_calls", "rerank_cache_hits", "rerank_failed"].map(|k| c[k].as_u64().unwrap())
    };
    let (one, two) = (counters("shard-1"), counters("shard-2"));
    assert!(
        one[0] > 0 && two[0] > 0,
        "both shards rerank: {one:?} {two:?}"
    );
    // One call per distinct text asked: 27 (the sample's 26 questions as written, and the
    // heuristic rewrites of its follow-ups where they differ).
    let whole = counters("whole");
    assert_eq!(whole, [27, 0, 0]);
    assert_eq!(whole[0], one[0] + two[0]);
    assert_eq!(counters("merged"), whole);
    // The whole sweep and the shards (each with its own cache) made them all once each.
    assert_eq!(
        server.stats()["rerank_requests"].as_u64(),
        Some(2 * whole[0])
    );
}

/// `merge` and `gate` validate what they read (issue 23 item 7): a shard whose answerable
/// question's run says `unwanted_answer` used to merge (7 unwanted, rate 0.7778), a
/// `prompt_tokens` of u64::MAX wrapped the setting's total, a negative `latency_ms` was taken.
/// Each is refused with exit 2, one line naming the file and the field, and no report; token
/// counts that overflow only once the shards are added up are refused by `merge` too.
#[test]
fn merge_and_gate_refuse_records_that_no_sweep_writes() {
    use crate::harness::{write_results, Outcome};
    let p = Project::sample();
    let sweep = |shard: &str, out: &str| {
        p.sweep(["--shard", shard, "--out", out])
            .args(crate::support::PRODUCTION)
            .run();
    };
    sweep("1/2", "a");
    sweep("2/2", "b");
    let gate = ["--setting", "min_score=0.2,k=4"];
    let refused = |dirs: &[&str], line: String| {
        let file = format!("{}/results.json", dirs[dirs.len() - 1]);
        p.rageval(["merge"])
            .args(dirs)
            .args(["--out", "merged"])
            .fails(&line)
            .absent("merged")
            .run();
        p.rageval(["gate", file.as_str()])
            .args(gate)
            .fails(&line)
            .run();
    };
    let original = results(&p, "b");
    let answerable = original
        .runs
        .iter()
        .position(|r| original.questions[&r.question].answerable)
        .unwrap();
    let mut bad = original.clone();
    bad.runs[answerable].verdict.outcome = Outcome::UnwantedAnswer;
    write_results(&p, "c/results.json", &bad);
    let run = &bad.runs[answerable];
    refused(
        &["a", "c"],
        format!(
            "`c/results.json` is inconsistent: the run of question `{}` at setting `{}`: `outcome` is `unwanted_answer`, but the question is answerable, whose runs are `answer`, `false_refusal` or `error`",
            run.question, run.setting
        ),
    );
    let call = bad.runs[answerable].call.clone().unwrap();
    let mut bad = original.clone();
    bad.calls[&call].latency_ms = Some(-5.0);
    write_results(&p, "d/results.json", &bad);
    refused(
        &["a", "d"],
        format!("`d/results.json` is inconsistent: call `{call}`: `latency_ms` is -5, not a duration from 0 to 1e10 ms"),
    );
    // Half of u64::MAX and one more in a call of each shard: each shard adds up, the merged
    // record does not.
    let half = u64::MAX / 2 + 1;
    for (dir, questions) in [("a", 15), ("b", 11)] {
        let mut r = results(&p, dir);
        let call = r.runs[0].call.clone().unwrap();
        r.calls[&call].usage.prompt_tokens = half;
        write_results(&p, &format!("big-{dir}/results.json"), &r);
        p.rageval(["gate", &format!("big-{dir}/results.json")])
            .args(gate)
            .stdout(format!(
                "warning: no limits configured and no baseline: the gate checks only failed calls; set `gate.max_unwanted_answer_rate` and `gate.max_false_refusal_rate` (or pass `--max-unwanted-answer-rate` and `--max-false-refusal-rate`), see docs/ci.md\n\
                 gate: setting min_score=0.2,k=4 of big-{dir}/results.json ({questions} questions)\n\
                 PASS  error_runs 0 <= limit 0\n\
                 gate: PASS (1 check)\n"
            ))
            .run();
    }
    let first = results(&p, "big-a").runs[0].call.clone().unwrap();
    p.rageval(["merge", "big-a", "big-b", "--out", "merged"])
        .fails(&format!("cannot merge: `usage.prompt_tokens` of the calls the runs name adds up past the largest count, 18446744073709551615; call `{first}` alone has {half}"))
        .absent("merged")
        .run();
}

/// Shards sent to different servers of one model merge (issue 33 item 6): the servers'
/// addresses are left out of the config digest, and `gate --baseline` accepts such a pair.
/// Before, merge refused them naming two equal models.
#[test]
fn shards_answered_by_different_servers_merge() {
    let (one, two) = (MockLlm::start(&[]), MockLlm::start(&[]));
    let p = http_project(&one.url, true, "");
    let config = |url: &str| p.read("rageval.yaml").replace(&one.url, url);
    p.write("one.yaml", &config(&one.url));
    p.write("two.yaml", &config(&two.url));
    for (file, shard, out) in [("one.yaml", "1/2", "a"), ("two.yaml", "2/2", "b")] {
        keyed(&p, &["sweep", "-q", "--config", file, "--shard", shard])
            .args(["--out", out])
            .run();
    }
    p.rageval(["merge", "-q", "a", "b", "--out", "merged"])
        .run();
    let merged = results(&p, "merged");
    assert_eq!(merged.questions.len(), 26);
    // The merged record names the first shard's server, as a whole sweep there would.
    assert_eq!(merged.identity.identity, results(&p, "a").identity.identity);
}

/// Two shards that recorded one call digest with different replies are refused, naming the
/// digest and both files (issue 33 item 6): merge used to keep one silently, so the other
/// shard's runs showed a reply that contradicts their outcome.
#[test]
fn two_different_records_of_one_call_are_not_merged() {
    let p = Project::sample();
    for (shard, out) in [("1/2", "a"), ("2/2", "b")] {
        p.sweep(["--shard", shard, "--out", out]).run();
    }
    let a = results(&p, "a");
    let (digest, call) = a.calls.iter().next().unwrap();
    let mut b = results(&p, "b");
    let mut same = call.clone();
    same.latency_ms = Some(1.0);
    b.calls.insert(digest.clone(), same);
    write_results(&p, "same/results.json", &b);
    // The same reply, timed differently: the same call.
    p.rageval(["merge", "-q", "a", "same", "--out", "merged"])
        .run();
    let mut other = call.clone();
    other.reply = format!("{} (another reply)", call.reply);
    b.calls.insert(digest.clone(), other);
    write_results(&p, "c/results.json", &b);
    p.rageval(["merge", "a", "c", "--out", "refused"])
        .fails(&format!(
            "cannot merge: call `{digest}` has different records in `a/results.json` and `c/results.json`"
        ))
        .absent("refused")
        .run();
}
