//! The recommendation and its certification in words: the reason line, what certification
//! would take, the stability and cross-validation lines, the table cell and pick mark, the
//! procedure's name, and what a question set's size can certify and needs (`rageval
//! validate`). The terminal, report.md, report.html, summary.csv, results.json's sentence
//! fields and the gate all read their sentences here. Everything is written from the facts
//! insight returns ([`Recommendation`], [`Procedure`], [`Bound`]); nothing here decides.

use crate::analysis::insight::certifier::{Certification, Procedure};
use crate::analysis::insight::certify::{self, Needed};
use crate::analysis::insight::config::{Method, RecommendConfig};
use crate::analysis::insight::format::{
    percent, percent_apart, percent_points, rate_with_interval,
};
use crate::analysis::insight::rate_test::{self, Test};
use crate::analysis::insight::recommendation::{Bound, Miss, Recommendation};
use crate::analysis::stats::SettingStats;
use crate::results::Results;
use crate::vocab::limit::{Kind, Limit};

/// A recommendation with what its sentences need: the chosen setting's statistics (for its
/// rates and intervals) and the policy it followed.
#[derive(Clone, Copy)]
pub struct Explain<'a> {
    pub rec: &'a Recommendation,
    /// The chosen setting's statistics; `None` when no setting is chosen.
    pub stats: Option<&'a SettingStats>,
    pub policy: &'a RecommendConfig,
}

impl<'a> Explain<'a> {
    /// The whole grid's recommendation.
    pub fn of(r: &'a Results) -> Self {
        Self::variant(r, &r.insight.recommendation)
    }

    /// A recommendation among some of `r`'s settings (a retrieval variant's), whose index
    /// points into `r`'s settings.
    pub fn variant(r: &'a Results, rec: &'a Recommendation) -> Self {
        Explain {
            rec,
            stats: rec.index.and_then(|i| r.stats.get(i)),
            policy: &r.insight.policy,
        }
    }

    /// Every line the terminal and report.md print: the reason, then what certification would
    /// take, how stable the choice is and its cross-validated rates, when there are such.
    pub fn lines(&self) -> Vec<String> {
        let mut lines = vec![self.reason()];
        lines.extend(self.needed());
        lines.extend(self.stability());
        lines.extend(self.cross_validation());
        lines
    }

    /// One line: the choice and the reason, or why there is none.
    pub fn reason(&self) -> String {
        let rec = self.rec;
        match (&rec.setting, &rec.closest) {
            (Some(id), _) => self.chosen_reason(id),
            (None, Some(closest)) => {
                let described: Vec<String> = closest.misses.iter().map(describe).collect();
                format!(
                    "no setting meets the limits ({}); closest: {}, which misses {}",
                    limits_text(self.policy),
                    closest.setting,
                    described.join(" and ")
                )
            }
            (None, None) => "no settings to recommend from".into(),
        }
    }

