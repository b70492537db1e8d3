//! What a sweep shows on a terminal and in CI logs: a settings table that fits the width
//! (`--wide` and `$COLUMNS` aside), and plain progress lines when stderr is piped.

use crate::harness::SAMPLE_SWEEP_TABLE;
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
    let piped = p.sample_sweep().stdout_snapshot(SAMPLE_SWEEP_TABLE).run();
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
    let table = |columns: &str, extra: &[&str], snapshot: &str| {
        p.sample_sweep()
            .args(extra)
            .env("COLUMNS", columns)
            .stdout_snapshot(snapshot)
            .run()
            .stdout
    };
    let wide = table(
        "60",
        &["--wide"],
        "terminal_output__wide_shows_every_column_and_a_wide_terminal_needs_no_cuts",
    );
    assert_eq!(header(&wide), full);
    assert!(!wide.contains("(hidden to fit"), "{wide}");
    let roomy = table(
        "200",
        &[],
        "terminal_output__wide_shows_every_column_and_a_wide_terminal_needs_no_cuts_2",
    );
    assert_eq!(header(&roomy), full);
    assert!(!roomy.contains("(hidden to fit"), "{roomy}");
    // At 80 the counts go, but not the wrong answers, which have no rate column.
    let narrow = table(
        "80",
        &[],
        "terminal_output__wide_shows_every_column_and_a_wide_terminal_needs_no_cuts_3",
    );
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
        .stdout_snapshot("terminal_output__a_piped_stderr_gets_a_plain_progress_line_every_interval")
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
