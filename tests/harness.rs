//! One way to run the binary in a test, in the style of the `just` project's tests/test.rs:
//! build a [`Test`] (arguments, files, environment), state what the run must give
//! (status, stdout, stderr, files it writes), and [`Test::run`] runs `rageval` once, compares
//! them together and panics with one message that shows all of them, with a line diff where a
//! text differs.
//!
//! Everything is compared by default: a run must exit 0 and leave stdout and stderr empty
//! unless the test states otherwise. A test that does not care about a stream says so by name
//! and says why (`.stderr_any("progress lines depend on timing")`); `_contains` and `_lacks`
//! then check parts of it. Texts are compared after [`normalise`] replaces what differs from
//! run to run (the project's temporary path, loopback ports, durations), in the expected text
//! and the actual one alike.
//!
//! This file is the only one that names `rageval::` paths: the tests take the library's types
//! from here, so a module that moves is one edit.

use std::fmt::Write as _;
use std::path::Path;

use crate::support::{Project, SAMPLE_SWEEP};

pub use rageval::adapters::chat::Usage;
pub use rageval::adapters::classify::Outcome;
pub use rageval::adapters::corpus::Corpus;
pub use rageval::adapters::embed::{hash::DEFAULT_DIMENSIONS, Embedder, HashEmbedder};
pub use rageval::adapters::search::Index;
pub use rageval::output::record::{CallRole, Record, RunRecord};

/// The project a test runs in: its own, or one a test shares between runs.
enum Place<'p> {
    Owned(Project),
    Shared(&'p Project),
}

impl Place<'_> {
    fn project(&self) -> &Project {
        match self {
            Place::Owned(p) => p,
            Place::Shared(p) => p,
        }
    }
}

/// What one stream must be: exactly a text (empty unless told), or, where the test says why
/// the whole does not matter, holding and lacking some texts.
#[derive(Default)]
struct Expect {
    exact: Option<String>,
    /// Why the test does not compare the whole stream (`None`: it does).
    any: Option<String>,
    /// The insta snapshot the whole stream is compared with, instead of `exact`.
    snapshot: Option<String>,
    contains: Vec<String>,
    lacks: Vec<String>,
    lines: Option<usize>,
}

impl Expect {
    /// What is wrong with `raw`, if anything, one line a problem (a diff for an exact text).
    /// The exact text is compared normalised; a needle is found in the raw text or in the
    /// normalised one, and one that must lack is looked for in the raw text.
    fn problems(&self, raw: &str, norm: &dyn Fn(&str) -> String) -> String {
        let actual = &norm(raw);
        let mut out = String::new();
        match (&self.exact, &self.any) {
            (Some(want), _) => {
                let want = norm(want);
                if &want != actual {
                    out.push_str("  differs (- expected, + actual):\n");
                    out.push_str(&diff(&want, actual));
                }
            }
            (None, None) if self.snapshot.is_none() && !actual.is_empty() => {
                out.push_str(
                    "  must be empty: the test states no text for it (state it, or opt out with \
                     a reason)\n",
                );
            }
            (None, _) => {}
        }
        for n in &self.contains {
            if !raw.contains(n.as_str()) && !actual.contains(norm(n).as_str()) {
                let _ = writeln!(out, "  does not contain {n:?}");
            }
        }
        for n in &self.lacks {
            if raw.contains(n.as_str()) {
                let _ = writeln!(out, "  contains {n:?}, which it must not");
            }
        }
        if let Some(n) = self.lines {
            let got = actual.lines().count();
            if got != n {
                let _ = writeln!(out, "  has {got} line(s), not {n}");
            }
        }
        out
    }
}

/// One run of `rageval` and what it must give. Unless told otherwise it must exit 0 with
/// stdout and stderr empty; a test opts out of a stream by name, with a reason
/// ([`Test::stdout_any`], [`Test::stderr_any`]).
#[must_use = "a test does nothing until `.run()`"]
pub struct Test<'p> {
    place: Place<'p>,
    args: Vec<String>,
    env: Vec<(String, Option<String>)>,
    status: Option<i32>,
    stdout: Expect,
    stderr: Expect,
    absent: Vec<String>,
    files: Vec<(String, String)>,
    /// Files compared with insta snapshots: (path in the project, snapshot name).
    file_snapshots: Vec<(String, String)>,
}

