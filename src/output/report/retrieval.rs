//! The per-retrieval-variant view (`--embedder`, `--chunk-tokens`): one row per variant with its
//! separability and its recommendation, since thresholds do not carry across embedders or
//! chunk sizes. The terminal and report.md show these rows in place of the whole-grid
//! separability line, which pools variants whose scores are not comparable.

use comfy_table::presets::UTF8_FULL_CONDENSED;
use comfy_table::{ContentArrangement, Table};

use super::Results;
use crate::output::explain::Explain;

/// The sentence before the table.
pub const LEAD: &str =
    "per retrieval variant (thresholds do not carry across embedders or chunk sizes):";

/// The headers of [`rows`].
pub fn headers(r: &Results) -> Vec<&'static str> {
    let mut headers = vec!["variant", "AUC", "separating minScore / overlap"];
    if reranked(r) {
        headers.push("retrieval AUC");
    }
    headers.push("recommended");
    headers
}

/// Whether the variants carry a retrieval-score separability beside the rerank score's.
fn reranked(r: &Results) -> bool {
    r.insight
        .by_retrieval
        .iter()
        .any(|v| v.retrieval_separability.is_some())
}

/// One row per retrieval variant, in [`Results::retrieval_groups`] order; with a reranker,
/// `AUC` and the minScore range are the rerank score's and `retrieval AUC` the score's before
/// reranking. Empty with one variant.
pub fn rows(r: &Results) -> Vec<Vec<String>> {
    r.insight
        .by_retrieval
        .iter()
        .map(|v| {
            let mut row = vec![
                v.retrieval.clone(),
                v.separability.auc_cell(),
                v.separability.threshold_cell(),
            ];
            if reranked(r) {
                row.push(
                    v.retrieval_separability
                        .as_ref()
                        .map_or_else(|| "-".into(), |s| s.auc_cell()),
                );
            }
            row.push(Explain::variant(r, &v.recommendation).cell());
            row
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
