//! The history of sweeps through the real binary (issue 38): every sweep appends one whole
//! line, two at once append two, damaged lines are skipped with their number, a long history
//! is read in bounded memory, and `rageval history` shows it as a table, CSV and JSON.

use serde_json::{json, Value};

use crate::support::{require_tool, Project, PRODUCTION};

const HISTORY: &str = "reports/history.jsonl";

/// The entries of the history at `rel`.
fn entries(p: &Project, rel: &str) -> Vec<Value> {
    p.read(rel)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// `sha256sum FILE` as `sha256:<hex>`: the digest computed by another program.
fn sha256sum(path: &std::path::Path) -> String {
    let out = std::process::Command::new("sha256sum")
        .arg(path)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    format!("sha256:{}", text.split_whitespace().next().unwrap())
}

#[test]
fn every_sweep_appends_one_line_unless_told_not_to() {
    let p = Project::sample();
    p.sweep(PRODUCTION).run();
    p.sweep(PRODUCTION).args(["--out", "second"]).run();
    let lines = entries(&p, HISTORY);
    assert_eq!(lines.len(), 2);
    let (first, second) = (&lines[0], &lines[1]);
    let results: Value = serde_json::from_str(&p.read("reports/latest/results.json")).unwrap();
    assert_eq!(first["schema"], "rageval.history/1");
    assert_eq!(first["results"], "reports/latest/results.json");
    assert_eq!(second["results"], "second/results.json");
    assert_eq!(
        first["results_digest"],
        sha256sum(&p.path().join("reports/latest/results.json"))
    );
    assert_eq!(first["config_digest"], results["identity"]["config_digest"]);
    assert_eq!(first["questions_digest"], second["questions_digest"]);
    // Outside a repository: no commit, no dirty flag.
    assert_eq!(
        (&first["commit"], &first["dirty"]),
        (&Value::Null, &Value::Null)
    );
    let time = first["time"].as_str().unwrap();
    assert_eq!(
        (time.len(), &time[10..11], &time[19..]),
        (20, "T", "Z"),
        "{time}"
    );
    let stats = &results["summary"]["settings"]["min_score=0.2,k=4"];
    let setting = &first["settings"]["min_score=0.2,k=4"];
    for key in [
        "unwanted_answer",
        "false_refusal",
        "answerable",
        "unanswerable",
        "error",
    ] {
        assert_eq!(setting[key], stats[key], "{key}");
    }
    assert_eq!(
        setting["unwanted_answer_rate"],
        stats["unwanted_answer_rate"]
    );
    assert_eq!(
        first["recommended"],
        results["summary"]["recommendation"]["setting"]
    );
    assert_eq!(
        (first["questions"].as_u64(), first["answerable"].as_u64()),
        (Some(26), Some(17))
    );

    p.sweep(PRODUCTION).arg("--no-history").run();
    p.sweep(PRODUCTION)
        .arg("--shard")
        .arg("1/2")
        .args(["--out", "shard"])
        .run();
    assert_eq!(
        entries(&p, HISTORY).len(),
        2,
        "--no-history and a shard append nothing"
    );
    p.write(
        "off.yaml",
        "evalsets: [evalsets/club.yaml]\nhistory: {enabled: false}\n",
    );
    p.sweep(PRODUCTION).args(["--config", "off.yaml"]).run();
    p.write(
        "moved.yaml",
        "evalsets: [evalsets/club.yaml]\nhistory: {file: ci/runs.jsonl}\n",
    );
    p.sweep(PRODUCTION).args(["--config", "moved.yaml"]).run();
    assert_eq!(entries(&p, HISTORY).len(), 2);
    assert_eq!(entries(&p, "ci/runs.jsonl").len(), 1);
}

#[test]
fn a_sweep_in_a_repository_records_its_commit_and_whether_it_was_dirty() {
    if !require_tool("git", "git") {
        return;
    }
    let p = Project::sample();
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(p.path())
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.com")
            .output()
            .unwrap();
        assert!(ok.status.success(), "git {args:?}");
        String::from_utf8(ok.stdout).unwrap()
    };
    git(&["init", "-q"]);
    git(&["add", "rageval.yaml", "evalsets"]);
    git(&["commit", "-q", "-m", "sample"]);
    let head = git(&["rev-parse", "HEAD"]).trim().to_string();
    p.sweep(PRODUCTION).run();
    p.write("rageval.yaml", "evalsets: [evalsets/club.yaml]\n# edited\n");
    p.sweep(PRODUCTION).run();
    let lines = entries(&p, HISTORY);
    assert_eq!(
        (lines[0]["commit"].as_str(), lines[0]["dirty"].as_bool()),
        (Some(head.as_str()), Some(false))
    );
    assert_eq!(
        (lines[1]["commit"].as_str(), lines[1]["dirty"].as_bool()),
        (Some(head.as_str()), Some(true))
    );
}

