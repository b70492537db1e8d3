//! The CI regression gate: one setting of a results file, held to absolute limits and compared
//! question by question with a baseline.
//!
//! Every figure is counted from the runs, never from the stored per-setting statistics, so
//! that a baseline comparison can be restricted to the questions both files share. Latency is
//! never compared: it varies from run to run.

mod compare;
pub mod junit;
pub mod mcnemar;
pub mod output;
pub mod policy;
pub mod results;

use std::path::Path;

use anyhow::{anyhow, bail, Result};

use crate::adapters::classify::Outcome;
pub use policy::{Limits, Policy, SettingSpec};
pub use results::{ResultsError, ResultsFile};

use policy::listed;
use results::{QuestionRow, RunRow};

/// A baseline that lost more than this share of its questions (removed, or moved between
/// answerable and unanswerable) is not comparable: the gate stops with exit status 2.
pub const MAX_MISSING_SHARE: f64 = 0.2;

/// What to do about a baseline that does not exist yet.
pub const NO_BASELINE_HINT: &str =
    "create it on purpose with `--update-baseline`, which copies the current results";

/// Rates within this distance are equal (they are ratios of small counts).
const EPS: f64 = 1e-9;

/// One check and its figures, as `0.333 > limit 0.250`.
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    pub name: String,
    pub passed: bool,
    pub figures: String,
}

/// A question whose outcome at the gated setting changed between baseline and results.
#[derive(Debug, Clone, PartialEq)]
pub struct Flip {
    pub id: String,
    pub before: Outcome,
    pub after: Outcome,
}

/// The comparison with a baseline.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    pub path: String,
    /// Questions in both files, compared.
    pub common: usize,
    pub added: Vec<String>,
    pub removed: Vec<String>,
    /// Questions that moved between answerable and unanswerable; not compared.
    pub changed: Vec<String>,
    /// Flipped for the worse: right -> wrong, or anything -> error.
    pub worse: Vec<Flip>,
    /// Flipped for the better.
    pub better: Vec<Flip>,
    /// Exact McNemar p-value over `worse` and `better`.
    pub p_value: f64,
    /// True when a baseline check failed; the flips are then the regression.
    pub regressed: bool,
    /// The baseline was produced with another configuration.
    pub config_changed: bool,
}

/// What the gate found.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// The gated setting's id.
    pub setting: String,
    pub results: String,
    pub questions: usize,
    pub checks: Vec<Check>,
    pub baseline: Option<Comparison>,
    pub alpha: f64,
}

impl Report {
    pub fn passed(&self) -> bool {
        self.checks.iter().all(|c| c.passed)
    }

    pub fn failed(&self) -> usize {
        self.checks.iter().filter(|c| !c.passed).count()
    }
}

/// The setting the policy gates: `--setting` / `gate.setting`, else the results' recommendation.
pub fn gated_spec(policy: &Policy, current: &ResultsFile, path: &Path) -> Result<SettingSpec> {
    if let Some(spec) = &policy.setting {
        return Ok(spec.clone());
    }
    if let Some(rec) = &current.recommended {
        return rec.id().parse().map_err(|e| {
            anyhow!(
                "`{}`: the recommended setting `{}` is not `name=value`: {e}",
                path.display(),
                rec.id()
            )
        });
    }
    let example = current
        .settings
        .first()
        .map_or("min_score=0.2,k=4", |s| s.id.as_str());
    bail!(
        "no gated setting: `{}` has no recommended setting; pass `--setting {example}` or set `gate.setting` in rageval.yaml",
        path.display()
    )
}

/// Run every check of `policy` on `current`, and compare with `baseline` when given.
pub fn evaluate(
    current: (&ResultsFile, &Path),
    baseline: Option<(&ResultsFile, &Path)>,
    policy: &Policy,
) -> Result<Report> {
    let (cur, cur_path) = current;
    let spec = gated_spec(policy, cur, cur_path)?;
    let setting = spec
        .find(cur)
        .map_err(|e| anyhow!("cannot gate `{}`: {e}", cur_path.display()))?;
    let runs = cur
        .runs_at(&setting.id)
        .map_err(|e| anyhow!("`{}` is inconsistent: {e}", cur_path.display()))?;
    let all = Figures::of(cur.questions.iter().map(|q| (q, runs[q.id.as_str()])));
    let mut checks = limit_checks(&all, &policy.limits);

    let comparison = match baseline {
        None => None,
        Some((base, base_path)) => {
            let bsetting = spec.find(base).map_err(|e| {
                anyhow!(
                    "the baseline `{}` cannot be compared at `{}`: {e}",
                    base_path.display(),
                    setting.id
                )
            })?;
            let bruns = base
                .runs_at(&bsetting.id)
                .map_err(|e| anyhow!("`{}` is inconsistent: {e}", base_path.display()))?;
            let (cmp, more) = compare::compare(cur, &runs, base, &bruns, base_path, policy)?;
            checks.extend(more);
            Some(cmp)
        }
    };
    Ok(Report {
        setting: setting.id.clone(),
        results: cur_path.display().to_string(),
        questions: cur.questions.len(),
        checks,
        baseline: comparison,
        alpha: policy.alpha,
    })
}

/// Outcome counts over some questions at one setting.
#[derive(Debug, Default, Clone, PartialEq)]
struct Figures {
    questions: u64,
    answerable: u64,
    unanswerable: u64,
    false_refusal: u64,
    unwanted_answer: u64,
    errors: u64,
    /// Answered runs of questions that have an expected answer text.
    answered_with_expectation: u64,
    /// Of those, the answers holding an expected text.
    answer_match: u64,
    /// Answers to answerable questions that are wrong.
    wrong_answer: u64,
    prompt_tokens: u64,
    /// Runs over all repeats, and those whose outcome is not their question's most frequent.
    repeat_runs: u64,
    flips: u64,
}

