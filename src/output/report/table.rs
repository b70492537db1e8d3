//! The terminal view: one row per setting, then the questions' best scores side by side.
//!
//! The settings table fits a width: columns are shortened or dropped in the order of
//! [`REDUCTIONS`] (docs/reports.md lists it) until every line fits; `--wide` shows them all.

use comfy_table::presets::UTF8_FULL_CONDENSED;
use comfy_table::{CellAlignment, Table};

use super::Results;
use crate::analysis::insight::format::rate_with_interval;

/// The mark of a setting in the `pick` column: recommended, Pareto-optimal, or dropped by an
/// adaptive sweep after so many questions (its rates stand over those).
pub fn pick(r: &Results, i: usize) -> std::borrow::Cow<'static, str> {
    if let Some([a, u]) = r.dropped_after(i) {
        format!("dropped after {}", a + u).into()
    } else if r.insight.is_recommended(i) {
        crate::output::explain::pick(&r.insight.recommendation).into()
    } else if r.insight.is_pareto(i) {
        "pareto".into()
    } else {
        "".into()
    }
}

/// One column of the settings table.
struct Column {
    /// The full header: what [`REDUCTIONS`] names the column by, however it is shown.
    name: String,
    header: String,
    cells: Vec<String>,
    /// The header and cells when the column is shortened.
    short: Option<(String, Vec<String>)>,
    /// A column that is never dropped: the setting, the two rates and the pick.
    kept: bool,
    /// A scenario's column (injection attacks and the like).
    scenario: bool,
}

impl Column {
    fn new(header: &str, cells: Vec<String>) -> Self {
        Column {
            name: header.to_string(),
            header: header.to_string(),
            cells,
            short: None,
            kept: false,
            scenario: false,
        }
    }

    fn kept(mut self) -> Self {
        self.kept = true;
        self
    }
}

