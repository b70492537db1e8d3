//! A newcomer's first hour (issue 12): output that fits the terminal, progress in CI logs,
//! `init`, schemas and completions, messages without serde internals, gate mistakes caught
//! before any model call.

use serde_json::Value;

use crate::harness::{write_results, Record, Test};
use crate::http::{MockLlm, KEY_ENV};
use crate::support::{repo, Project};

/// The widest line of `text`, in characters.
fn widest(text: &str) -> usize {
    text.lines().map(|l| l.chars().count()).max().unwrap_or(0)
}

/// The header line of the settings table.
fn header(text: &str) -> &str {
    text.lines()
        .find(|l| l.contains("min_score"))
        .unwrap_or_else(|| panic!("no header in {text}"))
}

#[test]
fn the_table_fits_100_columns_when_piped_and_under_columns_100() {
    let p = Project::sample();
    // Piped with no COLUMNS the table is 100 wide: the snapshot `sample_sweep`, which tests
    // of the same sweep share.
    let piped = p.sample_sweep().stdout_snapshot("sample_sweep").run();
    // Under COLUMNS=100 the output is the same.
    let text = p
        .sample_sweep()
        .env("COLUMNS", "100")
        .stdout(piped.stdout)
        .run()
        .stdout;
    assert!(widest(&text) <= 100, "{text}");
    assert_eq!(
        header(&text),
        "│ min_score ┆ k ┆ answer ┆     false ref ┆ wrong ┆ false ref % ┆  unwanted % ┆ tok/q ┆ pick        │"
    );

    // The README shows this output (rows abridged): every line it shows is printed.
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let start = readme.find("```\n┌").expect("a sample table in the README") + 4;
    let sample = &readme[start..start + readme[start..].find("```").unwrap()];
    let printed: Vec<&str> = text.lines().collect();
    for line in sample.lines().filter(|l| *l != "...") {
        assert!(printed.contains(&line), "README line not printed: {line}");
    }
}

#[test]
fn wide_shows_every_column_and_a_wide_terminal_needs_no_cuts() {
    let p = Project::sample();
    let full = "│ min_score ┆ k ┆ answer ┆     false ref ┆ early ref ┆ model ref ┆ unwanted ┆ wrong ┆ error ┆ false ref % ┆  unwanted % ┆ prompt tok/q ┆ calls ┆ pick                │";
    let table = |columns: &str, extra: &[&str]| {
        p.sample_sweep()
            .args(extra)
            .env("COLUMNS", columns)
            .stdout_snapshot(&format!(
                "sample_sweep_{columns}_columns{}",
                if extra.is_empty() { "" } else { "_wide" }
            ))
            .run()
            .stdout
    };
    let wide = table("60", &["--wide"]);
    assert_eq!(header(&wide), full);
    assert!(!wide.contains("(hidden to fit"), "{wide}");
    let roomy = table("200", &[]);
    assert_eq!(header(&roomy), full);
    assert!(!roomy.contains("(hidden to fit"), "{roomy}");
    // At 80 the counts go, but not the wrong answers, which have no rate column.
    let narrow = table("80", &[]);
    assert_eq!(
        header(&narrow),
        "│ min_score ┆ k ┆ wrong ┆ false ref % ┆  unwanted % ┆ tok/q ┆ pick        │"
    );
    assert!(widest(&narrow) <= 80, "{narrow}");
    assert!(
        narrow.contains("\n(hidden to fit the width: error, model ref, early ref, calls, unwanted, answer,\n  false ref; --wide shows every column)\n"),
        "{narrow}"
    );
}

/// The progress lines of a sweep's stderr.
fn progress_lines(err: &str) -> Vec<&str> {
    err.lines()
        .filter(|l| l.starts_with("progress: "))
        .collect()
}

