//! The per-retrieval-variant view (`--embedder`, `--chunk-tokens`): one row per variant with its
//! separability and its recommendation, since thresholds do not carry across embedders or
//! chunk sizes. The terminal and report.md show these rows in place of the whole-grid
//! separability line, which pools variants whose scores are not comparable.

use comfy_table::presets::UTF8_FULL_CONDENSED;
use comfy_table::{ContentArrangement, Table};

use super::Results;

/// The sentence before the table.
pub const LEAD: &str =
    "per retrieval variant (thresholds do not carry across embedders or chunk sizes):";

/// The headers of [`rows`].
pub fn headers(_r: &Results) -> Vec<&'static str> {
    vec![
        "variant",
        "AUC",
        "separating minScore / overlap",
        "recommended",
    ]
}

/// One row per retrieval variant, in [`Results::retrieval_groups`] order; empty with one
/// variant.
pub fn rows(r: &Results) -> Vec<Vec<String>> {
    r.insight
        .by_retrieval
        .iter()
        .map(|v| {
            vec![
                v.retrieval.clone(),
                v.separability.auc_cell(),
                v.separability.threshold_cell(),
                v.recommendation.cell(),
            ]
        })
        .collect()
}

/// The rows as a terminal table, wrapped to `width` columns when given; `None` with one
/// variant.
pub fn table(r: &Results, width: Option<usize>) -> Option<Table> {
    let rows = rows(r);
    if rows.is_empty() {
        return None;
    }
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED).set_header(headers(r));
    if let Some(w) = width {
        t.set_content_arrangement(ContentArrangement::Dynamic)
            .set_width(u16::try_from(w).unwrap_or(u16::MAX));
    }
    for row in rows {
        t.add_row(row);
    }
    Some(t)
}