impl Figures {
    fn of<'a>(runs: impl IntoIterator<Item = (&'a QuestionRow, &'a RunRow)>) -> Self {
        let mut f = Figures::default();
        for (q, run) in runs {
            f.questions += 1;
            if q.answerable {
                f.answerable += 1;
            } else {
                f.unanswerable += 1;
            }
            match run.outcome {
                Outcome::FalseRefusal => f.false_refusal += 1,
                Outcome::UnwantedAnswer => f.unwanted_answer += 1,
                Outcome::Error => f.errors += 1,
                Outcome::Answer if q.answerable => {
                    if let Some(m) = run.answer_match {
                        f.answered_with_expectation += 1;
                        f.answer_match += u64::from(m);
                    }
                    f.wrong_answer += u64::from(run.wrong_answer == Some(true));
                }
                _ => {}
            }
            f.prompt_tokens += run.prompt_tokens;
            f.repeat_runs += run.repeats;
            f.flips += run.flips;
        }
        f
    }

    fn rate(&self, rate: Rate) -> Option<f64> {
        let (n, d) = match rate {
            Rate::UnwantedAnswer => (self.unwanted_answer, self.unanswerable),
            Rate::FalseRefusal => (self.false_refusal, self.answerable),
            Rate::AnswerMatch => (self.answer_match, self.answered_with_expectation),
            Rate::WrongAnswer => (self.wrong_answer, self.answerable),
        };
        (d > 0).then(|| n as f64 / d as f64)
    }
}

/// The rates a baseline comparison holds steady.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rate {
    UnwantedAnswer,
    FalseRefusal,
    AnswerMatch,
    WrongAnswer,
}

impl Rate {
    const ALL: [Rate; 4] = [
        Rate::UnwantedAnswer,
        Rate::FalseRefusal,
        Rate::AnswerMatch,
        Rate::WrongAnswer,
    ];

    fn name(self) -> &'static str {
        match self {
            Rate::UnwantedAnswer => "unwanted_answer_rate",
            Rate::FalseRefusal => "false_refusal_rate",
            Rate::AnswerMatch => "answer_match_rate",
            Rate::WrongAnswer => "wrong_answer_rate",
        }
    }

    fn higher_is_worse(self) -> bool {
        self != Rate::AnswerMatch
    }

    /// Why the rate can be undefined.
    fn undefined(self) -> &'static str {
        match self {
            Rate::UnwantedAnswer => "n/a (no unanswerable questions)",
            Rate::FalseRefusal | Rate::WrongAnswer => "n/a (no answerable questions)",
            Rate::AnswerMatch => "n/a (no answered question with an expected answer)",
        }
    }
}

fn limit_checks(f: &Figures, limits: &Limits) -> Vec<Check> {
    let mut checks = vec![Check {
        name: "error_runs".into(),
        passed: f.errors <= limits.max_error_runs,
        figures: format!(
            "{} {} limit {}",
            f.errors,
            if f.errors <= limits.max_error_runs {
                "<="
            } else {
                ">"
            },
            limits.max_error_runs
        ),
    }];
    let rate_limits = [
        (Rate::UnwantedAnswer, limits.max_unwanted_answer_rate),
        (Rate::FalseRefusal, limits.max_false_refusal_rate),
        (Rate::AnswerMatch, limits.min_answer_match_rate),
        (Rate::WrongAnswer, limits.max_wrong_answer_rate),
    ];
    for (rate, limit) in rate_limits {
        let Some(limit) = limit else { continue };
        checks.push(match f.rate(rate) {
            None => Check {
                name: rate.name().into(),
                passed: true,
                figures: rate.undefined().into(),
            },
            Some(v) => {
                let ok = if rate.higher_is_worse() {
                    v <= limit + EPS
                } else {
                    v >= limit - EPS
                };
                let op = match (rate.higher_is_worse(), ok) {
                    (true, true) => "<=",
                    (true, false) => ">",
                    (false, true) => ">=",
                    (false, false) => "<",
                };
                Check {
                    name: rate.name().into(),
                    passed: ok,
                    figures: format!("{v:.3} {op} limit {limit:.3}"),
                }
            }
        });
    }
    if let Some(limit) = limits.max_prompt_tokens_per_question {
        let per_q = if f.questions == 0 {
            0.0
        } else {
            f.prompt_tokens as f64 / f.questions as f64
        };
        let ok = per_q <= limit + EPS;
        checks.push(Check {
            name: "prompt_tokens_per_question".into(),
            passed: ok,
            figures: format!("{per_q:.1} {} limit {limit}", if ok { "<=" } else { ">" }),
        });
    }
    if let Some(limit) = limits.max_flip_rate {
        checks.push(if f.repeat_runs <= f.questions {
            Check {
                name: "flip_rate".into(),
                passed: true,
                figures: "not measured: the sweep made no repeats (`--repeat N`)".into(),
            }
        } else {
            let rate = f.flips as f64 / f.repeat_runs as f64;
            let ok = rate <= limit + EPS;
            Check {
                name: "flip_rate".into(),
                passed: ok,
                figures: format!("{rate:.3} {} limit {limit:.3}", if ok { "<=" } else { ">" }),
            }
        });
    }
    checks
}

#[cfg(test)]
mod tests;
