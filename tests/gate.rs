//! The CI gate through the real binary: the committed baseline passes, regressions exit 1
//! and name what regressed, and the policy comes from the config, the flags and the results.

use serde_json::Value;

use crate::harness::Test;
use crate::support::{repo, Project, PRODUCTION};

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
    p.sweep(PRODUCTION).args(["--out", out]).run();
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
pub fn gate_now<'p>(p: &'p Project, extra: &[&str]) -> Test<'p> {
    p.rageval([
        "gate",
        "now/results.json",
        "--setting",
        "min_score=0.2,k=4",
        "--baseline",
        "base/results.json",
    ])
    .args(extra)
}

/// What `gate` prints for the regressed results at min_score=0.2,k=4 against `baseline`: the
/// header, error_runs, the four baseline `checks` (one line each), the flipped question, the tag
/// that got worse and the paired test, then `gate: {verdict}`.
pub fn regressed_report(baseline: &str, checks: [&str; 4], verdict: &str) -> String {
    let mut out = format!(
        "gate: setting min_score=0.2,k=4 of now/results.json (26 questions)\n\
         baseline: {baseline} (26 questions compared)\n\
         PASS  error_runs 0 <= limit 0\n"
    );
    for check in checks {
        out += check;
        out.push('\n');
    }
    out += concat!(
        "flipped for the worse at min_score=0.2,k=4 (1):\n",
        "  fee-per-term  answer -> false_refusal\n",
        "tags whose rate got worse since the baseline (1): membership false_refusal_rate 0.333 -> 0.500\n",
        "paired test (exact McNemar): 1 worse, 0 better, p=1.0000 (alpha 0.05)\n",
    );
    out + &format!("gate: {verdict}\n")
}

/// [`regressed_report`] at tolerance 0: the false refusal and answer match rates fail.
pub fn regressed_failure(baseline: &str) -> String {
    regressed_report(
        baseline,
        [
            "PASS  unwanted_answer_rate vs baseline 0.556 <= 0.556 + tolerance 0.000",
            "FAIL  false_refusal_rate vs baseline 0.235 > 0.176 + tolerance 0.000",
            "FAIL  answer_match_rate vs baseline 0.615 < 0.643 - tolerance 0.000",
            "PASS  wrong_answer_rate vs baseline 0.294 <= 0.294 + tolerance 0.000",
        ],
        "FAIL (2 of 5 checks failed)",
    )
}

pub fn edit_json(p: &Project, rel: &str, edit: impl FnOnce(&mut Value)) {
    let mut doc: Value = serde_json::from_str(&p.read(rel)).unwrap();
    edit(&mut doc);
    p.write(rel, &serde_json::to_string(&doc).unwrap());
}

#[test]
fn the_sample_passes_against_the_committed_baseline() {
    let p = dogfood();
    let mut run = p.rageval([
        "sweep",
        "--min-score",
        "0.1..0.5",
        "--k",
        "1,2,4,8",
        "--gate",
    ]);
    // The config's gate: its setting, every absolute limit and the three baseline rates.
    for line in [
        "gate: setting min_score=0.2,k=4",
        "baseline: reports/baseline.json (26 questions compared)",
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
        run = run.stdout_contains(line);
    }
    run.stdout_snapshot("gate__the_sample_passes_against_the_committed_baseline_2")
        .run();
    // Latency differs from the committed run, and must not matter; a later `rageval gate`
    // reads the same results by default and agrees.
    p.rageval(["gate"])
        .stdout_snapshot("gate__the_sample_passes_against_the_committed_baseline")
        .run();
}