impl Test<'static> {
    /// A run in a fresh copy of the sample project.
    pub fn new() -> Self {
        Test::owned(Project::sample())
    }

    /// A run in a fresh empty folder.
    pub fn empty() -> Self {
        Test::owned(Project::empty())
    }

    /// The README's sample sweep (20 settings, with its table) in a fresh sample project.
    pub fn sweep() -> Self {
        Test::new().args(SAMPLE_SWEEP)
    }

    fn owned(p: Project) -> Self {
        Test::with(Place::Owned(p))
    }
}

impl<'p> Test<'p> {
    /// A run in `p`, which later runs of the test share.
    pub fn at(p: &'p Project) -> Self {
        Test::with(Place::Shared(p))
    }

    fn with(place: Place<'p>) -> Self {
        Test {
            place,
            args: Vec::new(),
            env: Vec::new(),
            status: Some(0),
            stdout: Expect::default(),
            stderr: Expect::default(),
            absent: Vec::new(),
            files: Vec::new(),
            file_snapshots: Vec::new(),
        }
    }

    pub fn arg(mut self, arg: impl Into<String>) -> Self {
        self.args.push(arg.into());
        self
    }

    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_string()));
        self
    }

    /// Write `text` to `rel` in the project now.
    pub fn write(self, rel: &str, text: &str) -> Self {
        self.place.project().write(rel, text);
        self
    }

    pub fn env(mut self, key: &str, value: impl AsRef<str>) -> Self {
        self.env
            .push((key.to_string(), Some(value.as_ref().to_string())));
        self
    }

    pub fn env_remove(mut self, key: &str) -> Self {
        self.env.push((key.to_string(), None));
        self
    }

    /// The exit status the run must have (0 unless told).
    pub fn status(mut self, code: i32) -> Self {
        self.status = Some(code);
        self
    }

    /// Any exit status will do (the test looks at the streams or files only).
    pub fn any_status(mut self) -> Self {
        self.status = None;
        self
    }

    pub fn stdout(mut self, text: impl Into<String>) -> Self {
        self.stdout.exact = Some(text.into());
        self
    }

    pub fn stderr(mut self, text: impl Into<String>) -> Self {
        self.stderr.exact = Some(text.into());
        self
    }

    /// Any stdout will do: the test does not compare it whole, because `why` (say it: a
    /// reason a reader can check, such as "the table is snapshotted below"). `_contains` and
    /// `_lacks` still check parts of it.
    pub fn stdout_any(mut self, why: &str) -> Self {
        self.stdout.any = Some(why.to_string());
        self
    }

    /// Any stderr will do, because `why` (see [`Test::stdout_any`]).
    pub fn stderr_any(mut self, why: &str) -> Self {
        self.stderr.any = Some(why.to_string());
        self
    }

    /// `rel` (in the project) must hold exactly `text` after the run (both normalised).
    pub fn file(mut self, rel: &str, text: impl Into<String>) -> Self {
        self.files.push((rel.to_string(), text.into()));
        self
    }

    /// stdout, normalised, must equal the snapshot `tests/snapshots/NAME.snap` (for a text
    /// that is a contract and too long to read inline: a table, a report). Tests that print
    /// the same text share the name.
    pub fn stdout_snapshot(mut self, name: &str) -> Self {
        self.stdout.snapshot = Some(name.to_string());
        self
    }

    /// stderr, normalised, must equal the snapshot `tests/snapshots/NAME.snap`.
    pub fn stderr_snapshot(mut self, name: &str) -> Self {
        self.stderr.snapshot = Some(name.to_string());
        self
    }

    /// `rel` (in the project), normalised, must equal the snapshot `tests/snapshots/NAME.snap`
    /// after the run.
    pub fn file_snapshot(mut self, rel: &str, name: &str) -> Self {
        self.file_snapshots
            .push((rel.to_string(), name.to_string()));
        self
    }

    pub fn stdout_contains(mut self, text: impl Into<String>) -> Self {
        self.stdout.contains.push(text.into());
        self
    }

    pub fn stderr_contains(mut self, text: impl Into<String>) -> Self {
        self.stderr.contains.push(text.into());
        self
    }

    pub fn stdout_lacks(mut self, text: impl Into<String>) -> Self {
        self.stdout.lacks.push(text.into());
        self
    }

    pub fn stderr_lacks(mut self, text: impl Into<String>) -> Self {
        self.stderr.lacks.push(text.into());
        self
    }

    pub fn stderr_lines(mut self, n: usize) -> Self {
        self.stderr.lines = Some(n);
        self
    }

    /// A refusal: exit status 2 and exactly `error: LINE` on stderr.
    pub fn fails(self, line: &str) -> Self {
        self.status(2).stderr(format!("error: {line}\n"))
    }

    /// `rel` must not exist in the project after the run (a report that must not be written).
    pub fn absent(mut self, rel: &str) -> Self {
        self.absent.push(rel.to_string());
        self
    }

    /// Input that cannot be used: exit status 2, nothing on stdout and one line on stderr that
    /// holds every needle and no panic.
    pub fn unusable(mut self, needles: &[&str]) -> Self {
        self.status = Some(2);
        self.stderr.any = Some("the refusal is checked by its parts: one line, these words".into());
        self.stderr
            .contains
            .extend(needles.iter().map(|n| n.to_string()));
        self.stderr_lines(1).stderr_lacks("panicked")
    }

    /// Run `rageval` once and check the status and both streams together.
    #[track_caller]
    pub fn run(self) -> Output<'p> {
        let root = self.place.project().path().to_path_buf();
        let mut cmd = self.place.project().cmd();
        cmd.args(&self.args);
        for (k, v) in &self.env {
            match v {
                Some(v) => cmd.env(k, v),
                None => cmd.env_remove(k),
            };
        }
        let out = cmd.output().expect("run rageval");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let status = out.status.code();

        let norm = |text: &str| normalise(text, &root);
        let project = self.place.project();
        let mut problems = String::new();
        if let Some(want) = self.status.filter(|&want| status != Some(want)) {
            let _ = writeln!(problems, "status: expected {want}, got {status:?}");
        }
        for (name, expect, actual) in [
            ("stdout", &self.stdout, &stdout),
            ("stderr", &self.stderr, &stderr),
        ] {
            let p = expect.problems(actual, &norm);
            if !p.is_empty() {
                let _ = write!(problems, "{name}:\n{p}");
            }
        }
        for rel in &self.absent {
            if project.path().join(rel).exists() {
                let _ = writeln!(problems, "`{rel}` exists, which the run must not write");
            }
        }
        for (rel, want) in &self.files {
            let expect = Expect {
                exact: Some(want.clone()),
                ..Expect::default()
            };
            let p = match std::fs::read_to_string(project.path().join(rel)) {
                Ok(got) => expect.problems(&got, &norm),
                Err(e) => format!("  cannot be read: {e}\n"),
            };
            if !p.is_empty() {
                let _ = write!(problems, "`{rel}`:\n{p}");
            }
        }
        if !problems.is_empty() {
            panic!(
                "`rageval {}` in {}:\n{problems}--- status: {status:?}\n--- stdout:\n{stdout}--- stderr:\n{stderr}---",
                self.args.join(" "),
                project.path().display(),
            );
        }
        let mut snapshots = Vec::new();
        for (expect, actual) in [(&self.stdout, &stdout), (&self.stderr, &stderr)] {
            if let Some(name) = &expect.snapshot {
                snapshots.push((name.clone(), norm(actual)));
            }
        }
        for (rel, name) in &self.file_snapshots {
            let text = std::fs::read_to_string(project.path().join(rel))
                .unwrap_or_else(|e| panic!("`{rel}` cannot be read for snapshot `{name}`: {e}"));
            snapshots.push((name.clone(), norm(&text)));
        }
        for (name, text) in snapshots {
            assert_snapshot(&name, &text);
        }
        let out_dir = self
            .args
            .iter()
            .position(|a| a == "--out")
            .and_then(|i| self.args.get(i + 1))
            .cloned()
            .unwrap_or_else(|| "reports/latest".to_string());
        Output {
            place: self.place,
            stdout,
            stderr,
            status,
            out_dir,
        }
    }
}

