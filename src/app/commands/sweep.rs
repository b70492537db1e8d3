//! `rageval sweep`: the main job.

use anyhow::Result;

use crate::adapters::evalset::Workspace;
use crate::app::cli::OutputFormat;
use crate::app::options::SweepOptions;
use crate::base::exit::ExitStatus;
use crate::output::report::{self, terminal, Exporter};
use crate::results::build::{set_meta, shard_workspace, Shape};
use crate::results::{Results, SetMeta};
use crate::sweep::health::{self, Servers};
use crate::sweep::{Engine, RetrievalVariant, Sweep};
use crate::vocab::dim::Dim;

/// The sweep's retriever over the default embedder (`None`: the builtin search).
type Retriever = Option<std::sync::Arc<dyn crate::adapters::retriever::Retriever>>;

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
    let (retriever, retrieval) = open_retrieval(&s, loaded.chunk_members).await?;
    if s.dry_run() {
        return dry_run(&s, &loaded.ws, retriever, retrieval).await;
    }
    if let Some(file) = s.batch_out() {
        return super::batch::export(&s, &loaded.ws, retriever, retrieval, file).await;
    }
    if s.batch() {
        // The batches answer into the cache; the sweep below finishes from it.
        super::batch::run(&s, &loaded.ws, retriever.clone(), retrieval.clone()).await?;
    }
    let sweep = sweep(&s, &loaded.ws, retriever, retrieval).await?;
    check_health(&s, &sweep)?;
    crate::base::timing::mark("sweep");
    let meta = s.meta(loaded.evalsets);
    let results = Results::build(
        meta,
        &loaded.ws,
        sweep,
        loaded.shape,
        s.shard(),
        &s.scanner(),
    );
    crate::base::timing::mark("results");
    let written = report::write_all(&results, s.out())?;
    crate::base::timing::mark("reports");
    for line in crate::base::timing::take_lines() {
        super::eprint_line(&line);
    }
    print_results(&s, &results, &written)?;
    let status = failed_calls(&s, &results);
    gate(&s, status)
}

/// `--gate`: the gate reads the file just written, exactly as a later `rageval gate` would;
/// its status stands unless the sweep already failed.
fn gate(s: &SweepOptions, status: ExitStatus) -> Result<ExitStatus> {
    match s.gate() {
        Some(gate) if status == ExitStatus::Success => super::gate::run(gate),
        Some(gate) => super::gate::run(gate).map(|_| status),
        None => Ok(status),
    }
}

/// The retriever of the `retriever:` section over the default embedder, and the grid's
/// retrieval variants (embedder profiles, chunk sizes).
async fn open_retrieval(
    s: &SweepOptions,
    members: Option<Vec<Vec<Vec<usize>>>>,
) -> Result<(Retriever, Vec<RetrievalVariant>)> {
    let p = s.pipeline();
    let retriever = crate::adapters::retriever::open(s.retriever(), p.embedder.clone()).await?;
    let retrieval = p
        .retrieval_variants(s.retriever(), s.grid(), &retriever, members)
        .await?;
    Ok((retriever, retrieval))
}