#[test]
fn an_edited_corpus_fails_and_names_the_flipped_question() {
    let p = regressed();
    gate_now(&p, &[])
        .status(1)
        .stdout(regressed_failure("base/results.json"))
        .run();

    // One flip is chance: with require_significance the baseline checks pass and say why.
    gate_now(&p, &["--require-significance"])
        .stdout(regressed_report(
            "base/results.json",
            [
                "PASS  unwanted_answer_rate vs baseline 0.556 <= 0.556 + tolerance 0.000",
                "PASS  false_refusal_rate vs baseline 0.235 > 0.176 + tolerance 0.000, not significant (p=1.0000 >= alpha 0.05)",
                "PASS  answer_match_rate vs baseline 0.615 < 0.643 - tolerance 0.000, not significant (p=1.0000 >= alpha 0.05)",
                "PASS  wrong_answer_rate vs baseline 0.294 <= 0.294 + tolerance 0.000",
            ],
            "PASS (5 checks)",
        ))
        .run();
    // A tolerance of one question in seventeen (0.059) lets it pass; 0.05 does not.
    gate_now(&p, &["--tolerance", "0.06"])
        .stdout(regressed_report(
            "base/results.json",
            [
                "PASS  unwanted_answer_rate vs baseline 0.556 <= 0.556 + tolerance 0.060",
                "PASS  false_refusal_rate vs baseline 0.235 <= 0.176 + tolerance 0.060",
                "PASS  answer_match_rate vs baseline 0.615 >= 0.643 - tolerance 0.060",
                "PASS  wrong_answer_rate vs baseline 0.294 <= 0.294 + tolerance 0.060",
            ],
            "PASS (5 checks)",
        ))
        .run();
    gate_now(&p, &["--tolerance", "0.05"])
        .status(1)
        .stdout(regressed_report(
            "base/results.json",
            [
                "PASS  unwanted_answer_rate vs baseline 0.556 <= 0.556 + tolerance 0.050",
                "FAIL  false_refusal_rate vs baseline 0.235 > 0.176 + tolerance 0.050",
                "PASS  answer_match_rate vs baseline 0.615 >= 0.643 - tolerance 0.050",
                "PASS  wrong_answer_rate vs baseline 0.294 <= 0.294 + tolerance 0.050",
            ],
            "FAIL (1 of 5 checks failed)",
        ))
        .run();
}

#[test]
fn an_absolute_limit_breach_names_the_limit_and_the_figure() {
    let p = Project::sample();
    sweep(&p, "now");
    p.rageval([
        "gate",
        "now/results.json",
        "--setting",
        "min_score=0.2,k=4",
        "--max-unwanted-answer-rate",
        "0.5",
        "--max-prompt-tokens-per-question",
        "250",
    ])
    .status(1)
    .stdout(concat!(
        "gate: setting min_score=0.2,k=4 of now/results.json (26 questions)\n",
        "PASS  error_runs 0 <= limit 0\n",
        "FAIL  unwanted_answer_rate 0.556 > limit 0.500\n",
        "FAIL  prompt_tokens_per_question 279.6 > limit 250\n",
        "gate: FAIL (2 of 3 checks failed)\n",
    ))
    .run();
}

#[test]
fn update_baseline_writes_the_results_on_purpose_only() {
    let p = Project::sample();
    sweep(&p, "now");
    let gate = |extra: &[&str]| {
        p.rageval(["gate", "now/results.json", "--setting", "min_score=0.2,k=4"])
            .args(extra)
    };
    gate(&["--update-baseline"])
        .fails("`--update-baseline` needs a baseline path: pass `--baseline FILE` or set `gate.baseline` in rageval.yaml")
        .run();
    gate(&["--update-baseline", "--baseline", "ci/base.json"])
        .stdout(concat!(
            "baseline: wrote ci/base.json from now/results.json (not compared)\n",
            "gate: setting min_score=0.2,k=4 of now/results.json (26 questions)\n",
            "PASS  error_runs 0 <= limit 0\n",
            "gate: PASS (1 check)\n",
        ))
        .run();
    assert_eq!(p.read("ci/base.json"), p.read("now/results.json"));
    // Without the flag the baseline is only read.
    break_the_fee_section(&p);
    sweep(&p, "now");
    let before = p.read("ci/base.json");
    gate(&["--baseline", "ci/base.json"])
        .status(1)
        .stdout(regressed_failure("ci/base.json"))
        .run();
    assert_eq!(p.read("ci/base.json"), before);
}

