//! `report.md`: the summary as Markdown, short enough to paste into a pull-request comment.
//!
//! A big grid would make a comment nobody reads, so past [`MAX_ROWS`] settings only the
//! recommended and Pareto-optimal ones are listed; summary.csv has them all.

use std::io::Write;

use anyhow::Result;

use super::{Exporter, Results, Summary};
use crate::analysis::insight::format::rate_with_interval;
use crate::base::text::plural;

pub struct MarkdownReport;

/// Settings listed in full up to this many.
pub const MAX_ROWS: usize = 30;

/// Make text safe inside a Markdown table cell: no column breaks, no inline HTML.
fn cell(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace('|', "\\|")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace(['\n', '\r'], " ")
}

impl Exporter for MarkdownReport {
    fn file_name(&self) -> &'static str {
        "report.md"
    }

    fn write(&self, r: &Results, out: &mut dyn Write) -> Result<()> {
        self.write_with(r, &Summary::of(r), out)
    }

    fn write_with(&self, r: &Results, summary: &Summary, out: &mut dyn Write) -> Result<()> {
        // Names, ids and texts come from files: their control characters are shown escaped.
        let mut text = Vec::new();
        write_report(r, summary, MAX_ROWS, &mut text)?;
        let text = String::from_utf8(text)?;
        out.write_all(crate::base::safe_text::visible(&text).as_bytes())?;
        Ok(())
    }
}

/// The report, listing every setting when there are at most `max_rows`.
fn write_report(r: &Results, s: &Summary, max_rows: usize, out: &mut dyn Write) -> Result<()> {
    head(r, s, out)?;
    settings_table(r, max_rows, out)?;
    tags_table(r, out)?;
    separability(r, s, out)?;
    notes(s, out)
}

/// The title, the swept profiles and the recommendation.
fn head(r: &Results, s: &Summary, out: &mut dyn Write) -> Result<()> {
    writeln!(
        out,
        "### rageval: {} x {}\n",
        plural(s.questions, "question"),
        plural(s.settings, "setting")
    )?;
    for line in &s.profiles {
        writeln!(out, "{}\n", cell(line))?;
    }
    // The summary's recommendation lines: the reason first.
    let reason = s.recommendation.first().map_or("", String::as_str);
    match &r.insight.recommendation.setting {
        Some(id) => {
            let rest = reason
                .strip_prefix(&format!("recommended: {id}"))
                .unwrap_or(reason);
            writeln!(out, "**Recommended: `{}`**{}\n", cell(id), cell(rest))?;
        }
        None => writeln!(out, "**No recommendation:** {}\n", cell(reason))?,
    }
    for line in s.recommendation.iter().skip(1) {
        writeln!(out, "{}\n", cell(line))?;
    }
    Ok(())
}

/// One row per setting (past `max_rows`, the recommended and Pareto-optimal ones), and how
/// to read it.
fn settings_table(r: &Results, max_rows: usize, out: &mut dyn Write) -> Result<()> {
    let mut header: Vec<String> = r.dim_names().iter().map(|c| cell(c)).collect();
    header.extend(
        [
            "false refusals",
            "unwanted answers",
            "wrong answers",
            "prompt tok/q",
            "coverage",
            "risk",
            "hit rate",
            "MRR",
        ]
        .map(String::from),
    );
    let scenarios = r.scenario_columns();
    header.extend(scenarios.iter().map(|(name, _)| name.to_string()));
    header.push("pick".into());
    writeln!(out, "| {} |", header.join(" | "))?;
    let align: Vec<&str> = header
        .iter()
        .enumerate()
        .map(|(i, _)| if i + 1 == header.len() { "---" } else { "---:" })
        .collect();
    writeln!(out, "|{}|", align.join("|"))?;
    let ins = &r.insight;
    let all = r.settings.len() <= max_rows;
    let mut left_out = 0;
    for (i, s) in r.stats.iter().enumerate() {
        if !all && !ins.is_pareto(i) && !ins.is_recommended(i) {
            left_out += 1;
            continue;
        }
        let mut row: Vec<String> = r.dim_values(i).iter().map(|v| cell(v)).collect();
        row.extend([
            format!(
                "{} ({})",
                rate_with_interval(s.false_refusal_rate, s.false_refusal_rate_ci),
                s.false_refusal
            ),
            format!(
                "{} ({})",
                rate_with_interval(s.unwanted_answer_rate, s.unwanted_answer_rate_ci),
                s.unwanted_answer
            ),
            format!(
                "{} ({})",
                rate_with_interval(s.wrong_answer_rate, s.wrong_answer_rate_ci),
                s.wrong_answer
            ),
            format!("{:.1}", s.prompt_tokens_per_question),
            rate_with_interval(s.coverage, s.coverage_ci),
            rate_with_interval(s.risk, s.risk_ci),
            rate_with_interval(s.hit_rate, s.hit_rate_ci),
            s.mrr
                .map(|v| format!("{v:.2}"))
                .unwrap_or_else(|| "-".into()),
        ]);
        row.extend(scenarios.iter().map(|(_, cells)| cell(&cells[i])));
        let pick = super::table::pick(r, i);
        row.push(if r.insight.is_recommended(i) {
            format!("**{pick}**")
        } else {
            pick.to_string()
        });
        writeln!(out, "| {} |", row.join(" | "))?;
    }
    writeln!(out)?;
    if left_out > 0 {
        writeln!(
                out,
                "{left_out} settings that are neither recommended nor Pareto-optimal are in summary.csv.\n"
            )?;
    }
    writeln!(
            out,
            "Rates: percent [95% Wilson interval] (count). Wrong answers: answers to answerable questions that the judge marks incorrect or, ungraded, that miss every expected answer text, over answerable questions. Pareto: no other setting has fewer false refusals, unwanted answers and prompt tokens at once.\n"
        )?;
    Ok(())
}