/// What a run gave, with the project it ran in.
pub struct Output<'p> {
    place: Place<'p>,
    pub stdout: String,
    pub stderr: String,
    pub status: Option<i32>,
    out_dir: String,
}

impl<'p> Output<'p> {
    pub fn project(&self) -> &Project {
        self.place.project()
    }

    pub fn path(&self) -> &Path {
        self.project().path()
    }

    pub fn read(&self, rel: &str) -> String {
        self.project().read(rel)
    }

    /// stdout as one JSON document.
    pub fn stdout_json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}):\n{}", self.stdout))
    }

    /// The run's results.json as the typed record (checked as every reader checks it).
    pub fn results(&self) -> Record {
        results(self.project(), &self.out_dir)
    }

    /// The `summary` of the run's results.json as written. The record does not read it back
    /// (a reader recomputes it), so it stays untyped.
    pub fn summary(&self) -> serde_json::Value {
        summary(self.project(), &self.out_dir)
    }
}

/// `<dir>/results.json` of `p` as the typed record.
pub fn results(p: &Project, dir: &str) -> Record {
    let path = p.path().join(dir).join("results.json");
    Record::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

/// Write `record` to `rel` in `p` as a sweep writes results.json, but without a summary
/// (readers recompute it).
pub fn write_results(p: &Project, rel: &str, record: &Record) {
    let mut text = Vec::new();
    record.write(&mut text).unwrap();
    p.write(rel, &String::from_utf8(text).unwrap());
}

/// The `summary` of `<dir>/results.json` of `p` as written (see [`Output::summary`]).
pub fn summary(p: &Project, dir: &str) -> serde_json::Value {
    let text = p.read(&format!("{dir}/results.json"));
    let mut doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    doc["summary"].take()
}

impl Project {
    /// `rageval ARGS` in this project, as a [`Test`].
    pub fn rageval<I, S>(&self, args: I) -> Test<'_>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        Test::at(self).args(args)
    }

    /// The README's sample sweep (20 settings, with its table) in this project.
    pub fn sample_sweep(&self) -> Test<'_> {
        self.rageval(SAMPLE_SWEEP)
    }

    /// `rageval sweep --quiet ARGS` in this project.
    pub fn sweep<I, S>(&self, args: I) -> Test<'_>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        self.rageval(["sweep", "--quiet"]).args(args)
    }

    /// For each `(section, line)`: with `config` holding `head` then `section`, `rageval ARGS`
    /// exits 2 with exactly `error: LINE` on stderr and leaves `out` unwritten.
    pub fn refuses_each_section(
        &self,
        config: &str,
        head: &str,
        args: &[&str],
        out: &str,
        cases: &[(&str, impl AsRef<str>)],
    ) {
        for (section, line) in cases {
            self.write(config, &format!("{head}{section}"));
            self.rageval(args).fails(line.as_ref()).absent(out).run();
        }
    }
}

