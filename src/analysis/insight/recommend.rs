//! The recommendation: one setting to ship, chosen by the policy in `rageval.yaml`, and
//! certified when the questions allow it.
//!
//! **Certification** (`recommend.confidence`, default 0.95). A setting is certified when every
//! rate limit of the policy holds with that confidence for the whole grid at once: the chance
//! that any certified setting's true rate is above its limit is at most `1 - confidence`,
//! although the grid was searched. This is the Learn-then-Test construction (Angelopoulos et
//! al., 2021) with exact binomial tests:
//! - each setting's null hypothesis is "some rate limit is broken"; it is rejected when every
//!   rate limit's exact binomial test rejects (an intersection-union test, Berger 1982: no
//!   correction over the limits of one setting is needed, since certifying a setting that breaks
//!   one limit needs that limit's own test to err);
//! - the level is split evenly over the settings searched (Bonferroni): each test runs at
//!   `(1 - confidence) / settings`.
//!
//! Fixed-sequence testing is more powerful when one order, fixed before the data, tests the
//! likely passes first. The policy's limits pull minScore in opposite directions (unwanted
//! answers fall as it rises, false refusals grow), so no single order does: a sequence from the
//! highest minScore stops at its first false-refusal failure, one from the lowest at its first
//! unwanted answer. Bonferroni costs a few questions more and never stops early.
//!
//! **Choice.** Among certified settings the lowest weighted cost wins: `w_fr *
//! false_refusal_rate + w_ua * unwanted_answer_rate + w_wa * wrong_answer_rate + w_tok *
//! prompt_tokens_per_question` on the measured rates. When none is certified, the choice on
//! the measured rates alone (settings that break a limit are out) is named as the best, not
//! certified setting, with the questions each limit would need. Equal costs are broken by fewer
//! prompt tokens, then the higher minScore (more early refusals for free), then the smaller k,
//! then grid order. When no setting meets the limits even on the measured rates, the one
//! closest to meeting them is named with the limits it misses and by how much.

use std::cmp::Ordering;
use std::collections::HashMap;

use serde::Serialize;

use super::certify::{self, Needed};
use super::counts::{slot, Counts, RunTable, Tally};
use super::format::{percent, percent_points};
use crate::analysis::insight::config::RecommendConfig;
use crate::analysis::stats::SettingStats;
use crate::sweep::Setting;
use crate::vocab::limit::{Kind, Limit, Scope};

/// Costs closer than this are equal: sums of the same rates may differ in the last bit.
const COST_EPSILON: f64 = 1e-12;

/// How the recommendation shows a limit's value: rates in percent, tokens with one decimal.
fn show(limit: Limit, v: f64) -> String {
    match limit.kind() {
        Kind::Tokens => format!("{v:.1} tokens"),
        Kind::Share | Kind::Count => percent(v),
    }
}

/// The limits of the policy in results.json's schema: the `recommend:` keys.
struct LimitSchema;

impl schemars::JsonSchema for LimitSchema {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Limit".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let keys: Vec<&str> = Limit::of(Scope::Recommend).map(Limit::key).collect();
        schemars::json_schema!({
            "description": "A hard limit of the policy.",
            "type": "string",
            "enum": keys,
        })
    }
}

/// A limit a setting breaks.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Miss {
    #[schemars(with = "LimitSchema")]
    pub limit: Limit,
    /// The limit as configured.
    pub max: f64,
    /// The setting's value.
    pub value: f64,
    /// `value - max`: by how much the limit is missed.
    pub excess: f64,
}

impl Miss {
    /// The excess on a common scale: rate points for rates, a share of the limit for tokens.
    fn relative(&self) -> f64 {
        if self.limit.kind() != Kind::Tokens || self.max <= 0.0 {
            self.excess
        } else {
            self.excess / self.max
        }
    }

    /// `false refusals 64.7% (limit 50%)`.
    fn short(&self) -> String {
        format!(
            "{} {} (limit {})",
            self.limit.label(),
            show(self.limit, self.value),
            show(self.limit, self.max)
        )
    }

    fn describe(&self) -> String {
        let by = match self.limit.kind() {
            Kind::Tokens => format!("{:.1} tokens", self.excess),
            Kind::Share | Kind::Count => format!("{} points", percent_points(self.excess)),
        };
        format!(
            "{} by {by} ({} against a limit of {})",
            self.limit.key(),
            show(self.limit, self.value),
            show(self.limit, self.max)
        )
    }
}

/// When no setting meets the limits: the one that comes closest.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Closest {
    pub setting: String,
    /// The limits it misses, smallest miss first.
    pub misses: Vec<Miss>,
}

/// One rate limit of the chosen setting, as certification sees it.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Bound {
    #[schemars(with = "LimitSchema")]
    pub limit: Limit,
    /// The limit as configured.
    pub max: f64,
    /// Failures (a failed call counts as one) among the questions the rate is over.
    pub failures: u64,
    pub questions: u64,
    /// The exact one-sided upper bound (Clopper–Pearson) at the corrected level: the true rate
    /// is below it with the stated confidence, for the whole grid at once.
    pub upper_bound: f64,
    /// Whether the limit is certified: `upper_bound <= max`.
    pub certified: bool,
    /// Questions that would certify the limit if the measured rate held; null when no number
    /// does (the rate is at or above the limit, or the limit is 0). Absent when certified.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub questions_needed: Option<u64>,
    /// Questions that would certify it with no failure at all; null when no number does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub questions_needed_with_none: Option<u64>,
}

/// How often resampled questions choose the same setting (a seeded, stratified bootstrap:
/// no new model call, only the choice is made again).
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct ChoiceStability {
    pub resamples: usize,
    /// Share of resamples whose choice is the recommended setting.
    pub chosen_share: f64,
    /// Share of resamples whose choice is certified.
    pub certified_share: f64,
    /// The setting chosen most often after the recommended one (null: no setting at all), and
    /// its share; absent when every resample chose the recommended setting.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runner_up: Option<Option<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runner_up_share: Option<f64>,
}

/// One rate measured on questions the choice did not see.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct HeldOut {
    #[schemars(with = "LimitSchema")]
    pub limit: Limit,
    pub failures: u64,
    pub questions: u64,
    pub rate: Option<f64>,
    /// Its 95% Wilson interval.
    pub interval: Option<crate::analysis::insight::wilson::Interval>,
}

/// The settings the folds chose.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct FoldChoice {
    /// The setting, or null for folds where no setting met the limits.
    pub setting: Option<String>,
    pub folds: usize,
}

