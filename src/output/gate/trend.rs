//! The trend alarm (`gate --trend N`, `gate.trend`): does a rate of the gated setting rise
//! across the last N comparable runs of the history, the gated results the newest?
//!
//! Each rate (unwanted answers, false refusals, wrong answers) gets the exact conditional
//! Cochran–Armitage test for a rising rate ([`crate::analysis::trend`]); the rates share the
//! stated level by Holm's step-down, so the alarm as a whole fires on a constant rate at most
//! `alpha` of the time. A rate with no event in the window cannot rise and is not counted.
//! The result is a value ([`Trend`]) that the gate's checks, and any later report of the gate,
//! render.

use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Check;
use crate::analysis::trend::{self, Method};
use crate::base::input::FileError;
use crate::output::history::{file, questions_digest, Entry, Rate};
use crate::output::report::Results;

/// The name of the test, as the output states it.
pub const TEST: &str = "exact conditional Cochran-Armitage test for a rising rate";

/// Which history entries are compared with the gated results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Same {
    /// The same `config_digest`.
    Config,
    /// The same `questions_digest`.
    Questions,
}

/// The checked trend policy.
#[derive(Debug, Clone, PartialEq)]
pub struct TrendPolicy {
    /// Runs in the window, the gated results included.
    pub runs: usize,
    /// The false-alarm rate of the alarm as a whole.
    pub alpha: f64,
    pub same: Vec<Same>,
    pub rates: Vec<Rate>,
    /// The history file.
    pub history: PathBuf,
}

/// One run of the window.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Run {
    /// Its line in the history; `None` for gated results the history does not hold.
    pub line: Option<usize>,
    pub time: Option<String>,
    pub commit: Option<String>,
    /// Per rate tested, in [`TrendPolicy::rates`] order: (events, trials).
    pub counts: Vec<(u64, u64)>,
}

/// One rate's test.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RateTrend {
    pub rate: Rate,
    /// The one-sided p-value for a rise; `None` when no run had an event (not tested).
    pub p_value: Option<f64>,
    pub method: Option<Method>,
    /// The level Holm's step-down held this p-value to.
    pub level: Option<f64>,
    /// The test found the rate rising.
    pub rising: bool,
}

/// What the trend alarm found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Trend {
    /// [`TEST`].
    pub test: &'static str,
    pub alpha: f64,
    pub setting: String,
    /// The runs asked for, and those used, oldest first (the gated results last).
    pub asked: usize,
    pub runs: Vec<Run>,
    pub rates: Vec<RateTrend>,
    pub history: String,
    /// Lines of the history skipped as damaged.
    pub warnings: Vec<String>,
}

impl Trend {
    /// Whether the alarm fired: some rate was found rising.
    pub fn fired(&self) -> bool {
        self.rates.iter().any(|r| r.rising)
    }

    /// The runs used, by their lines in the history: `lines 1-4, 6-9 of FILE`, with `and the
    /// gated results` when the history does not hold them.
    pub fn runs_text(&self) -> String {
        let lines: Vec<usize> = self.runs.iter().filter_map(|r| r.line).collect();
        let outside = self.runs.iter().any(|r| r.line.is_none());
        let mut text = match lines.len() {
            0 => String::new(),
            1 => format!("line {} of `{}`", lines[0], self.history),
            _ => format!("lines {} of `{}`", ranges(&lines), self.history),
        };
        if outside {
            text.push_str(if lines.is_empty() {
                "the gated results alone"
            } else {
                " and the gated results"
            });
        }
        text
    }

    /// The alarm in one line, for the pull-request comment: each rate's check and its figures.
    pub fn line(&self) -> String {
        self.checks()
            .iter()
            .map(|c| format!("{} {}", c.name, c.figures))
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// One check per rate tested: fails when the rate is found rising.
    pub fn checks(&self) -> Vec<Check> {
        let n = self.runs.len();
        let used = if n == self.asked {
            format!("{n} runs: {}", self.runs_text())
        } else {
            format!("{n} of the {} runs asked: {}", self.asked, self.runs_text())
        };
        let test = match self
            .rates
            .iter()
            .any(|r| r.method == Some(Method::MonteCarlo))
        {
            true => "exact Cochran-Armitage, Monte Carlo p-value",
            false => "exact Cochran-Armitage",
        };
        self.rates
            .iter()
            .map(|r| {
                let figures = match (r.p_value, r.level) {
                    _ if n < 2 => format!("not tested: the test needs 2 runs, there is {used}"),
                    (Some(p), Some(level)) => format!(
                        "{}, p={} {} {} ({test} over {used})",
                        if r.rising { "rising" } else { "not rising" },
                        super::output::p(p),
                        if r.rising { "<=" } else { ">" },
                        super::output::p(level),
                    ),
                    _ => format!("not tested: no event over {used}"),
                };
                Check {
                    name: format!("trend {}", r.rate),
                    passed: !r.rising,
                    figures,
                }
            })
            .collect()
    }
}

/// Increasing numbers as ranges: `1-4, 6, 8-9`.
fn ranges(lines: &[usize]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let mut j = i;
        while j + 1 < lines.len() && lines[j + 1] == lines[j] + 1 {
            j += 1;
        }
        parts.push(if j == i {
            lines[i].to_string()
        } else {
            format!("{}-{}", lines[i], lines[j])
        });
        i = j + 1;
    }
    parts.join(", ")
}

