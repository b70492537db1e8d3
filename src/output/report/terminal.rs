//! What a sweep prints for people on the terminal: the settings table fitted to the terminal
//! with the lines around it, and the dry run's table.

use crate::output::report;
use crate::results::Results;
use crate::vocab::grid::DEFAULT_PROFILE;

/// The dry run's table, one row per chat model, and what it did and did not do.
pub fn dry_run_text(rows: &[crate::sweep::DryRun], currency: &str, reranked: bool) -> String {
    use comfy_table::{presets::UTF8_FULL_CONDENSED, CellAlignment, Table};
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header([
        "chat model",
        "runs",
        "early refusals",
        "distinct prompts",
        "cached prompts",
        "rewrites (cached)",
        "calls to make",
        "prompt tokens (est.)",
        "prompt cost (est.)",
    ]);
    // With profiles, a row names its profile and the model behind it.
    let profiled = rows.len() > 1 || rows.iter().any(|d| d.profile != DEFAULT_PROFILE);
    for d in rows {
        t.add_row([
            if profiled {
                format!("{} ({})", d.profile, d.model)
            } else {
                d.model.clone()
            },
            d.runs.to_string(),
            d.early_refusals.to_string(),
            d.distinct_prompts.to_string(),
            d.cached_prompts.to_string(),
            format!("{} ({})", d.rewrite_calls, d.cached_rewrites),
            d.calls.to_string(),
            d.prompt_tokens.to_string(),
            format!("{:.4} {currency}", d.prompt_cost),
        ]);
    }
    for i in 1..9 {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    let embedded: usize = rows.iter().map(|d| d.question_embeddings).sum();
    let reranks = if reranked {
        let calls: usize = rows.iter().map(|d| d.rerank_calls).sum();
        let cached: usize = rows.iter().map(|d| d.cached_reranks).sum();
        let made = calls - cached.min(calls);
        format!(", and their passages reranked ({calls} rerank calls: {cached} from the cache, {made} made); the sweep reranks from the cache")
    } else {
        String::new()
    };
    let mut text = format!(
        "dry run: no chat call was made and no report written; the corpus and {embedded} question texts were embedded to plan the prompts{reranks}.\n{t}\n"
    );
    text.push_str("prompt tokens are estimated at four characters a token; completions are not known before the calls, so the cost counts prompt tokens only.\n");
    if rows.iter().any(|d| d.rewrite_calls > 0) {
        text.push_str(
            "follow-ups are planned as asked: their `model` rewrites are counted, not made.\n",
        );
    }
    text
}

/// What a sweep prints for people: the settings table fitted to the terminal (every column with
/// `wide`), and the prose lines wrapped at the same width.
pub fn table_text(results: &Results, written: &[String], wide: bool) -> String {
    let width = crate::base::term::width();
    let (table, note) = if wide {
        (report::table::settings_table(results), None)
    } else {
        let fitted = report::table::settings_table_fitted(results, width);
        let note = fitted.note();
        (fitted.table, note)
    };
    let insight = &results.insight;
    let c = &results.calls;
    let mut lines: Vec<String> = note.into_iter().collect();
    lines.extend(crate::output::explain::Explain::of(results).lines());
    let profiles: Vec<String> = [results.meta.models_line(), results.meta.embedders_line()]
        .into_iter()
        .flatten()
        .collect();
    lines.push("(rates: percent [95% Wilson interval]; pareto: no other setting has fewer false refusals, unwanted answers and prompt tokens at once)".into());
    let per_retrieval = report::retrieval::table(results, (!wide).then_some(width));
    let mut after = match &insight.retrieval_separability {
        // Several retrieval variants: the whole-grid figure pools scores that do not compare;
        // the per-variant table below stands in for it.
        _ if per_retrieval.is_some() => Vec::new(),
        None => vec![format!("separability: {}", insight.separability.summary())],
        Some(retrieval) => vec![
            format!(
                "separability (rerank score): {}",
                insight.separability.summary()
            ),
            format!("separability (retrieval score): {}", retrieval.summary()),
        ],
    };
    after.extend(results.judge_summary());
    after.extend(results.rerank_summary());
    after.extend(results.flagged_summary());
    // What a server's prompt cache saved, when it reported any.
    let reused = match c.cached_prompt_tokens {
        0 => String::new(),
        n => format!(
            "; the server reused {n} of their {} prompt tokens from its prompt cache ({:.0}%)",
            c.prompt_tokens,
            100.0 * n as f64 / c.prompt_tokens.max(1) as f64
        ),
    };
    // The calls a batch engine answered, at its price.
    let batched = match c.batch_calls {
        0 => String::new(),
        n => format!(
            "; {n} calls were answered through batches, {:.4} {} at the batch price",
            results.batch_cost(None),
            results.meta.currency
        ),
    };
    after.push(format!(
        "{} questions x {} settings = {} runs; {} needed the model, {} distinct prompts ({} from cache, {} failed){reused}{batched}.",
        results.questions.len(),
        results.settings.len(),
        results.runs.len(),
        c.runs_with_call,
        c.distinct_prompts,
        c.cache_hits,
        c.failed,
    ));
    after.extend(crate::results::repeat_line(results));
    after.push(format!("wrote {}", written.join(", ")));
    let wrap = |lines: Vec<String>| -> String {
        lines
            .iter()
            .map(|l| {
                if wide {
                    format!("{l}\n")
                } else {
                    format!("{}\n", crate::base::term::wrap(l, width))
                }
            })
            .collect()
    };
    let per_retrieval = per_retrieval
        .map(|t| format!("{}{t}\n", wrap(vec![report::retrieval::LEAD.to_string()])))
        .unwrap_or_default();
    format!(
        "{}{table}\n{}\n{}\n{per_retrieval}{}",
        wrap(profiles),
        wrap(lines),
        report::table::scores_table(results),
        wrap(after)
    )
}
