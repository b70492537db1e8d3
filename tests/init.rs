//! `rageval init`: a project a newcomer can sweep at once, in an empty folder or over
//! markdown of their own, written without following a link.

use crate::support::Project;

#[test]
fn init_then_sweep_in_an_empty_folder() {
    let p = Project::empty();
    p.rageval(["init"])
        .stdout("wrote rageval.yaml, evalsets/starter.yaml, docs/welcome.md, and the schemas .rageval/config.schema.json, .rageval/evalset.schema.json for editors\nnext: rageval sweep\nthen: write your own questions in evalsets/starter.yaml (`rageval validate` checks them)\n")
        .run();
    assert_eq!(
        p.read("rageval.yaml").lines().next(),
        Some("# yaml-language-server: $schema=.rageval/config.schema.json")
    );
    assert_eq!(
        p.read("evalsets/starter.yaml").lines().next(),
        Some("# yaml-language-server: $schema=../.rageval/evalset.schema.json")
    );
    let sweep = p
        .rageval(["sweep"])
        .stdout_contains("5 questions x 20 settings = 100 runs;")
        .stdout_snapshot("init__init_then_sweep_in_an_empty_folder")
        // The starter corpus is short: no question has more than 2 passages to send.
        .stderr("warning: k 2, 4 and 8 send the same prompts for every question (no question has more passages passing minScore than 2): each group measures one setting; sweep values that differ\n")
        .run();
    assert_eq!(sweep.results().questions.len(), 5);
    // The starter set answers its own questions somewhere in the grid.
    let answered = sweep.summary()["settings"]
        .as_object()
        .unwrap()
        .values()
        .map(|s| s["answer"].as_u64().unwrap())
        .max();
    assert_eq!(answered, Some(3));
    let gate = p
        .rageval(["gate", "--setting", "min_score=0.2,k=4"])
        .stderr("")
        .stdout(concat!(
            "gate: setting min_score=0.2,k=4 of reports/latest/results.json (5 questions)\n",
            "PASS  error_runs 0 <= limit 0\n",
            "PASS  unwanted_answer_rate 0.000 <= limit 0.200\n",
            "PASS  false_refusal_rate 0.000 <= limit 0.500\n",
            "gate: PASS (3 checks)\n",
        ))
        .run();
    assert!(
        gate.stdout.lines().any(|l| l == "gate: PASS (3 checks)"),
        "{}",
        gate.stdout
    );

    // A second init overwrites nothing.
    let before = p.read("rageval.yaml");
    p.rageval(["init"])
        .status(2)
        .stderr("error: `rageval.yaml` and `evalsets/starter.yaml` already exist: `rageval init` never overwrites; edit them, or run it in an empty folder\n")
        .run();
    assert_eq!(p.read("rageval.yaml"), before);
}

/// `init` writes only regular files inside its folder: a folder on the way that links
/// elsewhere is refused before anything is written, and a link in a file's place (even a
/// dangling one) is a file that exists, never replaced.
#[cfg(unix)]
#[test]
fn init_never_writes_through_a_link() {
    use std::os::unix::fs::symlink;
    let outside = tempfile::tempdir().unwrap();
    let p = Project::empty();
    symlink(outside.path(), p.path().join("docs")).unwrap();
    p.rageval(["init"])
        .fails("`docs` is a link: `rageval init` writes only inside this folder; remove the link or run it elsewhere")
        .run();
    assert_eq!(
        std::fs::read_dir(outside.path()).unwrap().count(),
        0,
        "nothing written outside"
    );
    assert!(
        !p.path().join("rageval.yaml").exists(),
        "nothing written inside either"
    );

    let p = Project::empty();
    symlink(outside.path(), p.path().join(".rageval")).unwrap();
    p.rageval(["init"])
        .fails("`.rageval` is a link: `rageval init` writes only inside this folder; remove the link or run it elsewhere")
        .run();
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);

    let p = Project::empty();
    let target = outside.path().join("not-there.yaml");
    symlink(&target, p.path().join("rageval.yaml")).unwrap();
    p.rageval(["init"])
        .fails("`rageval.yaml` already exists: `rageval init` never overwrites; edit it, or run it in an empty folder")
        .run();
    let link = std::fs::symlink_metadata(p.path().join("rageval.yaml")).unwrap();
    assert!(link.file_type().is_symlink(), "the link is left as it was");
    assert!(!target.exists());
}

