//! The pull-request comment of `gate --comment`: the verdict, the gated and the recommended
//! settings' rates before and after, the paired test, whether each is certified, tokens per
//! question, the first flipped questions, and a trend line when there is one. It starts with a
//! hidden marker by which later runs find it and update it; it stays under GitHub's limit on a
//! comment's length.

use std::fmt::Write as _;

use super::output::{cell, code, p};
use super::{Check, Report};
use crate::output::paired;
use crate::output::report::Results;
use crate::vocab::limit::Stat;

/// The hidden line by which the gate finds its own comment again.
pub const MARKER: &str = "<!-- rageval-gate-comment -->";

/// GitHub refuses a comment body of more than 65,536 characters; the body stays below.
pub const MAX_CHARS: usize = 65_000;

/// Flipped questions named before `and N more`.
const FLIPS_SHOWN: usize = 10;

/// The columns of the rates table.
const STATS: [Stat; 4] = [
    Stat::UnwantedAnswerRate,
    Stat::FalseRefusalRate,
    Stat::WrongAnswerRate,
    Stat::PromptTokensPerQuestion,
];

/// What the comment says.
pub struct Comment<'a> {
    pub report: &'a Report,
    pub current: &'a Results,
    /// The baseline the gate compared with, when it did.
    pub baseline: Option<&'a Results>,
    /// The trend alarm's line, when the gate ran one.
    pub trend: Option<String>,
}

impl Comment<'_> {
    /// The comment's Markdown, at most [`MAX_CHARS`] characters.
    pub fn body(&self) -> String {
        let r = self.report;
        let mut s = format!(
            "{MARKER}\n## rageval gate: {}\n\n",
            super::output::verdict(r)
        );
        let _ = writeln!(s, "{}\n", super::output::what_was_gated(r));
        s.push_str(&self.rates_table());
        if let Some(c) = &r.baseline {
            let _ = writeln!(
                s,
                "\nPaired test (exact McNemar) at the gated setting: {} worse, {} better, p={} (alpha {}).",
                c.worse.len(),
                c.better.len(),
                p(c.p_value),
                r.alpha
            );
        }
        let failed: Vec<&Check> = r.checks.iter().filter(|c| !c.passed).collect();
        if !failed.is_empty() {
            let _ = writeln!(s, "\n**Failed checks**\n");
            for c in failed {
                let _ = writeln!(s, "- {}: {}", cell(&c.name), cell(&c.figures));
            }
        }
        if let Some(trend) = &self.trend {
            let _ = writeln!(s, "\n**Trend**: {}", cell(trend));
        }
        let footer = format!("\n<sub>rageval {}</sub>\n", env!("CARGO_PKG_VERSION"));
        let flips = self.flips(MAX_CHARS.saturating_sub(chars(&s) + chars(&footer)));
        s.push_str(&flips);
        s.push_str(&footer);
        cap(s)
    }

    /// One row per setting shown: the gated one and the recommended one (once when they are
    /// the same), each rate before and after where the baseline holds the setting.
    fn rates_table(&self) -> String {
        let r = self.current;
        let gated = r
            .settings
            .iter()
            .position(|s| s.id() == self.report.setting);
        let recommended = r.insight.recommendation.index;
        let mut rows: Vec<(String, usize)> = Vec::new();
        match (gated, recommended) {
            (Some(g), Some(rec)) if g == rec => rows.push(("gated, recommended".into(), g)),
            (g, rec) => {
                rows.extend(g.map(|g| ("gated".to_string(), g)));
                rows.extend(rec.map(|rec| ("recommended".to_string(), rec)));
            }
        }
        let names: Vec<&str> = STATS.iter().map(|s| s.name()).collect();
        let mut s = format!("| Setting | {} | Certified |\n", names.join(" | "));
        let _ = writeln!(s, "|---|{}---|", "---|".repeat(STATS.len()));
        let shared = self.baseline.map(|b| (b, paired::shared(r, b)));
        for (label, i) in rows {
            let id = r.setting_id(i).to_string();
            let before = shared.as_ref().and_then(|(base, sh)| {
                let bs = base.settings.iter().position(|s| s.id() == id)?;
                Some(paired::pair((r, i), (base, bs), &sh.common))
            });
            let cells: Vec<String> = STATS
                .iter()
                .map(|&stat| {
                    let now = value(stat, r.stats[i].stat(stat));
                    match &before {
                        Some(p) => format!("{} -> {now}", value(stat, p.before.stat(stat))),
                        None => now,
                    }
                })
                .collect();
            let certified = if r.insight.is_certified(i) {
                "yes"
            } else {
                "no"
            };
            let _ = writeln!(
                s,
                "| {label} {} | {} | {certified} |",
                code(&id),
                cells.join(" | ")
            );
        }
        s
    }

    /// The flipped questions, the first [`FLIPS_SHOWN`] for the worse and then `and N more`,
    /// within `budget` characters.
    fn flips(&self, budget: usize) -> String {
        let Some(c) = &self.report.baseline else {
            return String::new();
        };
        let mut s = String::new();
        if !c.worse.is_empty() {
            let _ = writeln!(s, "\n**Flipped for the worse ({})**\n", c.worse.len());
            let mut shown = 0;
            for f in c.worse.iter().take(FLIPS_SHOWN) {
                let line = format!("- {}: {} -> {}\n", code(&f.id), f.before, f.after);
                // Room for this line and the `and N more` after it.
                if chars(&s) + chars(&line) + 40 > budget {
                    break;
                }
                s.push_str(&line);
                shown += 1;
            }
            if shown < c.worse.len() {
                let _ = writeln!(s, "- and {} more", c.worse.len() - shown);
            }
        }
        if !c.better.is_empty() {
            let line = format!("\nFlipped for the better: {}.\n", c.better.len());
            if chars(&s) + chars(&line) <= budget {
                s.push_str(&line);
            }
        }
        s
    }
}

/// A statistic's value as the table shows it: a rate to three places, tokens to one.
fn value(stat: Stat, v: Option<f64>) -> String {
    match (stat, v) {
        (_, None) => "-".into(),
        (Stat::PromptTokensPerQuestion, Some(v)) => format!("{v:.1}"),
        (_, Some(v)) => format!("{v:.3}"),
    }
}

fn chars(s: &str) -> usize {
    s.chars().count()
}

/// `s` cut to [`MAX_CHARS`] characters, saying so, should the parts that are not cut to fit
/// (ids, a trend line) have made it longer.
fn cap(s: String) -> String {
    if chars(&s) <= MAX_CHARS {
        return s;
    }
    let note = "\n\n(cut to fit GitHub's limit on a comment; the job's log has the whole report)\n";
    let keep = MAX_CHARS - chars(note);
    let mut cut: String = s.chars().take(keep).collect();
    cut.push_str(note);
    cut
}

#[cfg(test)]
mod tests;