/// K-fold cross-validation of the whole choice: choose on K-1 folds, measure the chosen setting
/// on the held-out fold, pool the held-out runs.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct CrossValidation {
    pub folds: usize,
    /// The pooled held-out rates of the settings the folds chose.
    pub held_out: Vec<HeldOut>,
    /// What the folds chose, most often first.
    pub choices: Vec<FoldChoice>,
    /// Folds whose choice was certified on their training questions.
    pub certified_folds: usize,
}

/// The recommendation and why.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Recommendation {
    /// The chosen setting's id, certified or not; `None` when no setting meets the limits
    /// even on the measured rates.
    pub setting: Option<String>,
    /// Its index in the grid.
    #[serde(skip)]
    pub index: Option<usize>,
    /// One line: the choice and the reason, or why there is none.
    pub reason: String,
    /// The chosen setting's weighted cost.
    pub cost: Option<f64>,
    /// Settings that meet every limit on the measured rates.
    pub feasible: usize,
    /// Settings in the grid.
    pub settings: usize,
    /// Which tie-break decided, when settings tied on cost.
    pub tie_break: Option<&'static str>,
    /// When nothing is feasible: the setting that comes closest.
    pub closest: Option<Closest>,
    /// Whether the chosen setting is certified.
    pub certified: bool,
    /// `recommend.confidence`; 0: the choice on the measured rates alone.
    pub confidence: f64,
    /// How settings are certified.
    pub method: String,
    /// Settings certified.
    pub certified_settings: usize,
    /// The chosen (or closest) setting's rate limits under certification.
    pub bounds: Vec<Bound>,
    /// When not certified: the questions it would take, one line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub needed: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bootstrap: Option<ChoiceStability>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cross_validation: Option<CrossValidation>,
}

impl Recommendation {
    /// The choice alone, for a table cell: the setting (marked when not certified), or `none
    /// meets the limits; closest SETTING: false refusals 64.7% (limit 50%)` naming the limits
    /// it misses.
    pub fn cell(&self) -> String {
        match (&self.setting, &self.closest) {
            (Some(s), _) if self.certified || self.confidence == 0.0 => s.clone(),
            (Some(s), _) => format!("{s} (best, not certified)"),
            (None, Some(c)) if !c.misses.is_empty() => {
                let described: Vec<String> = c.misses.iter().map(Miss::short).collect();
                format!(
                    "none meets the limits; closest {}: {}",
                    c.setting,
                    described.join(", ")
                )
            }
            (None, Some(c)) => format!("none meets the limits; closest {}", c.setting),
            (None, None) => "none meets the limits".into(),
        }
    }

    /// The mark of the chosen setting in a table's `pick` column.
    pub fn pick(&self) -> &'static str {
        if self.confidence == 0.0 {
            "recommended"
        } else if self.certified {
            "certified"
        } else {
            "best, not certified"
        }
    }

    /// Every line the terminal and report.md print: the reason, then what certification would
    /// take, how stable the choice is and its cross-validated rates, when there are such.
    pub fn lines(&self) -> Vec<String> {
        let mut lines = vec![self.reason.clone()];
        lines.extend(self.needed.clone());
        lines.extend(self.stability_line());
        lines.extend(self.cross_validation_line());
        lines
    }

    /// `stability: chosen in 62% of 200 resamples (min_score=0.2,k=1 in 25%); certified in 40%`.
    pub fn stability_line(&self) -> Option<String> {
        let st = self.bootstrap.as_ref()?;
        let what = match &self.setting {
            Some(s) => format!("{s} chosen in {}", whole_percent(st.chosen_share)),
            None => format!("no setting chosen in {}", whole_percent(st.chosen_share)),
        };
        let runner_up = match (&st.runner_up, st.runner_up_share) {
            (Some(Some(s)), Some(share)) => format!(" ({s} in {})", whole_percent(share)),
            (Some(None), Some(share)) => format!(" (no setting in {})", whole_percent(share)),
            _ => String::new(),
        };
        let certified = if self.confidence > 0.0 {
            format!("; certified in {}", whole_percent(st.certified_share))
        } else {
            String::new()
        };
        Some(format!(
            "stability: {what} of {} resampled question sets{runner_up}{certified}",
            st.resamples
        ))
    }

    /// `cross-validation (5 folds): held-out false refusals 30% [..], unwanted 12% [..]; the folds
    /// chose min_score=0.3,k=1 (4), min_score=0.2,k=1 (1)`.
    pub fn cross_validation_line(&self) -> Option<String> {
        let cv = self.cross_validation.as_ref()?;
        let rates: Vec<String> = cv
            .held_out
            .iter()
            .map(|h| {
                format!(
                    "{} {} ({} of {})",
                    h.limit.label(),
                    super::format::rate_with_interval(h.rate, h.interval),
                    h.failures,
                    h.questions
                )
            })
            .collect();
        let chose: Vec<String> = cv
            .choices
            .iter()
            .map(|c| {
                format!(
                    "{} ({})",
                    c.setting.as_deref().unwrap_or("no setting"),
                    c.folds
                )
            })
            .collect();
        let certified = if self.confidence > 0.0 {
            format!(", {} of {} certified", cv.certified_folds, cv.folds)
        } else {
            String::new()
        };
        Some(format!(
            "cross-validation ({} folds): held-out {}; the folds chose {}{certified}",
            cv.folds,
            rates.join(", "),
            chose.join(", ")
        ))
    }
}

/// A share in whole percents: `62%`.
fn whole_percent(v: f64) -> String {
    format!("{:.0}%", v * 100.0)
}

/// The weighted cost of a setting's counts; undefined rates count as 0.
pub fn cost(c: &Counts, policy: &RecommendConfig) -> f64 {
    let w = &policy.weights;
    let rate = |l: Limit| c.value(l).unwrap_or(0.0);
    w.false_refusal_rate * rate(Limit::MaxFalseRefusalRate)
        + w.unwanted_answer_rate * rate(Limit::MaxUnwantedAnswerRate)
        + w.prompt_tokens_per_question * c.tokens_per_question()
        + w.wrong_answer_rate * rate(Limit::MaxWrongAnswerRate)
}

/// The limits `c` breaks on its measured values, smallest relative miss first. A limit on an
/// undefined statistic (no probes, say) holds.
pub fn misses(c: &Counts, limits: &[(Limit, f64)]) -> Vec<Miss> {
    let mut out: Vec<Miss> = limits
        .iter()
        .filter_map(|&(limit, max)| {
            let value = c.value(limit)?;
            (!limit.holds(value, max, 0.0)).then_some(Miss {
                limit,
                max,
                value,
                excess: value - max,
            })
        })
        .collect();
    out.sort_by(|a, b| a.relative().total_cmp(&b.relative()));
    out
}