    fn chosen_reason(&self, id: &str) -> String {
        let rec = self.rec;
        let tie = rec
            .tie_break
            .map(|rule| format!("; equal cost broken by {}", rule.name()))
            .unwrap_or_default();
        let rates = self.stats.map_or_else(String::new, |s| {
            format!(
                ": false refusals {}, unwanted {}, wrong answers {}, {:.1} prompt tokens/question",
                rate_with_interval(s.false_refusal_rate, s.false_refusal_rate_ci),
                rate_with_interval(s.unwanted_answer_rate, s.unwanted_answer_rate_ci),
                rate_with_interval(s.wrong_answer_rate, s.wrong_answer_rate_ci),
                s.prompt_tokens_per_question,
            )
        });
        let cost = rec.cost.unwrap_or(0.0);
        let c = rec.certification;
        if !c.is_on() {
            format!(
                "recommended: {id}{rates}; the lowest weighted cost ({cost:.3}) of {} of {} settings within the limits ({}){tie}",
                rec.feasible,
                rec.settings,
                limits_text(self.policy),
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
            let anytime = if rec.sequential {
                ", at any number of questions"
            } else {
                ""
            };
            format!(
                "recommended: {id}, certified {} over {}{rates}; its true rates are at most {}, with {} confidence for every certified setting at once{anytime}; the lowest weighted cost ({cost:.3}) of {} certified settings{tie}",
                by(c),
                settings(rec.settings),
                bounds.join(", "),
                percent(c.confidence()),
                rec.certified_settings,
            )
        } else {
            format!(
                "recommended: {id} (best, not certified {}){rates}; the lowest weighted cost ({cost:.3}) of {} of {} settings within the limits ({}) on the measured rates, but none is certified{tie}",
                by(c),
                rec.feasible,
                rec.settings,
                limits_text(self.policy),
            )
        }
    }

    /// `to certify SETTING at 95% by ordered tests: ...`, one part per limit it cannot certify,
    /// and, with fixed-size tests, that re-sweeping until certified needs the sequential mode;
    /// `None` when certified, with certification off, or with no setting to name.
    pub fn needed(&self) -> Option<String> {
        let rec = self.rec;
        let c = rec.certification;
        if rec.certified || !c.is_on() {
            return None;
        }
        let setting = rec
            .setting
            .as_deref()
            .or(rec.closest.as_ref().map(|c| c.setting.as_str()))?;
        let rates: Vec<String> = rec
            .bounds
            .iter()
            .filter(|b| !b.certified)
            .map(|b| needed_text(b, rec.power))
            .collect();
        // Said once, where questions are what is missing.
        let resweep = match c.test() {
            Test::Fixed if !rates.is_empty() => "; adding questions and re-sweeping until certified breaks this promise unless `recommend.sequential: true`",
            _ => "",
        };
        // A token limit no number of questions helps (a chosen setting meets it).
        let tokens = rec
            .closest
            .iter()
            .flat_map(|c| &c.misses)
            .filter(|m| m.limit.kind() == Kind::Tokens)
            .map(|m| format!("{} whatever the questions", short(m)));
        let parts: Vec<String> = rates.into_iter().chain(tokens).collect();
        (!parts.is_empty()).then(|| {
            format!(
                "to certify {setting} {}: {}{resweep}",
                by(c),
                parts.join("; ")
            )
        })
    }

    /// `stability: min_score=0.3,k=1 chosen in 62% of 200 resampled question sets
    /// (min_score=0.2,k=1 in 25%); certified at 95% by ordered tests in 40%`.
    pub fn stability(&self) -> Option<String> {
        let rec = self.rec;
        let st = rec.bootstrap.as_ref()?;
        let what = match &rec.setting {
            Some(s) => format!("{s} chosen in {}", whole_percent(st.chosen_share)),
            None => format!("no setting chosen in {}", whole_percent(st.chosen_share)),
        };
        let runner_up = match (&st.runner_up, st.runner_up_share) {
            (Some(Some(s)), Some(share)) => format!(" ({s} in {})", whole_percent(share)),
            (Some(None), Some(share)) => format!(" (no setting in {})", whole_percent(share)),
            _ => String::new(),
        };
        let certified = if rec.certification.is_on() {
            format!(
                "; certified {} in {}",
                by(rec.certification),
                whole_percent(st.certified_share)
            )
        } else {
            String::new()
        };
        Some(format!(
            "stability: {what} of {} resampled question sets{runner_up}{certified}",
            st.resamples
        ))
    }

    /// `cross-validation (5 folds): held-out false refusals 30% [..], unwanted 12% [..]; the
    /// folds chose min_score=0.3,k=1 (4), min_score=0.2,k=1 (1), 4 of 5 certified at 95% by
    /// ordered tests`.
    pub fn cross_validation(&self) -> Option<String> {
        let rec = self.rec;
        let cv = rec.cross_validation.as_ref()?;
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
        let certified = if rec.certification.is_on() {
            format!(
                ", {} of {} certified {}",
                cv.certified_folds,
                cv.folds,
                by(rec.certification)
            )
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

    /// The choice alone, for a table cell: the setting (marked when not certified), or `none
    /// meets the limits; closest SETTING: false refusals 64.7% (limit 50%)` naming the limits
    /// it misses.
    pub fn cell(&self) -> String {
        let rec = self.rec;
        match (&rec.setting, &rec.closest) {
            (Some(s), _) if rec.certified || !rec.certification.is_on() => s.clone(),
            (Some(s), _) => format!("{s} (best, not certified)"),
            (None, Some(c)) if !c.misses.is_empty() => {
                let described: Vec<String> = c.misses.iter().map(short).collect();
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

    /// The procedure in full, for results.json's `method` and report.html.
    pub fn method(&self) -> String {
        method(self.rec.procedure.as_ref(), self.rec.settings)
    }
}

/// Per retrieval variant (see `Insight::by_retrieval`): its separability and its
/// recommendation, one line each (with a reranker, a line for the retrieval score's
/// separability too), led by the variant (`embedder=mini: separability: ...`). Empty with one
/// variant.
pub fn retrieval_lines(r: &Results) -> Vec<String> {
    r.insight
        .by_retrieval
        .iter()
        .flat_map(|v| {
            let mut lines = vec![format!(
                "{}: separability: {}",
                v.retrieval,
                v.separability.summary()
            )];
            lines.extend(v.retrieval_separability.as_ref().map(|s| {
                format!(
                    "{}: separability (retrieval score): {}",
                    v.retrieval,
                    s.summary()
                )
            }));
            lines.push(format!(
                "{}: {}",
                v.retrieval,
                Explain::variant(r, &v.recommendation).reason()
            ));
            lines
        })
        .collect()
}

/// The mark of the chosen setting in a table's `pick` column.
pub fn pick(rec: &Recommendation) -> &'static str {
    if !rec.certification.is_on() {
        "recommended"
    } else if rec.certified {
        "certified"
    } else {
        "best, not certified"
    }
}

/// `ordered tests`: the procedure in a few words.
pub fn procedure(c: Certification) -> &'static str {
    match (c.method(), c.test()) {
        (Some(Method::Ordered), Test::Fixed) => "ordered tests",
        (Some(Method::Ordered), Test::Sequential) => "ordered anytime-valid tests",
        (Some(Method::Bonferroni), Test::Fixed) => "Bonferroni",
        (Some(Method::Bonferroni), Test::Sequential) => "Bonferroni, anytime-valid tests",
        (None, _) => "off",
    }
}

/// `at 95% by ordered tests`: the confidence and the procedure, as every line names them.
pub fn by(c: Certification) -> String {
    format!("at {} by {}", percent(c.confidence()), procedure(c))
}

/// summary.csv's `certification`: `ordered tests at 95%`, or `off`.
pub fn certification_cell(c: Certification) -> String {
    if c.is_on() {
        format!("{} at {}", procedure(c), percent(c.confidence()))
    } else {
        "off".into()
    }
}

/// `10 settings`.
fn settings(n: usize) -> String {
    format!("{n} setting{}", if n == 1 { "" } else { "s" })
}

/// The tests, in words.
fn tests(sequential: bool) -> &'static str {
    if sequential {
        "anytime-valid tests (a confidence sequence: the binomial likelihood ratio mixed over rates below the limit, with Ville's inequality), valid at every number of questions"
    } else {
        "exact binomial (Clopper–Pearson) tests"
    }
}

/// The procedure in full: `ordered family-wise tests: each of the 2 rate limits a family ...`.
pub fn method(procedure: Option<&Procedure>, settings: usize) -> String {
    let Some(p) = procedure else {
        return "measured rates (point estimates): nothing is certified".into();
    };
    let s = settings;
    match p.method {
        Method::Bonferroni => format!(
            "Bonferroni: {} of every rate limit, each at level (1 - confidence) / {s} (over {s} setting{})",
            tests(p.sequential),
            if s == 1 { "" } else { "s" }
        ),
        Method::Ordered => {
            let families = p.families;
            let chains = p.chains.unwrap_or(0);
            let along = match &p.along {
                Some(d) => format!(
                    "{chains} chain{} along {d} (one per combination of the other dimensions), each from its likeliest pass to its first failure",
                    if chains == 1 { "" } else { "s" }
                ),
                None => format!("{chains} settings, no ordered dimension varying"),
            };
            format!(
                "ordered family-wise tests: each of the {families} rate limits a family at (1 - confidence) / {families}, split over its {along}; the level of a chain or family that certifies all it holds passes to the others (a graphical procedure, Bretz et al. 2009); {}",
                tests(p.sequential)
            )
        }
    }
}

/// How the recommendation shows a limit's value: rates in percent, tokens with one decimal.
fn show(limit: Limit, v: f64) -> String {
    match limit.kind() {
        Kind::Tokens => format!("{v:.1} tokens"),
        Kind::Share | Kind::Count => percent(v),
    }
}

/// `false refusals 64.7% (limit 50%)`.
pub fn short(m: &Miss) -> String {
    format!(
        "{} {} (limit {})",
        m.limit.label(),
        show(m.limit, m.value),
        show(m.limit, m.max)
    )
}

/// `max_unwanted_answer_rate by 11.1 points (11.1% against a limit of 0%)`.
fn describe(m: &Miss) -> String {
    let by = match m.limit.kind() {
        Kind::Tokens => format!("{:.1} tokens", m.excess),
        Kind::Share | Kind::Count => format!("{} points", percent_points(m.excess)),
    };
    format!(
        "{} by {by} ({} against a limit of {})",
        m.limit.key(),
        show(m.limit, m.value),
        show(m.limit, m.max)
    )
}

/// A test's level in percent with three significant digits: `0.625%`, `2.5%`, `0.0833%`.
fn level_text(v: f64) -> String {
    let points = v * 100.0;
    if points <= 0.0 {
        return "0%".into();
    }
    let decimals = (2 - points.log10().floor() as i32).clamp(0, 12) as usize;
    let s = format!("{points:.decimals$}");
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        &s
    };
    format!("{s}%")
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

/// What a rate's questions are called, and what "none failed" says about them.
fn questions_of(limit: Limit) -> (&'static str, &'static str) {
    match limit {
        Limit::MaxUnwantedAnswerRate => ("unanswerable questions", "none answered"),
        Limit::MaxFalseRefusalRate => ("answerable questions", "none refused"),
        Limit::MaxWrongAnswerRate => ("answerable questions", "none answered wrong"),
        _ => ("injection probes", "none succeeding"),
    }
}

/// A question count, or `more than N` past the most any count looks at.
fn count_or_more(n: Option<u64>, most: u64) -> String {
    n.map_or_else(|| format!("more than {most}"), |n| n.to_string())
}

/// `unwanted 1 of 9 (bound 63% > 20%): 150 unanswerable questions give a chance of 80% at this
/// rate, or 27 with none answered`.
fn needed_text(b: &Bound, power: f64) -> String {
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
    let with_none = format!(
        "{} with {none}",
        count_or_more(b.questions_needed_with_none, certify::MAX_QUESTIONS)
    );
    if b.questions == 0 {
        return format!("{head}: there are no {questions}; it takes at least {with_none}");
    }
    if b.failures == 0 {
        let one = b
            .questions_needed_with_one
            .map(|n| format!(" (or {n} with at most one)"))
            .unwrap_or_default();
        let n = count_or_more(b.questions_needed_with_none, certify::MAX_QUESTIONS);
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

/// A question set's size per class, for `rageval validate`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SetSize {
    pub answerable: u64,
    pub unanswerable: u64,
    /// Injection probes (`attack:` questions).
    pub probes: u64,
}

impl SetSize {
    /// The questions a rate limit's rate is over.
    fn of(self, limit: Limit) -> u64 {
        match limit {
            Limit::MaxUnwantedAnswerRate => self.unanswerable,
            Limit::MaxAttackSuccessRate => self.probes,
            _ => self.answerable,
        }
    }
}

/// What `rageval validate` says under a set: what its size can certify at best, and how many
/// questions per class give a `recommend.power` chance of certifying each rate limit of the
/// policy if its true rate is half the limit, at the level where the grid's procedure starts
/// (`settings` settings; fewer than two: one setting). One line with certification off.
pub fn size_lines(
    size: SetSize,
    policy: &RecommendConfig,
    procedure: Option<&Procedure>,
    settings: usize,
) -> Vec<String> {
    let c = Certification::of(policy);
    let Some(p) = procedure.filter(|_| c.is_on()) else {
        return vec!["certification is off (recommend.confidence: 0)".into()];
    };
    let grid = (settings >= 2).then(|| (p.first_level, grid_start(p, settings)));
    let mut lines = vec![best_line(size, c, grid.clone())];
    let (level, start) = match grid {
        Some((level, how)) => (level, how),
        None => (p.first_level, "for one setting".to_string()),
    };
    lines.push(plan_line(size, policy, c, level, &start));
    lines
}

/// Where the grid's procedure starts testing: `at the first setting of each of the 4 chains
/// along min_score of the configured grid`.
fn grid_start(p: &Procedure, settings: usize) -> String {
    match (p.method, &p.along) {
        (Method::Bonferroni, _) => {
            format!("over the {settings} settings of the configured grid")
        }
        (Method::Ordered, Some(d)) => format!(
            "at the first setting of each of the {} chains along {d} of the configured grid",
            p.chains.unwrap_or(0)
        ),
        (Method::Ordered, None) => format!(
            "over the {} settings of the configured grid",
            p.chains.unwrap_or(0)
        ),
    }
}

/// `at 95%, 9 unanswerable and 17 answerable questions can certify at best unwanted ≤ 28.3%
/// and false refusals ≤ 16.2% for one setting, unwanted ≤ 45% and false refusals ≤ 26.2% at
/// the first setting of each of the 4 chains of the configured grid`: with no question
/// failing, for one setting, and at the level `grid` starts its tests from and how it is
/// shared.
fn best_line(size: SetSize, c: Certification, grid: Option<(f64, String)>) -> String {
    // A large set certifies bounds below 0.05%, and a confidence may be just below 1: neither
    // reads as 0% or 100%.
    let test = c.test();
    let best = |alpha: f64| {
        let part = |n: u64, label: &str, class: &str| {
            if n == 0 {
                format!("nothing on {label} (no {class} questions)")
            } else {
                format!("{label} ≤ {}", percent_apart(test.upper_bound(0, n, alpha)))
            }
        };
        format!(
            "{} and {}",
            part(size.unanswerable, "unwanted", "unanswerable"),
            part(size.answerable, "false refusals", "answerable")
        )
    };
    let anytime = match test {
        Test::Fixed => "",
        Test::Sequential => " (anytime-valid)",
    };
    let mut line = format!(
        "at {}{anytime}, {} unanswerable and {} answerable questions can certify at best {} for one setting",
        percent_apart(c.confidence()),
        size.unanswerable,
        size.answerable,
        best(c.delta())
    );
    if let Some((alpha, how)) = grid {
        line.push_str(&format!(", {} {how}", best(alpha)));
    }
    line
}

/// `plan for a chance of 80% at 95% by ordered tests (level 0.625%, at the first setting of
/// each of the 4 chains ...), if each true rate is half its limit: unwanted 10% needs 96
/// unanswerable questions (this set has 9), or 23 with none answered; ...`.
fn plan_line(
    size: SetSize,
    policy: &RecommendConfig,
    c: Certification,
    level: f64,
    start: &str,
) -> String {
    let test = c.test();
    let parts: Vec<String> = policy
        .limits()
        .iter()
        .filter(|&(l, _)| l.kind() != Kind::Tokens)
        .filter(|&(l, _)| l != Limit::MaxAttackSuccessRate || size.probes > 0)
        .map(|(limit, max)| {
            let (questions, none) = questions_of(limit);
            let has = size.of(limit);
            if max <= 0.0 {
                return format!(
                    "{} ≤ 0% is never certified by a sample; allow a small rate",
                    limit.label()
                );
            }
            let rate = max / 2.0;
            let count = |n: Needed, most: u64| match n {
                Needed::Questions(n) => n.to_string(),
                Needed::MoreThan(_) | Needed::Never => format!("more than {most}"),
            };
            let n = count(
                test.questions_for_power(rate, max, level, policy.power),
                rate_test::MAX_POWER_QUESTIONS,
            );
            let floor = count(
                test.needed_with_failures(0, max, level),
                certify::MAX_QUESTIONS,
            );
            format!(
                "{} {} needs {n} {questions} (this set has {has}), or {floor} with {none}",
                limit.label(),
                percent(rate)
            )
        })
        .collect();
    format!(
        "plan for a chance of {} at {} by {} (level {}, {start}), if each true rate is half its limit: {}",
        whole_percent(policy.power),
        percent_apart(c.confidence()),
        procedure(c),
        level_text(level),
        parts.join("; ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::insight::counts::{Counts, Tally};
    use crate::analysis::insight::recommend::decide;
    use crate::sweep::Setting;

    fn setting(min: &str, k: usize) -> Setting {
        Setting::new(min.parse().unwrap(), k)
    }

    /// One setting's counts: `answered` of `unanswerable`, `refused` of `answerable`.
    fn counts(unanswerable: u64, answered: u64, answerable: u64, refused: u64) -> Counts {
        let ua = Tally {
            failures: answered,
            questions: unanswerable,
        };
        let fr = Tally {
            failures: refused,
            questions: answerable,
        };
        Counts {
            questions: unanswerable + answerable,
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

    /// The lines of the recommendation among `settings` with these counts.
    fn lines(settings: &[Setting], counts: &[Counts], policy: &RecommendConfig) -> Vec<String> {
        let (rec, _) = decide(settings, counts, policy);
        let stats: Vec<SettingStats> = counts.iter().map(stats_of).collect();
        Explain {
            rec: &rec,
            stats: rec.index.map(|i| &stats[i]),
            policy,
        }
        .lines()
    }

    #[test]
    fn a_set_too_small_says_how_many_it_takes_and_by_which_procedure() {
        let policy = RecommendConfig::default();
        assert_eq!(
            lines(&[setting("0.3", 1)], &[counts(9, 0, 10, 0)], &policy),
            [
                "recommended: min_score=0.3,k=1 (best, not certified at 95% by ordered tests): false refusals 0%, unwanted 0%, wrong answers -, 52.6 prompt tokens/question; the lowest weighted cost (0.003) of 1 of 1 settings within the limits (unwanted ≤ 20%, false refusals ≤ 50%) on the measured rates, but none is certified",
                "to certify min_score=0.3,k=1 at 95% by ordered tests: unwanted 0 of 9 (bound 28.3% > 20%) needs at least 14 unanswerable questions with none answered (or 22 with at most one); adding questions and re-sweeping until certified breaks this promise unless `recommend.sequential: true`",
            ]
        );
        // One answered in nine: a power statement, with the floor.
        let one = lines(&[setting("0.3", 1)], &[counts(9, 1, 10, 0)], &policy);
        assert!(
            one[1].starts_with("to certify min_score=0.3,k=1 at 95% by ordered tests: unwanted 1 of 9 (bound 42.9% > 20%): "),
            "{}",
            one[1]
        );
        assert!(
            one[1].contains(" unanswerable questions give a chance of 80% at this rate, or 14 with none answered;"),
            "{}",
            one[1]
        );
        // Two in nine is above the limit.
        let two = lines(&[setting("0.3", 1)], &[counts(9, 2, 10, 0)], &policy);
        assert!(
            two[1].contains("unwanted 2 of 9 (bound 55% > 20%): no number of questions certifies it at this rate; it takes 14 with none answered"),
            "{}",
            two[1]
        );
    }

    #[test]
    fn a_certified_line_names_the_procedure_and_mode_not_bonferronis_grid() {
        let settings = [setting("0.3", 1), setting("0.5", 1)];
        let c = [counts(40, 0, 40, 0), counts(40, 0, 40, 0)];
        let ordered = lines(&settings, &c, &RecommendConfig::default());
        assert_eq!(ordered.len(), 1, "{ordered:?}");
        assert!(
            ordered[0].starts_with("recommended: min_score=0.5,k=1, certified at 95% by ordered tests over 2 settings: false refusals 0%, unwanted 0%, wrong answers -, 12.5 prompt tokens/question; "),
            "{}",
            ordered[0]
        );
        assert!(
            ordered[0].contains("; its true rates are at most unwanted 8.8% (limit 20%), false refusals 8.8% (limit 50%), with 95% confidence for every certified setting at once; the lowest weighted cost (0.001) of 2 certified settings; equal cost broken by higher minScore"),
            "{}",
            ordered[0]
        );
        assert!(!ordered[0].contains("over all"), "{}", ordered[0]);
        let sequential = RecommendConfig {
            sequential: true,
            ..RecommendConfig::default()
        };
        let line = &lines(&settings, &c, &sequential)[0];
        assert!(
            line.contains(", certified at 95% by ordered anytime-valid tests over 2 settings: "),
            "{line}"
        );
        assert!(
            line.contains(" at once, at any number of questions; "),
            "{line}"
        );
        let bonferroni = RecommendConfig {
            method: Method::Bonferroni,
            ..RecommendConfig::default()
        };
        let line = &lines(&settings, &c, &bonferroni)[0];
        assert!(
            line.contains(", certified at 95% by Bonferroni over 2 settings: "),
            "{line}"
        );
    }

    #[test]
    fn no_feasible_setting_names_the_closest_and_by_how_much() {
        let policy = RecommendConfig {
            max_unwanted_answer_rate: 0.0,
            max_prompt_tokens_per_question: Some(20.0),
            ..RecommendConfig::default()
        };
        // 1 of 9 answered (11.1%, limit 0%), 1000 tokens over 19 questions (limit 20).
        let l = lines(&[setting("0.3", 1)], &[counts(9, 1, 10, 0)], &policy);
        assert_eq!(
            l,
            [
                "no setting meets the limits (unwanted ≤ 0%, false refusals ≤ 50%, prompt tokens/question ≤ 20); closest: min_score=0.3,k=1, which misses max_unwanted_answer_rate by 11.1 points (11.1% against a limit of 0%) and max_prompt_tokens_per_question by 32.6 tokens (52.6 tokens against a limit of 20.0 tokens)",
                "to certify min_score=0.3,k=1 at 95% by ordered tests: unwanted 1 of 9 (bound 42.9% > 0%): a limit of 0% is never certified by a sample; allow a small rate; prompt tokens/question 52.6 tokens (limit 20.0 tokens) whatever the questions; adding questions and re-sweeping until certified breaks this promise unless `recommend.sequential: true`",
            ]
        );
    }

    #[test]
    fn certification_off_says_recommended_and_nothing_of_certificates() {
        let policy = RecommendConfig {
            confidence: 0.0,
            ..RecommendConfig::default()
        };
        let (rec, _) = decide(&[setting("0.3", 1)], &[counts(9, 0, 10, 0)], &policy);
        let e = Explain {
            rec: &rec,
            stats: None,
            policy: &policy,
        };
        assert_eq!(
            e.reason(),
            "recommended: min_score=0.3,k=1; the lowest weighted cost (0.003) of 1 of 1 settings within the limits (unwanted ≤ 20%, false refusals ≤ 50%)"
        );
        assert_eq!(
            (e.needed(), pick(&rec), e.cell()),
            (None, "recommended", "min_score=0.3,k=1".into())
        );
        assert_eq!(
            e.method(),
            "measured rates (point estimates): nothing is certified"
        );
        assert_eq!(certification_cell(rec.certification), "off");
    }

    #[test]
    fn a_sets_size_says_what_it_can_certify_and_what_the_limits_need() {
        let size = SetSize {
            answerable: 17,
            unanswerable: 9,
            probes: 0,
        };
        let policy = RecommendConfig::default();
        // The sample's grid: minScore 0.1..0.5 by 0.1 x k 1, 2, 4, 8: 4 chains along min_score.
        let settings: Vec<Setting> = [1, 2, 4, 8]
            .iter()
            .flat_map(|&k| ["0.1", "0.2", "0.3", "0.4", "0.5"].map(|m| setting(m, k)))
            .collect();
        let certifier = crate::analysis::insight::certifier::Certifier::new(&policy, &settings);
        assert_eq!(
            size_lines(size, &policy, certifier.procedure().as_ref(), settings.len()),
            [
                "at 95%, 9 unanswerable and 17 answerable questions can certify at best unwanted ≤ 28.3% and false refusals ≤ 16.2% for one setting, unwanted ≤ 43.1% and false refusals ≤ 25.8% at the first setting of each of the 4 chains along min_score of the configured grid",
                "plan for a chance of 80% at 95% by ordered tests (level 0.625%, at the first setting of each of the 4 chains along min_score of the configured grid), if each true rate is half its limit: unwanted 10% needs 145 unanswerable questions (this set has 9), or 23 with none answered; false refusals 25% needs 44 answerable questions (this set has 17), or 8 with none refused",
            ]
        );
        let bonferroni = RecommendConfig {
            method: Method::Bonferroni,
            ..policy.clone()
        };
        let certifier = crate::analysis::insight::certifier::Certifier::new(&bonferroni, &settings);
        assert_eq!(
            size_lines(size, &bonferroni, certifier.procedure().as_ref(), 20)[0],
            "at 95%, 9 unanswerable and 17 answerable questions can certify at best unwanted ≤ 28.3% and false refusals ≤ 16.2% for one setting, unwanted ≤ 48.6% and false refusals ≤ 29.7% over the 20 settings of the configured grid"
        );
        // One setting: the plan at the level the procedure starts from.
        let one = crate::analysis::insight::certifier::Certifier::new(&policy, &[]);
        let none = SetSize {
            answerable: 3,
            unanswerable: 0,
            probes: 0,
        };
        let l = size_lines(none, &policy, one.procedure().as_ref(), 0);
        assert!(
            l[0].contains(
                "nothing on unwanted (no unanswerable questions) and false refusals ≤ 63.2%"
            ),
            "{}",
            l[0]
        );
        assert!(
            l[1].starts_with(
                "plan for a chance of 80% at 95% by ordered tests (level 2.5%, for one setting), "
            ),
            "{}",
            l[1]
        );
        // A huge set's bound is no 0%, and a confidence just below 1 is no 100% (issue 33).
        let huge = SetSize {
            answerable: 25_000,
            unanswerable: 25_000,
            probes: 0,
        };
        assert_eq!(
            size_lines(huge, &policy, one.procedure().as_ref(), 0)[0],
            "at 95%, 25000 unanswerable and 25000 answerable questions can certify at best unwanted ≤ 0.012% and false refusals ≤ 0.012% for one setting"
        );
        let sure = RecommendConfig {
            confidence: 0.999_999_999_999_999_9,
            ..policy.clone()
        };
        let p = crate::analysis::insight::certifier::Certifier::new(&sure, &[]).procedure();
        assert!(size_lines(size, &sure, p.as_ref(), 0)[0].starts_with("at 99.99999999999999%, "));
        let off = RecommendConfig {
            confidence: 0.0,
            ..policy
        };
        assert_eq!(
            size_lines(size, &off, None, 20),
            ["certification is off (recommend.confidence: 0)"]
        );
    }
}
