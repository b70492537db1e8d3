//! `rageval sweep`: the main job.

use anyhow::Result;

use crate::adapters::evalset::Workspace;
use crate::app::cli::OutputFormat;
use crate::app::options::SweepOptions;
use crate::base::exit::ExitStatus;
use crate::output::report::{self, Exporter};
use crate::results::build::{set_meta, shard_workspace, Shape};
use crate::results::{Meta, Results, SetMeta};
use crate::sweep::{Engine, Sweep};
use crate::vocab::dim::Dim;
use crate::vocab::grid::DEFAULT_PROFILE;

/// `--only`: drop the questions the flag leaves out; none left is an input error.
fn keep_only(ws: &mut Workspace, only: crate::app::cli::Only) -> Result<()> {
    use crate::app::cli::Only;
    let keep = |q: &crate::adapters::evalset::Question| match only {
        Only::Generated => q.origin.is_some(),
        Only::Reviewed => q.reviewed(),
    };
    for set in &mut ws.sets {
        set.questions.retain(keep);
    }
    // A set left with no question is not swept (and not reported as one).
    ws.sets.retain(|set| !set.questions.is_empty());
    if ws.sets.is_empty() {
        let which = match only {
            Only::Generated => "generated (`rageval generate` writes them)",
            Only::Reviewed => "written or reviewed by a person",
        };
        anyhow::bail!("invalid --only: no question of the question sets is {which}");
    }
    Ok(())
}

