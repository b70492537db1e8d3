//! Input the gate cannot judge: missing files, another schema, an unknown setting, a question
//! set that changed too much. Each exits 2 with one message that says what to do.

use serde_json::Value;

use crate::gate::{edit_json, gate_now, sweep, unusable};
use crate::support::{stderr, stdout, Project};

#[test]
fn unusable_input_exits_2_with_a_clear_message() {
    let p = Project::sample();
    sweep(&p, "now");
    let gate = |args: &[&str]| {
        let mut all = vec!["gate"];
        all.extend_from_slice(args);
        p.cmd(&all).output().unwrap()
    };
    // Missing file: named, with a hint.
    unusable(
        &gate(&["nowhere/results.json", "--setting", "k=4,min_score=0.2"]),
        &[
            "results `nowhere/results.json` does not exist",
            "rageval sweep",
        ],
    );
    unusable(
        &gate(&[
            "now/results.json",
            "--setting",
            "min_score=0.2,k=4",
            "--baseline",
            "b.json",
        ]),
        &["baseline `b.json` does not exist", "--update-baseline"],
    );
    // A setting the results do not hold, and no setting at all.
    unusable(
        &gate(&["now/results.json", "--setting", "min_score=0.25,k=4"]),
        &["no setting is `min_score=0.25,k=4`", "`min_score=0.2,k=4`"],
    );
    unusable(
        &gate(&["now/results.json"]),
        &["no gated setting", "--setting min_score=0.2,k=4"],
    );
    unusable(
        &gate(&["now/results.json", "--setting", "min_score"]),
        &["invalid --setting"],
    );
    // A baseline swept over another grid cannot be compared at the gated setting.
    p.cmd(&[
        "sweep",
        "-q",
        "--min-score",
        "0.3",
        "--k",
        "4",
        "--out",
        "other",
    ])
    .assert()
    .success();
    unusable(
        &gate(&[
            "now/results.json",
            "--setting",
            "min_score=0.2,k=4",
            "--baseline",
            "other/results.json",
        ]),
        &["baseline `other/results.json` cannot be compared at `min_score=0.2,k=4`"],
    );
    // A newer version of the schema.
    edit_json(&p, "other/results.json", |d| {
        d["schema"] = "rageval.results/3".into()
    });
    unusable(
        &gate(&["other/results.json", "--setting", "min_score=0.3,k=4"]),
        &["`other/results.json` has schema `rageval.results/3`, but this rageval reads `rageval.results/2`; rerun the sweep with this version, or read it with the rageval that wrote it"],
    );
    // A baseline of the first version says how to refresh it.
    p.write("old.json", r#"{"schema": "rageval.results/1", "runs": []}"#);
    unusable(
        &gate(&["now/results.json", "--setting", "min_score=0.2,k=4", "--baseline", "old.json"]),
        &["`old.json` has schema `rageval.results/1`, written by an older rageval: rerun `rageval sweep`, and refresh a baseline with `rageval gate --update-baseline --baseline old.json`"],
    );
    p.write("broken.json", "{\"schema\": ");
    unusable(
        &gate(&["broken.json"]),
        &["`broken.json` is not a rageval results file"],
    );
}

#[test]
fn a_heavily_changed_question_set_is_not_compared() {
    let p = Project::sample();
    sweep(&p, "base");
    sweep(&p, "now");
    let drop = |p: &Project, n: usize| {
        p.write("now/results.json", &p.read("base/results.json"));
        // The first n questions in question-set order (a `Value` would sort them by id).
        #[derive(serde::Deserialize)]
        struct Ids {
            questions: indexmap::IndexMap<String, serde::de::IgnoredAny>,
        }
        let ids: Ids = serde_json::from_str(&p.read("base/results.json")).unwrap();
        let gone: Vec<Value> = ids
            .questions
            .keys()
            .take(n)
            .map(|k| k.as_str().into())
            .collect();
        edit_json(p, "now/results.json", |d| {
            let questions = d["questions"].as_object_mut().unwrap();
            questions.retain(|k, _| !gone.iter().any(|g| g == k.as_str()));
            d["runs"]
                .as_array_mut()
                .unwrap()
                .retain(|r| !gone.contains(&r["question"]));
        });
    };
    // 6 of 26 questions gone (23%): the comparison is meaningless.
    drop(&p, 6);
    let out = gate_now(&p, &[]);
    unusable(
        &out,
        &[
            "changed too much",
            "6 of its 26 questions are gone",
            "`fee-per-term`",
            "`laptop-follow-up`",
            "more than 20% missing",
        ],
    );
    // 5 gone (19%): compared on the 21 common questions, and the change is reported.
    drop(&p, 5);
    let out = gate_now(&p, &[]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    assert!(
        text.contains("baseline: base/results.json (21 questions compared)"),
        "{text}"
    );
    assert!(
        text.contains("5 removed (`fee-per-term`, `scholarship`"),
        "{text}"
    );
}
