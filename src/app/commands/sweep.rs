//! `rageval sweep`: the main job, as a list of named steps over the resolved plan
//! ([`SweepOptions`]): the questions, the retrieval, the sweep, its health, the results, the
//! reports, what stdout shows, the failed calls, the gate.

use anyhow::Result;

use crate::adapters::evalset::Workspace;
use crate::app::cli::OutputFormat;
use crate::app::options::{Questions, SweepOptions};
use crate::base::exit::ExitStatus;
use crate::output::labels::LabelsFile;
use crate::output::report::{self, terminal, Exporter, Summary};
use crate::results::Results;
use crate::sweep::health::{self, Servers};
use crate::sweep::{Coverage, RetrievalVariant, Sweep};

use super::engine::{dry_engine, sweep_only, Retriever};

pub async fn run(s: SweepOptions) -> Result<ExitStatus> {
    let mut questions = load(&s)?;
    // A labels file that cannot be read is found before any model call is paid for.
    let labels = s.labels().map(LabelsFile::load).transpose()?;
    let (retriever, retrieval) = open_retrieval(&s, questions.chunk_members.take()).await?;
    if s.dry_run() {
        return dry_run(&s, &questions.ws, retriever, retrieval).await;
    }
    if let Some(file) = s.batch_out() {
        return super::batch::export(&s, &questions.ws, retriever, retrieval, file).await;
    }
    if let Some(plan) = s.adaptive() {
        let (questions, mut sweep, adaptive) =
            super::adaptive::run(&s, plan, questions, retriever, retrieval).await?;
        print_notes(&s, &mut sweep);
        return finish(&s, questions, sweep, labels.as_ref(), Some(adaptive)).await;
    }
    if s.any_batched() {
        // The batches answer into the cache; the sweep below finishes from it.
        let all = super::batch::Sending::All;
        let every = Coverage::all();
        super::batch::run(
            &s,
            &questions.ws,
            retriever.clone(),
            retrieval.clone(),
            all,
            every,
        )
        .await?;
    }
    let mut sweep = sweep_only(&s, &questions.ws, retriever, retrieval, Coverage::all()).await?;
    print_notes(&s, &mut sweep);
    finish(&s, questions, sweep, labels.as_ref(), None).await
}

/// The finished sweep's health, results (with the labels), reports (with an adaptive sweep's
/// `adaptive.json`), its line in the history, stdout, the grader's warnings, failed calls and
/// gate.
async fn finish(
    s: &SweepOptions,
    questions: Questions,
    sweep: Sweep,
    labels: Option<&LabelsFile>,
    adaptive: Option<super::adaptive::AdaptiveReport>,
) -> Result<ExitStatus> {
    check_health(s, &sweep)?;
    let results = s.results(questions, sweep, labels)?;
    let summary = Summary::of(&results);
    let report::Written {
        paths: mut written,
        results_digest,
    } = write_reports(s, &results, &summary)?;
    if let Some(a) = &adaptive {
        written.push(super::adaptive::write(a, s.out())?);
    }
    remember(s, &results, results_digest);
    print_results(s, &results, &summary, &written)?;
    if let Some(a) = &adaptive {
        if !s.quiet() {
            super::eprint_line(&format!("adaptive: {}", a.line()));
        }
    }
    for warning in results.grader_checks().warnings {
        super::eprint_line(&format!("warning: {warning}"));
    }
    // A grader the labels contradict too often: said even with --quiet, as other warnings are.
    if let Some(warning) = &summary.grader_warning {
        super::eprint_line(warning);
    }
    let status = failed_calls(s, &results);
    gate(s, status).await
}

/// The plan's questions; a gate that cannot judge the results is found here too, before any
/// model call is paid for.
fn load(s: &SweepOptions) -> Result<Questions> {
    let questions = s.questions()?;
    if let Some(gate) = s.gate() {
        super::gate::preflight(gate, &s.grid().settings())?;
    }
    crate::base::timing::mark("loaded");
    Ok(questions)
}

/// Every report, written atomically to the plan's folder; with `RAGEVAL_TIMINGS`, how long
/// each stage took.
fn write_reports(
    s: &SweepOptions,
    results: &Results,
    summary: &Summary,
) -> Result<report::Written> {
    crate::base::timing::mark("results");
    let written = report::write_all(results, summary, s.out())?;
    crate::base::timing::mark("reports");
    for line in crate::base::timing::take_lines() {
        super::eprint_line(&line);
    }
    Ok(written)
}

/// Append the sweep's line to the history (docs/history.md), with `results_digest`, the
/// sha256 of the results.json written. The reports are written by then: a history that
/// cannot be appended to is a warning, not a failed sweep.
fn remember(s: &SweepOptions, results: &Results, results_digest: String) {
    let Some(path) = s.history() else {
        return;
    };
    let results_json = s.out().join("results.json");
    if let Err(e) = super::history::append(path, results, &results_json, results_digest, s.base()) {
        super::eprint_line(&format!(
            "warning: cannot append to the history `{}`: {e:#}",
            path.display()
        ));
    }
}

/// `--gate`: the gate reads the file just written, exactly as a later `rageval gate` would;
/// its status stands unless the sweep already failed.
async fn gate(s: &SweepOptions, status: ExitStatus) -> Result<ExitStatus> {
    match s.gate() {
        Some(gate) if status == ExitStatus::Success => super::gate::run(gate).await,
        Some(gate) => super::gate::run(gate).await.map(|_| status),
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

/// The bar gone, the sweep's notes (unless `--quiet`) and warnings get lines of their own.
fn print_notes(s: &SweepOptions, sweep: &mut Sweep) {
    if !s.quiet() {
        for note in std::mem::take(&mut sweep.notes) {
            super::eprint_line(&format!("note: {note}"));
        }
    }
    for warning in std::mem::take(&mut sweep.warnings) {
        super::eprint_line(&format!("warning: {warning}"));
    }
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
    if let Some(why) = health::stop_reason(sweep, &servers) {
        anyhow::bail!(why);
    }
    crate::base::timing::mark("sweep");
    Ok(())
}

/// The results on stdout: the results document with `--output json`, else the settings
/// table and what was written (unless `--quiet`).
fn print_results(
    s: &SweepOptions,
    results: &Results,
    summary: &Summary,
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
                summary,
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
    let mut dry = dry_engine(s, retriever, retrieval)
        .dry_run(ws, s.grid(), &p.pricing)
        .await?;
    let batched = s.batch_priced(&mut dry);
    match s.output() {
        OutputFormat::Json => {
            let doc = serde_json::json!({ "dry_run": &dry, "currency": p.currency });
            super::print_raw(&format!("{}\n", serde_json::to_string_pretty(&doc)?))?;
        }
        OutputFormat::Table => {
            let mut text = terminal::dry_run_text(&dry, &p.currency, p.reranker.is_some());
            text.extend(batch_price_note(s, &batched));
            super::print(&text)?
        }
    }
    Ok(ExitStatus::Success)
}

/// The dry run's line for the sections [`SweepOptions::batch_priced`] priced, if any.
fn batch_price_note(s: &SweepOptions, sections: &[crate::batch::Section]) -> Option<String> {
    if sections.is_empty() {
        return None;
    }
    let names: Vec<String> = sections.iter().map(|s| format!("`{s}`")).collect();
    Some(format!(
        "the calls of {} go through batches: their cost is at the batch price ({:.0}% off).\n",
        names.join(", "),
        s.pipeline().pricing.batch_discount * 100.0
    ))
}
