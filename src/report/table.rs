//! The terminal view: one row per setting, then the questions' best scores side by side.

use comfy_table::presets::UTF8_FULL_CONDENSED;
use comfy_table::{CellAlignment, Table};

use super::Results;
use crate::insight::format::rate_with_interval;
use crate::sweep::Setting;

/// The mark of a setting in the `pick` column.
pub fn pick(r: &Results, i: usize) -> &'static str {
    if r.insight.is_recommended(i) {
        "recommended"
    } else if r.insight.is_pareto(i) {
        "pareto"
    } else {
        ""
    }
}

/// The settings table.
pub fn settings_table(r: &Results) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    let shown = r.dims();
    let scenarios = r.scenario_columns();
    let mut header: Vec<String> = shown
        .iter()
        .map(|&i| Setting::COLUMNS[i].to_string())
        .collect();
    header.extend(
        [
            "answer",
            "false ref",
            "early ref",
            "model ref",
            "unwanted",
            "wrong",
            "error",
            "false ref %",
            "unwanted %",
            "prompt tok/q",
            "calls",
        ]
        .map(String::from),
    );
    header.extend(scenarios.iter().map(|(name, _)| name.to_string()));
    header.push("pick".into());
    t.set_header(header);
    for (i, s) in r.stats.iter().enumerate() {
        let mut row: Vec<String> = r.dim_values(i).into_iter().map(String::from).collect();
        row.extend([
            s.answer.to_string(),
            if s.false_refusal_early > 0 {
                format!("{} ({} early)", s.false_refusal, s.false_refusal_early)
            } else {
                s.false_refusal.to_string()
            },
            s.early_refusal.to_string(),
            s.model_refusal.to_string(),
            s.unwanted_answer.to_string(),
            s.wrong_answer.to_string(),
            s.error.to_string(),
            rate_with_interval(s.false_refusal_rate, s.false_refusal_rate_ci),
            rate_with_interval(s.unwanted_answer_rate, s.unwanted_answer_rate_ci),
            format!("{:.1}", s.prompt_tokens_per_question),
            s.model_calls.to_string(),
        ]);
        row.extend(scenarios.iter().map(|(_, cells)| cells[i].clone()));
        row.push(pick(r, i).to_string());
        t.add_row(row);
    }
    let last = t.column_count().saturating_sub(1);
    for i in 0..last {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    t
}

/// Rows shown per group in the best-score view; the rest are counted.
pub const SCORE_ROWS: usize = 12;

/// Each question's best retrieval score, answerable beside unanswerable, best first: where the
/// two columns overlap, no threshold separates them.
pub fn scores_table(r: &Results) -> Table {
    let column = |answerable: bool| {
        let mut v: Vec<(f64, &str)> = r
            .questions
            .iter()
            .enumerate()
            .filter(|(_, q)| q.answerable == answerable)
            .map(|(i, q)| {
                (
                    r.runs.get(i).and_then(|x| x.best_score).unwrap_or(0.0),
                    q.id.as_str(),
                )
            })
            .collect();
        v.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
        v
    };
    let (ans, unans) = (column(true), column(false));
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header(vec![
        format!("answerable ({}): best score", ans.len()),
        format!("unanswerable ({}): best score", unans.len()),
    ]);
    let cell = |v: &[(f64, &str)], i: usize| -> String {
        if i < SCORE_ROWS.min(v.len()) {
            format!("{:.3}  {}", v[i].0, v[i].1)
        } else if i == SCORE_ROWS && v.len() > SCORE_ROWS {
            format!("... {} more in runs.csv", v.len() - SCORE_ROWS)
        } else {
            String::new()
        }
    };
    let rows = ans.len().max(unans.len()).min(SCORE_ROWS + 1);
    for i in 0..rows {
        t.add_row(vec![cell(&ans, i), cell(&unans, i)]);
    }
    t
}