/// One step that narrows the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reduction {
    /// Drop the column with this header when every cell is `0`.
    DropZero(&'static str),
    Drop(&'static str),
    /// Show the column's short form.
    Shorten(&'static str),
    /// Drop every scenario column (attacks and the like), last first.
    DropScenarios,
}

/// How the settings table is narrowed, first step first; docs/reports.md repeats this list.
const REDUCTIONS: &[Reduction] = &[
    Reduction::Shorten("pick"),
    Reduction::DropZero("error"),
    Reduction::DropZero("wrong"),
    Reduction::Drop("model ref"),
    Reduction::Drop("early ref"),
    Reduction::Drop("calls"),
    Reduction::Shorten("prompt tok/q"),
    Reduction::Drop("unwanted"),
    Reduction::Drop("answer"),
    Reduction::Drop("error"),
    Reduction::DropScenarios,
    Reduction::Drop("false ref"),
    Reduction::Shorten("false ref %"),
    Reduction::Shorten("unwanted %"),
    // Wrong answers have no rate column: the count goes last but one.
    Reduction::Drop("wrong"),
    Reduction::Drop("prompt tok/q"),
];

/// A fitted settings table and the headers of the columns it left out.
pub struct Fitted {
    pub table: Table,
    pub hidden: Vec<String>,
}

impl Fitted {
    /// The line under a narrowed table that names what is missing; `None` when nothing is.
    pub fn note(&self) -> Option<String> {
        if self.hidden.is_empty() {
            return None;
        }
        Some(format!(
            "(hidden to fit the width: {}; --wide shows every column)",
            self.hidden.join(", ")
        ))
    }
}

/// The settings table with every column.
pub fn settings_table(r: &Results) -> Table {
    render(&columns(r))
}

/// The settings table narrowed to `width` characters where it can be (the setting, both
/// rates and the pick always stay, so a very narrow terminal still wraps).
pub fn settings_table_fitted(r: &Results, width: usize) -> Fitted {
    let mut cols = columns(r);
    let mut hidden = Vec::new();
    let mut table = render(&cols);
    for step in REDUCTIONS {
        if table_width(&table) <= width {
            break;
        }
        match *step {
            Reduction::DropZero(name) => {
                let zero = |c: &Column| c.name == name && c.cells.iter().all(|v| v == "0");
                if let Some(i) = cols.iter().position(zero) {
                    hidden.push(cols.remove(i).name);
                }
            }
            Reduction::Drop(name) => {
                if let Some(i) = cols.iter().position(|c| c.name == name && !c.kept) {
                    hidden.push(cols.remove(i).name);
                }
            }
            Reduction::Shorten(name) => {
                if let Some(c) = cols.iter_mut().find(|c| c.name == name) {
                    if let Some((header, cells)) = c.short.take() {
                        c.header = header;
                        c.cells = cells;
                    }
                }
            }
            Reduction::DropScenarios => {
                while let Some(i) = cols.iter().rposition(|c| c.scenario) {
                    hidden.push(cols.remove(i).name);
                }
            }
        }
        table = render(&cols);
    }
    Fitted { table, hidden }
}

/// The widest line of a rendered table, in characters.
pub fn table_width(t: &Table) -> usize {
    t.to_string()
        .lines()
        .map(|l| l.chars().count())
        .max()
        .unwrap_or(0)
}

fn columns(r: &Results) -> Vec<Column> {
    let stats = &r.stats;
    let each = |f: &dyn Fn(usize) -> String| (0..stats.len()).map(f).collect::<Vec<_>>();
    let mut cols: Vec<Column> = r
        .dims()
        .iter()
        .enumerate()
        .map(|(j, d)| Column::new(d.name(), each(&|s| r.dim_values(s)[j].to_string())).kept())
        .collect();
    cols.push(Column::new(
        "answer",
        each(&|i| stats[i].answer.to_string()),
    ));
    cols.push(Column::new(
        "false ref",
        each(&|i| {
            let s = &stats[i];
            if s.false_refusal_early > 0 {
                format!("{} ({} early)", s.false_refusal, s.false_refusal_early)
            } else {
                s.false_refusal.to_string()
            }
        }),
    ));
    cols.push(Column::new(
        "early ref",
        each(&|i| stats[i].early_refusal.to_string()),
    ));
    cols.push(Column::new(
        "model ref",
        each(&|i| stats[i].model_refusal.to_string()),
    ));
    cols.push(Column::new(
        "unwanted",
        each(&|i| stats[i].unwanted_answer.to_string()),
    ));
    cols.push(Column::new(
        "wrong",
        each(&|i| stats[i].wrong_answer.to_string()),
    ));
    cols.push(Column::new("error", each(&|i| stats[i].error.to_string())));
    type Rate = (
        Option<f64>,
        Option<crate::analysis::insight::wilson::Interval>,
    );
    let mut rate = |header: &str, value: &dyn Fn(usize) -> Rate| {
        let mut c = Column::new(
            header,
            each(&|i| {
                let (v, ci) = value(i);
                rate_with_interval(v, ci)
            }),
        )
        .kept();
        c.short = Some((
            header.to_string(),
            each(&|i| rate_with_interval(value(i).0, None)),
        ));
        cols.push(c);
    };
    rate("false ref %", &|i| {
        (stats[i].false_refusal_rate, stats[i].false_refusal_rate_ci)
    });
    rate("unwanted %", &|i| {
        (
            stats[i].unwanted_answer_rate,
            stats[i].unwanted_answer_rate_ci,
        )
    });
    let mut tokens = Column::new(
        "prompt tok/q",
        each(&|i| format!("{:.1}", stats[i].prompt_tokens_per_question)),
    );
    tokens.short = Some(("tok/q".into(), tokens.cells.clone()));
    cols.push(tokens);
    cols.push(Column::new(
        "calls",
        each(&|i| stats[i].model_calls.to_string()),
    ));
    for (name, cells) in r.scenario_columns() {
        let mut c = Column::new(name, cells);
        c.scenario = true;
        cols.push(c);
    }
    let mut pick_column = Column::new("pick", each(&|i| pick(r, i).to_string())).kept();
    // `best, not certified` is the widest mark: first to go when the table must narrow.
    let short = pick_column
        .cells
        .iter()
        .map(|c| match c.as_str() {
            "best, not certified" => "uncertified".to_string(),
            other => other.to_string(),
        })
        .collect();
    pick_column.short = Some(("pick".into(), short));
    cols.push(pick_column);
    cols
}

fn render(cols: &[Column]) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header(cols.iter().map(|c| c.header.clone()).collect::<Vec<_>>());
    let rows = cols.first().map_or(0, |c| c.cells.len());
    for i in 0..rows {
        t.add_row(cols.iter().map(|c| c.cells[i].clone()).collect::<Vec<_>>());
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
            .map(|(i, q)| (r.best_score(i).unwrap_or(0.0), q.id.as_str()))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::report::fixture;

    fn header(t: &Table) -> String {
        t.to_string().lines().nth(1).unwrap_or_default().to_string()
    }

    #[test]
    fn columns_go_in_the_documented_order_until_the_table_fits() {
        let r = fixture::results();
        let full = settings_table(&r);
        let wide = table_width(&full);
        let same = settings_table_fitted(&r, wide);
        assert_eq!(same.table.to_string(), full.to_string());
        assert_eq!(same.note(), None);

        let mut previous: Vec<String> = Vec::new();
        for width in (40..wide).rev() {
            let fitted = settings_table_fitted(&r, width);
            // Hidden columns only ever grow as the width shrinks, in REDUCTIONS order.
            assert!(fitted.hidden.starts_with(&previous), "{width}");
            previous = fitted.hidden.clone();
            let w = table_width(&fitted.table);
            let h = header(&fitted.table);
            assert!(h.contains("min_score") && h.contains("pick"), "{h}");
            // Only the columns that always stay may be left wider than asked.
            assert!(w <= width || !h.contains("tok/q"), "{width}: {w}\n{h}");
        }
        assert_eq!(
            previous,
            [
                "error",
                "model ref",
                "early ref",
                "calls",
                "unwanted",
                "answer",
                "false ref",
                "wrong",
                "prompt tok/q"
            ]
        );
    }
}
