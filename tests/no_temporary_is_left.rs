//! Reports are written through temporaries of rageval's own naming, and none is left: a
//! stale one is removed by the next sweep, and Ctrl-C while reports are written leaves none.

use crate::support::{require_tool, Project};

#[test]
fn a_sweep_removes_stale_temporaries_of_its_own_naming_only() {
    let p = Project::sample();
    // A process id above any pid_max: its writer is gone.
    let stale = p.write(
        "reports/latest/.rageval-tmp-4294967295-AbC123",
        "half a report",
    );
    let foreign = p.write("reports/latest/.tmpXyZ789", "someone else's");
    p.sweep::<_, &str>([]).run();
    assert!(!stale.exists(), "a stale temporary of ours is removed");
    assert!(foreign.exists(), "files of other naming are kept");
    let mut left: Vec<String> = std::fs::read_dir(p.path().join("reports/latest"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(
        left,
        [
            ".tmpXyZ789",
            "report.html",
            "report.md",
            "results.json",
            "runs.csv",
            "summary.csv",
            "tags.csv"
        ]
    );
}

#[test]
fn ctrl_c_while_reports_are_written_leaves_no_temporary() {
    if !require_tool("sh", "a POSIX shell") {
        return;
    }
    let p = Project::sample();
    // The first temporary file is held open for a minute, so the signal always arrives while
    // reports are being written, however loaded the machine is.
    let mut child = p
        .process()
        .env("RAGEVAL_TEST_HOLD_TEMPORARY_MS", "60000")
        .args(["sweep", "-q", "--min-score", "0.1..0.5", "--k", "1,2"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let out = p.path().join("reports/latest");
    let temporaries = || -> Vec<String> {
        std::fs::read_dir(&out)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(".rageval-tmp-"))
            .collect()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while temporaries().is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    assert!(!temporaries().is_empty(), "the sweep began writing reports");
    let kill = std::process::Command::new("sh")
        .args(["-c", &format!("kill -INT {}", child.id())])
        .status()
        .unwrap();
    assert!(kill.success());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "exits as SIGINT would");
    assert_eq!(temporaries(), Vec::<String>::new());
}
