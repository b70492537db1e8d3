//! Swept values that change nothing, found after the sweep: the two commonest silent failures
//! of a threshold sweep. A dimension value whose runs send exactly the prompts another value's
//! runs send, for every question and every other setting, measures the same setting twice (a
//! minScore below every score the retriever returns filters nothing; a `k` above every result
//! list adds nothing). And a minScore swept over scores that do not compare across questions
//! (reciprocal rank fusion gives every top hit a score near 1/60; a BM25 score is unbounded)
//! is a threshold on a rank, not on how well a passage matches.

use std::collections::HashMap;

use super::{Grid, Run, Setting, SettingRuns};
use crate::vocab::dim::{Dim, Value};

/// Top scores below this are what reciprocal rank fusion gives (`1 / (60 + rank)`, at most
/// about 0.033 summed over two lists), never a similarity worth a threshold.
pub const RANK_FUSION_SCORES: f64 = 0.05;

/// The warning lines (without `warning: `) of a finished sweep: for minScore and k, the values
/// that send the same prompts as another value; and minScores swept over scores that do not
/// compare across questions. `runs` are setting-major; a setting an adaptive sweep dropped is
/// compared with its twin on the questions it ran.
pub fn warnings(grid: &Grid, settings: &[Setting], runs: &[Run]) -> Vec<String> {
    if runs.is_empty() {
        return Vec::new();
    }
    let index: HashMap<&Setting, usize> =
        settings.iter().enumerate().map(|(i, s)| (s, i)).collect();
    let same = Same {
        settings,
        runs,
        index,
    };
    // The thresholds alone: two chat profiles of one model, or a rewrite strategy over
    // questions without history, share their calls on purpose (and say so elsewhere).
    let mut lines: Vec<String> = [Dim::MinScore, Dim::K]
        .into_iter()
        .filter_map(|d| same.line(grid, d))
        .collect();
    if grid.axis(Dim::MinScore).len() > 1 {
        lines.extend(incomparable_scores(SettingRuns::of(runs, 0).as_slice()));
    }
    lines
}

/// Which settings send the same prompts as which.
struct Same<'a> {
    settings: &'a [Setting],
    runs: &'a [Run],
    index: HashMap<&'a Setting, usize>,
}

impl Same<'_> {
    fn runs_of(&self, s: usize) -> SettingRuns<'_> {
        SettingRuns::of(self.runs, s)
    }

    /// Whether every setting with `d = b` sends, for every question, the prompt (or the early
    /// refusal) its twin with `d = a` sends.
    fn equal(&self, d: Dim, a: &Value, b: &Value) -> bool {
        self.settings.iter().enumerate().all(|(s, setting)| {
            if setting.get(d) != *b {
                return true;
            }
            let mut twin = setting.clone();
            twin.set(d, a.clone());
            let Some(&t) = self.index.get(&twin) else {
                return false;
            };
            let twin = self.runs_of(t);
            self.runs_of(s)
                .iter()
                .all(|x| twin.get(x.question).is_none_or(|y| x.call == y.call))
        })
    }

    /// The warning of dimension `d` (minScore or k): its groups of values that send the same prompts, each
    /// with why, when any group has more than one value.
    fn line(&self, grid: &Grid, d: Dim) -> Option<String> {
        let mut classes: Vec<Vec<&Value>> = Vec::new();
        for v in grid.axis(d) {
            match classes.iter_mut().find(|c| self.equal(d, c[0], v)) {
                Some(class) => class.push(v),
                None => classes.push(vec![v]),
            }
        }
        let each: Vec<String> = classes
            .iter()
            .filter(|c| c.len() > 1)
            .map(|c| {
                let shown: Vec<String> = c.iter().map(ToString::to_string).collect();
                let named = format!("{} {}", d.name(), and_list(&shown));
                match d {
                    Dim::MinScore if self.all_refused(d, c[0]) => format!(
                        "{named} refuse every question before the model (no score reaches them)"
                    ),
                    Dim::MinScore => format!(
                        "{named} send the same prompts for every question (no score the retriever returned lies between them)"
                    ),
                    _ => format!(
                        "{named} send the same prompts for every question (no question has more passages passing minScore than {})",
                        c[0]
                    ),
                }
            })
            .collect();
        (!each.is_empty()).then(|| {
            format!(
                "{}: each group measures one setting; sweep values that differ",
                each.join("; ")
            )
        })
    }

    /// Whether every run of every setting with `d = v` is an early refusal.
    fn all_refused(&self, d: Dim, v: &Value) -> bool {
        self.settings
            .iter()
            .enumerate()
            .filter(|(_, s)| s.get(d) == *v)
            .all(|(s, _)| self.runs_of(s).iter().all(|r| r.passages.is_empty()))
    }
}

/// The warning when every question's top score (of one setting's runs: a question's best score
/// is the same at every setting of its retrieval) is below [`RANK_FUSION_SCORES`] or above 1.
fn incomparable_scores(runs: &[Run]) -> Option<String> {
    let best: Vec<f64> = runs.iter().filter_map(|r| r.best_score).collect();
    let (lo, hi) = best
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &s| {
            (lo.min(s), hi.max(s))
        });
    let what = if best.is_empty() {
        return None;
    } else if hi < RANK_FUSION_SCORES {
        format!("every question's top score is below {RANK_FUSION_SCORES} (the highest is {hi:.4}), as reciprocal rank fusion gives")
    } else if lo > 1.0 {
        format!("every question's top score is above 1 (the lowest is {lo:.4}), as BM25 or an unnormalised dot product gives")
    } else {
        return None;
    };
    Some(format!(
        "min_score is swept over scores that do not compare across questions: {what}; a threshold on them is a threshold on rank, so have the retriever return a similarity from 0 to 1 (or sweep k alone)"
    ))
}

