//! The gate's report for people: a plain-text summary for the terminal and CI logs, and the same
//! facts as Markdown for pull requests and `GITHUB_STEP_SUMMARY`.

use std::fmt::Write as _;

use super::{Comparison, Report};
use crate::base::text::plural;

/// A p-value as printed: four decimals, or scientific notation when smaller.
pub fn p(v: f64) -> String {
    if v >= 0.0001 || v == 0.0 {
        format!("{v:.4}")
    } else {
        format!("{v:.1e}")
    }
}

fn status(passed: bool) -> &'static str {
    if passed {
        "PASS"
    } else {
        "FAIL"
    }
}

pub fn verdict(r: &Report) -> String {
    if r.passed() {
        format!("PASS ({})", plural(r.checks.len(), "check"))
    } else {
        format!(
            "FAIL ({} of {} failed)",
            r.failed(),
            plural(r.checks.len(), "check")
        )
    }
}

/// What changed in the question set, when anything did.
fn set_changes(c: &Comparison) -> Option<String> {
    if c.added.is_empty() && c.removed.is_empty() && c.changed.is_empty() {
        return None;
    }
    let list = |ids: &[String]| {
        let mut text = ids
            .iter()
            .take(10)
            .map(|id| code(id))
            .collect::<Vec<_>>()
            .join(", ");
        if ids.len() > 10 {
            let _ = write!(text, " and {} more", ids.len() - 10);
        }
        text
    };
    let mut parts = Vec::new();
    if !c.added.is_empty() {
        parts.push(format!("{} added ({})", c.added.len(), list(&c.added)));
    }
    if !c.removed.is_empty() {
        parts.push(format!(
            "{} removed ({})",
            c.removed.len(),
            list(&c.removed)
        ));
    }
    if !c.changed.is_empty() {
        parts.push(format!(
            "{} moved between answerable and unanswerable ({})",
            c.changed.len(),
            list(&c.changed)
        ));
    }
    Some(format!(
        "questions since the baseline: {}; compared on the {} in both",
        parts.join(", "),
        c.common
    ))
}

fn paired_test(c: &Comparison, alpha: f64) -> String {
    format!(
        "paired test (exact McNemar): {} worse, {} better, p={} (alpha {alpha})",
        c.worse.len(),
        c.better.len(),
        p(c.p_value)
    )
}

/// The terminal summary: one line per check, then the flipped questions.
pub fn human(r: &Report) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "gate: setting {} of {} ({})",
        r.setting,
        r.results,
        plural(r.questions, "question")
    );
    if let Some(c) = &r.baseline {
        let _ = writeln!(
            s,
            "baseline: {} ({} compared)",
            c.path,
            plural(c.common, "question")
        );
    }
    for c in &r.checks {
        let _ = writeln!(s, "{}  {} {}", status(c.passed), c.name, c.figures);
    }
    if let Some(c) = &r.baseline {
        if let Some(line) = set_changes(c) {
            let _ = writeln!(s, "{line}");
        }
        if c.config_changed {
            let _ = writeln!(
                s,
                "note: the baseline was made with another configuration (`config_digest` differs)"
            );
        }
        if !c.worse.is_empty() {
            let _ = writeln!(
                s,
                "flipped for the worse at {} ({}):",
                r.setting,
                c.worse.len()
            );
            let width = c.worse.iter().map(|f| f.id.len()).max().unwrap_or(0);
            for f in &c.worse {
                let _ = writeln!(s, "  {:width$}  {} -> {}", f.id, f.before, f.after);
            }
        }
        if !c.better.is_empty() {
            let ids = super::listed(c.better.iter().map(|f| f.id.as_str()), 10);
            let _ = writeln!(s, "flipped for the better ({}): {ids}", c.better.len());
        }
        if let Some(line) = tags_line(c) {
            let _ = writeln!(s, "{line}");
        }
        let _ = writeln!(s, "{}", paired_test(c, r.alpha));
    }
    let _ = writeln!(s, "gate: {}", verdict(r));
    s
}

/// Text for a Markdown table cell: pipes escaped, one line.
pub fn cell(text: &str) -> String {
    inert(text).replace('|', "\\|").replace(['\n', '\r'], " ")
}

/// Text from outside (a question id, a tag, a setting's profile name) as Markdown that shows
/// it and does nothing else: on GitHub it pings no one (`@` is followed by a zero-width
/// space), links nowhere (no `[...](...)`, and `://` and `www.` are broken so no bare URL
/// links itself), opens no HTML tag, entity or code span, and refers to no issue (`#`).
/// Emphasis is left alone: it changes how text looks, not what it does.
pub fn inert(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let next = chars.peek().copied();
        match c {
            '\\' | '[' | ']' | '`' => {
                out.push('\\');
                out.push(c);
            }
            '@' => out.push_str("@&#8203;"),
            '#' => out.push_str("&#35;"),
            '<' if next.is_some_and(|n| n.is_ascii_alphabetic() || "/!?".contains(n)) => {
                out.push_str("&lt;")
            }
            '&' if next.is_some_and(|n| n.is_ascii_alphanumeric() || n == '#') => {
                out.push_str("&amp;")
            }
            _ => out.push(c),
        }
    }
    out.replace("://", ":&#8203;//")
        .replace("www.", "www&#8203;.")
        .replace("WWW.", "WWW&#8203;.")
}

