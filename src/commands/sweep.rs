//! `rageval sweep`: the main job.

use anyhow::Result;

use crate::cli::OutputFormat;
use crate::evalset::Workspace;
use crate::exit::ExitStatus;
use crate::report::{self, Exporter, Meta, Results, SetMeta};
use crate::settings::SweepSettings;
use crate::stats::aggregate;
use crate::sweep::{Engine, Sweep};

pub async fn run(s: SweepSettings) -> Result<ExitStatus> {
    // Everything that can be wrong with the input is found here, before any file is written.
    let ws = Workspace::load(&s.evalsets)?;
    let questions = ws.questions().count() as u64;
    let settings = s.grid.len() as u64;
    let runs = questions.saturating_mul(settings);
    if runs > s.max_runs {
        anyhow::bail!(
            "the sweep plans {runs} runs ({questions} questions x {settings} settings), more than the limit of {}: narrow the grid, or raise the limit with `--max-runs`",
            s.max_runs
        );
    }
    if let Some(gate) = &s.gate {
        // A gate that cannot judge the results is found before any model call is paid for.
        super::gate::preflight(gate, &s.grid.settings())?;
    }
    let bar = crate::progress::call_bar(
        s.quiet || s.format == OutputFormat::Json,
        s.pipeline.rate_limited.clone(),
    );
    let engine = Engine {
        embedder: s.pipeline.embedder.clone(),
        model: s.pipeline.model.clone(),
        rules: s.pipeline.rules.clone(),
        concurrency: s.concurrency,
        progress: bar.as_ref().map(|(_, feed)| feed.clone()),
    };
    let sweep = engine.sweep(&ws, &s.grid).await;
    if let Some((bar, _)) = bar {
        bar.finish();
    }
    let mut sweep = sweep?;
    // The bar is gone: notes and warnings get lines of their own.
    if !s.quiet {
        for note in std::mem::take(&mut sweep.notes) {
            super::eprint_line(&format!("note: {note}"));
        }
    }
    for warning in std::mem::take(&mut sweep.warnings) {
        super::eprint_line(&format!("warning: {warning}"));
    }
    let c = &sweep.calls;
    if s.pipeline.chat_dead.as_ref().is_some_and(|d| d.is_dead()) {
        // Every later call failed at once: a report would only look valid, and the cache
        // keeps the calls that finished, so a rerun resumes.
        let url = s.config.config.chat.http().shown();
        anyhow::bail!(
            "the sweep stopped early: {} connection attempts in a row failed ({}); no report written; is the model server at `{url}` running?",
            crate::http::DEAD_AFTER,
            kinds(&c.errors_by_kind)
        );
    }
    if c.failed > 0 && c.failed == c.distinct_prompts {
        // Nothing was learned: a report would only look valid.
        let url = s.config.config.chat.http().shown();
        let hint = if c.errors_by_kind.keys().all(|k| k == "auth") {
            format!("check the key in `${}`", s.config.config.chat.api_key_env)
        } else if c
            .errors_by_kind
            .keys()
            .all(|k| k == "connect" || k == "timeout")
        {
            format!("is the model server at `{url}` running?")
        } else {
            format!("see the errors of the server at `{url}`")
        };
        anyhow::bail!(
            "every model call failed ({}); no report written; {hint}",
            kinds(&c.errors_by_kind)
        );
    }
    let results = collect(&s, &ws, sweep);
    let written = report::write_all(&results, &s.out)?;

    match s.format {
        OutputFormat::Json => {
            let mut buf = Vec::new();
            report::JsonResults.write(&results, &mut buf)?;
            super::print_raw(&String::from_utf8(buf)?)?;
        }
        OutputFormat::Table if !s.quiet => {
            let names: Vec<String> = written.iter().map(|p| p.display().to_string()).collect();
            super::print(&table_text(&results, &names, s.wide))?;
        }
        OutputFormat::Table => {}
    }
    let mut status = ExitStatus::Success;
    let c = &results.calls;
    if c.failed + c.rewrite_failed > 0 {
        let level = if s.allow_errors { "warning" } else { "error" };
        let what = match (c.failed, c.rewrite_failed) {
            (_, 0) => "their runs are `error` in the reports",
            (0, _) => "those follow-ups were asked as written",
            _ => "answer failures are `error` runs; failed rewrites were asked as written",
        };
        eprintln!(
            "{level}: {} of {} model calls failed ({}); {what}{}",
            c.failed + c.rewrite_failed,
            c.distinct_prompts + c.rewrite_calls,
            kinds(&c.errors_by_kind),
            if s.allow_errors {
                ""
            } else {
                " (pass --allow-errors to accept them)"
            }
        );
        if !s.allow_errors {
            status = ExitStatus::Error;
        }
    }
    if let Some(gate) = &s.gate {
        // The gate reads the file just written, exactly as a later `rageval gate` would.
        let gated = super::gate::run(gate)?;
        if status == ExitStatus::Success {
            status = gated;
        }
    }
    Ok(status)
}