/// Everything that can be wrong with the input is found here, before any file is written:
/// the question sets, `--only`, the folds, the shard, the budget of runs, the gate's inputs.
fn load(s: &SweepOptions) -> Result<Loaded> {
    let foreign = !s.retriever().kind.chunks_itself();
    let mut ws = Workspace::load_for(s.evalsets(), foreign)?;
    if let Some(only) = s.only() {
        keep_only(&mut ws, only)?;
    }
    let chunk_members = fit_chunks(s, &mut ws);
    if let (Some(k), from) = s.folds() {
        if k >= 2 {
            check_folds(k, from, &ws)?;
        }
    }
    let evalsets = set_meta(&ws);
    let (ws, positions, sets) = shard_workspace(ws, s.shard());
    check_budget(s, ws.questions().count() as u64)?;
    if let Some(gate) = s.gate() {
        // A gate that cannot judge the results is found before any model call is paid for.
        super::gate::preflight(gate, &s.grid().settings())?;
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
    let grid = s.grid();
    let read = grid
        .embedders()
        .filter_map(|p| s.pipeline().embedder_of(p).max_input_tokens())
        .min();
    let fit = |tokens: usize| crate::adapters::corpus::chunk_limit(tokens, read);
    let max_chunk_tokens = fit(s.max_chunk_tokens());
    if grid.at_default(Dim::ChunkTokens) {
        ws.split_long_sections(max_chunk_tokens);
        return None;
    }
    let sizes: Vec<Option<usize>> = grid.chunk_tokens().map(|t| t.map(fit)).collect();
    let (joined, members) = crate::sweep::chunk_union(&ws.corpora, max_chunk_tokens, &sizes);
    ws.corpora = joined;
    Some(members)
}

/// `--max-runs`: the sweep may not plan more runs (questions x settings x repeats).
fn check_budget(s: &SweepOptions, questions: u64) -> Result<()> {
    let settings = s.grid().len() as u64;
    let runs = questions
        .saturating_mul(settings)
        .saturating_mul(u64::from(s.repeat()));
    if runs > s.max_runs() {
        let repeats = if s.repeat() > 1 {
            format!(" x {} repeats", s.repeat())
        } else {
            String::new()
        };
        anyhow::bail!(
            "the sweep plans {runs} runs ({questions} questions x {settings} settings{repeats}), more than the limit of {}: narrow the grid, or raise the limit with `--max-runs`",
            s.max_runs()
        );
    }
    Ok(())
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

/// Run the sweep with its progress bar; then, the bar gone, its notes and warnings get lines
/// of their own.
async fn sweep(
    s: &SweepOptions,
    ws: &Workspace,
    retriever: Retriever,
    retrieval: Vec<RetrievalVariant>,
) -> Result<Sweep> {
    let p = s.pipeline();
    let bar = crate::app::progress::call_bar(
        s.quiet() || s.output() == OutputFormat::Json,
        p.rate_limited.clone(),
    );
    let engine = Engine {
        progress: bar.as_ref().map(|(_, feed)| feed.clone()),
        repeat: s.repeat(),
        ..p.engine(retriever, retrieval, s.concurrency())
    };
    let sweep = engine.sweep(ws, s.grid()).await;
    if let Some((bar, _)) = bar {
        bar.finish();
    }
    let mut sweep = sweep?;
    if !s.quiet() {
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
/// judge) failed, is not worth a report: it would only look valid (`sweep::health`).
fn check_health(s: &SweepOptions, sweep: &Sweep) -> Result<()> {
    let p = s.pipeline();
    let servers = Servers {
        chats: s
            .grid()
            .chats()
            .filter_map(|n| Some((n, s.chat(n)?)))
            .collect(),
        dead_chat: p
            .chat_servers
            .iter()
            .find(|d| d.dead.is_dead())
            .map(|d| (d.profile.as_str(), d.shown.clone())),
        judge: s.judge(),
        judge_dead: p.judge_dead.as_ref().is_some_and(|d| d.is_dead()),
    };
    match health::stop_reason(sweep, &servers) {
        Some(why) => Err(anyhow::anyhow!(why)),
        None => Ok(()),
    }
}

/// The results on stdout: the results document with `--output json`, else the settings
/// table and what was written (unless `--quiet`).
fn print_results(
    s: &SweepOptions,
    results: &Results,
    written: &[std::path::PathBuf],
) -> Result<()> {
    match s.output() {
        OutputFormat::Json => {
            let mut buf = Vec::new();
            report::JsonResults.write(results, &mut buf)?;
            Ok(super::print_raw(&String::from_utf8(buf)?)?)
        }
        OutputFormat::Table if !s.quiet() => {
            let names: Vec<String> = written.iter().map(|p| p.display().to_string()).collect();
            Ok(super::print(&terminal::table_text(
                results,
                &names,
                s.wide(),
            ))?)
        }
        OutputFormat::Table => Ok(()),
    }
}

/// Failed model and judge calls: an error (exit status 1) unless `--allow-errors`, which
/// makes them a warning.
fn failed_calls(s: &SweepOptions, results: &Results) -> ExitStatus {
    // A generation endpoint's failure names its question: the first is shown.
    let endpoint = s
        .grid()
        .chats()
        .any(|p| s.chat(p).is_some_and(|c| c.kind.takes_passages()));
    let lines = terminal::failed_calls(results, s.allow_errors(), endpoint);
    for line in &lines {
        super::eprint_line(line);
    }
    if lines.is_empty() || s.allow_errors() {
        ExitStatus::Success
    } else {
        ExitStatus::Error
    }
}

/// `--dry-run`: plan, count and print; no chat call, no report.
async fn dry_run(
    s: &SweepOptions,
    ws: &Workspace,
    retriever: Retriever,
    retrieval: Vec<RetrievalVariant>,
) -> Result<ExitStatus> {
    let p = s.pipeline();
    let engine = Engine {
        // A dry run makes no chat call, so nothing to grade.
        judge: None,
        repeat: s.repeat(),
        ..p.engine(retriever, retrieval, s.concurrency())
    };
    let dry = engine.dry_run(ws, s.grid(), &p.pricing).await?;
    match s.output() {
        OutputFormat::Json => {
            let doc = serde_json::json!({ "dry_run": &dry, "currency": p.currency });
            super::print_raw(&format!("{}\n", serde_json::to_string_pretty(&doc)?))?;
        }
        OutputFormat::Table => super::print(&terminal::dry_run_text(
            &dry,
            &p.currency,
            p.reranker.is_some(),
        ))?,
    }
    Ok(ExitStatus::Success)
}
