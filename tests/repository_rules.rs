//! Rules the repository's own files keep: library code returns notes and never prints (only
//! `src/app/commands` writes to stdout and stderr, unit tests aside), and CI builds rageval once.

use std::path::Path;

/// Every `.rs` file below `dir`.
fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Whether `file` is a module its parent declares under `#[cfg(test)]` (unit tests kept in a
/// file of their own, such as `sweep/tests.rs`).
fn test_only(file: &std::path::Path) -> bool {
    let (Some(dir), Some(name)) = (file.parent(), file.file_stem()) else {
        return false;
    };
    let parent = dir.join("mod.rs");
    let declared = format!("#[cfg(test)]\nmod {};", name.to_string_lossy());
    std::fs::read_to_string(parent).is_ok_and(|text| text.contains(&declared))
}

#[test]
fn library_code_returns_notes_and_never_prints() {
    let src = crate::support::repo().join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let printing: Vec<String> = files
        .iter()
        .filter(|f| !f.starts_with(src.join("app/commands")) && !f.ends_with("main.rs"))
        .filter(|f| !test_only(f))
        .filter(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            // Unit tests may print (a measurement prints its figures); the code above them may not.
            let code = text.split("#[cfg(test)]").next().unwrap_or("");
            ["eprintln!", "eprint!(", "println!", "print!("]
                .iter()
                .any(|m| code.contains(m))
        })
        .map(|f| f.strip_prefix(&src).unwrap().display().to_string())
        .collect();
    assert_eq!(
        printing,
        Vec::<String>::new(),
        "print from src/app/commands only"
    );
}

/// CI builds rageval once (issue 33 item 10): after `cargo test`, a `cargo run` built rageval
/// and 24 dependencies again without the dev-dependencies' features, silently, for two
/// minutes. No cargo command that builds follows the tests.
#[test]
fn ci_builds_once() {
    let script = std::fs::read_to_string(crate::support::repo().join(".ci/run")).unwrap();
    let after_tests: Vec<&str> = script
        .lines()
        .skip_while(|l| !l.starts_with("cargo test"))
        .skip(1)
        .filter(|l| {
            let l = l.trim_start();
            ["cargo run", "cargo build", "cargo install"]
                .iter()
                .any(|c| l.starts_with(c))
        })
        .collect();
    assert_eq!(after_tests, Vec::<&str>::new());
    assert!(script.contains("\"$RAGEVAL\" sweep"));
}