#[test]
fn two_sweeps_at_once_append_two_whole_lines() {
    let p = Project::sample();
    let start = |out: &str| {
        p.process()
            .args(["sweep", "-q"])
            .args(PRODUCTION)
            .args(["--out", out])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (start("a"), start("b"));
    for child in [a, b] {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let text = p.read(HISTORY);
    assert!(text.ends_with('\n'));
    let mut written: Vec<String> = entries(&p, HISTORY)
        .iter()
        .map(|e| e["results"].as_str().unwrap().to_string())
        .collect();
    written.sort();
    assert_eq!(written, ["a/results.json", "b/results.json"]);
}

/// A history line with one setting, written by hand: `unwanted` of 10 unanswerable questions
/// answered, `refused` of 20 answerable ones refused.
pub fn line(n: usize, unwanted: usize, refused: usize, config: &str, questions: &str) -> String {
    let setting = json!({
        "answerable": 20, "unanswerable": 10, "answer": 20 - refused, "early_refusal": 2,
        "model_refusal": 8 - unwanted, "false_refusal": refused, "unwanted_answer": unwanted,
        "wrong_answer": 1, "error": 0,
        "false_refusal_rate": refused as f64 / 20.0,
        "unwanted_answer_rate": unwanted as f64 / 10.0,
        "wrong_answer_rate": 0.05,
        "prompt_tokens_per_question": 200.5, "cost": 0.01
    });
    let entry = json!({
        "schema": "rageval.history/1",
        "time": format!("2026-12-{n:02}T09:00:00Z"),
        "commit": format!("{n:02}23456789abcdef0123456789abcdef01234567"),
        "dirty": n % 2 == 0,
        "tool_version": "0.1.0",
        "config_digest": config,
        "questions_digest": questions,
        "results_digest": format!("sha256:{n}"),
        "results": format!("runs/{n}/results.json"),
        "questions": 30, "answerable": 20, "unanswerable": 10,
        "recommended": "min_score=0.3,k=1",
        "certified": n % 3 == 0,
        "confidence": 0.95,
        "prompt_tokens": 1000 * n, "completion_tokens": 100 * n, "cost": 0.001 * n as f64,
        "currency": "USD",
        "settings": {"min_score=0.3,k=1": setting}
    });
    format!("{entry}\n")
}

/// Five entries: the config changes at the third, the question set at the fifth; then a line
/// cut short.
fn handmade(p: &Project) {
    let text: String = [
        line(1, 1, 2, "sha256:c1", "sha256:q1"),
        line(2, 1, 3, "sha256:c1", "sha256:q1"),
        line(3, 2, 2, "sha256:c2", "sha256:q1"),
        line(4, 3, 4, "sha256:c2", "sha256:q1"),
        line(5, 4, 2, "sha256:c2", "sha256:q2"),
    ]
    .concat();
    let cut = line(6, 5, 2, "sha256:c2", "sha256:q2");
    p.write(HISTORY, &format!("{text}{}", &cut[..40]));
}

const CUT_WARNING: &str =
    "warning: `reports/history.jsonl` line 6 skipped: cut short (a sweep stopped while writing it?)\n";

#[test]
fn history_shows_the_last_entries_as_a_table_csv_and_json() {
    let p = Project::sample();
    handmade(&p);
    p.rageval(["history"])
        .stdout_snapshot("history__history_shows_the_last_entries_as_a_table_csv_and_json")
        .stderr(CUT_WARNING)
        .run();
    p.rageval(["history", "--csv", "-n", "3"])
        .stdout_snapshot("history__history_shows_the_last_entries_as_a_table_csv_and_json_2")
        .stderr(CUT_WARNING)
        .run();
    let out = p
        .rageval(["history", "--json", "--setting", "k=1,min_score=0.30"])
        .stdout_any("parsed below")
        .stderr(CUT_WARNING)
        .run();
    let rows = out.stdout_json();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 5);
    assert_eq!(rows[4]["unwanted_answer_rate"], 0.4);
    assert_eq!(rows[4]["changed"], "questions");
    assert_eq!(rows[2]["changed"], "config");
    assert_eq!(rows[0]["setting"], "min_score=0.3,k=1");
}

#[test]
fn history_says_what_is_missing() {
    let p = Project::sample();
    p.rageval(["history"])
        .fails("no history at `reports/history.jsonl`: every `rageval sweep` appends a line to it (see docs/history.md)")
        .run();
    handmade(&p);
    p.rageval(["history", "--setting", "min_score=0.5,k=1"])
        .stderr(format!(
            "{CUT_WARNING}error: `reports/history.jsonl`: line 5: no setting is `min_score=0.5,k=1`; the settings are `min_score=0.3,k=1`\n"
        ))
        .status(2)
        .run();
}

#[test]
fn a_history_of_100000_lines_is_read_in_bounded_memory() {
    if !require_tool("/usr/bin/time", "GNU time (`apt-get install time`)") {
        return;
    }
    let p = Project::sample();
    // 100,000 lines of 769 bytes: 77 MB, read for its last three entries.
    let one = line(7, 1, 2, "sha256:c1", "sha256:q1");
    let path = p.path().join(HISTORY);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    {
        use std::io::Write as _;
        let mut w = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
        for _ in 0..100_000 {
            w.write_all(one.as_bytes()).unwrap();
        }
    }
    let size = std::fs::metadata(&path).unwrap().len();
    assert!(size > 60_000_000, "{size} bytes");
    let plain = p.process();
    let out = std::process::Command::new("/usr/bin/time")
        .args(["-f", "max-rss-kb %M"])
        .arg(plain.get_program())
        .args(["history", "--csv", "-n", "3"])
        .current_dir(p.path())
        .envs(plain.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 4);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let kb: u64 = stderr
        .lines()
        .find_map(|l| l.strip_prefix("max-rss-kb "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no figure from /usr/bin/time: {stderr}"));
    // The bound: 48 MiB of resident memory for a 77 MB file (a streamed read takes about 21);
    // a reader that held the file would need more than the file.
    assert!(kb < 48 * 1024, "max RSS {kb} KB");
    eprintln!("history of 100,000 lines, {size} bytes: max RSS {kb} KB");
}

/// A project holding the hand-made history and its page, `history.html`.
pub fn handmade_project() -> Project {
    let p = Project::sample();
    handmade(&p);
    p.rageval(["history", "-q", "--html", "history.html"])
        .stderr(CUT_WARNING)
        .run();
    p
}

#[test]
fn the_history_page_is_written_and_says_so() {
    let p = Project::sample();
    handmade(&p);
    p.rageval(["history", "--html", "out/history.html"])
        .stdout("history: wrote out/history.html (5 entries at min_score=0.3,k=1)\n")
        .stderr(CUT_WARNING)
        .run();
    let page = p.read("out/history.html");
    assert_eq!(page.matches("<g class=\"change\"").count(), 2);
    assert!(page.contains("data-changed=\"config\""));
    assert!(page.contains("data-changed=\"questions\""));
    assert_eq!(
        page.matches("<circle").count(),
        15,
        "five entries, three rates"
    );
    assert!(!page.contains("<script"), "no script");
}

/// The sample swept at the production setting (5 of its 9 unanswerable questions answered):
/// its history rewritten as runs before it with `before` unwanted answers each (a run of
/// `None` made with another config), then its own line, then `after` later runs.
fn history_around(before: &[Option<usize>], after: &[usize]) -> Project {
    let p = Project::sample();
    p.sweep(PRODUCTION).run();
    let real = p.read(HISTORY);
    let base: Value = serde_json::from_str(real.trim()).unwrap();
    let fake = |i: usize, unwanted: usize, config: Option<&str>| {
        let mut e = base.clone();
        e["results_digest"] = json!(format!("sha256:earlier{i}"));
        let s = &mut e["settings"]["min_score=0.2,k=4"];
        s["unwanted_answer"] = json!(unwanted);
        s["unwanted_answer_rate"] = json!(unwanted as f64 / 9.0);
        if let Some(c) = config {
            e["config_digest"] = json!(c);
        }
        format!("{e}\n")
    };
    let mut text = String::new();
    for (i, u) in before.iter().enumerate() {
        text += &match u {
            Some(u) => fake(i, *u, None),
            None => fake(i, 0, Some("sha256:another-config")),
        };
    }
    text += &real;
    for (i, &u) in after.iter().enumerate() {
        text += &fake(100 + i, u, None);
    }
    p.write(HISTORY, &text);
    p
}

const RISING: &[Option<usize>] = &[
    Some(0),
    Some(0),
    Some(0),
    Some(1),
    None,
    Some(1),
    Some(1),
    Some(2),
];

#[test]
fn the_trend_alarm_fails_a_rising_rate_and_names_its_test_p_value_and_runs() {
    // Counts 0, 0, 0, 1, 1, 1, 2 then 5 of 9: P(S >= 59 | T = 10) = 0.000110 (an independent
    // enumeration of the conditional distribution in exact fractions gives 0.00010963).
    let p = history_around(RISING, &[9]);
    p.rageval(["gate", "--trend", "8", "--setting", "min_score=0.2,k=4", "--max-error-runs", "0"])
        .status(1)
        .stdout(concat!(
            "warning: no limits configured and no baseline: the gate checks only failed calls; set `gate.max_unwanted_answer_rate` and `gate.max_false_refusal_rate` (or pass `--max-unwanted-answer-rate` and `--max-false-refusal-rate`), see docs/ci.md\n",
            "gate: setting min_score=0.2,k=4 of reports/latest/results.json (26 questions)\n",
            "PASS  error_runs 0 <= limit 0\n",
            "FAIL  trend unwanted_answer_rate rising, p=0.0001 <= 0.0167 (exact Cochran-Armitage over 8 runs: lines 1-4, 6-9 of `reports/history.jsonl`)\n",
            "PASS  trend false_refusal_rate not rising, p=0.5194 > 0.0500 (exact Cochran-Armitage over 8 runs: lines 1-4, 6-9 of `reports/history.jsonl`)\n",
            "PASS  trend wrong_answer_rate not rising, p=0.5163 > 0.0250 (exact Cochran-Armitage over 8 runs: lines 1-4, 6-9 of `reports/history.jsonl`)\n",
            "gate: FAIL (1 of 4 checks failed)\n",
        ))
        .run();
    // The same from the config, through `sweep --gate`: the sweep appends its line (11, after
    // the later run of line 10) and the window of 4 ends there: 2, 5, 9 and 5 of 9, whose p
    // an enumeration in exact fractions puts at 0.03616.
    p.write(
        "rageval.yaml",
        "evalsets: [evalsets/club.yaml]\ngate:\n  setting: min_score=0.2,k=4\n  max_unwanted_answer_rate: 0.9\n  trend: {runs: 4, rates: [unwanted_answer_rate]}\n",
    );
    p.sweep(PRODUCTION).arg("--gate").status(1).run();
    p.rageval(["gate"])
        .status(1)
        .stdout(concat!(
            "gate: setting min_score=0.2,k=4 of reports/latest/results.json (26 questions)\n",
            "PASS  error_runs 0 <= limit 0\n",
            "PASS  unwanted_answer_rate 0.556 <= limit 0.900\n",
            "FAIL  trend unwanted_answer_rate rising, p=0.0362 <= 0.0500 (exact Cochran-Armitage over 4 runs: lines 8-11 of `reports/history.jsonl`)\n",
            "gate: FAIL (1 of 3 checks failed)\n",
        ))
        .run();
}

#[test]
fn a_flat_rate_passes_and_a_short_history_is_not_tested() {
    let flat = [
        Some(5),
        Some(4),
        Some(6),
        Some(5),
        Some(5),
        Some(6),
        Some(4),
    ];
    let p = history_around(&flat, &[]);
    p.rageval([
        "gate",
        "-q",
        "--trend",
        "8",
        "--setting",
        "min_score=0.2,k=4",
    ])
    .run();
    let p = Project::sample();
    p.sweep(PRODUCTION)
        .args(["--gate", "--trend", "5", "--setting", "min_score=0.2,k=4"])
        .run();
    p.rageval(["gate", "--trend", "5", "--setting", "min_score=0.2,k=4", "--max-unwanted-answer-rate", "0.9"])
        .stdout(concat!(
            "gate: setting min_score=0.2,k=4 of reports/latest/results.json (26 questions)\n",
            "PASS  error_runs 0 <= limit 0\n",
            "PASS  unwanted_answer_rate 0.556 <= limit 0.900\n",
            "PASS  trend unwanted_answer_rate not tested: the test needs 2 runs, there is 1 of the 5 runs asked: line 1 of `reports/history.jsonl`\n",
            "PASS  trend false_refusal_rate not tested: the test needs 2 runs, there is 1 of the 5 runs asked: line 1 of `reports/history.jsonl`\n",
            "PASS  trend wrong_answer_rate not tested: the test needs 2 runs, there is 1 of the 5 runs asked: line 1 of `reports/history.jsonl`\n",
            "gate: PASS (5 checks)\n",
        ))
        .run();
}

#[test]
fn a_trend_window_of_one_run_and_an_empty_history_file_are_refused() {
    let p = Project::sample();
    p.rageval(["gate", "--trend", "1"])
        .fails("invalid --trend: must be from 2 to 1000 runs (0: no trend alarm), not 1")
        .run();
    p.write(
        "rageval.yaml",
        "evalsets: [evalsets/club.yaml]\ngate:\n  trend:\n    runs: 1\n",
    );
    p.rageval(["gate"])
        .fails("rageval.yaml:4: `gate.trend.runs`: must be from 2 to 1000 runs (0: no trend alarm), not 1")
        .run();
    p.write(
        "rageval.yaml",
        "evalsets: [evalsets/club.yaml]\nhistory:\n  file: ' '\n",
    );
    p.sweep(PRODUCTION)
        .fails("rageval.yaml:3: `history.file`: is empty: name a file, or set `enabled: false`")
        .absent("reports")
        .run();
}