/// The snapshot of the sample sweep's table, which every run of the sample sweep prints: the
/// one snapshot that tests of several files compare with (it belongs to the test it names).
pub const SAMPLE_SWEEP_TABLE: &str =
    "sweep__sample_sweep_prints_twenty_settings_and_writes_three_files";

/// Compare `text` with the insta snapshot `tests/snapshots/NAME.snap`; insta shows the diff
/// and writes `NAME.snap.new`. NAME is `FILE__TEST[_N]`: the test file (its module, no
/// `cli__`), the test that pins it, and from the second snapshot of one test on, its number.
/// The stream and file snapshots of [`Test`] come here; a test that pins a text it builds
/// itself calls this.
#[track_caller]
pub fn assert_snapshot(name: &str, text: &str) {
    if let Err(why) = snapshot_name_problem(name) {
        panic!("snapshot `{name}`: {why}");
    }
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path("snapshots");
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    settings.bind(|| insta::assert_snapshot!(name, text));
}

/// Why `name` is no snapshot name of the form [`assert_snapshot`] asks for, if it is not.
fn snapshot_name_problem(name: &str) -> Result<(), String> {
    let Some((file, test)) = name.split_once("__") else {
        return Err("a snapshot is named FILE__TEST[_N] (no `__` here)".into());
    };
    let word = |w: &str| {
        !w.is_empty()
            && w.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    };
    if !word(file) || !word(test) || test.contains("__") {
        return Err("a snapshot is named FILE__TEST[_N] in lower case, digits and `_`".into());
    }
    let source = crate::support::repo().join(format!("tests/{file}.rs"));
    if !source.is_file() {
        return Err(format!("there is no test file tests/{file}.rs"));
    }
    Ok(())
}