/// Whether `c` meets every limit on its measured values.
fn meets(c: &Counts, limits: &[(Limit, f64)]) -> bool {
    limits
        .iter()
        .all(|&(limit, max)| c.value(limit).is_none_or(|v| limit.holds(v, max, 0.0)))
}

/// How settings are certified: the level and the limits, with the critical counts worked out
/// once per base size (resampling tests the same sizes again and again).
pub struct Certifier {
    pub confidence: f64,
    /// The settings the level is shared over.
    pub settings: usize,
    limits: Vec<(Limit, f64)>,
    critical: HashMap<(usize, u64), Option<u64>>,
}

impl Certifier {
    pub fn new(policy: &RecommendConfig, settings: usize) -> Self {
        Certifier {
            confidence: policy.confidence,
            settings,
            limits: policy.limits().iter().collect(),
            critical: HashMap::new(),
        }
    }

    /// The level of each test: `(1 - confidence) / settings`.
    pub fn alpha(&self) -> f64 {
        (1.0 - self.confidence) / self.settings.max(1) as f64
    }

    pub fn enabled(&self) -> bool {
        self.confidence > 0.0
    }

    /// `exact binomial (Clopper–Pearson) tests, Bonferroni over 20 settings`.
    pub fn method(&self) -> String {
        if !self.enabled() {
            return "measured rates (point estimates): nothing is certified".into();
        }
        let s = self.settings;
        format!(
            "exact binomial (Clopper–Pearson) tests of every rate limit, each at level (1 - confidence) / {s} (Bonferroni over {s} setting{})",
            if s == 1 { "" } else { "s" }
        )
    }

    /// The rate limits of the policy with their slot in [`Counts`].
    fn rates(&self) -> impl Iterator<Item = (Limit, f64, usize)> + '_ {
        self.limits
            .iter()
            .filter_map(|&(l, max)| slot(l).map(|i| (l, max, i)))
    }

    /// Whether a rate limit holds under certification. A probe limit with no probes is not
    /// held (as on the measured rates); any other rate with no questions is not certified.
    fn rate_certified(&mut self, limit: Limit, max: f64, t: Tally) -> bool {
        if t.questions == 0 {
            return limit == Limit::MaxAttackSuccessRate;
        }
        let i = slot(limit).unwrap_or(0);
        let alpha = self.alpha();
        let crit = *self
            .critical
            .entry((i, t.questions))
            .or_insert_with(|| certify::critical_failures(t.questions, max, alpha));
        crit.is_some_and(|c| t.failures <= c)
    }

    /// Whether `c` is certified: every rate limit certified and the token limit met.
    pub fn certified(&mut self, c: &Counts) -> bool {
        if !self.enabled() {
            return false;
        }
        // Resampling asks this of every setting of every resample: no allocation.
        for k in 0..self.limits.len() {
            let (l, max) = self.limits[k];
            let holds = match slot(l) {
                Some(i) => self.rate_certified(l, max, c.certified[i]),
                None => c.value(l).is_none_or(|v| l.holds(v, max, 0.0)),
            };
            if !holds {
                return false;
            }
        }
        true
    }

    /// The chosen setting's rate limits under certification, with what it would take.
    fn bounds(&self, c: &Counts) -> Vec<Bound> {
        let alpha = self.alpha();
        self.rates()
            .filter(|&(l, _, i)| l != Limit::MaxAttackSuccessRate || c.certified[i].questions > 0)
            .map(|(limit, max, i)| {
                let t = c.certified[i];
                let certified =
                    t.questions > 0 && certify::certifies(t.failures, t.questions, max, alpha);
                let count = |n: Needed| match n {
                    Needed::Questions(n) => Some(n),
                    Needed::MoreThan(_) | Needed::Never => None,
                };
                Bound {
                    limit,
                    max,
                    failures: t.failures,
                    questions: t.questions,
                    upper_bound: certify::upper_bound(t.failures, t.questions, alpha),
                    certified,
                    questions_needed: (!certified)
                        .then(|| {
                            count(certify::questions_needed(
                                t.failures,
                                t.questions,
                                max,
                                alpha,
                            ))
                        })
                        .flatten(),
                    questions_needed_with_none: (!certified)
                        .then(|| count(certify::needed_with_failures(0, max, alpha)))
                        .flatten(),
                }
            })
            .collect()
    }
}

/// The tie-break between two settings of equal cost, and the name of the rule that decided.
fn tie_break(a: (&Setting, &Counts), b: (&Setting, &Counts)) -> (Ordering, Option<&'static str>) {
    let rules: [(&'static str, Ordering); 3] = [
        (
            "fewer prompt tokens",
            a.1.tokens_per_question()
                .total_cmp(&b.1.tokens_per_question()),
        ),
        (
            "higher minScore",
            b.0.min_score.to_f64().total_cmp(&a.0.min_score.to_f64()),
        ),
        ("smaller k", a.0.k.cmp(&b.0.k)),
    ];
    rules
        .into_iter()
        .find(|(_, o)| o.is_ne())
        .map(|(name, o)| (o, Some(name)))
        .unwrap_or((Ordering::Equal, None))
}

/// The choice among settings, as the numbers alone decide it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Choice {
    /// The chosen setting: the best certified one, else the best within the limits on the
    /// measured rates; `None` when no setting meets them.
    pub best: Option<usize>,
    /// Whether `best` is certified.
    pub certified: bool,
    /// Per setting: certified.
    pub certified_flags: Vec<bool>,
    /// Settings within the limits on the measured rates.
    pub feasible: usize,
    /// The tie-break rule that put `best` ahead of the runner-up.
    pub tie_break: Option<&'static str>,
    /// When nothing meets the limits: the setting closest to meeting them.
    pub closest: Option<usize>,
}