#[test]
fn a_piped_stderr_gets_a_plain_progress_line_every_interval() {
    let server = MockLlm::start(&["--delay-ms", "150"]);
    let p = Project::sample();
    p.write(
        "rageval.yaml",
        &format!(
            "evalsets: [evalsets/club.yaml]\nchat:\n  kind: openai\n  base_url: {}\n  model: mock\n  api_key_env: {KEY_ENV}\n",
            server.url
        ),
    );
    // minScore 0.3, k 1: 12 distinct prompts, one at a time, 150 ms each: about 1.8 s.
    let args = [
        "sweep",
        "--min-score",
        "0.3",
        "--k",
        "1",
        "-j",
        "1",
        "--no-cache",
    ];
    let progress = |extra: &[&str]| {
        p.rageval(args)
            .args(extra)
            .env(KEY_ENV, "test-key")
            .env("RAGEVAL_PROGRESS_INTERVAL_MS", "400")
    };
    let err = progress(&[])
        .stdout_snapshot("progress_sweep")
        .stderr_any("how many calls end before each tick depends on the machine's load; the lines' shape is checked below")
        .run()
        .stderr;
    let lines = progress_lines(&err);
    assert_eq!(
        lines.len(),
        err.lines().count(),
        "only progress lines: {err}"
    );
    assert!(
        lines.len() >= 2,
        "a line every 400 ms of about 1.8 s: {err}"
    );
    let shape = regex::Regex::new(
        r"^progress: (\d+)/(12|\?) calls, \d+\.\d calls/s, eta (\d+s|\d+m\d\ds|unknown), 0 errors$",
    )
    .unwrap();
    let mut last = 0;
    for line in &lines {
        let caps = shape
            .captures(line)
            .unwrap_or_else(|| panic!("unexpected line {line:?}"));
        let done: usize = caps[1].parse().unwrap();
        assert!(done >= last && done <= 12, "{err}");
        last = done;
    }
    assert!(last > 0, "some calls were counted: {err}");

    // --quiet prints no progress.
    progress(&["-q"]).stderr("").run();
}

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
        .stdout_snapshot("first_hour__init_then_sweep_in_an_empty_folder")
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
        .stdout_snapshot("first_hour__init_over_existing_markdown_lists_its_headings")
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

/// A sweep that must fail with exactly `message` on stderr (after `error: `), status 2.
fn fails_with(p: &Project, args: &[&str], message: &str) {
    p.rageval(args).fails(message).absent("reports").run();
}

fn project_with(set: &str) -> Project {
    let p = Project::empty();
    p.write("docs/a.md", "# Fee\nThe fee is ten dollars per term.\n");
    p.write("set.yaml", set);
    p
}

#[test]
fn messages_name_the_field_the_kind_and_the_line() {
    let sweep_set = ["sweep", "--evalset", "set.yaml"];
    let p = project_with(
        "corpus: docs\nanswerable:\n  - question: What is the fee?\n    expect: {answer: 6}\n",
    );
    fails_with(
        &p,
        &sweep_set,
        "set.yaml:4:22: `answerable[0].expect.answer`: expected a string or a list of strings, found the number 6",
    );
    let p = project_with("corpus: docs\nanswerable:\n  - question: What is the fee?\n");
    p.write("rageval.yaml", "sweep: {concurrency: \"8\"}\n");
    fails_with(
        &p,
        &sweep_set,
        "rageval.yaml:1:22: `sweep.concurrency`: expected a whole number (0 or more), found the string \"8\"",
    );
    p.write("rageval.yaml", "sweep:\n  k: [1, \"2..4\"]\n");
    fails_with(
        &p,
        &sweep_set,
        "rageval.yaml:2:10: `sweep.k[1]`: expected a number, found the string \"2..4\"",
    );
    p.write("rageval.yaml", "sweep:\n\tk: 4\n");
    fails_with(
        &p,
        &sweep_set,
        "rageval.yaml:2:1: tabs are not allowed in YAML indentation: indent with spaces",
    );
    std::fs::remove_file(p.path().join("rageval.yaml")).unwrap();
    p.write(
        "set.yaml",
        "corpus: docs\nanswerable:\n  - question: What is the fee?\n\t  id: fee\n",
    );
    fails_with(
        &p,
        &sweep_set,
        "set.yaml:4:1: tabs are not allowed in YAML indentation: indent with spaces",
    );
    std::fs::write(
        p.path().join("set.yaml"),
        b"corpus: docs\nanswerable:\n  - question: caf\xe9?\n",
    )
    .unwrap();
    fails_with(
        &p,
        &sweep_set,
        "set.yaml:3:18: is not UTF-8 text: save it as UTF-8",
    );
    p.write(
        "set.yaml",
        "corpus: docs/a.md\nanswerable:\n  - question: What is the fee?\n",
    );
    fails_with(
        &p,
        &sweep_set,
        "set.yaml:1: `corpus`: `docs/a.md` is a file, not a folder: name the folder that holds the markdown documents",
    );
}

#[test]
fn sweep_in_an_empty_folder_points_at_init() {
    let p = Project::empty();
    fails_with(
        &p,
        &["sweep"],
        "no question sets: there is no rageval.yaml and no evalsets/*.yaml here; run `rageval init` to start a project, or pass `--evalset FILE`",
    );
}