/// An identifier in a code span, which shows it as it is: no mention, link or markup inside
/// a code span works. The fence is one backtick longer than the longest run inside, padded
/// with a space when the text starts or ends with a backtick.
pub fn code(text: &str) -> String {
    let text = text.replace(['\n', '\r'], " ").replace('|', "\\|");
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    let pad = if text.starts_with('`') || text.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{text}{pad}{fence}")
}

/// `Setting `min_score=0.2,k=4` of `now.json` (26 questions), baseline `base.json` (26
/// questions compared).`, in Markdown.
pub fn what_was_gated(r: &Report) -> String {
    let gated = format!(
        "Setting {} of {} ({})",
        code(&r.setting),
        code(&r.results),
        plural(r.questions, "question")
    );
    match &r.baseline {
        Some(c) => format!(
            "{gated}, baseline {} ({} compared).",
            code(&c.path),
            plural(c.common, "question")
        ),
        None => format!("{gated}, no baseline."),
    }
}

/// The same facts as Markdown: a table of checks and a table of flipped questions.
pub fn markdown(r: &Report) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "## rageval gate: {}\n", verdict(r));
    let _ = writeln!(s, "{}\n", what_was_gated(r));
    let _ = writeln!(s, "| Check | Result | Figures |\n|---|---|---|");
    for c in &r.checks {
        let result = if c.passed { "PASS" } else { "**FAIL**" };
        let _ = writeln!(s, "| {} | {result} | {} |", cell(&c.name), cell(&c.figures));
    }
    if let Some(c) = &r.baseline {
        if !c.worse.is_empty() {
            let _ = writeln!(
                s,
                "\n### Flipped for the worse at {} ({})\n",
                code(&r.setting),
                c.worse.len()
            );
            let _ = writeln!(s, "| Question | Before | After |\n|---|---|---|");
            for f in &c.worse {
                let _ = writeln!(s, "| {} | {} | {} |", code(&f.id), f.before, f.after);
            }
        }
        let _ = writeln!(s);
        if let Some(line) = set_changes(c) {
            let _ = writeln!(s, "{}.\n", upper_first(&line));
        }
        if !c.better.is_empty() {
            let ids: Vec<String> = c.better.iter().map(|f| code(&f.id)).collect();
            let _ = writeln!(
                s,
                "Flipped for the better ({}): {}.\n",
                c.better.len(),
                ids.join(", ")
            );
        }
        if let Some(line) = tags_line(c) {
            let _ = writeln!(s, "{}.\n", upper_first(&cell(&line)));
        }
        let _ = writeln!(s, "{}.", upper_first(&paired_test(c, r.alpha)));
    }
    s
}

/// The tags whose rate got worse since the baseline, when any did.
fn tags_line(c: &Comparison) -> Option<String> {
    if c.tags_worse.is_empty() {
        return None;
    }
    let each: Vec<String> = c.tags_worse.iter().map(ToString::to_string).collect();
    Some(format!(
        "tags whose rate got worse since the baseline ({}): {}",
        c.tags_worse.len(),
        each.join("; ")
    ))
}

pub fn upper_first(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn p_values_print_readably() {
        assert_eq!(p(0.0625), "0.0625");
        assert_eq!(p(1.0), "1.0000");
        assert_eq!(p(0.00001234), "1.2e-5");
    }

    #[test]
    fn cells_cannot_break_a_table() {
        assert_eq!(cell("a|b\nc"), "a\\|b c");
        assert_eq!(code("x|y"), "`x\\|y`");
        assert_eq!(code("x`y"), "``x`y``");
        assert_eq!(code("`x``"), "``` `x`` ```");
        assert_eq!(code("a\nb"), "`a b`");
    }

    #[test]
    fn text_from_outside_is_shown_not_obeyed() {
        assert_eq!(inert("@all"), "@&#8203;all");
        assert_eq!(inert("[x](y)"), "\\[x\\](y)");
        assert_eq!(
            inert("see https://e.example"),
            "see https:&#8203;//e.example"
        );
        assert_eq!(inert("www.e.example"), "www&#8203;.e.example");
        assert_eq!(
            inert("<img src=x> &amp; #7"),
            "&lt;img src=x> &amp;amp; &#35;7"
        );
        // What the gate itself writes stays as it was.
        assert_eq!(inert("0.235 > 0.176 <= 1 - x"), "0.235 > 0.176 <= 1 - x");
    }
}
