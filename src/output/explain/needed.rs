//! What certifying the choice would take: per limit it cannot certify, its count and bound
//! and how many questions give a `recommend.power` chance, or the floor with none failing.

use super::procedure::by;
use super::reason::short;
use super::{questions_of, whole_percent, Explain};
use crate::analysis::insight::certify;
use crate::analysis::insight::format::percent;
use crate::analysis::insight::rate_test::{self, Test};
use crate::analysis::insight::recommendation::Bound;
use crate::vocab::limit::Kind;

impl Explain<'_> {
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
}

/// A question count, or `more than N` past the most any count looks at.
pub(super) fn count_or_more(n: Option<u64>, most: u64) -> String {
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
    if let Some(n) = b.labels {
        return format!(
            "{head}, tested on {n} labelled replies: more labels, or more questions, narrow the bound"
        );
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