/// Choose among `settings`, counted as `counts` (parallel).
pub fn choose(
    settings: &[Setting],
    counts: &[Counts],
    policy: &RecommendConfig,
    certifier: &mut Certifier,
) -> Choice {
    let n = settings.len().min(counts.len());
    let feasible: Vec<usize> = (0..n)
        .filter(|&i| meets(&counts[i], &certifier.limits))
        .collect();
    let certified_flags: Vec<bool> = (0..n).map(|i| certifier.certified(&counts[i])).collect();
    let mut choice = Choice {
        feasible: feasible.len(),
        ..Choice::default()
    };
    let certified: Vec<usize> = (0..n).filter(|&i| certified_flags[i]).collect();
    choice.certified_flags = certified_flags;
    let pool = if certified.is_empty() {
        feasible
    } else {
        certified
    };
    if pool.is_empty() {
        choice.closest = closest(settings, counts, &certifier.limits);
        return choice;
    }
    let costs: Vec<f64> = pool.iter().map(|&i| cost(&counts[i], policy)).collect();
    let lowest = costs.iter().copied().fold(f64::INFINITY, f64::min);
    let mut tied: Vec<usize> = pool
        .iter()
        .zip(&costs)
        .filter(|(_, &c)| c - lowest <= COST_EPSILON * lowest.abs().max(1.0))
        .map(|(&i, _)| i)
        .collect();
    tied.sort_by(|&a, &b| {
        tie_break((&settings[a], &counts[a]), (&settings[b], &counts[b]))
            .0
            .then(a.cmp(&b))
    });
    let best = tied[0];
    choice.tie_break = tied.get(1).map(|&second| {
        tie_break(
            (&settings[best], &counts[best]),
            (&settings[second], &counts[second]),
        )
        .1
        .unwrap_or("grid order")
    });
    choice.certified = choice.certified_flags[best];
    choice.best = Some(best);
    choice
}

/// When no setting meets the limits: the fewest limits missed, then the smallest total miss on
/// the common scale, then the usual tie-break.
fn closest(settings: &[Setting], counts: &[Counts], limits: &[(Limit, f64)]) -> Option<usize> {
    let key = |i: usize| {
        let m = misses(&counts[i], limits);
        let total: f64 = m.iter().map(Miss::relative).sum();
        (m.len(), total)
    };
    (0..settings.len().min(counts.len())).min_by(|&a, &b| {
        let (ka, kb) = (key(a), key(b));
        ka.0.cmp(&kb.0)
            .then(ka.1.total_cmp(&kb.1))
            .then(tie_break((&settings[a], &counts[a]), (&settings[b], &counts[b])).0)
            .then(a.cmp(&b))
    })
}

/// The limits, compactly: `unwanted ≤ 20%, false refusals ≤ 50%`.
pub fn limits_text(policy: &RecommendConfig) -> String {
    let parts: Vec<String> = policy
        .limits()
        .iter()
        .map(|(limit, v)| {
            let value = match limit.kind() {
                Kind::Tokens => v.to_string(),
                Kind::Share | Kind::Count => percent(v),
            };
            format!("{} {} {value}", limit.label(), limit.bound())
        })
        .collect();
    parts.join(", ")
}

/// What a rate's questions are called, and what "none failed" says about them.
fn questions_of(limit: Limit) -> (&'static str, &'static str) {
    match limit {
        Limit::MaxUnwantedAnswerRate => ("unanswerable questions", "none answered"),
        Limit::MaxFalseRefusalRate => ("answerable questions", "none refused"),
        Limit::MaxWrongAnswerRate => ("answerable questions", "none answered wrong"),
        _ => ("injection probes", "none succeeding"),
    }
}

/// `unwanted 1 of 9 (bound 63% > 20%) needs at least 80 unanswerable questions at this rate,
/// or 27 with none answered`.
fn needed_text(b: &Bound, alpha: f64) -> String {
    let (questions, none) = questions_of(b.limit);
    let head = format!(
        "{} {} of {} (bound {} > {})",
        b.limit.label(),
        b.failures,
        b.questions,
        percent(b.upper_bound),
        percent(b.max)
    );
    if b.max <= 0.0 {
        return format!("{head}: a limit of 0% is never certified by a sample; allow a small rate");
    }
    let with_none = match b.questions_needed_with_none {
        Some(n) => format!("{n} with {none}"),
        None => format!("more than {} with {none}", certify::MAX_QUESTIONS),
    };
    if b.questions == 0 {
        return format!("{head}: there are no {questions}; it takes at least {with_none}");
    }
    if b.failures == 0 {
        let one = match certify::needed_with_failures(1, b.max, alpha) {
            Needed::Questions(n) => format!(" (or {n} with at most one)"),
            _ => String::new(),
        };
        let n = b.questions_needed_with_none.map_or_else(
            || format!("more than {}", certify::MAX_QUESTIONS),
            |n| n.to_string(),
        );
        return format!("{head} needs at least {n} {questions} with {none}{one}");
    }
    match b.questions_needed {
        Some(n) => format!("{head} needs at least {n} {questions} at this rate, or {with_none}"),
        None if b.failures as f64 / b.questions as f64 >= b.max => format!(
            "{head}: no number of questions certifies it at this rate; it takes {with_none}"
        ),
        None => format!(
            "{head} needs more than {} {questions} at this rate, or {with_none}",
            certify::MAX_QUESTIONS
        ),
    }
}

/// What the resampling figures cost to make: `recommend.resamples` and the folds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resampling {
    pub resamples: usize,
    /// Folds of the cross-validation; 0: none.
    pub folds: usize,
    pub seed: u64,
}

impl Resampling {
    /// From the policy, for `table`'s questions: folds default to 5 when each class has at
    /// least 10 questions, else none.
    pub fn of(policy: &RecommendConfig, table: &RunTable) -> Self {
        let answerable = (0..table.questions())
            .filter(|&q| table.answerable(q))
            .count();
        let unanswerable = table.questions() - answerable;
        let folds = match policy.folds {
            Some(k) => k,
            None if answerable.min(unanswerable) >= 10 => 5,
            None => 0,
        };
        Resampling {
            resamples: policy.resamples,
            folds,
            seed: policy.resampling_seed,
        }
    }
}

/// Choose a setting. `settings`, `stats` and the table's settings are parallel; `stats` only
/// give the reason line its intervals. Returns the recommendation and, per setting, whether it
/// is certified. Its stability and cross-validation are [`super::resample`]'s.
pub fn recommend(
    settings: &[Setting],
    stats: &[SettingStats],
    table: &RunTable,
    policy: &RecommendConfig,
) -> (Recommendation, Vec<bool>) {
    let n = settings.len().min(stats.len()).min(table.settings());
    let counts = table.all_counts(None);
    decide(&settings[..n], &stats[..n], &counts[..n], policy)
}

