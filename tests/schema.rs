//! docs/results-schema.md is the contract of results.json: every field the writer emits is
//! documented there, and every documented field is emitted.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::support::{repo, Project};

/// Field names of the tables under each `## ` heading: the backticked names of column one.
fn documented() -> Vec<(String, BTreeSet<String>)> {
    let text = std::fs::read_to_string(repo().join("docs/results-schema.md")).unwrap();
    let mut sections: Vec<(String, BTreeSet<String>)> = Vec::new();
    for line in text.lines() {
        if let Some(h) = line.strip_prefix("## ") {
            sections.push((h.trim().to_string(), BTreeSet::new()));
        } else if let (Some(first), Some((_, fields))) =
            (line.strip_prefix("| "), sections.last_mut())
        {
            let cell = first.split(" |").next().unwrap_or("");
            for name in cell.split(',').map(str::trim) {
                if let Some(name) = name.strip_prefix('`').and_then(|n| n.strip_suffix('`')) {
                    fields.insert(name.to_string());
                }
            }
        }
    }
    sections
}

fn keys(v: &Value) -> BTreeSet<String> {
    v.as_object().unwrap().keys().cloned().collect()
}

#[test]
fn results_json_fields_match_the_documented_schema() {
    let p = Project::sample();
    // Follow-ups rewritten and injection probes, so that every optional part is present.
    p.cmd(&[
        "sweep",
        "--evalset",
        "evalsets/club.yaml",
        "--evalset",
        "evalsets/club-injection.yaml",
        "--min-score",
        "0.2",
        "--k",
        "2",
        "--rewrite",
        "none,model",
        "-q",
    ])
    .assert()
    .success();
    let v: Value = serde_json::from_str(&p.read("reports/latest/results.json")).unwrap();
    let docs = documented();
    let section = |name: &str| -> &BTreeSet<String> {
        &docs
            .iter()
            .find(|(h, _)| h == name)
            .unwrap_or_else(|| panic!("no section {name}"))
            .1
    };
    for (name, written) in [
        ("Top level", keys(&v)),
        ("`calls`", keys(&v["calls"])),
        ("`settings[]`", keys(&v["settings"][0])),
        ("`questions[]`", keys(&v["questions"][0])),
        ("`runs[]`", keys(&v["runs"][0])),
    ] {
        let documented = section(name);
        let missing: Vec<_> = written.difference(documented).collect();
        let stale: Vec<_> = documented.difference(&written).collect();
        assert!(
            missing.is_empty(),
            "{name}: written but not documented: {missing:?}"
        );
        assert!(
            stale.is_empty(),
            "{name}: documented but not written: {stale:?}"
        );
    }
}