/// What a sweep prints for people: the settings table fitted to the terminal (every column with
/// `wide`), and the prose lines wrapped at the same width.
fn table_text(results: &Results, written: &[String], wide: bool) -> String {
    let width = crate::term::width();
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
    lines.push(insight.recommendation.reason.clone());
    lines.push("(rates: percent [95% Wilson interval]; pareto: no other setting has fewer false refusals, unwanted answers and prompt tokens at once)".into());
    let mut after = vec![format!("separability: {}", insight.separability.summary())];
    after.extend(results.flagged_summary());
    after.push(format!(
        "{} questions x {} settings = {} runs; {} needed the model, {} distinct prompts ({} from cache, {} failed).",
        results.questions.len(),
        results.settings.len(),
        results.runs.len(),
        c.runs_with_call,
        c.distinct_prompts,
        c.cache_hits,
        c.failed,
    ));
    after.push(format!("wrote {}", written.join(", ")));
    let wrap = |lines: Vec<String>| -> String {
        lines
            .iter()
            .map(|l| {
                if wide {
                    format!("{l}\n")
                } else {
                    format!("{}\n", crate::term::wrap(l, width))
                }
            })
            .collect()
    };
    format!(
        "{table}\n{}\n{}\n{}",
        wrap(lines),
        report::table::scores_table(results),
        wrap(after)
    )
}

/// `3 timeout, 1 server`
fn kinds(by_kind: &std::collections::BTreeMap<String, usize>) -> String {
    by_kind
        .iter()
        .map(|(k, n)| format!("{n} {k}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Aggregate a finished sweep into the value every report reads.
pub fn collect(s: &SweepSettings, ws: &Workspace, sweep: Sweep) -> Results {
    let questions: Vec<_> = ws.questions().cloned().collect();
    let n = questions.len();
    let stats = (0..sweep.settings.len())
        .map(|i| {
            aggregate(
                &sweep.runs[i * n..(i + 1) * n],
                &questions,
                &s.pipeline.pricing,
            )
        })
        .collect();
    let evalsets = ws
        .sets
        .iter()
        .map(|set| {
            let corpus = &ws.corpora[set.questions[0].corpus];
            let parts: Vec<&[u8]> = corpus
                .chunks
                .iter()
                .flat_map(|c| [c.id.as_bytes(), c.heading.as_bytes(), c.text.as_bytes()])
                .collect();
            let answerable = set.questions.iter().filter(|q| q.answerable).count();
            SetMeta {
                path: set.path.display().to_string(),
                corpus: corpus.describe(),
                answerable,
                unanswerable: set.questions.len() - answerable,
                digest: report::digest(&[set.text.as_bytes()]),
                corpus_digest: report::digest(&parts),
            }
        })
        .collect();
    Results {
        meta: Meta {
            identity: s.identity.clone(),
            embedder: s.pipeline.embedder.model(),
            model: s.pipeline.model.model(),
            refusal: s.pipeline.rules.refusal.clone(),
            strict_refusal: s.pipeline.rules.refusal_match == crate::prompt::RefusalMatch::Strict,
            currency: s.pipeline.currency.clone(),
            evalsets,
        },
        chunk_ids: ws
            .corpora
            .iter()
            .map(|c| c.chunks.iter().map(|ch| ch.id.clone()).collect())
            .collect(),
        flagged: {
            // The patterns were checked when the config was loaded.
            let scanner = crate::scan::Scanner::new(&s.config.config.scan.patterns)
                .or_else(|_| crate::scan::Scanner::new(&crate::scan::Scanner::default_patterns()))
                .expect("default patterns compile");
            ws.corpora.iter().map(|c| scanner.flag(c)).collect()
        },
        chunk_labels: ws
            .corpora
            .iter()
            .map(|c| c.chunks.iter().map(ToString::to_string).collect())
            .collect(),
        expected_scores: sweep.expected_scores,
        questions,
        settings: sweep.settings,
        stats,
        runs: sweep.runs,
        calls: sweep.calls,
        insight: Default::default(),
        setting_text: Default::default(),
    }
    .with_insight(&s.config.config.recommend)
}
