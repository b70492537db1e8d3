//! `rageval sweep`: the main job.

use anyhow::Result;

use crate::adapters::evalset::Workspace;
use crate::app::cli::OutputFormat;
use crate::app::options::SweepOptions;
use crate::base::exit::ExitStatus;
use crate::output::report::{self, terminal, Exporter};
use crate::results::build::{set_meta, shard_workspace, Shape};
use crate::results::{Meta, Results, SetMeta};
use crate::sweep::health::{self, first_failure, kinds, Cause, Unusable};
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

/// The questions to sweep, ready: loaded, chunked to fit, sharded, within budget.
struct Loaded {
    ws: Workspace,
    /// `--chunk-tokens`: each size's members of the joined corpora.
    chunk_members: Option<Vec<Vec<Vec<usize>>>>,
    evalsets: Vec<SetMeta>,
    shape: Shape,
}

pub async fn run(s: SweepOptions) -> Result<ExitStatus> {
    let loaded = load(&s)?;
    crate::base::timing::mark("loaded");
    let retriever =
        crate::adapters::retriever::open(&s.config.config.retriever, s.pipeline.embedder.clone())
            .await?;
    let retrieval = open_retrieval_variants(&s, &retriever, loaded.chunk_members).await?;
    if s.dry_run {
        return dry_run(&s, &loaded.ws, retriever, retrieval).await;
    }
    if let Some(file) = &s.batch_out {
        return super::batch::export(&s, &loaded.ws, retriever, retrieval, file).await;
    }
    if super::batch::any_batched(&s) {
        // The batches answer into the cache; the sweep below finishes from it.
        super::batch::run(&s, &loaded.ws, retriever.clone(), retrieval.clone()).await?;
    }
    let sweep = sweep(&s, &loaded.ws, retriever, retrieval).await?;
    check_health(&s, &sweep)?;
    crate::base::timing::mark("sweep");
    let results = collect(&s, &loaded.ws, sweep, loaded.shape, loaded.evalsets);
    crate::base::timing::mark("results");
    let written = report::write_all(&results, &s.out)?;
    crate::base::timing::mark("reports");
    for line in crate::base::timing::take_lines() {
        super::eprint_line(&line);
    }
    print_results(&s, &results, &written)?;
    let mut status = failed_calls(&s, &results);
    if let Some(gate) = &s.gate {
        // The gate reads the file just written, exactly as a later `rageval gate` would.
        let gated = super::gate::run(gate)?;
        if status == ExitStatus::Success {
            status = gated;
        }
    }
    Ok(status)
}

/// Everything that can be wrong with the input is found here, before any file is written:
/// the question sets, `--only`, the folds, the shard, the budget of runs, the gate's inputs.
fn load(s: &SweepOptions) -> Result<Loaded> {
    let foreign = !s.config.config.retriever.kind.chunks_itself();
    let mut ws = Workspace::load_for(&s.evalsets, foreign)?;
    if let Some(only) = s.only {
        keep_only(&mut ws, only)?;
    }
    let chunk_members = fit_chunks(s, &mut ws);
    if let Some(k) = s.config.config.recommend.folds.filter(|&k| k >= 2) {
        check_folds(k, s.folds_from, &ws)?;
    }
    let evalsets = set_meta(&ws);
    let (ws, positions, sets) = shard_workspace(ws, s.shard);
    check_budget(s, ws.questions().count() as u64)?;
    if let Some(gate) = &s.gate {
        // A gate that cannot judge the results is found before any model call is paid for.
        super::gate::preflight(gate, &s.grid.settings())?;
    }
    Ok(Loaded {
        ws,
        chunk_members,
        evalsets,
        shape: Shape { positions, sets },
    })
}

/// Sections are cut to fit the embedder that reads the least, with a margin; with
/// `--chunk-tokens`, every size's chunks are joined into one corpus per slot (their members).
fn fit_chunks(s: &SweepOptions, ws: &mut Workspace) -> Option<Vec<Vec<Vec<usize>>>> {
    let read = s
        .grid
        .embedders()
        .filter_map(|p| s.pipeline.embedder_of(p).max_input_tokens())
        .min();
    let fit = |tokens: usize| crate::adapters::corpus::chunk_limit(tokens, read);
    let max_chunk_tokens = fit(s.config.config.corpus.max_chunk_tokens);
    if s.grid.at_default(Dim::ChunkTokens) {
        ws.split_long_sections(max_chunk_tokens);
        return None;
    }
    let sizes: Vec<Option<usize>> = s.grid.chunk_tokens().map(|t| t.map(fit)).collect();
    let (joined, members) = crate::sweep::chunk_union(&ws.corpora, max_chunk_tokens, &sizes);
    ws.corpora = joined;
    Some(members)
}

/// `--max-runs`: the sweep may not plan more runs (questions x settings x repeats).
fn check_budget(s: &SweepOptions, questions: u64) -> Result<()> {
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
    Ok(())
}

/// Run the sweep with its progress bar; then, the bar gone, its notes and warnings get lines
/// of their own.
async fn sweep(
    s: &SweepOptions,
    ws: &Workspace,
    retriever: Option<std::sync::Arc<dyn crate::adapters::retriever::Retriever>>,
    retrieval: Vec<crate::sweep::RetrievalVariant>,
) -> Result<Sweep> {
    let bar = crate::app::progress::call_bar(
        s.quiet || s.format == OutputFormat::Json,
        s.pipeline.rate_limited.clone(),
    );
    let engine = Engine {
        progress: bar.as_ref().map(|(_, feed)| feed.clone()),
        repeat: s.repeat,
        ..s.pipeline.engine(retriever, retrieval, s.concurrency)
    };
    let sweep = engine.sweep(ws, &s.grid).await;
    if let Some((bar, _)) = bar {
        bar.finish();
    }
    let mut sweep = sweep?;
    if !s.quiet {
        for note in std::mem::take(&mut sweep.notes) {
            super::eprint_line(&format!("note: {note}"));
        }
    }
    for warning in std::mem::take(&mut sweep.warnings) {
        super::eprint_line(&format!("warning: {warning}"));
    }
    Ok(sweep)
}

