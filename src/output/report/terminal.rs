//! What a sweep prints for people on the terminal: the settings table fitted to the terminal
//! with the lines around it, and the dry run's table.

use crate::base::text::plural;
use crate::output::report::{self, Summary};
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
/// `wide`), and the summary's lines wrapped at the same width.
pub fn table_text(results: &Results, summary: &Summary, written: &[String], wide: bool) -> String {
    let width = crate::base::term::width();
    let (table, note) = if wide {
        (report::table::settings_table(results), None)
    } else {
        let fitted = report::table::settings_table_fitted(results, width);
        let note = fitted.note();
        (fitted.table, note)
    };
    let c = &results.calls;
    let s = summary;
    let mut lines: Vec<String> = note.into_iter().collect();
    lines.extend(s.recommendation.iter().cloned());
    lines.push("(rates: percent [95% Wilson interval]; pareto: no other setting has fewer false refusals, unwanted answers and prompt tokens at once)".into());
    let sep = &s.separability;
    let per_retrieval =
        report::retrieval::table(results, &sep.per_variant, (!wide).then_some(width));
    let mut after = match &sep.retrieval {
        // Several retrieval variants: the whole-grid figure pools scores that do not compare;
        // the per-variant table below stands in for it.
        _ if per_retrieval.is_some() => Vec::new(),
        None => vec![format!("separability: {}", sep.score)],
        Some(retrieval) => vec![
            format!("separability (rerank score): {}", sep.score),
            format!("separability (retrieval score): {retrieval}"),
        ],
    };
    after.extend(
        [
            &s.judge,
            &s.checks,
            &s.labels,
            &s.reranker,
            &s.flagged,
            &s.dropped,
        ]
        .into_iter()
        .flatten()
        .cloned(),
    );
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
        "{} x {} = {}; {} needed the model, {} ({} from cache, {} failed){reused}{batched}.",
        plural(s.questions, "question"),
        plural(s.settings, "setting"),
        plural(s.runs, "run"),
        c.runs_with_call,
        plural(c.distinct_prompts, "distinct prompt"),
        c.cache_hits,
        c.failed,
    ));
    after.extend(s.repeats.clone());
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
        wrap(s.profiles.clone()),
        wrap(lines),
        report::table::scores_table(results),
        wrap(after)
    )
}

/// The lines that say some model or judge calls failed: errors, or with `allow_errors`
/// warnings; none when every call succeeded. With a generation endpoint among the chat
/// models (`endpoint`), whose failure names its question, the first failure is shown.
pub fn failed_calls(results: &Results, allow_errors: bool, endpoint: bool) -> Vec<String> {
    use crate::sweep::health::{first_failure, kinds};
    let level = if allow_errors { "warning" } else { "error" };
    let accept = if allow_errors {
        ""
    } else {
        " (pass --allow-errors to accept them)"
    };
    let c = &results.calls;
    let mut lines = Vec::new();
    if c.failed + c.rewrite_failed > 0 {
        let what = match (c.failed, c.rewrite_failed) {
            (_, 0) => "their runs are `error` in the reports",
            (0, _) => "those follow-ups were asked as written",
            _ => "answer failures are `error` runs; failed rewrites were asked as written",
        };
        let first = first_failure(&results.call_log)
            .filter(|_| endpoint)
            .map(|m| format!("; the first: {m}"))
            .unwrap_or_default();
        lines.push(format!(
            "{level}: {} of {} model calls failed ({}); {what}{first}{accept}",
            c.failed + c.rewrite_failed,
            c.distinct_prompts + c.rewrite_calls,
            kinds(&c.errors_by_kind),
        ));
    }
    if c.judge_failed > 0 {
        lines.push(format!(
            "{level}: {} of {} judge calls failed ({}); those grades are errors and the string rules stand{accept}",
            c.judge_failed,
            c.judge_calls,
            kinds(&c.judge_errors_by_kind),
        ));
    }
    lines
}
