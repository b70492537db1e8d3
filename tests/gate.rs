//! The CI gate through the real binary: the committed baseline passes, regressions exit 1
//! and name what regressed, and the policy comes from the config, the flags and the results.

use serde_json::Value;

use crate::support::{repo, stderr, stdout, Project};

/// The sample project with the repository's rageval.yaml (and its `gate:` section) and the
/// committed baseline.
fn dogfood() -> Project {
    let p = Project::sample();
    std::fs::copy(repo().join("rageval.yaml"), p.path().join("rageval.yaml")).unwrap();
    std::fs::create_dir_all(p.path().join("reports")).unwrap();
    std::fs::copy(
        repo().join("reports/baseline.json"),
        p.path().join("reports/baseline.json"),
    )
    .unwrap();
    p
}

/// Sweep the sample at the production setting only, into `out`.
pub fn sweep(p: &Project, out: &str) {
    p.cmd(&[
        "sweep",
        "-q",
        "--evalset",
        "evalsets/club.yaml",
        "--min-score",
        "0.2",
        "--k",
        "4",
        "--out",
        out,
    ])
    .assert()
    .success();
}

/// The sample's membership fee section emptied of its facts: `fee-per-term` is refused.
fn break_the_fee_section(p: &Project) {
    let path = p.path().join("evalsets/club/membership.md");
    let text = std::fs::read_to_string(&path).unwrap();
    let start = text.find("Membership costs").unwrap();
    let end = text.find("## Refunds").unwrap();
    let edited = format!(
        "{}See the notice board in room 12.\n\n{}",
        &text[..start],
        &text[end..]
    );
    std::fs::write(path, edited).unwrap();
}

/// A baseline in `base/`, then the edited corpus swept into `now/`.
pub fn regressed() -> Project {
    let p = Project::sample();
    sweep(&p, "base");
    break_the_fee_section(&p);
    sweep(&p, "now");
    p
}

/// `rageval gate` of the regressed results against the base ones at the gated setting.
pub fn gate_now_cmd(p: &Project, extra: &[&str]) -> assert_cmd::Command {
    let mut args = vec![
        "gate",
        "now/results.json",
        "--setting",
        "min_score=0.2,k=4",
        "--baseline",
        "base/results.json",
    ];
    args.extend_from_slice(extra);
    p.cmd(&args)
}

pub fn gate_now(p: &Project, extra: &[&str]) -> std::process::Output {
    gate_now_cmd(p, extra).output().unwrap()
}

/// An exit status 2 with one message holding every needle.
pub fn unusable(out: &std::process::Output, needles: &[&str]) {
    let err = stderr(out);
    assert_eq!(
        out.status.code(),
        Some(2),
        "stderr: {err}\nstdout: {}",
        stdout(out)
    );
    for n in needles {
        assert!(err.contains(n), "expected {n:?} in: {err}");
    }
    assert_eq!(err.lines().count(), 1, "one message: {err}");
    assert!(!err.contains("panicked"), "{err}");
}

pub fn edit_json(p: &Project, rel: &str, edit: impl FnOnce(&mut Value)) {
    let mut doc: Value = serde_json::from_str(&p.read(rel)).unwrap();
    edit(&mut doc);
    p.write(rel, &serde_json::to_string(&doc).unwrap());
}