/// A sweep whose servers died, or whose every call (of the model, of one profile, of the
/// judge) failed, is not worth a report: it would only look valid. The cache keeps the calls
/// that finished, so a rerun resumes.
fn check_health(s: &SweepOptions, sweep: &Sweep) -> Result<()> {
    let c = &sweep.calls;
    let chats: Vec<String> = s.grid.chats().map(str::to_string).collect();
    if let Some(server) = s.pipeline.chat_servers.iter().find(|d| d.dead.is_dead()) {
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
    let first = first_failure(&sweep.call_log);
    let judge_dead = s.pipeline.judge_dead.as_ref().is_some_and(|d| d.is_dead());
    match health::check(sweep, &chats) {
        Some(Unusable::EveryCall(by_kind)) => anyhow::bail!(
            "every model call failed ({}); no report written; {}",
            kinds(&by_kind),
            failure_hint(s, &chats, &by_kind, first)
        ),
        // One profile's column of the report would be all errors: its server is down or
        // refuses us, whatever the others did.
        Some(Unusable::Profile(profile, by_kind)) => anyhow::bail!(
            "every model call of chat profile `{profile}` failed ({}); no report written; {}",
            kinds(&by_kind),
            failure_hint(s, std::slice::from_ref(&profile), &by_kind, first)
        ),
        _ if judge_dead => anyhow::bail!(
            "the sweep stopped early: {} connection attempts in a row to the judge failed ({}); no report written; is the judge server at `{}` running?",
            crate::adapters::http::DEAD_AFTER,
            kinds(&c.judge_errors_by_kind),
            judge_url(s)
        ),
        Some(Unusable::EveryJudgeCall(by_kind)) => {
            let hint = match (s.config.config.judge.as_ref(), Cause::of(&by_kind)) {
                (Some(_), Cause::Unreachable) => {
                    format!("is the judge server at `{}` running?", judge_url(s))
                }
                (Some(j), Cause::Auth) => format!("check the key in `${}`", j.api_key_env),
                _ => "see docs/judge.md for the reply the rubric asks for".to_string(),
            };
            anyhow::bail!(
                "every judge call failed ({}); no report written; {hint}",
                kinds(&by_kind)
            )
        }
        None => Ok(()),
    }
}

/// The judge's servers as messages show them.
fn judge_url(s: &SweepOptions) -> String {
    let j = s.config.config.judge.as_ref();
    j.map(|j| j.http().shown()).unwrap_or_default()
}

/// The results on stdout: the results document with `--format json`, else the settings
/// table and what was written (unless `--quiet`).
fn print_results(
    s: &SweepOptions,
    results: &Results,
    written: &[std::path::PathBuf],
) -> Result<()> {
    match s.format {
        OutputFormat::Json => {
            let mut buf = Vec::new();
            report::JsonResults.write(results, &mut buf)?;
            Ok(super::print_raw(&String::from_utf8(buf)?)?)
        }
        OutputFormat::Table if !s.quiet => {
            let names: Vec<String> = written.iter().map(|p| p.display().to_string()).collect();
            Ok(super::print(&terminal::table_text(
                results, &names, s.wide,
            ))?)
        }
        OutputFormat::Table => Ok(()),
    }
}

/// Failed model and judge calls: an error (exit status 1) unless `--allow-errors`, which
/// makes them a warning.
fn failed_calls(s: &SweepOptions, results: &Results) -> ExitStatus {
    let level = if s.allow_errors { "warning" } else { "error" };
    let accept = if s.allow_errors {
        ""
    } else {
        " (pass --allow-errors to accept them)"
    };
    let c = &results.calls;
    let mut failed = false;
    if c.failed + c.rewrite_failed > 0 {
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
            "{level}: {} of {} model calls failed ({}); {what}{first}{accept}",
            c.failed + c.rewrite_failed,
            c.distinct_prompts + c.rewrite_calls,
            kinds(&c.errors_by_kind),
        ));
        failed = true;
    }
    if c.judge_failed > 0 {
        super::eprint_line(&format!(
            "{level}: {} of {} judge calls failed ({}); those grades are errors and the string rules stand{accept}",
            c.judge_failed,
            c.judge_calls,
            kinds(&c.judge_errors_by_kind),
        ));
        failed = true;
    }
    if failed && !s.allow_errors {
        ExitStatus::Error
    } else {
        ExitStatus::Success
    }
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
        OutputFormat::Table => super::print(&terminal::dry_run_text(
            &dry,
            &s.pipeline.currency,
            s.pipeline.reranker.is_some(),
        ))?,
    }
    Ok(ExitStatus::Success)
}

/// What to check when every call of `profiles` failed with `by_kind`: the key when all were
/// refused as unauthorised, else the servers, each with its profile's name when there are
/// several. A generation endpoint's failure names its question, so the first one (`first`)
/// is shown in full.
fn failure_hint(
    s: &SweepOptions,
    profiles: &[String],
    by_kind: &crate::sweep::health::ByKind,
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
    match Cause::of(by_kind) {
        Cause::Auth => format!(
            "check the key in {}",
            each(&|c| format!("${}", c.api_key_env))
        ),
        Cause::Unreachable => format!("is the model server at {url} running?"),
        Cause::Other => match first.filter(|_| endpoint) {
            Some(first) => format!("the first: {first}"),
            None => format!("see the errors of the server at {url}"),
        },
    }
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
