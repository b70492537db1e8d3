//! Batch engines from the command line: `sweep --batch-out FILE` (the requests a sweep needs,
//! for any engine) and `rageval batch import FILE...` (the engine's answers, into the cache).

use std::path::Path;
use std::sync::mpsc::Sender;
use std::sync::Arc;

use anyhow::{bail, Result};

use crate::adapters::evalset::Workspace;
use crate::app::options::{BatchImportOptions, GenerateOptions, SweepOptions};
use crate::base::exit::ExitStatus;
use crate::batch::collect::SweepJob;
use crate::batch::cycle::{Cycle, Event};
use crate::batch::{self, CacheFiles, Ledger, Pending, Section, StoreKind};
use crate::sweep::{Coverage, Engine, RetrievalVariant};

/// The sweep's retriever, as `sweep` opens it.
type Retriever = Option<Arc<dyn crate::adapters::retriever::Retriever>>;

/// The sweep as the batch cycle sees it: the engine the live sweep runs (its models behind the
/// response cache, with `--repeat`), what it sweeps, and which sections send batches.
fn job<'a>(
    s: &'a SweepOptions,
    ws: &'a Workspace,
    retriever: Retriever,
    retrieval: Vec<RetrievalVariant>,
    coverage: Coverage,
) -> SweepJob<'a> {
    SweepJob {
        engine: Engine {
            repeat: s.repeat(),
            coverage,
            ..s.pipeline().engine(retriever, retrieval, s.concurrency())
        },
        ws,
        grid: s.grid(),
        batched: Box::new(move |section| s.batched(section)),
    }
}

/// Which sections of a `batch: true` sweep a cycle sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sending {
    /// Every section that batches.
    All,
    /// Only the embedder sections that batch: the texts a round must embed before its calls
    /// can be counted (an adaptive sweep's budget).
    Embeddings,
}

/// `sweep --batch-out FILE`.
pub async fn export(
    s: &SweepOptions,
    ws: &Workspace,
    retriever: Retriever,
    retrieval: Vec<RetrievalVariant>,
    file: &Path,
) -> Result<ExitStatus> {
    // Embeddings go into the file when their embedder batches (`batch: true`, or
    // `--batch-embeddings`); every chat request does.
    let cache = CacheFiles::required(s.pipeline().batch_cache())?;
    let job = job(s, ws, retriever, retrieval, Coverage::all());
    let pending = job.collect(&cache, &|_| true).await?;
    if pending.is_empty() {
        if !s.quiet() {
            super::print("nothing to write: the cache holds every answer the sweep needs; `rageval sweep` finishes from it with no call.\n")?;
        }
        return Ok(ExitStatus::Success);
    }
    // The ledger first: an answer that comes back always finds its request.
    Ledger::open(&s.pipeline().cache_dir)?.record(&pending)?;
    let text = batch::input_text(&pending);
    crate::output::report::write_atomic(file, |w| Ok(w.write_all(text.as_bytes())?))?;
    if !s.quiet() {
        super::print(&export_text(s, &pending, file))?;
    }
    Ok(ExitStatus::Success)
}

/// What `--batch-out` says: what it wrote, what that costs at the batch price, what comes next.
fn export_text(s: &SweepOptions, pending: &[Pending], file: &Path) -> String {
    let p = &s.pipeline().pricing;
    let discount = p.batch_discount;
    let shown = file.display();
    let tokens: u64 = pending.iter().map(|x| x.prompt_tokens).sum();
    let next = format!(
        "next: have a batch engine answer {shown}, then `rageval batch import OUTPUT.jsonl [ERRORS.jsonl]`"
    );
    let embeddings = pending
        .iter()
        .filter(|x| x.store == StoreKind::Embedding)
        .count();
    if embeddings > 0 {
        // The collector gives embeddings alone: the prompts depend on what they retrieve.
        return format!(
            "wrote {embeddings} embedding requests to {shown} (OpenAI batch input format; no embedding or chat call was made).\nestimated input tokens: {tokens} (embeddings are not priced)\n{next}, then run this command again: the chat requests depend on what those embeddings retrieve.\n"
        );
    }
    let count = |store| pending.iter().filter(|x| x.store == store).count();
    let (chat, judge) = (count(StoreKind::Chat), count(StoreKind::Judge));
    let cost: f64 = pending
        .iter()
        .map(|x| {
            let rate = match x.store {
                StoreKind::Judge => p.judge_prompt_per_million,
                StoreKind::Chat | StoreKind::Embedding => p.prompt_per_million,
            };
            x.prompt_tokens as f64 * rate / 1e6 * (1.0 - discount)
        })
        .sum();
    let rewrites = pending.iter().filter(|x| x.rewrite).count();
    let what = match (chat - rewrites, rewrites, judge) {
        (_, r, _) if r > 0 => format!("{r} follow-up rewrites"),
        (c, _, 0) => format!("{c} chat requests"),
        (0, _, j) => format!("{j} judge requests"),
        (c, _, j) => format!("{c} chat and {j} judge requests"),
    };
    let mut text = format!(
        "wrote {what} to {shown} (OpenAI batch input format; no chat call was made).\nestimated prompt tokens: {tokens}; estimated prompt cost at the batch price ({:.0}% off): {cost:.4} {}\n{next}",
        discount * 100.0,
        s.pipeline().currency
    );
    if rewrites > 0 {
        text.push_str(", then run this command again: the answers depend on the rewrites.\n");
    } else if judge == 0 && s.pipeline().judge.is_some() {
        text.push_str(", then run this command again for the judge's grades of those answers.\n");
    } else {
        text.push_str(" and run the sweep: it finishes from the cache (failed lines are called live, or `--batch-out` writes them again).\n");
    }
    text
}