pub async fn run(s: SweepOptions) -> Result<ExitStatus> {
    // Everything that can be wrong with the input is found here, before any file is written.
    let foreign = !s.config.config.retriever.kind.chunks_itself();
    let mut ws = Workspace::load_for(&s.evalsets, foreign)?;
    if let Some(only) = s.only {
        keep_only(&mut ws, only)?;
    }
    // Sections are cut to fit the embedder that reads the least, with a margin.
    let read = s
        .grid
        .embedders()
        .filter_map(|p| s.pipeline.embedder_of(p).max_input_tokens())
        .min();
    let fit = |tokens: usize| crate::adapters::corpus::chunk_limit(tokens, read);
    let max_chunk_tokens = fit(s.config.config.corpus.max_chunk_tokens);
    // `--chunk-tokens`: every size's chunks joined into one corpus per slot.
    let chunk_members = if s.grid.at_default(Dim::ChunkTokens) {
        ws.split_long_sections(max_chunk_tokens);
        None
    } else {
        let sizes: Vec<Option<usize>> = s.grid.chunk_tokens().map(|t| t.map(fit)).collect();
        let (joined, members) = crate::sweep::chunk_union(&ws.corpora, max_chunk_tokens, &sizes);
        ws.corpora = joined;
        Some(members)
    };
    if let Some(k) = s.config.config.recommend.folds.filter(|&k| k >= 2) {
        check_folds(k, s.folds_from, &ws)?;
    }
    let evalsets = set_meta(&ws);
    let (ws, positions, sets) = shard_workspace(ws, s.shard);
    let shape = Shape { positions, sets };
    let questions = ws.questions().count() as u64;
    let settings = s.grid.len() as u64;
    let runs = questions
        .saturating_mul(settings)
        .saturating_mul(u64::from(s.repeat));
    if runs > s.max_runs {
        let repeats = if s.repeat > 1 {
            format!(" x {} repeats", s.repeat)
        } else {
            String::new()
        };
        anyhow::bail!(
            "the sweep plans {runs} runs ({questions} questions x {settings} settings{repeats}), more than the limit of {}: narrow the grid, or raise the limit with `--max-runs`",
            s.max_runs
        );
    }
    if let Some(gate) = &s.gate {
        // A gate that cannot judge the results is found before any model call is paid for.
        super::gate::preflight(gate, &s.grid.settings())?;
    }
    crate::base::timing::mark("loaded");
    let retriever =
        crate::adapters::retriever::open(&s.config.config.retriever, s.pipeline.embedder.clone())
            .await?;
    let retrieval = open_retrieval_variants(&s, &retriever, chunk_members).await?;
    if s.dry_run {
        return dry_run(&s, &ws, retriever, retrieval).await;
    }
    if let Some(file) = &s.batch_out {
        return super::batch::export(&s, &ws, retriever, retrieval, file).await;
    }
    if s.batch {
        // The batches answer into the cache; the sweep below finishes from it.
        super::batch::run(&s, &ws, retriever.clone(), retrieval.clone()).await?;
    }
    let bar = crate::app::progress::call_bar(
        s.quiet || s.format == OutputFormat::Json,
        s.pipeline.rate_limited.clone(),
    );
    let engine = Engine {
        progress: bar.as_ref().map(|(_, feed)| feed.clone()),
        repeat: s.repeat,
        ..s.pipeline.engine(retriever, retrieval, s.concurrency)
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
    let chats: Vec<String> = s.grid.chats().map(str::to_string).collect();
    if let Some(server) = s.pipeline.chat_servers.iter().find(|d| d.dead.is_dead()) {
        // Every later call of that model failed at once: a report would only look valid, and
        // the cache keeps the calls that finished, so a rerun resumes.
        let to = if s.grid.axis(Dim::Chat).len() > 1 || server.profile != DEFAULT_PROFILE {
            format!(" to chat profile `{}`", server.profile)
        } else {
            String::new()
        };
        anyhow::bail!(
            "the sweep stopped early: {} connection attempts in a row{to} failed ({}); no report written; is the model server at `{}` running?",
            crate::adapters::http::DEAD_AFTER,
            kinds(&c.errors_by_kind),
            server.shown
        );
    }
    if c.failed > 0 && c.failed == c.distinct_prompts {
        // Nothing was learned: a report would only look valid.
        anyhow::bail!(
            "every model call failed ({}); no report written; {}",
            kinds(&c.errors_by_kind),
            failure_hint(
                &s,
                &chats,
                &c.errors_by_kind,
                first_failure(&sweep.call_log)
            )
        );
    }
    if let Some((profile, by_kind)) = failed_profile(&sweep, &chats) {
        // One profile's column of the report would be all errors: its server is down or
        // refuses us, whatever the others did.
        anyhow::bail!(
            "every model call of chat profile `{profile}` failed ({}); no report written; {}",
            kinds(&by_kind),
            failure_hint(
                &s,
                std::slice::from_ref(&profile),
                &by_kind,
                first_failure(&sweep.call_log)
            )
        );
    }
    let judge_url = || {
        let j = s.config.config.judge.as_ref();
        j.map(|j| j.http().shown()).unwrap_or_default()
    };
    if s.pipeline.judge_dead.as_ref().is_some_and(|d| d.is_dead()) {
        anyhow::bail!(
            "the sweep stopped early: {} connection attempts in a row to the judge failed ({}); no report written; is the judge server at `{}` running?",
            crate::adapters::http::DEAD_AFTER,
            kinds(&c.judge_errors_by_kind),
            judge_url()
        );
    }
    if c.judge_calls > 0 && c.judge_failed == c.judge_calls {
        // Without a single grade the judge's columns would only look valid.
        let hint = match s.config.config.judge.as_ref() {
            Some(_)
                if c.judge_errors_by_kind
                    .keys()
                    .all(|k| k == "connect" || k == "timeout") =>
            {
                format!("is the judge server at `{}` running?", judge_url())
            }
            Some(j) if c.judge_errors_by_kind.keys().all(|k| k == "auth") => {
                format!("check the key in `${}`", j.api_key_env)
            }
            _ => "see docs/judge.md for the reply the rubric asks for".to_string(),
        };
        anyhow::bail!(
            "every judge call failed ({}); no report written; {hint}",
            kinds(&c.judge_errors_by_kind)
        );
    }
    crate::base::timing::mark("sweep");
    let results = collect(&s, &ws, sweep, shape, evalsets);
    crate::base::timing::mark("results");
    let written = report::write_all(&results, &s.out)?;
    crate::base::timing::mark("reports");
    for line in crate::base::timing::take_lines() {
        super::eprint_line(&line);
    }

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
        // A generation endpoint's failure names its question: the first is shown.
        let endpoint = s.grid.chats().any(|p| {
            crate::app::wiring::profiles::chat_profile(&s.config, p)
                .is_ok_and(|c| c.kind.takes_passages())
        });
        let first = first_failure(&results.call_log)
            .filter(|_| endpoint)
            .map(|m| format!("; the first: {m}"))
            .unwrap_or_default();
        super::eprint_line(&format!(
            "{level}: {} of {} model calls failed ({}); {what}{first}{}",
            c.failed + c.rewrite_failed,
            c.distinct_prompts + c.rewrite_calls,
            kinds(&c.errors_by_kind),
            if s.allow_errors {
                ""
            } else {
                " (pass --allow-errors to accept them)"
            }
        ));
        if !s.allow_errors {
            status = ExitStatus::Error;
        }
    }
    if c.judge_failed > 0 {
        let level = if s.allow_errors { "warning" } else { "error" };
        super::eprint_line(&format!(
            "{level}: {} of {} judge calls failed ({}); those grades are errors and the string rules stand{}",
            c.judge_failed,
            c.judge_calls,
            kinds(&c.judge_errors_by_kind),
            if s.allow_errors {
                ""
            } else {
                " (pass --allow-errors to accept them)"
            }
        ));
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

/// The retrieval variants of the grid's (embedder profile, chunk size) pairs; empty when the
/// grid names neither dimension. A pgvector retriever is opened per embedder, so each one's
/// dimensions are checked against the table.
async fn open_retrieval_variants(
    s: &SweepOptions,
    retriever: &Option<std::sync::Arc<dyn crate::adapters::retriever::Retriever>>,
    members: Option<Vec<Vec<Vec<usize>>>>,
) -> Result<Vec<crate::sweep::RetrievalVariant>> {
    let g = &s.grid;
    if g.at_default(Dim::Embedder) && g.at_default(Dim::ChunkTokens) {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for profile in g.embedders() {
        let embedder = s.pipeline.embedder_of(profile);
        let retriever = if profile == DEFAULT_PROFILE {
            retriever.clone()
        } else {
            crate::adapters::retriever::open(&s.config.config.retriever, embedder.clone())
                .await
                .map_err(|e| anyhow::anyhow!("embedder profile `{profile}`: {e:#}"))?
        };
        for (i, chunk_tokens) in g.chunk_tokens().enumerate() {
            out.push(crate::sweep::RetrievalVariant {
                embedder_profile: profile.to_string(),
                chunk_tokens,
                embedder: embedder.clone(),
                retriever: retriever.clone(),
                members: members.as_ref().map(|m| m[i].clone()),
            });
        }
    }
    Ok(out)
}

/// `--dry-run`: plan, count and print; no chat call, no report.
async fn dry_run(
    s: &SweepOptions,
    ws: &Workspace,
    retriever: Option<std::sync::Arc<dyn crate::adapters::retriever::Retriever>>,
    retrieval: Vec<crate::sweep::RetrievalVariant>,
) -> Result<ExitStatus> {
    let engine = Engine {
        // A dry run makes no chat call, so nothing to grade.
        judge: None,
        repeat: s.repeat,
        ..s.pipeline.engine(retriever, retrieval, s.concurrency)
    };
    let dry = engine.dry_run(ws, &s.grid, &s.pipeline.pricing).await?;
    match s.format {
        OutputFormat::Json => {
            let doc = serde_json::json!({ "dry_run": &dry, "currency": s.pipeline.currency });
            super::print_raw(&format!("{}\n", serde_json::to_string_pretty(&doc)?))?;
        }
        OutputFormat::Table => super::print(&dry_run_text(
            &dry,
            &s.pipeline.currency,
            s.pipeline.reranker.is_some(),
        ))?,
    }
    Ok(ExitStatus::Success)
}

/// The dry run's table, one row per chat model, and what it did and did not do.
fn dry_run_text(rows: &[crate::sweep::DryRun], currency: &str, reranked: bool) -> String {
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
fn table_text(results: &Results, written: &[String], wide: bool) -> String {
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
    lines.extend(insight.recommendation.lines());
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

/// What to check when every call of `profiles` failed with `by_kind`: the key when all were
/// refused as unauthorised, else the servers, each with its profile's name when there are
/// several. A generation endpoint's failure names its question, so the first one (`first`)
/// is shown in full.
fn failure_hint(
    s: &SweepOptions,
    profiles: &[String],
    by_kind: &std::collections::BTreeMap<String, usize>,
    first: Option<&str>,
) -> String {
    let sections: Vec<(&str, &crate::app::config::ChatConfig)> = profiles
        .iter()
        .filter_map(|p| {
            Some((
                p.as_str(),
                crate::app::wiring::profiles::chat_profile(&s.config, p).ok()?,
            ))
        })
        .filter(|(_, c)| c.kind.is_remote())
        .collect();
    let each = |f: &dyn Fn(&crate::app::config::ChatConfig) -> String| match &sections[..] {
        [(_, c)] => format!("`{}`", f(c)),
        _ => sections
            .iter()
            .map(|(p, c)| format!("`{}` (profile `{p}`)", f(c)))
            .collect::<Vec<_>>()
            .join(", "),
    };
    let url = each(&|c| c.endpoint().shown());
    let endpoint = sections.iter().any(|(_, c)| c.kind.takes_passages());
    if by_kind.keys().all(|k| k == "auth") {
        format!(
            "check the key in {}",
            each(&|c| format!("${}", c.api_key_env))
        )
    } else if by_kind.keys().all(|k| k == "connect" || k == "timeout") {
        format!("is the model server at {url} running?")
    } else if let Some(first) = first.filter(|_| endpoint) {
        format!("the first: {first}")
    } else {
        format!("see the errors of the server at {url}")
    }
}

/// The message of the first answer call that failed, in the order calls were planned.
fn first_failure(log: &crate::sweep::CallLog) -> Option<&str> {
    log.values()
        .filter(|c| c.role == crate::vocab::call::CallRole::Answer)
        .find_map(|c| c.error.as_ref())
        .map(|e| e.message.as_str())
}

/// With several chat profiles, the first whose every answer call failed, and its failures by
/// kind.
fn failed_profile(
    sweep: &Sweep,
    profiles: &[String],
) -> Option<(String, std::collections::BTreeMap<String, usize>)> {
    if profiles.len() < 2 {
        return None;
    }
    profiles.iter().find_map(|profile| {
        let mut calls: Vec<u32> = sweep
            .runs
            .iter()
            .filter(|r| sweep.settings[r.setting].chat == *profile)
            .filter_map(|r| r.call)
            .collect();
        calls.sort_unstable();
        calls.dedup();
        let mut by_kind = std::collections::BTreeMap::new();
        for &c in &calls {
            let error = sweep.call_log.get_index(c as usize)?.1.error.as_ref()?;
            *by_kind.entry(error.kind.as_str().to_string()).or_insert(0) += 1;
        }
        (!calls.is_empty()).then(|| (profile.clone(), by_kind))
    })
}

/// Each profile of dimension `dim` with its model, unless the grid sweeps the `default`
/// profile alone.
fn swept_profiles(
    grid: &crate::sweep::Grid,
    dim: Dim,
    model: impl Fn(&str) -> String,
) -> indexmap::IndexMap<String, String> {
    if grid.at_default(dim) {
        return indexmap::IndexMap::new();
    }
    grid.typed::<&str>(dim)
        .map(|p| (p.to_string(), model(p)))
        .collect()
}

/// Folds of the cross-validation hold out questions of each class, so a class may not have
/// fewer questions than there are folds.
fn check_folds(k: usize, from: &str, ws: &Workspace) -> Result<()> {
    let answerable = ws.questions().filter(|q| q.answerable).count();
    let unanswerable = ws.questions().count() - answerable;
    for (n, class) in [(answerable, "answerable"), (unanswerable, "unanswerable")] {
        if n > 0 && n < k {
            anyhow::bail!(
                "invalid {from} {k}: more folds than the {n} {class} questions of the sets (every fold holds out questions of each class); use at most {n} folds, or 0 for none"
            );
        }
    }
    Ok(())
}

/// `3 timeout, 1 server`
fn kinds(by_kind: &std::collections::BTreeMap<String, usize>) -> String {
    by_kind
        .iter()
        .map(|(k, n)| format!("{n} {k}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The finished sweep as the one value every report reads: the facts of this run (`Meta`)
/// from the options and the pipeline, the rest from the sweep.
pub fn collect(
    s: &SweepOptions,
    ws: &Workspace,
    sweep: Sweep,
    shape: Shape,
    evalsets: Vec<SetMeta>,
) -> Results {
    let meta = Meta {
        identity: s.identity.clone(),
        embedder: s.pipeline.embedder.model(),
        model: s.pipeline.model.model(),
        models: swept_profiles(&s.grid, Dim::Chat, |p| s.pipeline.chat_model_of(p).model()),
        embedders: swept_profiles(&s.grid, Dim::Embedder, |p| {
            s.pipeline.embedder_of(p).model()
        }),
        judge: s.pipeline.judge.as_ref().map(|j| j.model()),
        refusal: s.pipeline.rules.refusal.clone(),
        strict_refusal: s.pipeline.rules.refusal_match
            == crate::adapters::prompt::RefusalMatch::Strict,
        currency: s.pipeline.currency.clone(),
        pricing: s.pipeline.pricing,
        policy: s.config.config.recommend.clone(),
        evalsets,
    };
    // The patterns were checked when the config was loaded.
    let scanner = crate::adapters::scan::Scanner::new(&s.config.config.scan.patterns)
        .or_else(|_| {
            crate::adapters::scan::Scanner::new(&crate::adapters::scan::Scanner::default_patterns())
        })
        .expect("default patterns compile");
    Results::build(meta, ws, sweep, shape, s.shard, &scanner)
}
