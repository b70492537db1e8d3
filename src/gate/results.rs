//! Reading `results.json` back: only the fields the gate needs, after a schema version check.
//!
//! The writer is `report::json`; `docs/results-schema.md` describes the format. A reader accepts
//! any document of the same major version (`rageval.results/1`, `rageval.results/1.3`) and
//! ignores fields it does not know, so additive changes never break a gate.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::classify::Outcome;

/// The schema family and the major version this reader understands.
pub const FAMILY: &str = "rageval.results";
pub const MAJOR: u32 = 1;

/// Why a results file cannot be used. Always exit status 2.
#[derive(Debug, thiserror::Error)]
pub enum ResultsError {
    #[error("cannot read results `{}`: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("`{}` is not a rageval results file: {source}", path.display())]
    Json {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error(
        "`{}` has schema `{found}`, but this rageval reads `{FAMILY}/{MAJOR}`; rerun the sweep with this version, or gate with the rageval that wrote it",
        path.display()
    )]
    Schema { path: PathBuf, found: String },
    #[error("`{}` is inconsistent: {message}", path.display())]
    Inconsistent { path: PathBuf, message: String },
}

/// The parts of a results document that the gate reads.
#[derive(Debug, Clone, Deserialize)]
pub struct ResultsFile {
    pub schema: String,
    /// The recommended setting, when the sweep made a recommendation.
    #[serde(default)]
    pub recommended: Option<Recommended>,
    /// Names of the setting dimensions (`min_score`, `k`).
    #[serde(default)]
    pub dimensions: Vec<String>,
    #[serde(default)]
    pub config_digest: Option<String>,
    pub settings: Vec<SettingRow>,
    pub questions: Vec<QuestionRow>,
    pub runs: Vec<RunRow>,
}

/// `recommended` as a setting id, or as an object that carries one.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Recommended {
    Id(String),
    Setting { id: String },
}

impl Recommended {
    pub fn id(&self) -> &str {
        match self {
            Recommended::Id(id) | Recommended::Setting { id } => id,
        }
    }
}

