//! The comparison for people: plain text for the terminal, and the same facts as Markdown for a
//! pull request or a wiki page.

use std::fmt::Write as _;

use super::{Diff, SettingDiff};
use crate::base::text::plural;
use crate::output::gate::output::{cell, code, p, upper_first};
use crate::output::gate::policy::listed;
use crate::output::paired::RateChange;

/// How many ids a line about the question sets names before `and N more`.
const IDS_SHOWN: usize = 20;

/// A rate as printed, `-` when undefined (no question of its class).
fn rate(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.3}"))
}

/// `compared on the 26 questions in both, at the 20 settings in both`.
fn scope(d: &Diff) -> String {
    format!(
        "compared on the {} in both, at the {} in both",
        plural(d.common, "question"),
        plural(d.settings.len(), "setting")
    )
}

/// The lines about what the question sets and grids do not share, and the configuration. In
/// Markdown, ids and paths come from outside and are shown as inert code spans.
fn differences(d: &Diff, markdown: bool) -> Vec<String> {
    let mut lines = Vec::new();
    let mut list = |label: String, ids: &[String]| {
        if ids.is_empty() {
            return;
        }
        let mut shown = if markdown {
            let spans: Vec<String> = ids.iter().take(IDS_SHOWN).map(|i| code(i)).collect();
            spans.join(", ")
        } else {
            listed(ids.iter().take(IDS_SHOWN).map(String::as_str), IDS_SHOWN)
        };
        if ids.len() > IDS_SHOWN {
            let _ = write!(shown, " and {} more", ids.len() - IDS_SHOWN);
        }
        lines.push(format!("{label} ({}): {shown}", ids.len()));
    };
    let path = |p: &str| if markdown { code(p) } else { p.to_string() };
    let (before, after) = (path(&d.before.path), path(&d.after.path));
    list(format!("questions only in {before}"), &d.removed);
    list(format!("questions only in {after}"), &d.added);
    list(
        "questions moved between answerable and unanswerable, not compared".into(),
        &d.moved,
    );
    list(format!("settings only in {before}"), &d.only_before);
    list(format!("settings only in {after}"), &d.only_after);
    if d.config_changed {
        lines.push(
            "note: the two were made with different configurations (`config_digest` differs)"
                .into(),
        );
    }
    lines
}

/// `1 up, 0 down, McNemar p=1.0000`: the questions the rate gained and lost, and the test.
fn moves(r: &RateChange) -> String {
    format!("{} up, {} down, McNemar p={}", r.up, r.down, p(r.p_value))
}

/// `1 question changed (1 worse, 0 better, McNemar p=1.0000)`.
fn changed(s: &SettingDiff) -> String {
    format!(
        "{} changed ({} worse, {} better, McNemar p={})",
        plural(s.changes.len(), "question"),
        s.worse,
        s.better,
        p(s.p_value)
    )
}

/// The terminal text: what the two share, then one block per setting.
pub fn human(d: &Diff) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "compare: {} ({}) -> {} ({})",
        d.before.path,
        plural(d.before.questions, "question"),
        d.after.path,
        plural(d.after.questions, "question")
    );
    let _ = writeln!(s, "{}", scope(d));
    for line in differences(d, false) {
        let _ = writeln!(s, "{line}");
    }
    for set in &d.settings {
        let _ = writeln!(s);
        if set.changes.is_empty() {
            let rates: Vec<String> = set
                .rates
                .iter()
                .map(|r| format!("{} {}", r.stat.name(), rate(r.after)))
                .collect();
            let _ = writeln!(
                s,
                "{}: no question changed; {}",
                set.setting,
                rates.join(", ")
            );
            continue;
        }
        let _ = writeln!(s, "{}: {}", set.setting, changed(set));
        let width = set
            .rates
            .iter()
            .map(|r| r.stat.name().len())
            .max()
            .unwrap_or(0);
        for r in &set.rates {
            let _ = writeln!(
                s,
                "  {:width$}  {} -> {}  ({})",
                r.stat.name(),
                rate(r.before),
                rate(r.after),
                moves(r)
            );
        }
        for c in &set.changes {
            let _ = writeln!(s, "  {c}");
        }
        for t in &set.tags {
            let _ = writeln!(s, "  tag {t}");
        }
    }
    s
}

/// A rate's cell: its value when nothing moved, else before -> after and the test.
fn rate_cell(r: &RateChange) -> String {
    if r.up == 0 && r.down == 0 {
        rate(r.after)
    } else {
        format!(
            "{} -> {} ({} up, {} down, p={})",
            rate(r.before),
            rate(r.after),
            r.up,
            r.down,
            p(r.p_value)
        )
    }
}

/// The same facts as Markdown: a table of settings, then the changed questions of each
/// setting where any changed.
pub fn markdown(d: &Diff) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "## rageval compare\n");
    let _ = writeln!(
        s,
        "{} ({}) -> {} ({}): {}.\n",
        code(&d.before.path),
        plural(d.before.questions, "question"),
        code(&d.after.path),
        plural(d.after.questions, "question"),
        scope(d)
    );
    let differences = differences(d, true);
    for line in &differences {
        let _ = writeln!(s, "- {}", upper_first(line));
    }
    if !differences.is_empty() {
        let _ = writeln!(s);
    }
    let Some(first) = d.settings.first() else {
        return s;
    };
    let names: Vec<&str> = first.rates.iter().map(|r| r.stat.name()).collect();
    let _ = writeln!(s, "| Setting | Changed | {} |", names.join(" | "));
    let _ = writeln!(s, "|---|---|{}", "---|".repeat(names.len()));
    for set in &d.settings {
        let changed = if set.changes.is_empty() {
            "0".to_string()
        } else {
            format!(
                "{} ({} worse, {} better, p={})",
                set.changes.len(),
                set.worse,
                set.better,
                p(set.p_value)
            )
        };
        let rates: Vec<String> = set.rates.iter().map(rate_cell).collect();
        let _ = writeln!(
            s,
            "| {} | {} | {} |",
            code(&set.setting),
            cell(&changed),
            rates.join(" | ")
        );
    }
    let _ = writeln!(
        s,
        "\np: the exact McNemar test on the questions in both (of the changes for the worse against those for the better, or of the questions a rate gained, up, against those it lost, down)."
    );
    for set in d.settings.iter().filter(|set| !set.changes.is_empty()) {
        let _ = writeln!(s, "\n### {}: {}\n", code(&set.setting), changed(set));
        let _ = writeln!(s, "| Question | Before | After |\n|---|---|---|");
        for c in &set.changes {
            let _ = writeln!(s, "| {} | {} | {} |", code(&c.id), c.before, c.after);
        }
        if !set.tags.is_empty() {
            let each: Vec<String> = set.tags.iter().map(|t| cell(&t.to_string())).collect();
            let _ = writeln!(s, "\nTags: {}.", each.join("; "));
        }
    }
    s
}
