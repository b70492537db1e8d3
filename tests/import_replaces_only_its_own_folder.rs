//! `rageval import squad FILE --out DIR [--force]` never deletes or replaces what rageval did
//! not write (issue 41 item 2): not the input inside `DIR`, not a file, FIFO or folder of
//! someone else's at `DIR`, not a `DIR` that appears while the import runs; the old folder
//! stays until the new one is in place, and Ctrl-C removes the temporary folder. Each case
//! runs in a scratch project with a canary file that must survive byte for byte.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::harness::Test;
use crate::import::small;
use crate::support::{require_tool, Project, IMPORT_SQUAD_AGAIN};

/// Bytes no import writes, with a NUL and a line without its end.
const CANARY: &[u8] = b"canary \x00\xff\xfe bytes\nno newline at the end";

fn canary(p: &Project, rel: &str) {
    let path = p.path().join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, CANARY).unwrap();
}

fn canary_survived(p: &Project, rel: &str) {
    let got = std::fs::read(p.path().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
    assert_eq!(got, CANARY, "{rel} changed");
}

/// The names in the project's folder, sorted (a temporary folder left behind shows here).
fn names(p: &Project) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(p.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// A project with `squad.json` and a folder `squad/` that an import wrote, holding a canary.
fn imported_once() -> Project {
    let p = Project::empty();
    p.write("squad.json", &small().to_string());
    Test::at(&p)
        .args(["import", "squad", "squad.json", "--out", "squad", "-q"])
        .run();
    canary(&p, "squad/canary");
    p
}

#[test]
fn force_never_deletes_the_input_inside_the_folder_it_would_replace() {
    let p = imported_once();
    std::fs::write(p.path().join("squad/canary"), small().to_string()).unwrap();
    Test::at(&p)
        .args(["import", "squad", "squad/canary", "--out", "squad", "--force"])
        .fails("squad: holds the input `squad/canary`: `--force` would delete it; choose another `--out` (nothing was written)")
        .run();
    assert_eq!(p.read("squad/canary"), small().to_string());
    // Reached through a link, too.
    std::os::unix::fs::symlink("squad/canary", p.path().join("link.json")).unwrap();
    Test::at(&p)
        .args(["import", "squad", "link.json", "--out", "squad", "--force"])
        .fails("squad: holds the input `link.json`: `--force` would delete it; choose another `--out` (nothing was written)")
        .run();
    assert_eq!(p.read("squad/canary"), small().to_string());
    assert_eq!(names(&p), ["link.json", "squad", "squad.json"]);
}

#[test]
fn force_replaces_only_a_folder_rageval_wrote() {
    let p = Project::empty();
    canary(&p, "data/canary");
    p.write("data/squad.json", &small().to_string());
    Test::at(&p)
        .args(["import", "squad", "data/squad.json", "--out", "data", "--force"])
        .fails("data: was not written by rageval (it has no `.rageval-folder` file): `--force` replaces only a folder rageval wrote; remove it yourself or choose another `--out` (nothing was written)")
        .run();
    canary_survived(&p, "data/canary");
    // A folder an import wrote is replaced whole, its marker with it.
    let p = imported_once();
    Test::at(&p).args(IMPORT_SQUAD_AGAIN).args(["-q"]).run();
    assert!(!p.path().join("squad/canary").exists());
    assert!(p
        .read("squad/.rageval-folder")
        .starts_with("Written by `rageval import squad` from squad.json"));
    assert_eq!(names(&p), ["squad", "squad.json"]);
}

#[test]
fn force_never_turns_a_file_or_a_fifo_into_a_folder() {
    let p = Project::empty();
    p.write("squad.json", &small().to_string());
    canary(&p, "out");
    Test::at(&p)
        .args(["import", "squad", "squad.json", "--out", "out", "--force"])
        .fails("out: is a file, not a folder: choose another `--out` (nothing was written; `--force` replaces only a folder rageval wrote)")
        .run();
    canary_survived(&p, "out");
    if !require_tool("mkfifo", "coreutils") {
        return;
    }
    let made = std::process::Command::new("mkfifo")
        .arg(p.path().join("fifo"))
        .status()
        .unwrap();
    assert!(made.success());
    Test::at(&p)
        .args(["import", "squad", "squad.json", "--out", "fifo", "--force"])
        .fails("fifo: is a FIFO, not a folder: choose another `--out` (nothing was written; `--force` replaces only a folder rageval wrote)")
        .run();
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::symlink_metadata(p.path().join("fifo"))
        .unwrap()
        .file_type()
        .is_fifo());
    assert_eq!(names(&p), ["fifo", "out", "squad.json"]);
}

/// Many articles, so that an import takes long enough for a test to act while it runs.
fn large() -> String {
    let mut squad = small();
    let one = squad["data"][0].clone();
    let data = squad["data"].as_array_mut().unwrap();
    for i in 0..3000 {
        let mut a = one.clone();
        a["title"] = format!("Article {i}").into();
        for (j, qa) in a["paragraphs"][0]["qas"]
            .as_array_mut()
            .unwrap()
            .iter_mut()
            .enumerate()
        {
            qa["id"] = format!("q{i}-{j}").into();
        }
        a["paragraphs"][1]["qas"][0]["id"] = format!("r{i}").into();
        data.push(a);
    }
    squad.to_string()
}

/// Start `rageval ARGS` in `p` with each new temporary held for `hold_ms`, and wait until its
/// temporary folder exists.
fn started(p: &Project, args: &[&str], hold_ms: u64) -> std::process::Child {
    let child = p
        .process()
        .env("RAGEVAL_TEST_HOLD_TEMPORARY_MS", hold_ms.to_string())
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while temporaries(p.path()).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(!temporaries(p.path()).is_empty(), "the import began");
    child
}

fn temporaries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".rageval-import-"))
        .collect()
}