#[test]
fn sweep_gate_flags_and_config() {
    let p = Project::sample();
    // Gate flags mean nothing without --gate.
    p.rageval(["sweep", "--baseline", "b.json", "--junit", "j.xml"])
        .fails("--baseline, --junit apply only with `--gate`")
        .run();
    assert!(!p.path().join("reports").exists(), "no sweep may run");
    // A missing baseline stops `sweep --gate` before the sweep.
    p.rageval([
        "sweep",
        "--gate",
        "--setting",
        "min_score=0.2,k=4",
        "--baseline",
        "b.json",
    ])
    .fails("baseline `b.json` does not exist: create it on purpose with `--update-baseline`, which copies the current results")
    .run();
    assert!(!p.path().join("reports").exists(), "no sweep may run");
    // With --output json, stdout stays one JSON document; the summary goes to stderr.
    let out = p
        .rageval([
            "sweep",
            "--min-score",
            "0.2",
            "--k",
            "4",
            "--output",
            "json",
            "--gate",
            "--setting",
            "min_score=0.2,k=4",
            "--max-false-refusal-rate",
            "0.1",
        ])
        .status(1)
        .stdout_any("results.json itself, compared with the file below")
        .stderr(concat!(
            "gate: setting min_score=0.2,k=4 of reports/latest/results.json (26 questions)\n",
            "PASS  error_runs 0 <= limit 0\n",
            "FAIL  false_refusal_rate 0.176 > limit 0.100\n",
            "gate: FAIL (1 of 2 checks failed)\n",
        ))
        .run();
    assert_eq!(out.stdout, out.read("reports/latest/results.json"));
    assert_eq!(out.stdout_json()["schema"], "rageval.results/2");
    // The config's gate section, with a line number for a bad value.
    p.rageval(["gate"])
        .write(
            "rageval.yaml",
            "gate:\n  setting: \"min_score=0.2,k=4\"\n  alpha: 1.5\n",
        )
        .fails("rageval.yaml:3: `gate.alpha`: must be between 0 and 1 (exclusive), not 1.5")
        .run();
    p.sweep(["--gate", "--min-score", "0.2", "--k", "4"])
        .write(
            "rageval.yaml",
            "gate:\n  setting: \"min_score=0.2,k=4\"\n  max_false_refusal_rate: 0.1\n",
        )
        .status(1)
        .run();
    // ... and flags win over it.
    p.rageval(["gate", "--max-false-refusal-rate", "0.2"])
        .stdout(concat!(
            "gate: setting min_score=0.2,k=4 of reports/latest/results.json (33 questions)\n",
            "PASS  error_runs 0 <= limit 0\n",
            "PASS  false_refusal_rate 0.136 <= limit 0.200\n",
            "gate: PASS (2 checks)\n",
        ))
        .run();
}

#[test]
fn the_recommended_setting_is_gated_by_default() {
    let p = Project::sample();
    let out = p
        .sweep(["--min-score", "0.2,0.3", "--k", "4", "--out", "now"])
        .run();
    assert_eq!(out.summary()["recommended"], "min_score=0.3,k=4");
    // The summary is written for readers, never trusted: the gate recomputes the
    // recommendation from the runs and the recorded policy.
    edit_json(&p, "now/results.json", |d| {
        d["summary"]["recommended"] = "min_score=0.2,k=4".into()
    });
    p.rageval(["gate", "now/results.json"])
        .stdout(concat!(
            "warning: no limits configured and no baseline: the gate checks only failed calls; set `gate.max_unwanted_answer_rate` and `gate.max_false_refusal_rate` (or pass `--max-unwanted-answer-rate` and `--max-false-refusal-rate`), see docs/ci.md\n",
            "gate: setting min_score=0.3,k=4 of now/results.json (26 questions)\n",
            "PASS  error_runs 0 <= limit 0\n",
            "gate: PASS (1 check)\n",
        ))
        .run();
    // An explicit setting overrides the recommendation.
    p.rageval(["gate", "now/results.json", "--setting", "min_score=0.2,k=4"])
        .stdout(concat!(
            "warning: no limits configured and no baseline: the gate checks only failed calls; set `gate.max_unwanted_answer_rate` and `gate.max_false_refusal_rate` (or pass `--max-unwanted-answer-rate` and `--max-false-refusal-rate`), see docs/ci.md\n",
            "gate: setting min_score=0.2,k=4 of now/results.json (26 questions)\n",
            "PASS  error_runs 0 <= limit 0\n",
            "gate: PASS (1 check)\n",
        ))
        .run();
}