/// The trend of `setting` (its id) of `current`, read from `current_path`, over the history.
pub fn evaluate(
    policy: &TrendPolicy,
    current: &Results,
    current_path: &Path,
    setting: usize,
) -> anyhow::Result<Trend> {
    let id = current.setting_id(setting).to_string();
    // Unreadable now (it was just parsed): no line can be known to hold it. An empty
    // digest instead would match a hand-edited line with `"results_digest": ""`.
    let digest = crate::base::digest::file_digest(current_path).ok();
    let holds_current = |e: &Entry| digest.as_deref() == Some(e.results_digest.as_str());
    let config = current.meta.identity.digest.clone();
    let questions = questions_digest(&current.questions);
    let comparable = |e: &Entry| {
        policy.same.iter().all(|s| match s {
            Same::Config => e.config_digest == config,
            Same::Questions => e.questions_digest == questions,
        })
    };
    let earlier = policy.runs.saturating_sub(1);
    // The window before the last line holding the gated results, when one does.
    let mut before_current: Option<(usize, std::collections::VecDeque<Run>)> = None;
    let mut ring = std::collections::VecDeque::new();
    let read = file::read_last(&policy.history, 0, |line, e: Entry| {
        if holds_current(&e) {
            before_current = Some((line, ring.clone()));
        }
        if !comparable(&e) || holds_current(&e) {
            return None::<()>;
        }
        let s = e.settings.get(&id)?;
        if ring.len() == earlier {
            ring.pop_front();
        }
        if earlier > 0 {
            ring.push_back(Run {
                line: Some(line),
                time: Some(e.time.clone()),
                commit: e.commit.clone(),
                counts: policy.rates.iter().map(|&r| s.counts(r)).collect(),
            });
        }
        None
    });
    let (warnings, (line, mut runs)) = match read {
        Ok(read) => (
            read.warnings,
            before_current.map_or((None, ring), |(line, ring)| (Some(line), ring)),
        ),
        Err(FileError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => {
            (Vec::new(), (None, Default::default()))
        }
        Err(e) => anyhow::bail!(
            "cannot read the history `{}`: {e}",
            policy.history.display()
        ),
    };
    let stats = &current.stats[setting];
    let entry = crate::output::history::SettingEntry::of(stats);
    runs.push_back(Run {
        line,
        time: None,
        commit: None,
        counts: policy.rates.iter().map(|&r| entry.counts(r)).collect(),
    });
    let runs: Vec<Run> = runs.into_iter().collect();
    let rates = test_rates(policy, &runs);
    Ok(Trend {
        test: TEST,
        alpha: policy.alpha,
        setting: id,
        asked: policy.runs,
        runs,
        rates,
        history: policy.history.display().to_string(),
        warnings,
    })
}

/// Each rate's test, the rates with an event sharing `alpha` by Holm's step-down.
fn test_rates(policy: &TrendPolicy, runs: &[Run]) -> Vec<RateTrend> {
    let tests: Vec<Option<trend::TrendTest>> = (0..policy.rates.len())
        .map(|k| {
            let counts: Vec<(u64, u64)> = runs.iter().map(|r| r.counts[k]).collect();
            let t = trend::rising(&counts);
            (runs.len() >= 2 && t.events > 0).then_some(t)
        })
        .collect();
    let p: Vec<Option<f64>> = tests.iter().map(|t| t.map(|t| t.p_value)).collect();
    policy
        .rates
        .iter()
        .zip(&tests)
        .zip(holm(&p, policy.alpha))
        .map(|((&rate, t), (level, rising))| RateTrend {
            rate,
            p_value: t.map(|t| t.p_value),
            method: t.map(|t| t.method),
            level,
            rising,
        })
        .collect()
}

/// Holm's step-down over the p-values given (`None`: not tested, not counted): each one's
/// level, and whether it is rejected. The smallest is held to `alpha / m`, the next to
/// `alpha / (m - 1)`, and so on while each is rejected; the family-wise error stays at
/// `alpha` whatever the dependence between the tests.
fn holm(p: &[Option<f64>], alpha: f64) -> Vec<(Option<f64>, bool)> {
    let mut order: Vec<usize> = (0..p.len()).filter(|&i| p[i].is_some()).collect();
    order.sort_by(|&a, &b| p[a].partial_cmp(&p[b]).unwrap_or(std::cmp::Ordering::Equal));
    let m = order.len();
    let mut out = vec![(None, false); p.len()];
    let mut still = true;
    for (k, &i) in order.iter().enumerate() {
        let level = alpha / (m - k) as f64;
        still &= p[i].is_some_and(|p| p <= level);
        out[i] = (Some(level), still);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holm_steps_down_and_stops_at_the_first_kept() {
        let out = holm(&[Some(0.01), Some(0.04), None, Some(0.03)], 0.05);
        let levels: Vec<Option<f64>> = out.iter().map(|o| o.0).collect();
        assert_eq!(levels, [Some(0.05 / 3.0), Some(0.05), None, Some(0.025)]);
        let rising: Vec<bool> = out.iter().map(|o| o.1).collect();
        assert_eq!(rising, [true, false, false, false]);
        let all = holm(&[Some(0.01), Some(0.02), Some(0.05)], 0.05);
        assert!(all.iter().all(|o| o.1), "{all:?}");
    }

    #[test]
    fn lines_read_as_ranges() {
        assert_eq!(ranges(&[1, 2, 3, 4, 6, 8, 9]), "1-4, 6, 8-9");
        assert_eq!(ranges(&[5]), "5");
    }

    fn policy(runs: usize) -> TrendPolicy {
        TrendPolicy {
            runs,
            alpha: 0.05,
            same: vec![Same::Config, Same::Questions],
            rates: vec![Rate::UnwantedAnswerRate, Rate::FalseRefusalRate],
            history: "h.jsonl".into(),
        }
    }

    fn run(line: Option<usize>, unwanted: u64, refused: u64) -> Run {
        Run {
            line,
            time: None,
            commit: None,
            counts: vec![(unwanted, 10), (refused, 20)],
        }
    }

    #[test]
    fn a_rate_without_events_is_not_tested_and_leaves_the_level_to_the_others() {
        let runs: Vec<Run> = [0, 0, 1, 1, 2, 4]
            .iter()
            .enumerate()
            .map(|(i, &u)| run(Some(i + 3), u, 0))
            .collect();
        let rates = test_rates(&policy(6), &runs);
        assert_eq!(rates[1].p_value, None);
        assert_eq!(rates[0].level, Some(0.05));
        let p =
            crate::analysis::trend::rising(&runs.iter().map(|r| r.counts[0]).collect::<Vec<_>>())
                .p_value;
        assert_eq!(rates[0].p_value, Some(p));
        assert!(rates[0].rising && p < 0.05, "{p}");
        let t = Trend {
            test: TEST,
            alpha: 0.05,
            setting: "min_score=0.3,k=1".into(),
            asked: 8,
            runs,
            rates,
            history: "h.jsonl".into(),
            warnings: Vec::new(),
        };
        assert!(t.fired());
        let checks = t.checks();
        assert_eq!(checks[0].name, "trend unwanted_answer_rate");
        assert!(!checks[0].passed);
        assert_eq!(
            checks[0].figures,
            format!(
                "rising, p={} <= 0.0500 (exact Cochran-Armitage over 6 of the 8 runs asked: lines 3-8 of `h.jsonl`)",
                super::super::output::p(p)
            )
        );
        assert_eq!(
            checks[1].figures,
            "not tested: no event over 6 of the 8 runs asked: lines 3-8 of `h.jsonl`"
        );
        assert!(checks[1].passed);
        // The pull-request comment's line holds both checks, in order.
        assert_eq!(
            t.line(),
            format!(
                "trend unwanted_answer_rate {}; trend false_refusal_rate {}",
                checks[0].figures, checks[1].figures
            )
        );
    }

    #[test]
    fn one_run_is_not_tested() {
        let runs = vec![run(None, 3, 2)];
        let rates = test_rates(&policy(5), &runs);
        let t = Trend {
            test: TEST,
            alpha: 0.05,
            setting: "s".into(),
            asked: 5,
            runs,
            rates,
            history: "h.jsonl".into(),
            warnings: Vec::new(),
        };
        assert!(!t.fired());
        assert_eq!(
            t.checks()[0].figures,
            "not tested: the test needs 2 runs, there is 1 of the 5 runs asked: the gated results alone"
        );
    }
}