#[test]
fn init_over_existing_markdown_lists_its_headings() {
    let p = Project::empty();
    p.write(
        "docs/faq.md",
        "# Fees\nThe fee is ten dollars per term.\n\nOpening times\n---\nWe open at nine.\n",
    );
    p.rageval(["init"])
        .stdout(concat!(
            "wrote rageval.yaml, evalsets/starter.yaml, and the schemas .rageval/config.schema.json, .rageval/evalset.schema.json for editors\n",
            "next: rageval sweep\n",
            "then: write your own questions in evalsets/starter.yaml (`rageval validate` checks them)\n",
        ))
        .run();
    assert!(!p.path().join("docs/welcome.md").exists());
    let set = p.read("evalsets/starter.yaml");
    assert!(set.contains("\ncorpus: \"../docs\"\n"), "{set}");
    assert!(
        set.contains(
            "# Headings of the corpus, as `expect.sources` names them:\n#   \"faq.md#Fees\"\n#   \"faq.md#Opening times\"\nanswerable:\n"
        ),
        "{set}"
    );
    // Two short sections: no minScore of the default grid falls between the scores the hash
    // embedder gives some pairs of them, and no question has a second passage to send.
    p.rageval(["sweep"])
        .stdout_snapshot("init__init_over_existing_markdown_lists_its_headings")
        .stderr(concat!(
            "warning: min_score 0.1 and 0.2 send the same prompts for every question (no score the retriever returned lies between them); min_score 0.3, 0.4 and 0.5 send the same prompts for every question (no score the retriever returned lies between them): each group measures one setting; sweep values that differ\n",
            "warning: k 1, 2, 4 and 8 send the same prompts for every question (no question has more passages passing minScore than 1): each group measures one setting; sweep values that differ\n",
        ))
        .run();

    // Markdown at the top of the folder is the corpus when there is no docs/; --corpus names one.
    let top = Project::empty();
    top.write("guide.md", "# Install\nRun the installer.\n");
    top.rageval(["init"])
        .stdout(concat!(
            "wrote rageval.yaml, evalsets/starter.yaml, and the schemas .rageval/config.schema.json, .rageval/evalset.schema.json for editors\n",
            "next: rageval sweep\n",
            "then: write your own questions in evalsets/starter.yaml (`rageval validate` checks them)\n",
        ))
        .run();
    assert!(top
        .read("evalsets/starter.yaml")
        .contains("\ncorpus: \"..\"\n"));
    // One section: every k sends it, and minScores at or above 0.4 refuse everything.
    top.sweep::<_, &str>([]).stderr(ONE_SECTION).run();
    let named = Project::empty();
    named.write("notes/a.md", "# Fees\nTen dollars.\n");
    named.rageval(["init", "--corpus", "notes"])
        .stdout(concat!(
            "wrote rageval.yaml, evalsets/starter.yaml, and the schemas .rageval/config.schema.json, .rageval/evalset.schema.json for editors\n",
            "next: rageval sweep\n",
            "then: write your own questions in evalsets/starter.yaml (`rageval validate` checks them)\n",
        ))
        .run();
    assert!(named
        .read("evalsets/starter.yaml")
        .contains("\ncorpus: \"../notes\"\n"));
    named.sweep::<_, &str>([]).stderr(ONE_SECTION).run();
}

/// What a sweep of the default grid over a corpus of one short section warns of.
const ONE_SECTION: &str = concat!(
    "warning: min_score 0.1, 0.2 and 0.3 send the same prompts for every question (no score the retriever returned lies between them); min_score 0.4 and 0.5 refuse every question before the model (no score reaches them): each group measures one setting; sweep values that differ\n",
    "warning: k 1, 2, 4 and 8 send the same prompts for every question (no question has more passages passing minScore than 1): each group measures one setting; sweep values that differ\n",
);