/// `text` with what differs from run to run replaced by a placeholder: the project's path
/// (`[PROJECT]`), a loopback port (`127.0.0.1:[PORT]`) and a duration (`[TIME]` for `1.2 s`,
/// `35 ms`, `0.4s`).
pub fn normalise(text: &str, project: &Path) -> String {
    use std::sync::LazyLock;
    static PORT: LazyLock<regex::Regex> =
        LazyLock::new(|| regex::Regex::new(r"(127\.0\.0\.1|localhost):\d+").unwrap());
    static TIME: LazyLock<regex::Regex> =
        LazyLock::new(|| regex::Regex::new(r"\b\d+(\.\d+)? ?(ms|s)\b").unwrap());
    let mut text = text.to_string();
    let canonical = project.canonicalize().ok();
    for p in [Some(project.to_path_buf()), canonical]
        .into_iter()
        .flatten()
    {
        let p = p.display().to_string();
        if !p.is_empty() {
            text = text.replace(&p, "[PROJECT]");
        }
    }
    let text = PORT.replace_all(&text, "$1:[PORT]");
    TIME.replace_all(&text, "[TIME]").into_owned()
}

/// A line diff of `want` and `got` (longest common subsequence), `-` for lines only expected,
/// `+` for lines only got, two spaces for shared ones.
pub fn diff(want: &str, got: &str) -> String {
    let a: Vec<&str> = want.split_inclusive('\n').collect();
    let b: Vec<&str> = got.split_inclusive('\n').collect();
    // lcs[i][j]: the longest common subsequence of a[i..] and b[j..].
    let mut lcs = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let mut out = String::new();
    let line = |out: &mut String, mark: char, l: &str| {
        let _ = writeln!(out, "{mark} {}", l.strip_suffix('\n').unwrap_or(l));
        if !l.ends_with('\n') {
            out.push_str("\\ no newline at end\n");
        }
    };
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            line(&mut out, ' ', a[i]);
            i += 1;
            j += 1;
        } else if i < a.len() && (j == b.len() || lcs[i + 1][j] >= lcs[i][j + 1]) {
            line(&mut out, '-', a[i]);
            i += 1;
        } else {
            line(&mut out, '+', b[j]);
            j += 1;
        }
    }
    out
}

#[test]
fn the_diff_marks_what_was_expected_and_what_came() {
    assert_eq!(
        diff("a\nb\nc\n", "a\nx\nc"),
        "  a\n- b\n- c\n+ x\n+ c\n\\ no newline at end\n"
    );
}

#[test]
#[should_panic(expected = "status: expected 0, got Some(2)")]
fn a_wrong_status_fails_the_run() {
    Test::empty().args(["no-such-command"]).run();
}

#[test]
#[should_panic(expected = "stdout:\n  does not contain \"nothing like this\"")]
fn a_missing_text_fails_the_run() {
    Test::empty()
        .args(["--version"])
        .stdout_any("the test is about the missing text")
        .stdout_contains("nothing like this")
        .run();
}