/// `rageval batch import FILE...`.
pub fn import(s: &BatchImportOptions) -> Result<ExitStatus> {
    let (dir, quiet) = (s.cache_dir(), s.quiet());
    let ledger = Ledger::open(dir)?;
    if ledger.is_empty() {
        bail!(
            "the cache folder `{}` holds no batch requests: write them with `rageval sweep --batch-out FILE` (with the same `--cache-dir`) first",
            dir.display()
        );
    }
    let done = batch::import::import(s.files(), dir)?;
    let unanswered = batch::import::unanswered(dir, &ledger)?;
    if !quiet {
        super::batch_view::warn_lines(&done);
        super::print(&super::batch_view::import_text(
            &done,
            unanswered,
            ledger.len(),
            &match s.shard() {
                Some(shard) => format!("rageval sweep --shard {shard}"),
                None => "rageval sweep".to_string(),
            },
        ))?;
    }
    Ok(ExitStatus::Success)
}

/// `batch: true`: the sweep's requests through the batch cycle
/// ([`crate::batch::cycle::Cycle::sweep`]), its events rendered as they come; the answer and
/// rewrite calls its batches answered (an adaptive sweep counts them as made).
pub async fn run(
    s: &SweepOptions,
    ws: &Workspace,
    retriever: Retriever,
    retrieval: Vec<RetrievalVariant>,
    sending: Sending,
    coverage: Coverage,
) -> Result<usize> {
    let cache = CacheFiles::required(s.pipeline().batch_cache())?;
    let mut job = job(s, ws, retriever, retrieval, coverage);
    if sending == Sending::Embeddings {
        job.batched = Box::new(move |section| {
            matches!(section, Section::Embedder | Section::Embedders(_)) && s.batched(section)
        });
    }
    rendered(s.quiet(), async |events| {
        Cycle::new(s, cache, events).sweep(&job).await
    })
    .await
}

/// `rageval generate` with a generator whose section (`generate.model`'s, else `chat:`) says
/// `batch: true`: its calls through the batch cycle ([`crate::batch::cycle::Cycle::generate`]).
/// Without `batch: true`, nothing.
pub async fn run_generate(
    s: &GenerateOptions,
    engine: &Engine,
    job: &crate::generate::engine::Job<'_>,
) -> Result<()> {
    let name = s.generator_profile();
    if !s.chat(name).is_some_and(|c| c.batch) {
        return Ok(());
    }
    let cache = CacheFiles::required(s.pipeline().batch_cache())?;
    rendered(s.quiet(), async |events| {
        Cycle::new(s, cache, events)
            .generate(engine, s.generator(), job, Section::chat(name))
            .await
    })
    .await
    .map(|_| ())
}

/// Run `cycle` with its events rendered on stderr (see [`super::batch_view`]) as they come,
/// on a thread of their own: nothing of the app runs inside the cycle. The chat lines its
/// batches answered ([`crate::batch::cycle::Answered`]).
async fn rendered(
    quiet: bool,
    cycle: impl AsyncFnOnce(Sender<Event>) -> Result<()>,
) -> Result<usize> {
    let (events, received) = std::sync::mpsc::channel();
    let view = std::thread::spawn(move || {
        let view = super::batch_view::View::new(quiet);
        let mut answered = crate::batch::cycle::Answered::default();
        for event in received {
            answered.see(&event);
            view.show(event);
        }
        answered.calls()
    });
    let done = cycle(events).await;
    // The renderer ends once the cycle (and its sender) is gone; it only panics on a bug.
    let answered = view
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
    done.map(|()| answered)
}
