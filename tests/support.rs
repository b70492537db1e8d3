//! A scratch project per test: a temporary folder with the sample data copied in.

use std::path::{Path, PathBuf};

use assert_cmd::Command;

/// The README's sweep of the sample set: 20 settings.
pub const SAMPLE_SWEEP: &[&str] = &[
    "sweep",
    "--evalset",
    "evalsets/club.yaml",
    "--min-score",
    "0.1..0.5",
    "--k",
    "1,2,4,8",
];

pub struct Project {
    pub dir: tempfile::TempDir,
}

impl Project {
    /// An empty project.
    pub fn empty() -> Self {
        Project {
            dir: tempfile::tempdir().expect("temp dir"),
        }
    }

    /// A project holding a copy of the sample question sets and corpora, with a config that
    /// names the main set (as the repository's own rageval.yaml does).
    pub fn sample() -> Self {
        let p = Project::empty();
        copy_dir(&repo().join("evalsets"), &p.path().join("evalsets"));
        p.write("rageval.yaml", "evalsets: [evalsets/club.yaml]\n");
        p
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn write(&self, rel: &str, text: &str) -> PathBuf {
        let path = self.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path().join(rel)).unwrap_or_else(|e| panic!("read {rel}: {e}"))
    }

    /// `rageval ARGS` run inside the project.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::cargo_bin("rageval").unwrap();
        c.current_dir(self.path())
            .args(args)
            .env_remove("GITHUB_STEP_SUMMARY");
        c
    }
}

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Parse a CSV file into a header and rows of strings.
pub fn read_csv(text: &str) -> (Vec<String>, Vec<Vec<String>>) {
    let mut r = csv::Reader::from_reader(text.as_bytes());
    let header = r.headers().unwrap().iter().map(String::from).collect();
    let rows = r
        .records()
        .map(|rec| rec.unwrap().iter().map(String::from).collect())
        .collect();
    (header, rows)
}

/// The value of column `name` in `row`.
pub fn col<'a>(header: &[String], row: &'a [String], name: &str) -> &'a str {
    let i = header
        .iter()
        .position(|h| h == name)
        .unwrap_or_else(|| panic!("no column {name}"));
    &row[i]
}

pub fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A map of results.json (`questions`, `settings` or `calls`) as `(key, value)` pairs in file
/// order; a `serde_json::Value` would sort the keys.
pub fn entries(text: &str, field: &str) -> Vec<(String, serde_json::Value)> {
    #[derive(serde::Deserialize)]
    struct Maps {
        questions: indexmap::IndexMap<String, serde_json::Value>,
        settings: indexmap::IndexMap<String, serde_json::Value>,
        calls: indexmap::IndexMap<String, serde_json::Value>,
    }
    let maps: Maps = serde_json::from_str(text).unwrap();
    let map = match field {
        "questions" => maps.questions,
        "settings" => maps.settings,
        "calls" => maps.calls,
        other => panic!("results.json has no map `{other}`"),
    };
    map.into_iter().collect()
}

/// A setting of results.json as one object: its dimension values and its statistics.
pub fn setting_row(doc: &serde_json::Value, id: &str) -> serde_json::Value {
    let mut row = doc["settings"][id].clone();
    let stats = doc["summary"]["settings"][id].as_object().unwrap().clone();
    let obj = row.as_object_mut().unwrap();
    obj.extend(stats);
    obj.insert("id".into(), id.into());
    row
}
