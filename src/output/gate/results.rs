//! What the gate reads of a results record: questions, settings and the runs' outcomes.
//!
//! results.json is read through [`crate::output::record::Record`], the type that writes it; this is the
//! gate's view of it, built from the positional [`Results`] the record converts to, so that the
//! recommendation and every figure come from the same code the reports use.

use std::collections::HashMap;
use std::path::Path;

use serde::Deserialize;

use crate::adapters::classify::Outcome;
use crate::output::record::Record;
use crate::output::report::Results;

pub use crate::output::record::RecordError as ResultsError;

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
    /// For an answer: whether it is wrong (see [`crate::adapters::classify::Verdict::wrong_answer`]).
    #[serde(default)]
    pub wrong_answer: Option<bool>,
    #[serde(default)]
    pub prompt_tokens: u64,
    /// `--repeat N`: the run's repeats (N; 1 without repeats) and how many of them differ
    /// from its most frequent outcome.
    #[serde(default = "one")]
    pub repeats: u64,
    #[serde(default)]
    pub flips: u64,
}

fn one() -> u64 {
    1
}

/// Whether an answer is wrong. A record written before runs carried `wrong_answer` (and
/// before the judge) gets the rule the classifier applies without a grade, a miss of every
/// expected text, so that an old baseline is compared with what it would have said.
fn wrong_answer(v: &crate::adapters::classify::Verdict) -> Option<bool> {
    v.wrong_answer.or(match v.outcome {
        Outcome::Answer => v.answer_match.map(|m| !m),
        _ => None,
    })
}

/// Read a results file through the record type and check it.
pub fn load(path: &Path) -> Result<ResultsFile, ResultsError> {
    let record = Record::load(path)?;
    let results = record
        .into_results()
        .map_err(|message| ResultsError::Inconsistent {
            path: path.to_path_buf(),
            message,
        })?;
    Ok(ResultsFile::of(&results))
}

/// A gate view written by hand, for the gate's unit tests.
#[cfg(test)]
pub fn parse(_path: &Path, text: &str) -> Result<ResultsFile, String> {
    let doc: ResultsFile = serde_json::from_str(text).map_err(|e| e.to_string())?;
    doc.check()?;
    Ok(doc)
}

impl ResultsFile {
    /// The gate's view of `r`.
    pub fn of(r: &Results) -> ResultsFile {
        let settings = (0..r.settings.len())
            .map(|i| SettingRow {
                id: r.setting_id(i).to_string(),
                fields: r.settings[i].to_map(r.recorded()).into_iter().collect(),
            })
            .collect();
        ResultsFile {
            schema: crate::output::record::SCHEMA.into(),
            recommended: r
                .insight
                .recommendation
                .setting
                .clone()
                .map(Recommended::Id),
            dimensions: r.recorded_names().iter().map(|c| c.to_string()).collect(),
            config_digest: Some(r.meta.identity.digest.clone()),
            settings,
            questions: r
                .questions
                .iter()
                .map(|q| QuestionRow {
                    id: q.id.clone(),
                    answerable: q.answerable,
                })
                .collect(),
            runs: r
                .runs
                .iter()
                .map(|run| RunRow {
                    question_id: r.questions[run.question].id.clone(),
                    setting_id: r.setting_id(run.setting).to_string(),
                    outcome: run.verdict.outcome,
                    answer_match: run.verdict.answer_match,
                    wrong_answer: wrong_answer(&run.verdict),
                    prompt_tokens: run.prompt_tokens,
                    repeats: 1 + run.repeats.len() as u64,
                    flips: crate::analysis::repeat::flips(run) as u64,
                })
                .collect(),
        }
    }

    /// Every question has at most one run per setting, and every run names a known question
    /// and setting.
    #[cfg(test)]
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
    fn reads_recommended_as_an_id_or_an_object() {
        let base = r#""schema": "rageval.results/2", "settings": [], "questions": [], "runs": []"#;
        let doc = parse(Path::new("r.json"), &format!("{{{base}}}")).unwrap();
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
                r#"{{"schema": "rageval.results/2", "settings": [{{"id": "s"}}],
                "questions": [{{"id": "q", "answerable": true}}], "runs": [{runs}]}}"#
            )
        };
        let run = r#"{"question_id": "q", "setting_id": "s", "outcome": "answer"}"#;
        assert!(parse(Path::new("r.json"), &doc(run)).is_ok());
        let err = parse(Path::new("r.json"), &doc(&format!("{run}, {run}"))).unwrap_err();
        assert_eq!(err, "question `q` has two runs at setting `s`");
        let bad = r#"{"question_id": "x", "setting_id": "s", "outcome": "answer"}"#;
        let err = parse(Path::new("r.json"), &doc(bad)).unwrap_err();
        assert_eq!(err, "a run names unknown question `x`");
    }

    #[test]
    fn the_fixture_reads_as_the_reports_see_it() {
        let r = crate::output::report::fixture::results();
        let doc = ResultsFile::of(&r);
        assert_eq!(doc.questions.len(), 3);
        assert_eq!(doc.settings[3].id, "min_score=0.4,k=2");
        assert_eq!(doc.settings[3].fields["min_score"], serde_json::json!(0.4));
        let runs = doc.runs_at("min_score=0.2,k=2").unwrap();
        assert_eq!(runs["vp"].outcome, Outcome::UnwantedAnswer);
        assert_eq!(runs["fee"].prompt_tokens, 150);
        assert_eq!(
            doc.recommended.as_ref().map(Recommended::id),
            r.insight.recommendation.setting.as_deref()
        );
    }
}