fn stderr_of(child: std::process::Child) -> (Option<i32>, String) {
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_folder_that_appears_while_the_import_runs_is_kept() {
    let p = Project::empty();
    p.write("squad.json", &large());
    let child = started(
        &p,
        &["import", "squad", "squad.json", "--out", "squad"],
        3000,
    );
    canary(&p, "squad/canary");
    let (status, stderr) = stderr_of(child);
    assert_eq!(
        (status, stderr.as_str()),
        (Some(2), "error: squad: appeared while the import ran: it is kept as it is (nothing was written; pass `--force` to replace a folder rageval wrote)\n")
    );
    canary_survived(&p, "squad/canary");
    assert_eq!(names(&p), ["squad", "squad.json"]);
}

#[test]
fn the_old_folder_stays_until_the_new_one_is_in_place() {
    let p = imported_once();
    p.write("squad.json", &large());
    let mut child = started(
        &p,
        &["import", "squad", "squad.json", "--out", "squad", "--force"],
        60_000,
    );
    // Killed while the new folder is being built: the old one is whole.
    canary_survived(&p, "squad/canary");
    child.kill().unwrap(); // SIGKILL: no clean-up runs
    child.wait().unwrap();
    canary_survived(&p, "squad/canary");
    assert!(p.path().join("squad/questions.yaml").exists());
}

#[test]
fn ctrl_c_removes_the_temporary_folder_and_keeps_the_old_one() {
    if !require_tool("sh", "a POSIX shell") {
        return;
    }
    let p = imported_once();
    p.write("squad.json", &large());
    let child = started(
        &p,
        &["import", "squad", "squad.json", "--out", "squad", "--force"],
        60_000,
    );
    let kill = std::process::Command::new("sh")
        .args(["-c", &format!("kill -INT {}", child.id())])
        .status()
        .unwrap();
    assert!(kill.success());
    let (status, stderr) = stderr_of(child);
    assert_eq!(
        (status, stderr.as_str()),
        (Some(130), ""),
        "exits as SIGINT would"
    );
    assert_eq!(temporaries(p.path()), Vec::<String>::new());
    canary_survived(&p, "squad/canary");
    assert_eq!(names(&p), ["squad", "squad.json"]);
}