/// The most tags report.md lists: a pull-request comment holds 65,536 characters, and a set
/// with thousands of tags (one per imported article) would fill it many times over.
pub const MAX_TAG_ROWS: usize = 30;

/// The recommended setting's rates by tag, when questions carry tags: the worst
/// [`MAX_TAG_ROWS`], and how many more.
fn tags_table(r: &Results, out: &mut dyn Write) -> Result<()> {
    if let Some((setting, rows)) = super::tags::table(r) {
        writeln!(out, "**By tag** at `{}`:\n", cell(setting))?;
        writeln!(out, "| {} |", super::tags::TABLE_HEADERS.join(" | "))?;
        writeln!(out, "|---|---:|---:|---:|---:|")?;
        // The first row is every question; the tags follow, worst first.
        let more = rows.len().saturating_sub(1 + MAX_TAG_ROWS);
        for (tag, cells) in rows.into_iter().take(1 + MAX_TAG_ROWS) {
            let cells: Vec<String> = cells.iter().map(|c| cell(c)).collect();
            writeln!(out, "| {} | {} |", cell(&tag), cells.join(" | "))?;
        }
        if more > 0 {
            writeln!(
                out,
                "\nThe {MAX_TAG_ROWS} tags furthest above the setting's rates are shown; {more} more are in tags.csv."
            )?;
        }
        writeln!(out, "\n{}\n", super::tags::TABLE_NOTE)?;
    }
    Ok(())
}

/// How well the scores separate the questions: the whole grid's, or per retrieval variant.
fn separability(r: &Results, s: &Summary, out: &mut dyn Write) -> Result<()> {
    let per = &s.separability.per_variant;
    match &s.separability.retrieval {
        // Several retrieval variants: the whole-grid figure pools scores that do not compare;
        // the per-variant table below stands in for it.
        _ if !per.is_empty() => {
            writeln!(
                out,
                "**Per retrieval variant.** Thresholds do not carry across embedders or chunk sizes:\n"
            )?;
            writeln!(out, "| {} |", super::retrieval::headers(r).join(" | "))?;
            writeln!(
                out,
                "|{}",
                " --- |".repeat(super::retrieval::headers(r).len())
            )?;
            for row in per {
                let cells: Vec<String> = row.iter().map(|c| cell(c)).collect();
                writeln!(out, "| {} |", cells.join(" | "))?;
            }
        }
        None => writeln!(out, "**Separability.** {}", cell(&s.separability.score))?,
        Some(retrieval) => {
            writeln!(
                out,
                "**Separability (rerank score).** {}\n",
                cell(&s.separability.score)
            )?;
            writeln!(
                out,
                "**Separability (retrieval score).** {}",
                cell(retrieval)
            )?;
        }
    }
    Ok(())
}

/// The judge, the reranker, flagged passages and the repeats' stability, each when it applies.
fn notes(s: &Summary, out: &mut dyn Write) -> Result<()> {
    for (label, line) in [
        ("Judge", &s.judge),
        ("Grader checks", &s.checks),
        ("Reranker", &s.reranker),
        ("Prompt injection", &s.flagged),
        ("Stability", &s.repeats),
        ("Adaptive sweep", &s.dropped),
    ] {
        if let Some(line) = line {
            writeln!(out, "\n**{label}.** {}", cell(line))?;
        }
    }
    labels(s, out)
}

