//! Input the gate cannot judge: missing files, another schema, an unknown setting, a question
//! set that changed too much. Each exits 2 with one message that says what to do.

use crate::gate::{edit_json, gate_now, sweep};
use crate::harness::{results, write_results};
use crate::support::Project;

#[test]
fn unusable_input_exits_2_with_a_clear_message() {
    let p = Project::sample();
    sweep(&p, "now");
    let unusable = |args: &[&str], message: &str| {
        p.rageval(["gate"]).args(args).fails(message).run();
    };
    // Missing file: named, with a hint.
    unusable(
        &["nowhere/results.json", "--setting", "k=4,min_score=0.2"],
        "results `nowhere/results.json` does not exist: run `rageval sweep` first, or name a results file",
    );
    unusable(
        &[
            "now/results.json",
            "--setting",
            "min_score=0.2,k=4",
            "--baseline",
            "b.json",
        ],
        "baseline `b.json` does not exist: create it on purpose with `--update-baseline`, which copies the current results",
    );
    // A setting the results do not hold, and no setting at all.
    unusable(
        &["now/results.json", "--setting", "min_score=0.25,k=4"],
        "cannot gate `now/results.json`: no setting is `min_score=0.25,k=4`; the settings are `min_score=0.2,k=4`",
    );
    unusable(
        &["now/results.json"],
        "no gated setting: `now/results.json` has no recommended setting; pass `--setting min_score=0.2,k=4` or set `gate.setting` in rageval.yaml",
    );
    unusable(
        &["now/results.json", "--setting", "min_score"],
        "invalid --setting: `min_score` is not `name=value` (write e.g. `min_score=0.3,k=4`)",
    );
    // A baseline swept over another grid cannot be compared at the gated setting.
    p.sweep(["--min-score", "0.3", "--k", "4", "--out", "other"])
        .run();
    unusable(
        &[
            "now/results.json",
            "--setting",
            "min_score=0.2,k=4",
            "--baseline",
            "other/results.json",
        ],
        "the baseline `other/results.json` cannot be compared at `min_score=0.2,k=4`: no setting is `min_score=0.2,k=4`; the settings are `min_score=0.3,k=4`",
    );
    // A newer version of the schema.
    edit_json(&p, "other/results.json", |d| {
        d["schema"] = "rageval.results/3".into()
    });
    unusable(
        &["other/results.json", "--setting", "min_score=0.3,k=4"],
        "`other/results.json` has schema `rageval.results/3`, but this rageval reads `rageval.results/2`; rerun the sweep with this version, or read it with the rageval that wrote it",
    );
    // A baseline of the first version says how to refresh it.
    p.write("old.json", r#"{"schema": "rageval.results/1", "runs": []}"#);
    unusable(
        &["now/results.json", "--setting", "min_score=0.2,k=4", "--baseline", "old.json"],
        "`old.json` has schema `rageval.results/1`, written by an older rageval: rerun `rageval sweep`, and refresh a baseline with `rageval gate --update-baseline --baseline old.json`",
    );
    p.write("broken.json", "{\"schema\": ");
    unusable(
        &["broken.json"],
        "`broken.json` is not a rageval results file: EOF while parsing a value at line 1 column 11",
    );
}

#[test]
fn a_heavily_changed_question_set_is_not_compared() {
    let p = Project::sample();
    sweep(&p, "base");
    sweep(&p, "now");
    let drop = |p: &Project, n: usize| {
        // The first n questions in question-set order.
        let mut r = results(p, "base");
        let gone: Vec<String> = r.questions.keys().take(n).cloned().collect();
        r.questions.retain(|k, _| !gone.contains(k));
        r.runs.retain(|run| !gone.contains(&run.question));
        write_results(p, "now/results.json", &r);
    };
    // 6 of 26 questions gone (23%): the comparison is meaningless.
    drop(&p, 6);
    gate_now(&p, &[])
        .fails("the question set changed too much to compare with the baseline `base/results.json`: 6 of its 26 questions are gone (removed: `fee-per-term`, `scholarship`, `laptop-loan-length`, `showcase-minutes`, `president`, `laptop-follow-up`; moved between answerable and unanswerable: none; added: none); more than 20% missing makes the comparison meaningless, so gate without a baseline or replace it on purpose with `--update-baseline`")
        .run();
    // 5 gone (19%): compared on the 21 common questions, and the change is reported.
    drop(&p, 5);
    gate_now(&p, &[])
        .stdout(concat!(
            "gate: setting min_score=0.2,k=4 of now/results.json (21 questions)\n",
            "baseline: base/results.json (21 questions compared)\n",
            "PASS  error_runs 0 <= limit 0\n",
            "PASS  unwanted_answer_rate vs baseline 0.556 <= 0.556 + tolerance 0.000\n",
            "PASS  false_refusal_rate vs baseline 0.167 <= 0.167 + tolerance 0.000\n",
            "PASS  answer_match_rate vs baseline 0.600 >= 0.600 - tolerance 0.000\n",
            "PASS  wrong_answer_rate vs baseline 0.333 <= 0.333 + tolerance 0.000\n",
            "questions since the baseline: 5 removed (`fee-per-term`, `scholarship`, `laptop-loan-length`, `showcase-minutes`, `president`); compared on the 21 in both\n",
            "paired test (exact McNemar): 0 worse, 0 better, p=1.0000 (alpha 0.05)\n",
            "gate: PASS (5 checks)\n",
        ))
        .run();
}