#[test]
fn grammar_of_counts_and_flags() {
    let p = project_with("corpus: docs\nanswerable:\n  - question: What is the fee?\n");
    p.rageval(["validate", "set.yaml"])
        .stdout("ok    set.yaml: 1 answerable, 0 unanswerable; corpus `docs` (1 chunk)\n      at 95%, 0 unanswerable and 1 answerable questions can certify at best nothing on unwanted (no unanswerable questions) and false refusals ≤ 95% for one setting\n      plan for a chance of 80% at 95% by ordered tests (level 2.5%, for one setting), if each true rate is half its limit: unwanted 10% needs 107 unanswerable questions (this set has 0), or 17 with none answered; false refusals 25% needs 30 answerable questions (this set has 1), or 6 with none refused\n")
        .run();
    fails_with(
        &p,
        &["sweep", "--evalset", "set.yaml", "--setting", "k=1"],
        "--setting applies only with `--gate`",
    );
}

/// A sample project whose embedder and model are `server`, so its counters see every call.
fn counted(server: &MockLlm, gate: &str) -> Project {
    let p = Project::sample();
    p.write(
        "rageval.yaml",
        &format!(
            "evalsets: [evalsets/club.yaml]\nembedder:\n  kind: openai\n  base_url: {url}\n  model: hash-1024\n  api_key_env: {KEY_ENV}\nchat:\n  kind: openai\n  base_url: {url}\n  model: mock\n  api_key_env: {KEY_ENV}\n{gate}",
            url = server.url
        ),
    );
    p
}

fn no_calls(server: &MockLlm) {
    let stats = server.stats();
    assert_eq!(stats["chat_requests"].as_u64(), Some(0), "{stats}");
    assert_eq!(stats["embedding_requests"].as_u64(), Some(0), "{stats}");
}

#[test]
fn gate_inputs_are_checked_before_the_first_call() {
    let server = MockLlm::start(&[]);
    let p = counted(&server, "");
    let refused = |args: &[&str], message: &str| {
        p.sample_sweep()
            .args(args)
            .env(KEY_ENV, "test-key")
            .status(2)
            .stderr(format!("error: {message}\n"))
            .run();
    };
    refused(
        &["--gate", "--setting", "min_score=0.9,k=2"],
        "cannot gate `--setting min_score=0.9,k=2`: no setting is `min_score=0.9,k=2`; the settings are `min_score=0.1,k=1`, `min_score=0.1,k=2`, `min_score=0.1,k=4`, `min_score=0.1,k=8`, `min_score=0.2,k=1`, `min_score=0.2,k=2`, `min_score=0.2,k=4`, `min_score=0.2,k=8` and 12 more; nothing was run",
    );
    no_calls(&server);
    assert!(!p.path().join("reports").exists());

    p.write(
        "broken.json",
        "{\"schema\": \"rageval.results/1\", \"settings\": [",
    );
    refused(
        &[
            "--gate",
            "--setting",
            "min_score=0.2,k=4",
            "--baseline",
            "broken.json",
        ],
        "`broken.json` is not a rageval results file: EOF while parsing a list at line 1 column 45",
    );
    refused(
        &["--gate", "--baseline", "missing.json"],
        "baseline `missing.json` does not exist: create it on purpose with `--update-baseline`, which copies the current results",
    );
    // A baseline swept over another grid cannot be compared at the gated setting.
    let mut baseline = Record::load(&repo().join("reports/baseline.json")).unwrap();
    baseline.settings.retain(|id, _| id == "min_score=0.2,k=4");
    baseline.runs.retain(|r| r.setting == "min_score=0.2,k=4");
    write_results(&p, "small.json", &baseline);
    refused(
        &[
            "--gate",
            "--setting",
            "min_score=0.1,k=2",
            "--baseline",
            "small.json",
        ],
        "the baseline `small.json` cannot be compared at `min_score=0.1,k=2`: no setting is `min_score=0.1,k=2`; the settings are `min_score=0.2,k=4`; nothing was run",
    );
    no_calls(&server);
    assert!(!p.path().join("reports").exists());
}

#[test]
fn a_gate_without_limits_says_so() {
    let p = Test::sweep().stdout_snapshot("sample_sweep").run();
    let text = p
        .project()
        .rageval(["gate", "--setting", "min_score=0.2,k=4"])
        .stdout(concat!(
            "warning: no limits configured and no baseline: the gate checks only failed calls; set `gate.max_unwanted_answer_rate` and `gate.max_false_refusal_rate` (or pass `--max-unwanted-answer-rate` and `--max-false-refusal-rate`), see docs/ci.md\n",
            "gate: setting min_score=0.2,k=4 of reports/latest/results.json (26 questions)\n",
            "PASS  error_runs 0 <= limit 0\n",
            "gate: PASS (1 check)\n",
        ))
        .run()
        .stdout;
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("warning: no limits configured and no baseline: the gate checks only failed calls; set `gate.max_unwanted_answer_rate` and `gate.max_false_refusal_rate` (or pass `--max-unwanted-answer-rate` and `--max-false-refusal-rate`), see docs/ci.md")
    );
    assert!(text.lines().any(|l| l == "gate: PASS (1 check)"), "{text}");
}
