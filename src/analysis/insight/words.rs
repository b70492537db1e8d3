//! The recommendation in words: the reason line, what certification would take, the
//! stability and cross-validation lines, the table cell and pick mark, and the procedure's
//! name. Everything here is written from the facts in [`Recommendation`] and the certifier.

use super::certifier::{Certification, Certifier};
use super::certify::{self, Needed};
use super::config::{Method, RecommendConfig};
use super::format::{percent, percent_points, rate_with_interval};
use super::rate_test::{self, Test};
use super::recommendation::{Bound, Miss, Recommendation};
use crate::analysis::stats::SettingStats;
use crate::sweep::Setting;
use crate::vocab::limit::{Kind, Limit};

/// How the recommendation shows a limit's value: rates in percent, tokens with one decimal.
fn show(limit: Limit, v: f64) -> String {
    match limit.kind() {
        Kind::Tokens => format!("{v:.1} tokens"),
        Kind::Share | Kind::Count => percent(v),
    }
}

impl Miss {
    /// `false refusals 64.7% (limit 50%)`.
    pub fn short(&self) -> String {
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

impl Recommendation {
    /// The choice alone, for a table cell: the setting (marked when not certified), or `none
    /// meets the limits; closest SETTING: false refusals 64.7% (limit 50%)` naming the limits
    /// it misses.
    pub fn cell(&self) -> String {
        match (&self.setting, &self.closest) {
            (Some(s), _) if self.certified || !self.certification.is_on() => s.clone(),
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
        if !self.certification.is_on() {
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
        let certified = if self.certification.is_on() {
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
                    rate_with_interval(h.rate, h.interval),
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
        let certified = if self.certification.is_on() {
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

/// The tests, in words.
fn tests(test: Test) -> &'static str {
    match test {
        Test::Fixed => "exact binomial (Clopper–Pearson) tests",
        Test::Sequential => "anytime-valid tests (a confidence sequence: the binomial likelihood ratio mixed over rates below the limit, with Ville's inequality), valid at every number of questions",
    }
}

/// The procedure, for results.json's `method` and report.html.
pub fn method(c: &Certifier) -> String {
    let Certification::On { method, test, .. } = c.certification else {
        return "measured rates (point estimates): nothing is certified".into();
    };
    let s = c.settings;
    match method {
        Method::Bonferroni => format!(
            "Bonferroni: {} of every rate limit, each at level (1 - confidence) / {s} (over {s} setting{})",
            tests(test),
            if s == 1 { "" } else { "s" }
        ),
        Method::Ordered => {
            let families = c.rates().len();
            let chains = if families > 0 { c.chains(0).len() } else { 0 };
            let along = match c.along {
                Some(d) => format!(
                    "{chains} chain{} along {d} (one per combination of the other dimensions), each from its likeliest pass to its first failure",
                    if chains == 1 { "" } else { "s" }
                ),
                None => format!("{chains} settings, no ordered dimension varying"),
            };
            format!(
                "ordered family-wise tests: each of the {families} rate limits a family at (1 - confidence) / {families}, split over its {along}; the level of a chain or family that certifies all it holds passes to the others (a graphical procedure, Bretz et al. 2009); {}",
                tests(test)
            )
        }
    }
}

/// `ordered tests`: the procedure in a few words, for the lines (and the gate's).
pub fn procedure(c: Certification) -> &'static str {
    match (c.method(), c.test()) {
        (Some(Method::Ordered), Test::Fixed) => "ordered tests",
        (Some(Method::Ordered), Test::Sequential) => "ordered anytime-valid tests",
        (Some(Method::Bonferroni), Test::Fixed) => "Bonferroni",
        (Some(Method::Bonferroni), Test::Sequential) => "Bonferroni, anytime-valid tests",
        (None, _) => "off",
    }
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

/// `unwanted 1 of 9 (bound 63% > 20%): 150 unanswerable questions give an 80% chance at this
/// rate, or 27 with none answered`.
fn needed_text(b: &Bound, test: Test, alpha: f64, power: f64) -> String {
    let (questions, none) = questions_of(b.limit);
    let over = if b.upper_bound > b.max { ">" } else { "≤" };
    let stopped = b
        .stopped_at
        .as_ref()
        .map(|at| format!("; its chain stopped at {at}"))
        .unwrap_or_default();
    let head = format!(
        "{} {} of {} (bound {} {over} {}{stopped})",
        b.limit.label(),
        b.failures,
        b.questions,
        percent(b.upper_bound),
        percent(b.max)
    );
    if let (Some(at), false) = (&b.stopped_at, b.upper_bound > b.max) {
        return format!("{head}: it is tested once {at} is certified");
    }
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
        let one = match test.needed_with_failures(1, b.max, alpha) {
            Needed::Questions(n) => format!(" (or {n} with at most one)"),
            _ => String::new(),
        };
        let n = b.questions_needed_with_none.map_or_else(
            || format!("more than {}", certify::MAX_QUESTIONS),
            |n| n.to_string(),
        );
        return format!("{head} needs at least {n} {questions} with {none}{one}");
    }
    let chance = whole_percent(power);
    match b.questions_needed {
        Some(n) => format!(
            "{head}: {n} {questions} give a chance of {chance} at this rate, or {with_none}"
        ),
        None if b.failures as f64 / b.questions as f64 >= b.max => format!(
            "{head}: no number of questions certifies it at this rate; it takes {with_none}"
        ),
        None => format!(
            "{head}: more than {} {questions} at this rate, or {with_none}",
            rate_test::MAX_POWER_QUESTIONS
        ),
    }
}

/// `to certify SETTING at 95% (ordered tests): ...`, one part per limit it cannot certify,
/// and, with fixed-size tests, that re-sweeping until certified needs the sequential mode.
pub fn needed_line(
    rec: &Recommendation,
    certifier: &Certifier,
    tokens: &[Miss],
    setting: &Setting,
    policy: &RecommendConfig,
) -> Option<String> {
    let c = certifier.certification;
    let rates: Vec<String> = rec
        .bounds
        .iter()
        .filter(|b| !b.certified)
        .map(|b| needed_text(b, c.test(), b.level, policy.power))
        .collect();
    // Said once, where questions are what is missing.
    let resweep = match c.test() {
        Test::Fixed if !rates.is_empty() => "; adding questions and re-sweeping until certified breaks this promise unless `recommend.sequential: true`",
        _ => "",
    };
    let tokens = tokens
        .iter()
        .map(|m| format!("{} whatever the questions", m.short()));
    let parts: Vec<String> = rates.into_iter().chain(tokens).collect();
    (!parts.is_empty()).then(|| {
        format!(
            "to certify {} at {} ({}): {}{resweep}",
            setting.id(),
            percent(c.confidence()),
            procedure(c),
            parts.join("; "),
        )
    })
}

/// The reason line of a chosen setting.
pub fn chosen_reason(
    rec: &Recommendation,
    setting: &Setting,
    s: &SettingStats,
    cost: f64,
    policy: &RecommendConfig,
) -> String {
    let tie = rec
        .tie_break
        .map(|rule| format!("; equal cost broken by {}", rule.name()))
        .unwrap_or_default();
    let rates = format!(
        "false refusals {}, unwanted {}, wrong answers {}, {:.1} prompt tokens/question",
        rate_with_interval(s.false_refusal_rate, s.false_refusal_rate_ci),
        rate_with_interval(s.unwanted_answer_rate, s.unwanted_answer_rate_ci),
        rate_with_interval(s.wrong_answer_rate, s.wrong_answer_rate_ci),
        s.prompt_tokens_per_question,
    );
    let confidence = percent(rec.confidence);
    let anytime = if rec.sequential {
        ", valid at any number of questions"
    } else {
        ""
    };
    if !rec.certification.is_on() {
        format!(
            "recommended: {}: {rates}; the lowest weighted cost ({cost:.3}) of {} of {} settings within the limits ({}){tie}",
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
            "recommended: {}, certified at {confidence}: {rates}; with {confidence} confidence over all {} settings{anytime} its true rates are at most {}; the lowest weighted cost ({cost:.3}) of {} certified settings{tie}",
            setting.id(),
            rec.settings,
            bounds.join(", "),
            rec.certified_settings,
        )
    } else {
        format!(
            "recommended: {} (best, not certified at {confidence}): {rates}; the lowest weighted cost ({cost:.3}) of {} of {} settings within the limits ({}) on the measured rates, but none is certified{tie}",
            setting.id(),
            rec.feasible,
            rec.settings,
            limits_text(policy),
        )
    }
}

/// `no setting meets the limits (...); closest: SETTING, which misses ...`.
pub fn no_feasible_reason(policy: &RecommendConfig, closest: &Setting, misses: &[Miss]) -> String {
    let described: Vec<String> = misses.iter().map(Miss::describe).collect();
    format!(
        "no setting meets the limits ({}); closest: {}, which misses {}",
        limits_text(policy),
        closest.id(),
        described.join(" and ")
    )
}
