//! report.html in a real browser: headless Chromium (Debian's `chromium`) opens it from disk.
//!
//! The page has no script of its own, so any console message at all (an exception, a blocked
//! inline script, a failed load) is a failure. A JavaScript dialog blocks `--dump-dom` until
//! the browser is killed, so a run that does not finish in time fails as "a dialog opened or
//! the browser hung". Payloads that would mark the DOM (`data-pwned`, the title) catch a
//! script that ran without a dialog. Skipped with a note when Chromium is absent; `.ci/run`
//! installs it, so CI always runs these tests.

use std::fs::File;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::harness::{Test, SAMPLE_SWEEP_TABLE};
use crate::insight::{chart_data, figure, markers, xss_project, PAYLOADS};
use crate::support::{repo, require_tool};

pub(crate) const CHROMIUM: &str = "/usr/bin/chromium";

/// Headless Chromium's flags for a test: no sandbox (containers), no GPU, nothing fetched or
/// synced in the background, no first-run pages.
pub(crate) const HEADLESS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
];
const TIMEOUT: Duration = Duration::from_secs(90);

/// Whether Chromium is installed (under `CI=true` its absence fails the test).
pub(crate) fn have_chromium() -> bool {
    require_tool(CHROMIUM, "Debian's `chromium` (`.ci/run` installs it)")
}

/// What one headless run printed.
struct Output {
    stdout: String,
    stderr: String,
}

impl Output {
    /// Console lines (Chromium logs every console message as `...:CONSOLE...`) and uncaught
    /// errors.
    fn console(&self) -> Vec<&str> {
        self.stderr
            .lines()
            .filter(|l| l.contains(":CONSOLE") || l.contains("Uncaught"))
            .collect()
    }
}

/// Run headless Chromium on `page` with `extra` flags; fails past [`TIMEOUT`].
fn chromium(page: &Path, extra: &[String]) -> Output {
    let profile = tempfile::tempdir().unwrap();
    let logs = tempfile::tempdir().unwrap();
    let (out_path, err_path) = (logs.path().join("stdout"), logs.path().join("stderr"));
    let mut child = Command::new(CHROMIUM)
        .args(HEADLESS)
        .args(["--enable-logging=stderr", "--v=0"])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(File::create(&out_path).unwrap())
        .stderr(File::create(&err_path).unwrap())
        .spawn()
        .expect("start chromium");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "chromium did not finish within {TIMEOUT:?}: a JavaScript dialog opened or the browser hung\n{}",
                std::fs::read_to_string(&err_path).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let out = Output {
        stdout: std::fs::read_to_string(&out_path).unwrap_or_default(),
        stderr: std::fs::read_to_string(&err_path).unwrap_or_default(),
    };
    assert!(
        status.success(),
        "chromium failed: {status}\n{}",
        out.stderr
    );
    out
}

/// The DOM after load, with no console output.
fn loaded_dom(page: &Path) -> String {
    let out = chromium(page, &["--dump-dom".to_string()]);
    assert!(
        out.console().is_empty(),
        "console output:\n{}",
        out.console().join("\n")
    );
    assert!(out.stdout.trim_end().ends_with("</html>"), "no DOM dumped");
    out.stdout
}

/// The opening `<body ...>` tag of a serialized DOM.
fn body_tag(dom: &str) -> &str {
    let start = dom.find("<body").expect("a body");
    &dom[start..start + dom[start..].find('>').unwrap()]
}

#[test]
fn report_loads_without_console_errors_and_draws_every_chart() {
    if !have_chromium() {
        return;
    }
    let p = Test::sweep().stdout_snapshot(SAMPLE_SWEEP_TABLE).run();
    let page = p.path().join("reports/latest/report.html");
    let dom = loaded_dom(&page);

    let data = chart_data(&p.read("reports/latest/report.html"));
    let mut ids: Vec<String> = data["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap().to_string())
        .collect();
    ids.push(data["strips"]["id"].as_str().unwrap().to_string());
    assert_eq!(ids.len(), 4);
    for id in &ids {
        let f = figure(&dom, id);
        assert!(f.contains("<svg"), "{id}: no svg");
        let points = if id == "best_scores" {
            f.matches("<circle").count()
        } else {
            markers(f)
        };
        assert!(points >= 20, "{id}: too few points");
        assert!(f.matches("<text").count() >= 5, "{id}: no axis labels");
        if id != "best_scores" {
            assert!(f.contains("<polyline"), "{id}: no lines");
        }
    }
    assert_eq!(dom.matches("<tr class=\"rec\"").count(), 1);
    assert_eq!(dom.matches("data-setting=").count(), 20);
    assert_eq!(dom.matches("<details class=\"q\"").count(), 26);

    // The screenshot CI keeps: what a laptop screen shows first.
    let shot = repo().join("target/report-screenshot.png");
    let _ = std::fs::remove_file(&shot);
    let out = chromium(
        &page,
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1366,900".to_string(),
            "--hide-scrollbars".to_string(),
        ],
    );
    assert!(out.console().is_empty(), "{}", out.console().join("\n"));
    let png = std::fs::read(&shot).expect("a screenshot");
    assert_eq!(&png[1..4], b"PNG");
    let width = u32::from_be_bytes(png[16..20].try_into().unwrap());
    assert_eq!(width, 1366);
    assert!(png.len() > 20_000, "an empty-looking screenshot");
    eprintln!("screenshot: {}", shot.display());
}

#[test]
fn script_payloads_from_the_corpus_run_nothing() {
    if !have_chromium() {
        return;
    }
    let p = xss_project();
    let dom = loaded_dom(&p.path().join("reports/latest/report.html"));
    assert!(!body_tag(&dom).contains("data-pwned"), "{}", body_tag(&dom));
    assert!(
        dom.contains("<title>rageval report</title>"),
        "title changed"
    );
    assert!(!dom.contains("<img"), "an img element was created");
    // Serialized text nodes are escaped again: the payloads are there, as text.
    for payload in PAYLOADS {
        let text = payload.replace('<', "&lt;").replace('>', "&gt;");
        assert!(dom.contains(&text), "{payload} missing as text");
    }
}

#[test]
fn the_history_page_loads_without_console_errors_and_draws_every_rate() {
    if !have_chromium() {
        return;
    }
    let p = crate::history::handmade_project();
    let page = p.path().join("history.html");
    let dom = loaded_dom(&page);
    let start = dom.find("<svg id=\"history-chart\"").expect("the chart");
    let chart = &dom[start..start + dom[start..].find("</svg>").expect("closed svg")];
    for rate in [
        "unwanted_answer_rate",
        "false_refusal_rate",
        "wrong_answer_rate",
    ] {
        let start = chart
            .find(&format!("data-rate=\"{rate}\""))
            .unwrap_or_else(|| panic!("no {rate}"));
        let group = &chart[start..start + chart[start..].find("</g>").unwrap()];
        assert_eq!(
            group.matches("<circle").count(),
            5,
            "{rate}: a point per entry"
        );
        assert_eq!(group.matches("<polyline").count(), 1, "{rate}: one line");
        assert_eq!(
            group.matches("class=\"band\"").count(),
            1,
            "{rate}: its band"
        );
    }
    assert_eq!(chart.matches("<g class=\"change\"").count(), 2);
    assert!(chart.contains(">config changed</text>"));
    assert!(chart.contains(">questions changed</text>"));
    assert_eq!(dom.matches("<tr>").count(), 6, "a header and five entries");
}
