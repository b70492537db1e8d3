//! docs/results-schema.md is the contract of results.json: every field the writer emits is
//! documented there, every documented field is emitted (or documented as omitted when empty),
//! and real output validates against the committed JSON Schema, docs/results.schema.json.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::support::{repo, Project};

/// Field names of the tables under each `## ` heading: the backticked names of column one, and
/// apart those whose meaning says they may be omitted.
fn documented() -> Vec<(String, BTreeSet<String>, BTreeSet<String>)> {
    let text = std::fs::read_to_string(repo().join("docs/results-schema.md")).unwrap();
    let mut sections: Vec<(String, BTreeSet<String>, BTreeSet<String>)> = Vec::new();
    for line in text.lines() {
        if let Some(h) = line.strip_prefix("## ") {
            sections.push((h.trim().to_string(), BTreeSet::new(), BTreeSet::new()));
        } else if let (Some(first), Some((_, fields, optional))) =
            (line.strip_prefix("| "), sections.last_mut())
        {
            let cell = first.split(" |").next().unwrap_or("");
            for name in cell.split(',').map(str::trim) {
                if let Some(name) = name.strip_prefix('`').and_then(|n| n.strip_suffix('`')) {
                    fields.insert(name.to_string());
                    if line.contains("omitted") {
                        optional.insert(name.to_string());
                    }
                }
            }
        }
    }
    sections
}

/// The keys of every object in `values`, together.
fn keys<'a>(values: impl IntoIterator<Item = &'a Value>) -> BTreeSet<String> {
    values
        .into_iter()
        .flat_map(|v| v.as_object().unwrap().keys().cloned())
        .collect()
}

fn values(v: &Value) -> Vec<&Value> {
    match v {
        Value::Object(m) => m.values().collect(),
        Value::Array(a) => a.iter().collect(),
        _ => panic!("not a collection: {v}"),
    }
}

/// The sample, follow-ups rewritten, injection probes, two chat profiles, two embedders and
/// two chunk sizes, so that most optional parts appear.
fn full_sweep() -> Project {
    let p = Project::sample();
    p.write(
        "rageval.yaml",
        "evalsets: [evalsets/club.yaml]\nmodels:\n  alt:\n    kind: mock\nembedders:\n  small:\n    kind: hash\n    dimensions: 64\n",
    );
    p.sweep([
        "--chat",
        "default,alt",
        "--temperature",
        "0",
        "--embedder",
        "default,small",
        "--chunk-tokens",
        "16,256",
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
    ])
    .run();
    p
}

#[test]
fn results_json_fields_match_the_documented_schema() {
    let p = full_sweep();
    let v: Value = serde_json::from_str(&p.read("reports/latest/results.json")).unwrap();
    let docs = documented();
    let section = |name: &str| {
        docs.iter()
            .find(|(h, _, _)| h == name)
            .map(|(_, f, o)| (f, o))
            .unwrap_or_else(|| panic!("no section {name}"))
    };
    let chunks: Vec<&Value> = values(&v["corpora"])
        .into_iter()
        .flat_map(|c| values(&c["chunks"]))
        .collect();
    for (name, written) in [
        ("Top level", keys([&v])),
        ("`identity`", keys([&v["identity"]])),
        ("`corpora`", keys(chunks)),
        ("`questions`", keys(values(&v["questions"]))),
        ("`settings`", keys(values(&v["settings"]))),
        ("`calls`", keys(values(&v["calls"]))),
        ("`runs[]`", keys(values(&v["runs"]))),
        ("`summary`", keys([&v["summary"]])),
        ("`summary.calls`", keys([&v["summary"]["calls"]])),
        (
            "`summary.settings`",
            keys(values(&v["summary"]["settings"])),
        ),
    ] {
        let (documented, optional) = section(name);
        let missing: Vec<_> = written.difference(documented).collect();
        let stale: Vec<_> = documented
            .difference(&written)
            .filter(|f| !optional.contains(*f))
            .collect();
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

#[test]
fn results_json_validates_against_the_committed_schema() {
    let p = full_sweep();
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("docs/results.schema.json")).unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).expect("a valid JSON Schema");
    let doc: Value = serde_json::from_str(&p.read("reports/latest/results.json")).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&doc)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    assert_eq!(errors, Vec::<String>::new());
    // The schema is strict enough to catch a wrong type.
    let mut bad = doc.clone();
    bad["runs"][0]["outcome"] = "maybe".into();
    assert!(!validator.is_valid(&bad));
    let mut bad = doc;
    bad["questions"]["fee-per-term"]["answerable"] = "yes".into();
    assert!(!validator.is_valid(&bad));
}