/// One setting: its id and every other field (dimension values, statistics).
#[derive(Debug, Clone, Deserialize)]
pub struct SettingRow {
    pub id: String,
    #[serde(flatten)]
    pub fields: serde_json::Map<String, serde_json::Value>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct QuestionRow {
    pub id: String,
    pub answerable: bool,
}

/// One (question, setting) run: what the gate counts. Latency is deliberately not read: it
/// varies from run to run and must never decide a gate.
#[derive(Debug, Clone, Deserialize)]
pub struct RunRow {
    pub question_id: String,
    pub setting_id: String,
    pub outcome: Outcome,
    #[serde(default)]
    pub answer_match: Option<bool>,
    #[serde(default)]
    pub prompt_tokens: u64,
}

/// The schema line alone, read before the rest so that a newer format gets a clear message
/// instead of a complaint about some field.
#[derive(Deserialize)]
struct SchemaOnly {
    schema: Option<String>,
}

/// Read and check a results file.
pub fn load(path: &Path) -> Result<ResultsFile, ResultsError> {
    let text = std::fs::read_to_string(path).map_err(|source| ResultsError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    parse(path, &text)
}

/// Parse and check the text of a results file.
pub fn parse(path: &Path, text: &str) -> Result<ResultsFile, ResultsError> {
    let json = |source| ResultsError::Json {
        path: path.to_path_buf(),
        source,
    };
    let head: SchemaOnly = serde_json::from_str(text).map_err(json)?;
    let found = head.schema.unwrap_or_default();
    if !same_major(&found) {
        return Err(ResultsError::Schema {
            path: path.to_path_buf(),
            found,
        });
    }
    let doc: ResultsFile = serde_json::from_str(text).map_err(json)?;
    doc.check().map_err(|message| ResultsError::Inconsistent {
        path: path.to_path_buf(),
        message,
    })?;
    Ok(doc)
}

/// `rageval.results/1` and `rageval.results/1.N` are readable; anything else is not.
fn same_major(schema: &str) -> bool {
    let Some(version) = schema
        .strip_prefix(FAMILY)
        .and_then(|rest| rest.strip_prefix('/'))
    else {
        return false;
    };
    let major = version.split_once('.').map_or(version, |(m, _)| m);
    major.parse::<u32>() == Ok(MAJOR)
}

impl ResultsFile {
    /// Every question has at most one run per setting, and every run names a known question
    /// and setting.
    fn check(&self) -> Result<(), String> {
        let mut questions = HashMap::new();
        for q in &self.questions {
            if questions.insert(q.id.as_str(), ()).is_some() {
                return Err(format!("question `{}` appears twice", q.id));
            }
        }
        let settings: HashMap<&str, ()> =
            self.settings.iter().map(|s| (s.id.as_str(), ())).collect();
        let mut seen = HashMap::new();
        for run in &self.runs {
            if !questions.contains_key(run.question_id.as_str()) {
                return Err(format!(
                    "a run names unknown question `{}`",
                    run.question_id
                ));
            }
            if !settings.contains_key(run.setting_id.as_str()) {
                return Err(format!("a run names unknown setting `{}`", run.setting_id));
            }
            if seen
                .insert((run.question_id.as_str(), run.setting_id.as_str()), ())
                .is_some()
            {
                return Err(format!(
                    "question `{}` has two runs at setting `{}`",
                    run.question_id, run.setting_id
                ));
            }
        }
        Ok(())
    }

    /// The runs of one setting, by question id. Errors when a question has no run there.
    pub fn runs_at(&self, setting_id: &str) -> Result<HashMap<&str, &RunRow>, String> {
        let runs: HashMap<&str, &RunRow> = self
            .runs
            .iter()
            .filter(|r| r.setting_id == setting_id)
            .map(|r| (r.question_id.as_str(), r))
            .collect();
        if let Some(q) = self
            .questions
            .iter()
            .find(|q| !runs.contains_key(q.id.as_str()))
        {
            return Err(format!(
                "question `{}` has no run at setting `{setting_id}`",
                q.id
            ));
        }
        Ok(runs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_same_major_version_only() {
        assert!(same_major("rageval.results/1"));
        assert!(same_major("rageval.results/1.4"));
        assert!(!same_major("rageval.results/2"));
        assert!(!same_major("rageval.results/10"));
        assert!(!same_major("rageval.results/"));
        assert!(!same_major("other.results/1"));
        assert!(!same_major(""));
    }

    #[test]
    fn names_the_found_schema() {
        let err = parse(Path::new("r.json"), r#"{"schema": "rageval.results/2"}"#).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("`rageval.results/2`"), "{msg}");
        assert!(msg.contains("rageval.results/1"), "{msg}");
    }

    #[test]
    fn reads_recommended_as_an_id_or_an_object() {
        let base = r#""schema": "rageval.results/1", "settings": [], "questions": [], "runs": []"#;
        let doc = parse(Path::new("r.json"), &format!("{{{base}}}")).unwrap();
        assert!(doc.recommended.is_none());
        let doc = parse(
            Path::new("r.json"),
            &format!(r#"{{{base}, "recommended": null}}"#),
        )
        .unwrap();
        assert!(doc.recommended.is_none());
        let doc = parse(
            Path::new("r.json"),
            &format!(r#"{{{base}, "recommended": "min_score=0.3,k=4"}}"#),
        )
        .unwrap();
        assert_eq!(doc.recommended.unwrap().id(), "min_score=0.3,k=4");
        let doc = parse(
            Path::new("r.json"),
            &format!(r#"{{{base}, "recommended": {{"id": "min_score=0.2,k=2", "why": "x"}}}}"#),
        )
        .unwrap();
        assert_eq!(doc.recommended.unwrap().id(), "min_score=0.2,k=2");
    }

    #[test]
    fn rejects_duplicate_runs_and_unknown_names() {
        let doc = |runs: &str| {
            format!(
                r#"{{"schema": "rageval.results/1", "settings": [{{"id": "s"}}],
                "questions": [{{"id": "q", "answerable": true}}], "runs": [{runs}]}}"#
            )
        };
        let run = r#"{"question_id": "q", "setting_id": "s", "outcome": "answer"}"#;
        assert!(parse(Path::new("r.json"), &doc(run)).is_ok());
        let err = parse(Path::new("r.json"), &doc(&format!("{run}, {run}"))).unwrap_err();
        assert!(err.to_string().contains("two runs"), "{err}");
        let bad = r#"{"question_id": "x", "setting_id": "s", "outcome": "answer"}"#;
        let err = parse(Path::new("r.json"), &doc(bad)).unwrap_err();
        assert!(err.to_string().contains("unknown question `x`"), "{err}");
    }
}
