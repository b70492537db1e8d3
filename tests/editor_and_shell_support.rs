//! What editors and shells are given: the JSON schemas `rageval schema` prints validate the
//! sample files and reject invalid ones, and completions exist for each shell.

use serde_json::Value;

use crate::harness::Test;
use crate::support::{repo, Project};

/// The schema `rageval schema WHICH` prints, compiled.
pub fn validator(which: &str) -> jsonschema::Validator {
    let schema = Test::empty()
        .args(["schema", which])
        .stdout_any("schemars derives the schema from the config types; the tests validate files against it")
        .run()
        .stdout_json();
    jsonschema::validator_for(&schema).unwrap_or_else(|e| panic!("{which}: {e}"))
}

fn yaml_file(path: &std::path::Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

pub fn errors(v: &jsonschema::Validator, doc: &Value) -> Vec<String> {
    v.iter_errors(doc).map(|e| e.to_string()).collect()
}

#[test]
fn the_schemas_validate_the_sample_files_and_reject_invalid_ones() {
    let config = validator("config");
    for file in ["rageval.yaml", "scripts/real-model.yaml"] {
        let doc = yaml_file(&repo().join(file));
        assert_eq!(errors(&config, &doc), Vec::<String>::new(), "{file}");
    }
    let evalset = validator("evalset");
    let mut sets = 0;
    for entry in std::fs::read_dir(repo().join("evalsets")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "yaml") {
            assert_eq!(
                errors(&evalset, &yaml_file(&path)),
                Vec::<String>::new(),
                "{}",
                path.display()
            );
            sets += 1;
        }
    }
    assert!(sets >= 2, "the sample question sets were found");

    let bad_config: Value = serde_yaml::from_str("sweep: {concurrency: \"8\", kk: 1}\n").unwrap();
    assert_eq!(
        errors(&config, &bad_config).len(),
        2,
        "a string and an unknown field"
    );
    let bad_set: Value =
        serde_yaml::from_str("answerable:\n  - questoin: x\n    expect: {answer: 6}\n").unwrap();
    assert!(!evalset.is_valid(&bad_set));

    // The files init writes next to the YAML are the same schemas.
    let p = Project::empty();
    p.rageval(["init"])
        .stdout(concat!(
            "wrote rageval.yaml, evalsets/starter.yaml, docs/welcome.md, and the schemas .rageval/config.schema.json, .rageval/evalset.schema.json for editors\n",
            "next: rageval sweep\n",
            "then: write your own questions in evalsets/starter.yaml (`rageval validate` checks them)\n",
        ))
        .run();
    for (which, file) in [
        ("config", ".rageval/config.schema.json"),
        ("evalset", ".rageval/evalset.schema.json"),
    ] {
        p.rageval(["schema", which]).stdout(p.read(file)).run();
    }
    for file in ["rageval.yaml", "evalsets/starter.yaml"] {
        let v = if file == "rageval.yaml" {
            &config
        } else {
            &evalset
        };
        assert_eq!(
            errors(v, &yaml_file(&p.path().join(file))),
            Vec::<String>::new(),
            "{file}"
        );
    }
}

#[test]
fn completions_for_each_shell() {
    let p = Project::empty();
    for (shell, line) in [
        ("bash", "    complete -F _rageval -o nosort -o bashdefault -o default rageval"),
        ("zsh", "#compdef rageval"),
        (
            "fish",
            "complete -c rageval -n \"__fish_rageval_needs_command\" -f -a \"init\" -d 'Start a project here: a commented rageval.yaml and a starter question set (never overwrites)'",
        ),
        (
            "powershell",
            "Register-ArgumentCompleter -Native -CommandName 'rageval' -ScriptBlock {",
        ),
    ] {
        let text = p.rageval(["completions", shell])
            .stdout_any("clap writes the script; the test looks for the line that registers it")
            .run().stdout;
        assert!(text.lines().any(|l| l == line), "{shell}: no line {line:?}");
    }
}