#[test]
fn the_wrong_answer_limit_passes_at_its_boundary_and_fails_past_it() {
    // Without a judge a fee answer that misses its expected text (the reply says ten US
    // dollars): 1 of 2 answerable questions is answered wrongly.
    let server = crate::http::MockLlm::start(&["--paraphrase"]);
    let p = crate::grading::project(&server.url, false, crate::grading::PATTERNS);
    p.write(
        "set.yaml",
        &crate::grading::SET.replace("10 US dollars", "10 euros"),
    );
    crate::grading::sweep(&p).run();
    let gate = |extra: &[&str], status: i32, check: &str, verdict: &str| {
        p.rageval([
            "gate",
            "--setting",
            "min_score=0,k=1",
            "--junit",
            "gate.xml",
            "--markdown",
            "gate.md",
        ])
        .args(extra)
        .status(status)
        .stdout(format!(
            "gate: setting min_score=0,k=1 of reports/latest/results.json (6 questions)\n\
             PASS  error_runs 0 <= limit 0\n{check}\n{verdict}\n"
        ))
        .stderr("")
        .run();
    };
    let passed = [
        "PASS  wrong_answer_rate 0.500 <= limit 0.500",
        "gate: PASS (2 checks)",
    ];
    gate(&["--max-wrong-answer-rate", "0.5"], 0, passed[0], passed[1]);
    // From the config as from the flag; the flag wins.
    p.write(
        "rageval.yaml",
        &format!(
            "{}gate:\n  max_wrong_answer_rate: 0.49\n",
            p.read("rageval.yaml")
        ),
    );
    gate(
        &[],
        1,
        "FAIL  wrong_answer_rate 0.500 > limit 0.490",
        "gate: FAIL (1 of 2 checks failed)",
    );
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
    gate(&["--max-wrong-answer-rate", "0.5"], 0, passed[0], passed[1]);

    // With the expected text the reworded answer holds, the judge leaves no wrong answer.
    let judged = crate::grading::project(&server.url, true, crate::grading::PATTERNS);
    crate::grading::sweep(&judged).run();
    let out = judged
        .rageval([
            "gate",
            "--setting",
            "min_score=0,k=1",
            "--max-wrong-answer-rate",
            "0",
        ])
        .stdout(concat!(
            "gate: setting min_score=0,k=1 of reports/latest/results.json (6 questions)\n",
            "PASS  error_runs 0 <= limit 0\n",
            "PASS  wrong_answer_rate 0.000 <= limit 0.000\n",
            "gate: PASS (2 checks)\n",
        ))
        .run();
    assert!(
        out.stdout
            .lines()
            .any(|l| l == "PASS  wrong_answer_rate 0.000 <= limit 0.000"),
        "{}",
        out.stdout
    );
}

#[test]
fn a_wrong_answer_limit_outside_0_to_1_exits_2() {
    let p = Project::sample();
    p.rageval(["gate"])
        .write("rageval.yaml", "gate:\n  max_wrong_answer_rate: 1.5\n")
        .status(2)
        .stderr(
            "error: rageval.yaml:2: `gate.max_wrong_answer_rate`: must be a share from 0 to 1, not 1.5\n",
        )
        .run();
    p.rageval(["gate", "--max-wrong-answer-rate=-0.1"])
        .write("rageval.yaml", "")
        .status(2)
        .stderr("error: invalid --max-wrong-answer-rate: must be a share from 0 to 1, not -0.1\n")
        .run();
}
