//! Which (setting, question) pairs a sweep runs, and one setting's runs read back.
//!
//! A plain sweep runs every question at every setting. An adaptive sweep drops a setting that
//! is out (docs/adaptive.md): from then on it runs only on the questions it already had. Runs
//! are stored setting-major, each setting's in question order, and a dropped setting simply
//! has fewer of them; nothing marks an unrun pair. So a setting's runs are never indexed by
//! position: [`SettingRuns`] is the one way to read them, and `get` takes a question.

use super::Run;

/// Per setting, the questions it runs on: every one, or, for a dropped setting, a mask over
/// the sweep's questions (in workspace order).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Coverage {
    /// Per setting, `None` (every question) or its mask; shorter than the settings when the
    /// last ones run every question (empty: a plain sweep).
    only: Vec<Option<Vec<bool>>>,
}

impl Coverage {
    /// Every question at every setting.
    pub fn all() -> Self {
        Coverage::default()
    }

    /// Setting `s` runs only on the questions `mask` keeps.
    pub fn restrict(&mut self, s: usize, mask: Vec<bool>) {
        if self.only.len() <= s {
            self.only.resize(s + 1, None);
        }
        self.only[s] = Some(mask);
    }

    /// Whether setting `s` runs on question `q`.
    pub fn runs(&self, s: usize, q: usize) -> bool {
        match self.only.get(s) {
            Some(Some(mask)) => mask.get(q).copied().unwrap_or(false),
            _ => true,
        }
    }

    /// Whether every setting runs on every question.
    pub fn is_all(&self) -> bool {
        self.only.iter().all(Option::is_none)
    }
}

/// One setting's runs, in question order: one per question, or fewer for a setting an
/// adaptive sweep dropped. It has no indexing by position on purpose: `get(q)` finds question
/// `q`'s run, if the setting ran it.
#[derive(Debug, Clone, Copy)]
pub struct SettingRuns<'a> {
    runs: &'a [Run],
}

impl<'a> SettingRuns<'a> {
    /// Setting `s`'s runs among setting-major `runs`.
    pub fn of(runs: &'a [Run], s: usize) -> Self {
        let start = runs.partition_point(|r| r.setting < s);
        let end = start + runs[start..].partition_point(|r| r.setting == s);
        SettingRuns {
            runs: &runs[start..end],
        }
    }

    /// Question `q`'s run, when the setting ran it.
    pub fn get(&self, q: usize) -> Option<&'a Run> {
        match self.runs.get(q) {
            Some(r) if r.question == q => Some(r),
            _ => self
                .runs
                .binary_search_by_key(&q, |r| r.question)
                .ok()
                .map(|i| &self.runs[i]),
        }
    }

    pub fn iter(&self) -> std::slice::Iter<'a, Run> {
        self.runs.iter()
    }

    /// The runs the setting has (its questions, not the sweep's).
    pub fn len(&self) -> usize {
        self.runs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    /// Whether the setting ran fewer than `questions` questions: dropped.
    pub fn dropped(&self, questions: usize) -> bool {
        self.runs.len() < questions
    }

    /// The runs as a slice, for a reader that goes through all of them and reads each run's
    /// question from the run.
    pub fn as_slice(&self) -> &'a [Run] {
        self.runs
    }
}

impl<'a> IntoIterator for SettingRuns<'a> {
    type Item = &'a Run;
    type IntoIter = std::slice::Iter<'a, Run>;

    fn into_iter(self) -> Self::IntoIter {
        self.runs.iter()
    }
}

impl<'a> IntoIterator for &SettingRuns<'a> {
    type Item = &'a Run;
    type IntoIter = std::slice::Iter<'a, Run>;

    fn into_iter(self) -> Self::IntoIter {
        self.runs.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(setting: usize, question: usize) -> Run {
        let verdict = serde_json::from_value(serde_json::json!({"outcome": "answer"})).unwrap();
        Run::new(question, setting, "q".into(), verdict, "a".into())
    }

    #[test]
    fn a_dropped_setting_has_the_runs_of_its_own_questions() {
        // Setting 1 was dropped after questions 0 and 2.
        let runs = vec![
            run(0, 0),
            run(0, 1),
            run(0, 2),
            run(1, 0),
            run(1, 2),
            run(2, 0),
            run(2, 1),
            run(2, 2),
        ];
        let one = SettingRuns::of(&runs, 1);
        assert_eq!(one.len(), 2);
        assert!(one.dropped(3));
        assert!(one.get(1).is_none());
        assert_eq!(one.get(2).map(|r| (r.setting, r.question)), Some((1, 2)));
        let two = SettingRuns::of(&runs, 2);
        assert!(!two.dropped(3));
        assert_eq!(two.get(1).map(|r| (r.setting, r.question)), Some((2, 1)));
        assert!(SettingRuns::of(&runs, 3).is_empty());
    }

    /// No code reads a setting's runs by position (`runs[s * n + q]`, `runs[s * n..]`,
    /// `runs_of(s)[q]`): with a dropped setting that is someone else's run.
    #[test]
    fn no_code_indexes_runs_by_setting_and_position() {
        fn files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    files(&path, out);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    out.push(path);
                }
            }
        }
        let mut all = Vec::new();
        files(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
            &mut all,
        );
        let mut found = Vec::new();
        for path in all.into_iter().filter(|p| !p.ends_with("sweep/runs.rs")) {
            let text = std::fs::read_to_string(&path).unwrap();
            for (i, line) in text.lines().enumerate() {
                let positional = line.split("runs[").skip(1).any(|rest| {
                    let index = rest.split(']').next().unwrap_or("");
                    index.contains(" * ")
                });
                if positional || line.contains(".runs_of(") && line.contains(")[") {
                    found.push(format!("{}:{}: {}", path.display(), i + 1, line.trim()));
                }
            }
        }
        assert!(
            found.is_empty(),
            "read through SettingRuns:\n{}",
            found.join("\n")
        );
    }

    #[test]
    fn coverage_keeps_every_pair_but_a_dropped_settings_later_questions() {
        let mut c = Coverage::all();
        assert!(c.is_all() && c.runs(5, 9));
        c.restrict(1, vec![true, false]);
        assert!(!c.is_all());
        assert!(c.runs(0, 1) && c.runs(1, 0) && !c.runs(1, 1) && !c.runs(1, 2) && c.runs(2, 1));
    }
}