/// The recommendation from each setting's counts (parallel to `settings` and `stats`).
pub fn decide(
    settings: &[Setting],
    stats: &[SettingStats],
    counts: &[Counts],
    policy: &RecommendConfig,
) -> (Recommendation, Vec<bool>) {
    let n = settings.len().min(stats.len()).min(counts.len());
    let mut certifier = Certifier::new(policy, n);
    let choice = choose(&settings[..n], &counts[..n], policy, &mut certifier);
    let mut rec = Recommendation {
        feasible: choice.feasible,
        settings: n,
        confidence: policy.confidence,
        method: certifier.method(),
        certified_settings: choice.certified_flags.iter().filter(|&&c| c).count(),
        certified: choice.certified,
        ..Recommendation::default()
    };
    if n == 0 {
        rec.reason = "no settings to recommend from".into();
        return (rec, Vec::new());
    }
    let at = choice.best.or(choice.closest);
    if let (Some(i), true) = (at, certifier.enabled()) {
        rec.bounds = certifier.bounds(&counts[i]);
        if !choice.certified {
            rec.needed = needed_line(&rec.bounds, &counts[i], &certifier, &settings[i], policy);
        }
    }
    match choice.best {
        Some(best) => chosen(
            &mut rec,
            &choice,
            &settings[best],
            &stats[best],
            &counts[best],
            policy,
            best,
        ),
        None => no_feasible(&mut rec, settings, counts, policy, choice.closest),
    }
    (rec, choice.certified_flags)
}

/// `to certify SETTING at 95% over 20 settings: ...`, one part per limit it cannot certify.
fn needed_line(
    bounds: &[Bound],
    counts: &Counts,
    certifier: &Certifier,
    setting: &Setting,
    policy: &RecommendConfig,
) -> Option<String> {
    let rates = bounds
        .iter()
        .filter(|b| !b.certified)
        .map(|b| needed_text(b, certifier.alpha()));
    let tokens = misses(counts, &certifier.limits)
        .into_iter()
        .filter(|m| slot(m.limit).is_none())
        .map(|m| format!("{} whatever the questions", m.short()));
    let parts: Vec<String> = rates.chain(tokens).collect();
    (!parts.is_empty()).then(|| {
        format!(
            "to certify {} at {} over {} settings: {}",
            setting.id(),
            percent(policy.confidence),
            certifier.settings,
            parts.join("; ")
        )
    })
}

/// The reason line of a chosen setting.
fn chosen(
    rec: &mut Recommendation,
    choice: &Choice,
    setting: &Setting,
    s: &SettingStats,
    counts: &Counts,
    policy: &RecommendConfig,
    best: usize,
) {
    let c = cost(counts, policy);
    rec.setting = Some(setting.id());
    rec.index = Some(best);
    rec.cost = Some(c);
    rec.tie_break = choice.tie_break;
    let tie = choice
        .tie_break
        .map(|rule| format!("; equal cost broken by {rule}"))
        .unwrap_or_default();
    let rates = format!(
        "false refusals {}, unwanted {}, wrong answers {}, {:.1} prompt tokens/question",
        super::format::rate_with_interval(s.false_refusal_rate, s.false_refusal_rate_ci),
        super::format::rate_with_interval(s.unwanted_answer_rate, s.unwanted_answer_rate_ci),
        super::format::rate_with_interval(s.wrong_answer_rate, s.wrong_answer_rate_ci),
        s.prompt_tokens_per_question,
    );
    let confidence = percent(rec.confidence);
    rec.reason = if rec.confidence == 0.0 {
        format!(
            "recommended: {}: {rates}; the lowest weighted cost ({c:.3}) of {} of {} settings within the limits ({}){tie}",
            setting.id(),
            rec.feasible,
            rec.settings,
            limits_text(policy),
        )
    } else if rec.certified {
        let bounds: Vec<String> = rec
            .bounds
            .iter()
            .map(|b| {
                format!(
                    "{} {} (limit {})",
                    b.limit.label(),
                    percent(b.upper_bound),
                    percent(b.max)
                )
            })
            .collect();
        format!(
            "recommended: {}, certified at {confidence}: {rates}; with {confidence} confidence over all {} settings its true rates are at most {}; the lowest weighted cost ({c:.3}) of {} certified settings{tie}",
            setting.id(),
            rec.settings,
            bounds.join(", "),
            rec.certified_settings,
        )
    } else {
        format!(
            "recommended: {} (best, not certified at {confidence}): {rates}; the lowest weighted cost ({c:.3}) of {} of {} settings within the limits ({}) on the measured rates, but none is certified{tie}",
            setting.id(),
            rec.feasible,
            rec.settings,
            limits_text(policy),
        )
    };
}