#[test]
fn the_sample_passes_against_the_committed_baseline() {
    let p = dogfood();
    let out = p
        .cmd(&[
            "sweep",
            "--min-score",
            "0.1..0.5",
            "--k",
            "1,2,4,8",
            "--gate",
        ])
        .output()
        .unwrap();
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}\n{}", stderr(&out));
    // The config's gate: its setting, every absolute limit and the three baseline rates.
    assert!(text.contains("gate: setting min_score=0.2,k=4"), "{text}");
    assert!(
        text.contains("baseline: reports/baseline.json (26 questions compared)"),
        "{text}"
    );
    for line in [
        "PASS  error_runs 0 <= limit 0",
        "PASS  unwanted_answer_rate 0.556 <= limit 0.600",
        "PASS  false_refusal_rate 0.176 <= limit 0.200",
        "PASS  answer_match_rate 0.643 >= limit 0.600",
        "PASS  prompt_tokens_per_question 279.6 <= limit 300",
        "PASS  wrong_answer_rate 0.294 <= limit 0.300",
        "PASS  false_refusal_rate vs baseline 0.176 <= 0.176 + tolerance 0.000",
        // The committed baseline predates `wrong_answer`: its misses count as wrong answers.
        "PASS  wrong_answer_rate vs baseline 0.294 <= 0.294 + tolerance 0.000",
        "0 worse, 0 better, p=1.0000",
        "gate: PASS (10 checks)",
    ] {
        assert!(text.contains(line), "expected {line:?} in:\n{text}");
    }
    // Latency differs from the committed run, and must not matter; a later `rageval gate`
    // reads the same results by default and agrees.
    let out = p.cmd(&["gate"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
}

#[test]
fn an_edited_corpus_fails_and_names_the_flipped_question() {
    let p = regressed();
    let out = gate_now(&p, &[]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}\n{}", stderr(&out));
    assert!(
        text.contains("FAIL  false_refusal_rate vs baseline 0.235 > 0.176 + tolerance 0.000"),
        "{text}"
    );
    assert!(
        text.contains("flipped for the worse at min_score=0.2,k=4 (1):"),
        "{text}"
    );
    assert!(
        text.contains("  fee-per-term  answer -> false_refusal"),
        "{text}"
    );
    assert!(text.contains("1 worse, 0 better, p=1.0000"), "{text}");
    assert!(text.contains("gate: FAIL (2 of 5 checks failed)"), "{text}");

    // One flip is chance: with require_significance the baseline checks pass and say why.
    let out = gate_now(&p, &["--require-significance"]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("not significant (p=1.0000 >= alpha 0.05)"),
        "{text}"
    );
    // A tolerance of one question in seventeen (0.059) lets it pass; 0.05 does not.
    let out = gate_now(&p, &["--tolerance", "0.06"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let out = gate_now(&p, &["--tolerance", "0.05"]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
}

#[test]
fn an_absolute_limit_breach_names_the_limit_and_the_figure() {
    let p = Project::sample();
    sweep(&p, "now");
    let out = p
        .cmd(&[
            "gate",
            "now/results.json",
            "--setting",
            "min_score=0.2,k=4",
            "--max-unwanted-answer-rate",
            "0.5",
            "--max-prompt-tokens-per-question",
            "250",
        ])
        .output()
        .unwrap();
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("FAIL  unwanted_answer_rate 0.556 > limit 0.500"),
        "{text}"
    );
    assert!(
        text.contains("FAIL  prompt_tokens_per_question 279.6 > limit 250"),
        "{text}"
    );
    assert!(text.contains("PASS  error_runs 0 <= limit 0"), "{text}");
}

#[test]
fn update_baseline_writes_the_results_on_purpose_only() {
    let p = Project::sample();
    sweep(&p, "now");
    let out = p
        .cmd(&[
            "gate",
            "now/results.json",
            "--setting",
            "min_score=0.2,k=4",
            "--update-baseline",
        ])
        .output()
        .unwrap();
    unusable(&out, &["`--update-baseline` needs a baseline path"]);
    let out = p
        .cmd(&[
            "gate",
            "now/results.json",
            "--setting",
            "min_score=0.2,k=4",
            "--update-baseline",
            "--baseline",
            "ci/base.json",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("baseline: wrote ci/base.json from now/results.json"));
    assert_eq!(p.read("ci/base.json"), p.read("now/results.json"));
    // Without the flag the baseline is only read.
    break_the_fee_section(&p);
    sweep(&p, "now");
    let before = p.read("ci/base.json");
    let out = p
        .cmd(&[
            "gate",
            "now/results.json",
            "--setting",
            "min_score=0.2,k=4",
            "--baseline",
            "ci/base.json",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(p.read("ci/base.json"), before);
}

#[test]
fn sweep_gate_flags_and_config() {
    let p = Project::sample();
    // Gate flags mean nothing without --gate.
    let out = p
        .cmd(&["sweep", "--baseline", "b.json", "--junit", "j.xml"])
        .output()
        .unwrap();
    unusable(&out, &["--baseline, --junit apply only with `--gate`"]);
    assert!(!p.path().join("reports").exists(), "no sweep may run");
    // A missing baseline stops `sweep --gate` before the sweep.
    let out = p
        .cmd(&[
            "sweep",
            "--gate",
            "--setting",
            "min_score=0.2,k=4",
            "--baseline",
            "b.json",
        ])
        .output()
        .unwrap();
    unusable(&out, &["baseline `b.json` does not exist"]);
    assert!(!p.path().join("reports").exists(), "no sweep may run");
    // With --format json, stdout stays one JSON document; the summary goes to stderr.
    let out = p
        .cmd(&[
            "sweep",
            "--min-score",
            "0.2",
            "--k",
            "4",
            "--format",
            "json",
            "--gate",
            "--setting",
            "min_score=0.2,k=4",
            "--max-false-refusal-rate",
            "0.1",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("stdout is JSON");
    assert_eq!(doc["schema"], "rageval.results/2");
    assert!(stderr(&out).contains("FAIL  false_refusal_rate 0.176 > limit 0.100"));
    // The config's gate section, with a line number for a bad value.
    p.write(
        "rageval.yaml",
        "gate:\n  setting: \"min_score=0.2,k=4\"\n  alpha: 1.5\n",
    );
    let out = p.cmd(&["gate"]).output().unwrap();
    unusable(
        &out,
        &["rageval.yaml:3:", "`gate.alpha`", "between 0 and 1"],
    );
    p.write(
        "rageval.yaml",
        "gate:\n  setting: \"min_score=0.2,k=4\"\n  max_false_refusal_rate: 0.1\n",
    );
    let out = p
        .cmd(&["sweep", "-q", "--gate", "--min-score", "0.2", "--k", "4"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    // ... and flags win over it.
    let out = p
        .cmd(&["gate", "--max-false-refusal-rate", "0.2"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
}

#[test]
fn the_recommended_setting_is_gated_by_default() {
    let p = Project::sample();
    p.cmd(&[
        "sweep",
        "-q",
        "--min-score",
        "0.2,0.3",
        "--k",
        "4",
        "--out",
        "now",
    ])
    .assert()
    .success();
    let doc: Value = serde_json::from_str(&p.read("now/results.json")).unwrap();
    assert_eq!(doc["summary"]["recommended"], "min_score=0.3,k=4");
    // The summary is written for readers, never trusted: the gate recomputes the
    // recommendation from the runs and the recorded policy.
    edit_json(&p, "now/results.json", |d| {
        d["summary"]["recommended"] = "min_score=0.2,k=4".into()
    });
    let out = p.cmd(&["gate", "now/results.json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(stdout(&out).contains("gate: setting min_score=0.3,k=4 of now/results.json"));
    // An explicit setting overrides the recommendation.
    let out = p
        .cmd(&["gate", "now/results.json", "--setting", "min_score=0.2,k=4"])
        .output()
        .unwrap();
    assert!(stdout(&out).contains("gate: setting min_score=0.2,k=4"));
}

#[test]
fn the_wrong_answer_limit_passes_at_its_boundary_and_fails_past_it() {
    // Without a judge the reworded fee answer misses its expected text: 1 of 2 answerable
    // questions is answered wrongly.
    let server = crate::http::MockLlm::start(&["--paraphrase"]);
    let p = crate::grading::project(&server.url, false, crate::grading::PATTERNS);
    let out = crate::grading::sweep(&p);
    assert!(out.status.success(), "{}", stderr(&out));
    let gate = |extra: &[&str]| {
        let mut args = vec![
            "gate",
            "--setting",
            "min_score=0,k=1",
            "--junit",
            "gate.xml",
            "--markdown",
            "gate.md",
        ];
        args.extend(extra);
        let out = p.cmd(&args).output().unwrap();
        assert_eq!(stderr(&out), "");
        (out.status.code(), stdout(&out))
    };
    let report = |verdict: &str, check: &str| {
        format!(
            "gate: setting min_score=0,k=1 of reports/latest/results.json (6 questions)\n\
             PASS  error_runs 0 <= limit 0\n{check}\n{verdict}\n"
        )
    };
    assert_eq!(
        gate(&["--max-wrong-answer-rate", "0.5"]),
        (
            Some(0),
            report(
                "gate: PASS (2 checks)",
                "PASS  wrong_answer_rate 0.500 <= limit 0.500"
            )
        )
    );
    // From the config as from the flag; the flag wins.
    p.write(
        "rageval.yaml",
        &format!(
            "{}gate:\n  max_wrong_answer_rate: 0.49\n",
            p.read("rageval.yaml")
        ),
    );
    let failed = (
        Some(1),
        report(
            "gate: FAIL (1 of 2 checks failed)",
            "FAIL  wrong_answer_rate 0.500 > limit 0.490",
        ),
    );
    assert_eq!(gate(&[]), failed);
    let md = p.read("gate.md");
    assert!(
        md.lines()
            .any(|l| l == "| wrong_answer_rate | **FAIL** | 0.500 > limit 0.490 |"),
        "{md}"
    );
    assert_eq!(
        p.read("gate.xml"),
        r#"<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="rageval gate" tests="2" failures="1" errors="0">
  <testsuite name="rageval gate min_score=0,k=1" tests="2" failures="1" errors="0" skipped="0" time="0">
    <testcase classname="rageval.gate" name="error_runs at min_score=0,k=1" time="0">
      <system-out>0 &lt;= limit 0</system-out>
    </testcase>
    <testcase classname="rageval.gate" name="wrong_answer_rate at min_score=0,k=1" time="0">
      <failure message="0.500 &gt; limit 0.490" type="gate">wrong_answer_rate: 0.500 &gt; limit 0.490</failure>
    </testcase>
  </testsuite>
</testsuites>
"#
    );
    assert_eq!(gate(&["--max-wrong-answer-rate", "0.5"]).0, Some(0));

    // A judge that calls the reworded answer right leaves no wrong answer.
    let judged = crate::grading::project(&server.url, true, crate::grading::PATTERNS);
    let out = crate::grading::sweep(&judged);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = judged
        .cmd(&[
            "gate",
            "--setting",
            "min_score=0,k=1",
            "--max-wrong-answer-rate",
            "0",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(
        stdout(&out)
            .lines()
            .any(|l| l == "PASS  wrong_answer_rate 0.000 <= limit 0.000"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn a_wrong_answer_limit_outside_0_to_1_exits_2() {
    let p = Project::sample();
    p.write("rageval.yaml", "gate:\n  max_wrong_answer_rate: 1.5\n");
    let out = p.cmd(&["gate"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr(&out),
        "error: rageval.yaml:2: `gate.max_wrong_answer_rate`: must be a share from 0 to 1, not 1.5\n"
    );
    p.write("rageval.yaml", "");
    let out = p
        .cmd(&["gate", "--max-wrong-answer-rate=-0.1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr(&out),
        "error: invalid --max-wrong-answer-rate: must be a share from 0 to 1, not -0.1\n"
    );
}
