//! The procedure and its mode in words: a few words for every line (`at 95% by ordered
//! tests`), summary.csv's cell, and the full description for results.json and report.html.

use crate::analysis::insight::certifier::{Certification, Procedure};
use crate::analysis::insight::config::Method;
use crate::analysis::insight::format::percent_apart;
use crate::analysis::insight::rate_test::Test;

/// `ordered tests`: the procedure in a few words.
pub fn procedure(c: Certification) -> &'static str {
    let labelled = c.labels().is_some();
    match (c.method(), c.test()) {
        (Some(Method::Ordered), _) if labelled => "ordered prediction-powered tests",
        (Some(Method::Bonferroni), _) if labelled => "Bonferroni, prediction-powered tests",
        (Some(Method::Ordered), Test::Fixed) => "ordered tests",
        (Some(Method::Ordered), Test::Sequential) => "ordered anytime-valid tests",
        (Some(Method::Bonferroni), Test::Fixed) => "Bonferroni",
        (Some(Method::Bonferroni), Test::Sequential) => "Bonferroni, anytime-valid tests",
        (None, _) => "off",
    }
}

/// `at 95% by ordered tests`: the confidence and the procedure, as every line names them;
/// with labels, the labels it rests on (`at 95% by ordered prediction-powered tests on 60
/// labels`).
pub fn by(c: Certification) -> String {
    format!(
        "at {} by {}{}",
        percent_apart(c.confidence()),
        procedure(c),
        on_labels(c)
    )
}

/// ` on 60 labels`, with labels; empty without.
fn on_labels(c: Certification) -> String {
    c.labels()
        .map(|n| format!(" on {n} label{}", if n == 1 { "" } else { "s" }))
        .unwrap_or_default()
}

/// What certification promises, in words: `at most 5% of sweeps certify any setting that
/// breaks a limit` (the level, `1 - confidence`). The promise is about sweeps, not about a
/// setting once certified: a sweep that certifies nothing is one of the 95% too.
pub fn promise(c: Certification) -> String {
    let anytime = if c.test() == Test::Sequential {
        ", at whatever number of questions they stop"
    } else {
        ""
    };
    format!(
        "at most {} of sweeps certify any setting that breaks a limit{anytime}",
        percent_apart(1.0 - c.confidence())
    )
}

/// summary.csv's `certification`: `ordered tests at 95%`, or `off`.
pub fn certification_cell(c: Certification) -> String {
    if c.is_on() {
        format!(
            "{}{} at {}",
            procedure(c),
            on_labels(c),
            percent_apart(c.confidence())
        )
    } else {
        "off".into()
    }
}

/// `10 settings`.
pub(super) fn settings(n: usize) -> String {
    format!("{n} setting{}", if n == 1 { "" } else { "s" })
}

/// The tests, in words.
fn tests(p: &Procedure) -> String {
    match p.labels {
        Some(n) => format!(
            "prediction-powered tests on {n} labelled replies (every run's grade corrected by the labels into an unbiased estimate of its failure, and a bettor's wealth against the limit with Ville's inequality; Csillag et al. 2025), valid at every number of questions; a rate the labels do not grade by {}",
            exact_tests(p.sequential)
        ),
        None => exact_tests(p.sequential).to_string(),
    }
}

/// The tests without labels, in words.
fn exact_tests(sequential: bool) -> &'static str {
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
            tests(p),
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
                tests(p)
            )
        }
    }
}

/// A test's level in percent with three significant digits: `0.625%`, `2.5%`, `0.0833%`.
pub(super) fn level_text(v: f64) -> String {
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