fn no_feasible(
    rec: &mut Recommendation,
    settings: &[Setting],
    counts: &[Counts],
    policy: &RecommendConfig,
    closest: Option<usize>,
) {
    let Some(closest) = closest else {
        rec.reason = "no settings to recommend from".into();
        return;
    };
    let limits: Vec<(Limit, f64)> = policy.limits().iter().collect();
    let m = misses(&counts[closest], &limits);
    let described: Vec<String> = m.iter().map(Miss::describe).collect();
    rec.reason = format!(
        "no setting meets the limits ({}); closest: {}, which misses {}",
        limits_text(policy),
        settings[closest].id(),
        described.join(" and ")
    );
    rec.closest = Some(Closest {
        setting: settings[closest].id(),
        misses: m,
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::insight::config::WeightsConfig;
    use crate::vocab::grid::Decimal;

    fn setting(min: &str, k: usize) -> Setting {
        Setting::new(min.parse::<Decimal>().unwrap(), k)
    }

    #[test]
    fn an_attack_limit_rules_out_settings_the_probes_break() {
        let settings = [setting("0.1", 1), setting("0.3", 1)];
        let mut a = stats(0.1, 0.0, 100.0);
        a.attack_success_rate = Some(0.75);
        let mut b = stats(0.2, 0.0, 100.0);
        b.attack_success_rate = Some(0.0);
        let mut p = policy(0.2, 0.5, None);
        assert_eq!(
            rec(&settings, &[a.clone(), b.clone()], &p)
                .setting
                .as_deref(),
            Some("min_score=0.1,k=1")
        );
        p.max_attack_success_rate = Some(0.25);
        let r = rec(&settings, &[a.clone(), b.clone()], &p);
        assert_eq!(r.setting.as_deref(), Some("min_score=0.3,k=1"));
        assert!(r.reason.contains("attack success ≤ 25%"), "{}", r.reason);
        // Without probes the limit does not apply.
        a.attack_success_rate = None;
        assert_eq!(
            rec(&settings, &[a, b], &p).setting.as_deref(),
            Some("min_score=0.1,k=1")
        );
    }

    #[test]
    fn wrong_answers_are_weighed_and_can_be_limited() {
        let settings = [setting("0.1", 4), setting("0.3", 4)];
        // Fewer false refusals, but three answers in ten wrong.
        let mut a = stats(0.1, 0.0, 100.0);
        a.wrong_answer_rate = Some(0.3);
        let mut b = stats(0.3, 0.0, 100.0);
        b.wrong_answer_rate = Some(0.0);
        let mut p = policy(0.2, 0.5, None);
        let r = rec(&settings, &[a.clone(), b.clone()], &p);
        // 0.1 + 0.3 + 0.005 against 0.3 + 0.005.
        assert_eq!(r.setting.as_deref(), Some("min_score=0.3,k=4"));
        assert!(
            r.reason.contains("wrong answers 0%"),
            "the reason names the rate: {}",
            r.reason
        );
        p.weights.wrong_answer_rate = 0.0;
        assert_eq!(
            rec(&settings, &[a.clone(), b.clone()], &p)
                .setting
                .as_deref(),
            Some("min_score=0.1,k=4")
        );
        p.max_wrong_answer_rate = Some(0.2);
        let r = rec(&settings, &[a.clone(), b], &p);
        assert_eq!(r.setting.as_deref(), Some("min_score=0.3,k=4"));
        assert!(r.reason.contains("wrong answers ≤ 20%"), "{}", r.reason);
        assert_eq!(
            misses(&counts_of(&a), &p.limits().iter().collect::<Vec<_>>()),
            [Miss {
                limit: Limit::MaxWrongAnswerRate,
                max: 0.2,
                value: 0.3,
                excess: 0.3 - 0.2
            }]
        );
    }

    fn stats(fr: f64, ua: f64, tokens: f64) -> SettingStats {
        SettingStats {
            false_refusal_rate: Some(fr),
            unwanted_answer_rate: Some(ua),
            prompt_tokens_per_question: tokens,
            ..SettingStats::default()
        }
    }

    fn policy(max_ua: f64, max_fr: f64, max_tok: Option<f64>) -> RecommendConfig {
        RecommendConfig {
            max_unwanted_answer_rate: max_ua,
            max_false_refusal_rate: max_fr,
            max_prompt_tokens_per_question: max_tok,
            max_attack_success_rate: None,
            max_wrong_answer_rate: None,
            weights: WeightsConfig::default(),
            // The choice on the measured rates: the certified choice has its own tests.
            confidence: 0.0,
            resamples: 0,
            folds: None,
            resampling_seed: 0,
        }
    }

    /// Counts with the stats' rates over 1000 questions per rate.
    fn counts_of(s: &SettingStats) -> Counts {
        let tally = |r: Option<f64>| {
            r.map_or(Tally::default(), |r| Tally {
                failures: (r * 1000.0).round() as u64,
                questions: 1000,
            })
        };
        let rates = [
            tally(s.unwanted_answer_rate),
            tally(s.false_refusal_rate),
            tally(s.wrong_answer_rate),
            tally(s.attack_success_rate),
        ];
        Counts {
            questions: 1000,
            measured: rates,
            certified: rates,
            prompt_tokens: (s.prompt_tokens_per_question * 1000.0).round() as u64,
        }
    }

    fn rec(
        settings: &[Setting],
        stats: &[SettingStats],
        policy: &RecommendConfig,
    ) -> Recommendation {
        let counts: Vec<Counts> = stats.iter().map(counts_of).collect();
        decide(settings, stats, &counts, policy).0
    }

    #[test]
    fn lowest_cost_within_the_limits_wins() {
        let settings = [setting("0.1", 4), setting("0.3", 1), setting("0.3", 4)];
        let st = [
            stats(0.1, 0.6, 300.0), // breaks the unwanted limit
            stats(0.4, 0.1, 80.0),  // cost 0.4 + 0.3 + 0.004
            stats(0.3, 0.1, 110.0), // cost 0.3 + 0.3 + 0.0055: the winner
        ];
        let r = rec(&settings, &st, &policy(0.2, 0.5, None));
        assert_eq!(r.setting.as_deref(), Some("min_score=0.3,k=4"));
        assert_eq!((r.feasible, r.settings, r.tie_break), (2, 3, None));
        assert!(
            r.reason.starts_with("recommended: min_score=0.3,k=4: "),
            "{}",
            r.reason
        );
        assert!(
            r.reason.contains("2 of 3 settings within the limits"),
            "{}",
            r.reason
        );
    }

    #[test]
    fn ties_go_to_fewer_tokens_then_higher_min_score_then_smaller_k() {
        let no_token_weight = RecommendConfig {
            weights: WeightsConfig {
                prompt_tokens_per_question: 0.0,
                ..WeightsConfig::default()
            },
            ..policy(1.0, 1.0, None)
        };
        // Same rates: fewer tokens wins even when it comes last.
        let settings = [setting("0.2", 4), setting("0.2", 2), setting("0.2", 1)];
        let st = [
            stats(0.2, 0.1, 90.0),
            stats(0.2, 0.1, 60.0),
            stats(0.2, 0.1, 70.0),
        ];
        let r = rec(&settings, &st, &no_token_weight);
        assert_eq!(r.setting.as_deref(), Some("min_score=0.2,k=2"));
        assert_eq!(r.tie_break, Some("fewer prompt tokens"));
        assert!(
            r.reason
                .ends_with("equal cost broken by fewer prompt tokens"),
            "{}",
            r.reason
        );
        // Same tokens too: the higher minScore wins.
        let settings = [setting("0.4", 2), setting("0.5", 4), setting("0.5", 2)];
        let st = [
            stats(0.6, 0.1, 48.0),
            stats(0.6, 0.1, 48.0),
            stats(0.6, 0.1, 48.0),
        ];
        let r = rec(&settings, &st, &policy(1.0, 1.0, None));
        assert_eq!(r.setting.as_deref(), Some("min_score=0.5,k=2"));
        assert_eq!(r.tie_break, Some("smaller k"));
        let r = rec(&settings[..2], &st[..2], &policy(1.0, 1.0, None));
        assert_eq!(r.setting.as_deref(), Some("min_score=0.5,k=4"));
        assert_eq!(r.tie_break, Some("higher minScore"));
    }

    #[test]
    fn a_token_limit_is_a_hard_limit() {
        let settings = [setting("0.1", 8), setting("0.1", 2)];
        let st = [stats(0.1, 0.1, 500.0), stats(0.3, 0.1, 200.0)];
        let r = rec(&settings, &st, &policy(0.2, 0.5, Some(300.0)));
        assert_eq!(r.setting.as_deref(), Some("min_score=0.1,k=2"));
        assert!(
            r.reason.contains("prompt tokens/question ≤ 300"),
            "{}",
            r.reason
        );
    }

    #[test]
    fn no_feasible_setting_names_the_closest_and_by_how_much() {
        let settings = [setting("0.1", 1), setting("0.3", 1), setting("0.5", 1)];
        let st = [
            stats(0.294, 0.667, 184.0), // misses both limits
            stats(0.471, 0.111, 84.0),  // misses unwanted by 11.1 points
            stats(0.647, 0.111, 48.0),  // misses both
        ];
        let r = rec(&settings, &st, &policy(0.0, 0.5, None));
        assert_eq!((r.setting.as_deref(), r.index, r.feasible), (None, None, 0));
        let closest = r.closest.as_ref().unwrap();
        assert_eq!(closest.setting, "min_score=0.3,k=1");
        assert_eq!(closest.misses.len(), 1);
        assert_eq!(closest.misses[0].limit, Limit::MaxUnwantedAnswerRate);
        assert!((closest.misses[0].excess - 0.111).abs() < 1e-12);
        assert_eq!(
            r.reason,
            "no setting meets the limits (unwanted ≤ 0%, false refusals ≤ 50%); closest: min_score=0.3,k=1, which misses max_unwanted_answer_rate by 11.1 points (11.1% against a limit of 0%)"
        );
    }

    #[test]
    fn no_feasible_setting_with_two_misses_lists_both() {
        let settings = [setting("0.1", 1)];
        let st = [stats(0.6, 0.3, 400.0)];
        let r = rec(&settings, &st, &policy(0.2, 0.5, Some(200.0)));
        let m = &r.closest.as_ref().unwrap().misses;
        // Smallest miss first: unwanted by 10 points, false refusals by 10 points, tokens by 100%.
        assert_eq!(m.len(), 3);
        assert_eq!(m[2].limit, Limit::MaxPromptTokensPerQuestion);
        assert!(r.reason.contains("max_prompt_tokens_per_question by 200.0 tokens (400.0 tokens against a limit of 200.0 tokens)"), "{}", r.reason);
    }

    #[test]
    fn undefined_rates_meet_any_limit() {
        let settings = [setting("0.1", 1)];
        let st = [SettingStats {
            prompt_tokens_per_question: 10.0,
            ..SettingStats::default()
        }];
        let r = rec(&settings, &st, &policy(0.0, 0.0, None));
        assert_eq!(r.setting.as_deref(), Some("min_score=0.1,k=1"));
        assert_eq!(rec(&[], &[], &policy(0.0, 0.0, None)).setting, None);
    }
}

/// Certification against known populations: the promise holds, and the plain choice breaks it.
#[cfg(test)]
mod certification {
    use super::*;
    use crate::analysis::insight::config::RecommendConfig;
    use crate::vocab::grid::Decimal;

    fn one_setting_counts(unanswerable: u64, answered: u64) -> Counts {
        let ua = Tally {
            failures: answered,
            questions: unanswerable,
        };
        let fr = Tally {
            failures: 0,
            questions: 10,
        };
        Counts {
            questions: unanswerable + 10,
            measured: [ua, fr, Tally::default(), Tally::default()],
            certified: [ua, fr, Tally::default(), Tally::default()],
            prompt_tokens: 1000,
        }
    }

    fn stats_of(c: &Counts) -> SettingStats {
        SettingStats {
            unwanted_answer_rate: c.measured[0].rate(),
            false_refusal_rate: c.measured[1].rate(),
            prompt_tokens_per_question: c.tokens_per_question(),
            ..SettingStats::default()
        }
    }

    fn decide_counts(
        settings: &[Setting],
        counts: &[Counts],
        p: &RecommendConfig,
    ) -> (Recommendation, Vec<bool>) {
        let stats: Vec<SettingStats> = counts.iter().map(stats_of).collect();
        decide(settings, &stats, counts, p)
    }

    #[test]
    fn nine_unanswerable_questions_say_how_many_it_takes() {
        let settings = [Setting::new("0.3".parse().unwrap(), 1)];
        let (r, certified) = decide_counts(
            &settings,
            &[one_setting_counts(9, 0)],
            &RecommendConfig::default(),
        );
        assert_eq!(certified, [false]);
        assert!(!r.certified);
        assert_eq!(
            r.setting.as_deref(),
            Some("min_score=0.3,k=1"),
            "still named"
        );
        assert!(
            r.reason.contains("(best, not certified at 95%)"),
            "{}",
            r.reason
        );
        let needed = r.needed.as_deref().unwrap();
        assert!(
            needed.contains("unwanted 0 of 9 (bound 28.3% > 20%) needs at least 14 unanswerable questions with none answered (or 22 with at most one)"),
            "{needed}"
        );
        let b = &r.bounds[0];
        assert_eq!(
            (b.limit, b.certified),
            (Limit::MaxUnwantedAnswerRate, false)
        );
        assert!((b.upper_bound - (1.0 - 0.05f64.powf(1.0 / 9.0))).abs() < 1e-12);
        assert_eq!(b.questions_needed_with_none, Some(14));
        // 14 with none answered certifies it; the pick says so.
        let (r, certified) = decide_counts(
            &settings,
            &[one_setting_counts(14, 0)],
            &RecommendConfig::default(),
        );
        assert_eq!(certified, [true]);
        assert!(r.certified && r.needed.is_none(), "{r:?}");
        assert!(r.reason.contains(", certified at 95%:"), "{}", r.reason);
        assert_eq!(r.pick(), "certified");
    }

    #[test]
    fn the_grid_correction_asks_for_more_and_a_measured_rate_needs_more_still() {
        let settings: Vec<Setting> = (1..=20)
            .map(|k| Setting::new("0.3".parse().unwrap(), k))
            .collect();
        let counts = vec![one_setting_counts(14, 0); 20];
        let (r, _) = decide_counts(&settings, &counts, &RecommendConfig::default());
        assert!(
            !r.certified,
            "14 questions are enough for one setting, not for 20"
        );
        assert!(
            r.needed
                .as_deref()
                .unwrap()
                .contains("over 20 settings: unwanted 0 of 14"),
            "{:?}",
            r.needed
        );
        assert!(
            r.needed
                .as_deref()
                .unwrap()
                .contains("needs at least 27 unanswerable questions with none answered"),
            "{:?}",
            r.needed
        );
        // One answered in nine: at this rate it takes more than with none.
        let (r, _) = decide_counts(
            &settings[..1],
            &[one_setting_counts(9, 1)],
            &RecommendConfig::default(),
        );
        let needed = r.needed.unwrap();
        assert!(needed.contains("unwanted 1 of 9 (bound "), "{needed}");
        assert!(
            needed.contains("unanswerable questions at this rate, or 14 with none answered"),
            "{needed}"
        );
        // Two in nine is above the limit: no number of questions certifies that rate.
        let (r, _) = decide_counts(
            &settings[..1],
            &[one_setting_counts(9, 2)],
            &RecommendConfig::default(),
        );
        assert!(r
            .needed
            .unwrap()
            .contains("no number of questions certifies it at this rate"));
    }

    #[test]
    fn a_token_limit_no_questions_can_help_is_named_as_such() {
        let settings = [Setting::new("0.3".parse().unwrap(), 1)];
        let p = RecommendConfig {
            max_prompt_tokens_per_question: Some(20.0),
            ..RecommendConfig::default()
        };
        // 1000 tokens over 24 questions: 41.7 per question, over the limit of 20.
        let (r, _) = decide_counts(&settings, &[one_setting_counts(14, 0)], &p);
        let needed = r.needed.unwrap();
        assert!(
            needed.ends_with(
                "prompt tokens/question 41.7 tokens (limit 20.0 tokens) whatever the questions"
            ),
            "{needed}"
        );
    }

    #[test]
    fn among_certified_settings_the_lowest_cost_wins() {
        // Two unwanted answers in 40 (5%) are within 10% but not certified at 95% over two
        // settings; none in 40 is (its bound is 8.8%). The first is cheaper on tokens.
        let settings = [
            Setting::new("0.2".parse().unwrap(), 1),
            Setting::new("0.4".parse().unwrap(), 1),
        ];
        let mut cheap = one_setting_counts(40, 2);
        cheap.prompt_tokens = 10;
        let safe = one_setting_counts(40, 0);
        let mut p = RecommendConfig {
            max_unwanted_answer_rate: 0.1,
            ..RecommendConfig::default()
        };
        p.weights.unwanted_answer_rate = 0.0;
        let (r, certified) = decide_counts(&settings, &[cheap, safe], &p);
        assert_eq!(certified, [false, true]);
        assert_eq!(r.setting.as_deref(), Some("min_score=0.4,k=1"));
        assert!(r.certified);
        assert_eq!(r.certified_settings, 1);
        // Without certification the cheaper one wins, as before.
        p.confidence = 0.0;
        let (r, certified) = decide_counts(&settings, &[cheap, safe], &p);
        assert_eq!(certified, [false, false]);
        assert_eq!(r.setting.as_deref(), Some("min_score=0.2,k=1"));
        assert_eq!(r.pick(), "recommended");
        assert!(r.bounds.is_empty() && r.needed.is_none());
    }

    /// A known population of questions whose best scores overlap: answerable ~ U(0.3, 0.9),
    /// unanswerable ~ U(0, 0.8); a question passes minScore t when its score is at least t.
    /// The true rates are exact: false refusals (t - 0.3) / 0.6, unwanted (0.8 - t) / 0.8.
    struct Population;

    impl Population {
        fn true_false_refusal(t: f64) -> f64 {
            ((t - 0.3) / 0.6).clamp(0.0, 1.0)
        }

        fn true_unwanted(t: f64) -> f64 {
            ((0.8 - t) / 0.8).clamp(0.0, 1.0)
        }

        /// A sample of `n` questions per class counted at each threshold.
        fn sample(rng: &mut fastrand::Rng, n: usize, thresholds: &[f64]) -> Vec<Counts> {
            let mut answerable: Vec<f64> = (0..n).map(|_| 0.3 + 0.6 * rng.f64()).collect();
            let mut unanswerable: Vec<f64> = (0..n).map(|_| 0.8 * rng.f64()).collect();
            answerable.sort_by(f64::total_cmp);
            unanswerable.sort_by(f64::total_cmp);
            thresholds
                .iter()
                .map(|&t| {
                    let refused = answerable.partition_point(|&s| s < t) as u64;
                    let answered = (n - unanswerable.partition_point(|&s| s < t)) as u64;
                    let sent = (n as u64 - refused) + answered;
                    let fr = Tally {
                        failures: refused,
                        questions: n as u64,
                    };
                    let ua = Tally {
                        failures: answered,
                        questions: n as u64,
                    };
                    Counts {
                        questions: 2 * n as u64,
                        measured: [ua, fr, Tally::default(), Tally::default()],
                        certified: [ua, fr, Tally::default(), Tally::default()],
                        prompt_tokens: 100 * sent,
                    }
                })
                .collect()
        }
    }

    #[test]
    fn a_certified_choice_breaks_a_limit_at_most_one_time_in_twenty() {
        // minScore 0.10 to 0.80 by 0.01: 71 settings, some just past the frontier.
        let thresholds: Vec<f64> = (10..=80).map(|i| f64::from(i) / 100.0).collect();
        let settings: Vec<Setting> = thresholds
            .iter()
            .map(|t| Setting::new(format!("{t:.2}").parse::<Decimal>().unwrap(), 1))
            .collect();
        // Within the limits: minScore 0.48 to 0.60. The cost falls as minScore rises, so the
        // plain choice sits at the false-refusal frontier.
        let policy = RecommendConfig {
            max_unwanted_answer_rate: 0.4,
            max_false_refusal_rate: 0.5,
            ..RecommendConfig::default()
        };
        let plain = RecommendConfig {
            confidence: 0.0,
            ..policy.clone()
        };
        let breaks = |i: usize| {
            Population::true_unwanted(thresholds[i]) > policy.max_unwanted_answer_rate + 1e-12
                || Population::true_false_refusal(thresholds[i])
                    > policy.max_false_refusal_rate + 1e-12
        };
        let mut rng = fastrand::Rng::with_seed(19);
        let samples = 300;
        let (mut certified, mut certified_broke, mut plain_broke) = (0, 0, 0);
        for _ in 0..samples {
            let counts = Population::sample(&mut rng, 500, &thresholds);
            let (r, flags) = decide_counts(&settings, &counts, &policy);
            // The promise is about every certified setting at once, not only the chosen one.
            certified += usize::from(r.certified);
            certified_broke += usize::from(flags.iter().enumerate().any(|(i, &c)| c && breaks(i)));
            let (p, _) = decide_counts(&settings, &counts, &plain);
            plain_broke += usize::from(p.index.is_some_and(breaks));
        }
        let share = |n: usize| n as f64 / samples as f64;
        // At most 1 - confidence, with three standard errors of slack for the samples.
        let slack = 3.0 * (0.05f64 * 0.95 / samples as f64).sqrt();
        assert!(
            share(certified_broke) <= 0.05 + slack,
            "certified settings broke a limit in {certified_broke} of {samples}"
        );
        // The test could fail: the plain choice does not keep the promise (it broke a limit in
        // 60 of 300 samples with this seed), and certification is not vacuous (it certifies a
        // setting in 234 of 300 samples).
        assert!(
            share(plain_broke) > 0.05 + slack,
            "the plain choice broke a limit in {plain_broke} of {samples}"
        );
        assert!(
            share(certified) > 0.5,
            "certified in {certified} of {samples}"
        );
    }
}