#[test]
#[should_panic(expected = "stdout:\n  must be empty: the test states no text for it")]
fn an_unmentioned_stream_must_be_empty() {
    Test::empty().args(["--version"]).run();
}

#[test]
fn a_stream_the_test_opts_out_of_is_not_compared() {
    Test::empty()
        .args(["--version"])
        .stdout_any("the version changes with every release")
        .run();
}

#[test]
#[should_panic(
    expected = "`rageval.yaml`:\n  differs (- expected, + actual):\n- nothing\n+ evalsets"
)]
fn a_file_that_differs_fails_the_run() {
    Test::new()
        .args(["--version"])
        .stdout_any("the version changes with every release")
        .file("rageval.yaml", "nothing\n")
        .run();
}

#[test]
fn what_varies_from_run_to_run_is_normalised() {
    let root = Path::new("/tmp/.tmpAbc");
    assert_eq!(
        normalise(
            "wrote /tmp/.tmpAbc/reports/x in 1.25 s (35 ms a call) from http://127.0.0.1:4312/v1 for 2 settings\n",
            root
        ),
        "wrote [PROJECT]/reports/x in [TIME] ([TIME] a call) from http://127.0.0.1:[PORT]/v1 for 2 settings\n"
    );
}

#[test]
#[should_panic(expected = "`reports` exists, which the run must not write")]
fn a_file_the_run_must_not_write_fails_it() {
    Test::new()
        .args(["sweep", "-q", "--min-score", "0.2", "--k", "1"])
        .absent("reports")
        .run();
}

#[test]
fn a_failed_run_shows_every_stream_at_once() {
    let failed = std::panic::catch_unwind(|| {
        Test::empty()
            .args(["--version"])
            .status(3)
            .stdout("rageval 0\n")
            .stderr_contains("nothing")
            .run();
    })
    .expect_err("the run must fail");
    let message = failed.downcast_ref::<String>().unwrap();
    for part in [
        "status: expected 3, got Some(0)",
        "stdout:\n  differs (- expected, + actual):\n- rageval 0\n+ rageval ",
        "stderr:\n  does not contain \"nothing\"",
        "--- stdout:\nrageval ",
        "--- stderr:\n---",
    ] {
        assert!(message.contains(part), "{part:?} not in:\n{message}");
    }
}

/// Every snapshot in tests/snapshots is named FILE__TEST[_N] after a test file that exists,
/// and its name is written out in a test file (no stale snapshot is left behind a rename).
#[test]
fn every_snapshot_is_named_after_its_file_and_test_and_is_used() {
    let tests = crate::support::repo().join("tests");
    let mut sources = String::new();
    for entry in std::fs::read_dir(&tests).unwrap().flatten() {
        if entry.path().extension().is_some_and(|e| e == "rs") {
            sources.push_str(&std::fs::read_to_string(entry.path()).unwrap());
        }
    }
    let mut problems = Vec::new();
    for entry in std::fs::read_dir(tests.join("snapshots"))
        .unwrap()
        .flatten()
    {
        let file = entry.file_name().to_string_lossy().into_owned();
        let Some(name) = file.strip_suffix(".snap") else {
            problems.push(format!(
                "{file}: not a .snap file (fixtures go in tests/fixtures)"
            ));
            continue;
        };
        if let Err(why) = snapshot_name_problem(name) {
            problems.push(format!("{file}: {why}"));
        } else if !sources.contains(&format!("\"{name}\"")) {
            problems.push(format!("{file}: no test names it"));
        }
    }
    problems.sort();
    assert_eq!(problems, Vec::<String>::new());
    assert_eq!(snapshot_name_problem("sweep__x_2"), Ok(()));
    for bad in [
        "sample_sweep",
        "cli__sweep__x",
        "Sweep__x",
        "no_such_file__x",
    ] {
        assert!(snapshot_name_problem(bad).is_err(), "{bad}");
    }
}