/// With labels: the grader's confusion matrices against them, and the warning.
fn labels(s: &Summary, out: &mut dyn Write) -> Result<()> {
    let Some(g) = &s.grader else {
        return Ok(());
    };
    writeln!(
        out,
        "\n## The grader against the labels\n\n{} labelled replies ({} runs). Errors of each kind over the labelled replies a grader read, percent [95% Wilson interval]; a tier's missed refusals are over the refusals no earlier tier caught.\n",
        g.replies, g.runs
    )?;
    writeln!(out, "| grader | refusals read as answers | answers read as refusals | wrong read as right | right read as wrong |")?;
    writeln!(out, "|---|---|---|---|---|")?;
    for c in &g.graders {
        let cells: Vec<String> = c
            .rates()
            .iter()
            .map(|(_, e)| super::summary::error_rate(e))
            .collect();
        writeln!(out, "| {} | {} |", c.grader, cells.join(" | "))?;
    }
    if let Some(w) = &s.grader_warning {
        writeln!(
            out,
            "\n**Warning.** {}",
            cell(w.trim_start_matches("warning: "))
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::insight::config::RecommendConfig;
    use crate::output::report::fixture;

    fn render(r: &Results, max_rows: usize) -> String {
        let mut buf = Vec::new();
        write_report(r, &Summary::of(r), max_rows, &mut buf).unwrap();
        String::from_utf8(buf).unwrap()
    }

    #[test]
    fn summary_table_recommendation_and_separability() {
        insta::assert_snapshot!("report_md", render(&fixture::results(), MAX_ROWS));
    }

    #[test]
    fn no_feasible_setting_says_what_is_closest() {
        let strict = RecommendConfig {
            max_unwanted_answer_rate: 0.0,
            max_false_refusal_rate: 0.0,
            ..RecommendConfig::default()
        };
        let md = render(&fixture::results_with(&strict), MAX_ROWS);
        assert!(
            md.contains("**No recommendation:** no setting meets the limits (unwanted ≤ 0%, false refusals ≤ 0%); closest: min_score=0.4,k=1, which misses max_false_refusal_rate by 50 points (50% against a limit of 0%)"),
            "{md}"
        );
        assert!(!md.contains("**recommended**"), "{md}");
    }

    #[test]
    fn big_grids_list_the_recommended_and_pareto_settings_only() {
        let md = render(&fixture::results(), 2);
        assert!(!md.contains("| 0.2 | 1 |"), "dominated row listed: {md}");
        assert!(
            md.contains("| 0.2 | 2 |") && md.contains("| 0.4 | 1 |") && md.contains("| 0.4 | 2 |"),
            "{md}"
        );
        assert!(
            md.contains(
                "1 settings that are neither recommended nor Pareto-optimal are in summary.csv."
            ),
            "{md}"
        );
    }

    #[test]
    fn the_recommended_settings_rates_by_tag_worst_first() {
        let mut r = fixture::results();
        // The fixture's questions: `fee` and `refund` answerable, `vp` unanswerable.
        r.questions[0].tags = vec!["fees".into()];
        r.questions[1].tags = vec!["refunds|x".into()];
        r.questions[2].tags = vec!["fees".into()];
        let md = render(&r, MAX_ROWS);
        let rec = r.insight.recommendation.setting.clone().unwrap();
        let table = md.split("**By tag**").nth(1).unwrap();
        let rows: Vec<&str> = table.lines().filter(|l| l.starts_with("| ")).collect();
        assert_eq!(
            rows[0],
            "| tag | questions (ans / unans) | false refusals | unwanted answers | wrong answers |"
        );
        assert!(table.starts_with(&format!(" at `{rec}`:")), "{table}");
        assert!(rows[1].starts_with("| all questions | 2 / 1 |"), "{md}");
        // The refund question is refused at the recommended setting: its tag is furthest above.
        assert!(rows[2].starts_with("| refunds\\|x | 1 / 0 | 100% "), "{md}");
        assert!(rows[3].starts_with("| fees | 1 / 1 | 0% "), "{md}");
        assert_eq!(rows.len(), 4);
    }

    #[test]
    fn cells_cannot_break_the_table() {
        assert_eq!(cell("a|b<i>\nc"), "a\\|b&lt;i&gt; c");
    }
}