/// `a`, `a and b`, `a, b and c`.
fn and_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocab::grid::parse_min_scores;

    /// Runs of `grid` over `n` questions, each sending call `call(setting, question)`, with
    /// best score `best`.
    fn runs(
        grid: &Grid,
        n: usize,
        best: f64,
        call: impl Fn(&Setting, usize) -> Option<u32>,
    ) -> (Vec<Setting>, Vec<Run>) {
        let settings = grid.settings();
        let verdict = serde_json::from_value(serde_json::json!({"outcome": "answer"})).unwrap();
        let mut template = Run::new(0, 0, "q".into(), verdict, "a".into());
        template.passages = vec![crate::adapters::search::Hit {
            chunk: 0,
            score: best,
        }];
        let runs = settings
            .iter()
            .enumerate()
            .flat_map(|(s, setting)| {
                let (template, call) = (&template, &call);
                (0..n).map(move |q| {
                    let c = call(setting, q);
                    Run {
                        question: q,
                        setting: s,
                        call: c,
                        best_score: Some(best),
                        passages: if c.is_some() {
                            template.passages.clone()
                        } else {
                            Vec::new()
                        },
                        ..template.clone()
                    }
                })
            })
            .collect();
        (settings, runs)
    }

    #[test]
    fn values_that_send_the_same_prompts_are_named_once() {
        let grid = Grid::new(parse_min_scores("0.1..0.4").unwrap(), vec![1, 4, 8]);
        // minScore 0.1 and 0.2 filter nothing, 0.4 refuses everything; k 4 and 8 send the
        // same passages (no list is longer than 4).
        let (settings, runs) = runs(&grid, 3, 0.5, |s, q| {
            let m = s.min_score.to_f64();
            let k = s.k.min(4) as u32;
            (m < 0.35).then(|| (q as u32) * 100 + k * 10 + u32::from(m > 0.25))
        });
        let lines = warnings(&grid, &settings, &runs);
        assert_eq!(
            lines,
            [
                "min_score 0.1 and 0.2 send the same prompts for every question (no score the retriever returned lies between them): each group measures one setting; sweep values that differ",
                "k 4 and 8 send the same prompts for every question (no question has more passages passing minScore than 4): each group measures one setting; sweep values that differ",
            ]
        );
        // One question whose prompt differs between 0.1 and 0.2 is enough to say nothing.
        let (settings, runs) = runs_differing(&grid);
        assert_eq!(warnings(&grid, &settings, &runs).len(), 1, "k alone");
    }

    fn runs_differing(grid: &Grid) -> (Vec<Setting>, Vec<Run>) {
        runs(grid, 3, 0.5, |s, q| {
            let m = s.min_score.to_f64();
            let k = s.k.min(4) as u32;
            let lowest = u32::from(q == 2 && m < 0.15);
            (m < 0.35).then(|| (q as u32) * 100 + k * 10 + u32::from(m > 0.25) + 2 * lowest)
        })
    }

    #[test]
    fn minscores_above_every_score_are_named_as_refusing_everything() {
        let grid = Grid::new(parse_min_scores("0.6..0.8").unwrap(), vec![2]);
        let (settings, runs) = runs(&grid, 2, 0.5, |_, _| None);
        let lines = warnings(&grid, &settings, &runs);
        assert_eq!(lines.len(), 1);
        assert!(
            lines[0].starts_with("min_score 0.6, 0.7 and 0.8 refuse every question before the model (no score reaches them): "),
            "{lines:?}"
        );
    }

    #[test]
    fn scores_that_do_not_compare_across_questions_get_one_line() {
        let grid = Grid::new(parse_min_scores("0.01,0.02").unwrap(), vec![1, 2]);
        let distinct = |s: &Setting, q: usize| {
            Some((q * 10 + s.k) as u32 + (s.min_score.to_f64() * 1000.0) as u32)
        };
        for (best, want) in [
            (
                0.0325,
                Some("below 0.05 (the highest is 0.0325), as reciprocal rank fusion gives"),
            ),
            (7.5, Some("above 1 (the lowest is 7.5000), as BM25")),
            (0.5, None),
        ] {
            let (settings, runs) = runs(&grid, 2, best, distinct);
            let lines = warnings(&grid, &settings, &runs);
            match want {
                Some(want) => {
                    assert_eq!(lines.len(), 1, "{lines:?}");
                    assert!(lines[0].starts_with("min_score is swept over scores that do not compare across questions: every question's top score is "), "{lines:?}");
                    assert!(lines[0].contains(want), "{lines:?}");
                }
                None => assert!(lines.is_empty(), "{lines:?}"),
            }
        }
        // One minScore is no sweep of it.
        let one = Grid::new(parse_min_scores("0.01").unwrap(), vec![1, 2]);
        let (settings, runs) = runs(&one, 2, 0.03, distinct);
        assert!(warnings(&one, &settings, &runs).is_empty());
    }
}
