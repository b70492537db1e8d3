//! Batch engines from the command line: `sweep --batch-out FILE` (the requests a sweep needs,
//! for any engine) and `rageval batch import FILE...` (the engine's answers, into the cache).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Result};

use crate::adapters::batch::{self, Collector, Ledger, Pending, StoreKind};
use crate::adapters::evalset::Workspace;
use crate::app::cli::BatchImportArgs;
use crate::app::options::SweepOptions;
use crate::base::exit::ExitStatus;
use crate::sweep::{Engine, RetrievalVariant};

/// The sweep's retriever, as `sweep` opens it.
type Retriever = Option<Arc<dyn crate::adapters::retriever::Retriever>>;

/// Plan the sweep as a live one and collect, instead of sending, every request the cache does
/// not hold (one round: rewrites first, then answers, then the judge's grades): of every chat
/// model with `profiles`, else of the chat section's and the judge only.
pub async fn collect(
    s: &SweepOptions,
    ws: &Workspace,
    retriever: Retriever,
    retrieval: Vec<RetrievalVariant>,
    profiles: bool,
) -> Result<Vec<Pending>> {
    if s.pipeline().cache.is_none() {
        bail!("batches need the response cache (the answers are read into it): remove `--no-cache`, or set `cache.enabled: true`");
    }
    let collector = Arc::new(Collector::default());
    let engine = Engine {
        repeat: s.repeat(),
        ..s.pipeline()
            .deferred(&collector, profiles)
            .engine(retriever, retrieval, s.concurrency())
    };
    engine.sweep(ws, s.grid()).await?;
    Ok(collector.take())
}

/// `sweep --batch-out FILE`.
pub async fn export(
    s: &SweepOptions,
    ws: &Workspace,
    retriever: Retriever,
    retrieval: Vec<RetrievalVariant>,
    file: &Path,
) -> Result<ExitStatus> {
    let pending = collect(s, ws, retriever, retrieval, true).await?;
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
    let count = |store| pending.iter().filter(|x| x.store == store).count();
    let (chat, judge) = (count(StoreKind::Chat), count(StoreKind::Judge));
    let tokens: u64 = pending.iter().map(|x| x.prompt_tokens).sum();
    let cost: f64 = pending
        .iter()
        .map(|x| {
            let rate = match x.store {
                StoreKind::Chat => p.prompt_per_million,
                StoreKind::Judge => p.judge_prompt_per_million,
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
    let shown = file.display();
    let mut text = format!(
        "wrote {what} to {shown} (OpenAI batch input format; no chat call was made).\nestimated prompt tokens: {tokens}; estimated prompt cost at the batch price ({:.0}% off): {cost:.4} {}\n",
        discount * 100.0,
        s.pipeline().currency
    );
    text.push_str(&format!(
        "next: have a batch engine answer {shown}, then `rageval batch import OUTPUT.jsonl [ERRORS.jsonl]`"
    ));
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
pub fn import(args: &BatchImportArgs, config: Option<PathBuf>, quiet: bool) -> Result<ExitStatus> {
    let cfg = crate::app::config::LoadedConfig::load(config.as_deref())?;
    let dir = match &args.cache_dir {
        Some(d) => std::path::absolute(d)?,
        None => cfg.resolve(&cfg.config.cache.dir),
    };
    let ledger = Ledger::open(&dir)?;
    if ledger.is_empty() {
        bail!(
            "the cache folder `{}` holds no batch requests: write them with `rageval sweep --batch-out FILE` (with the same `--cache-dir`) first",
            dir.display()
        );
    }
    let done = batch::import::import(&args.files, &dir)?;
    for (at, id) in &done.unknown {
        super::eprint_line(&format!(
            "warning: {at}: `custom_id` {id} is no request of this project (not imported)"
        ));
    }
    for f in done.failed.iter().take(MAX_SHOWN) {
        super::eprint_line(&format!("warning: {}: {}", f.at, f.message));
    }
    if done.failed.len() > MAX_SHOWN {
        super::eprint_line(&format!(
            "warning: ... and {} more failed lines",
            done.failed.len() - MAX_SHOWN
        ));
    }
    if !quiet {
        super::print(&import_text(&done))?;
    }
    Ok(ExitStatus::Success)
}

/// Failed lines shown one by one; the rest are counted.
const MAX_SHOWN: usize = 5;

fn import_text(done: &batch::import::Imported) -> String {
    let mut text = format!(
        "imported {} answers ({} already in the cache), {} failed, {} unknown.\n",
        done.imported,
        done.already,
        done.failed.len(),
        done.unknown.len()
    );
    text.push_str(if done.failed.is_empty() {
        "next: `rageval sweep` finishes from the cache with no call.\n"
    } else {
        "next: `rageval sweep` finishes from the cache and calls the failed requests live; `rageval sweep --batch-out FILE` writes them into a new batch file instead.\n"
    });
    text
}

/// The batches of a `batch: true` sweep still running on the server, kept in the cache folder
/// (`batch/open.json`) from their creation until their answers are imported: a rageval killed
/// meanwhile picks them up again and never pays twice.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct Open {
    batches: Vec<OpenBatch>,
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct OpenBatch {
    id: String,
    /// Which cache file its answers go to.
    store: StoreKind,
    /// The number of requests it holds.
    requests: usize,
}

impl Open {
    fn path(cache_dir: &Path) -> PathBuf {
        cache_dir.join("batch").join("open.json")
    }

    fn load(cache_dir: &Path) -> Result<Self> {
        let path = Self::path(cache_dir);
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
                crate::base::error::InputError::new(
                    &path,
                    format!("is not the list of open batches rageval writes ({e}): remove it to start new batches"),
                )
                .into()
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Open::default()),
            Err(e) => Err(anyhow::anyhow!("cannot read `{}`: {e}", path.display())),
        }
    }

    fn save(&self, cache_dir: &Path) -> Result<()> {
        let path = Self::path(cache_dir);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let text = serde_json::to_vec_pretty(self)?;
        crate::output::report::write_atomic(&path, |w| Ok(w.write_all(&text)?))
    }
}

/// What the batches of a sweep did, for its summary.
#[derive(Debug, Default)]
pub struct Batched {
    /// Batches created or resumed.
    pub batches: usize,
    /// Answers imported from them.
    pub answered: usize,
    /// Lines they did not answer (called live, or sent again).
    pub failed: usize,
}

/// `batch: true`: collect the sweep's requests round by round (rewrites, answers, the judge's
/// grades), send each round as batches to the chat server (split at the provider's limits),
/// wait, import; batches left open by a killed run are finished first. What no batch answered
/// is left for the sweep that follows to call live.
pub async fn run(
    s: &SweepOptions,
    ws: &Workspace,
    retriever: Retriever,
    retrieval: Vec<RetrievalVariant>,
) -> Result<Batched> {
    let dir = s.pipeline().cache_dir.clone();
    let chat = s
        .chat(crate::vocab::grid::DEFAULT_PROFILE)
        .expect("the plan holds the `chat:` section");
    let client_for = |store: StoreKind| -> Result<batch::client::Client> {
        let http = match (store, s.judge()) {
            (StoreKind::Judge, Some(j)) => j.http(),
            _ => chat.http(),
        };
        let held = Arc::new(crate::adapters::http::Held::default());
        let endpoints = crate::app::wiring::endpoint(http, &held)?;
        let first = endpoints
            .servers()
            .first()
            .cloned()
            .ok_or_else(|| anyhow::anyhow!("no base_url to send batches to"))?;
        batch::client::Client::new(first)
    };
    let mut done = Batched::default();
    // Batches a killed run left open come first.
    let mut open = Open::load(&dir)?;
    if !open.batches.is_empty() && !s.quiet() {
        super::eprint_line(&format!(
            "resuming {} batch{} left open by an earlier run: {}",
            open.batches.len(),
            if open.batches.len() == 1 { "" } else { "es" },
            open.batches
                .iter()
                .map(|b| b.id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let mut sent: std::collections::HashSet<String> = Default::default();
    let mut retried = false;
    for _round in 0..MAX_ROUNDS {
        while let Some(b) = open.batches.first().cloned() {
            let client = client_for(b.store)?;
            let (answered, failed) = finish(s, &client, &b, &dir).await?;
            done.batches += 1;
            done.answered += answered;
            done.failed += failed.len();
            // A resumed batch's failed lines count as sent, as this run's own do.
            sent.extend(failed);
            open.batches.remove(0);
            open.save(&dir)?;
        }
        // The chat section's model and the judge: the profiles of `models:` have servers of
        // their own, and are called live.
        let mut pending = collect(s, ws, retriever.clone(), retrieval.clone(), false).await?;
        // A request sent before and still unanswered is a failed line.
        let again = pending.iter().any(|p| sent.contains(&p.line.custom_id));
        if again {
            if chat.batch_retry == batch::BatchRetry::Batch && !retried {
                retried = true;
            } else {
                pending.retain(|p| !sent.contains(&p.line.custom_id));
            }
        }
        if pending.is_empty() {
            return Ok(done);
        }
        Ledger::open(&dir)?.record(&pending)?;
        for store in [StoreKind::Chat, StoreKind::Judge] {
            let mine: Vec<Pending> = pending
                .iter()
                .filter(|p| p.store == store)
                .cloned()
                .collect();
            if mine.is_empty() {
                continue;
            }
            let client = client_for(store)?;
            for (i, file) in batch::split(&mine, batch::Limits::default())
                .iter()
                .enumerate()
            {
                let name = format!(
                    "rageval-{}-{}.jsonl",
                    store.file().trim_end_matches(".jsonl"),
                    i + 1
                );
                let file_id = client.upload(&name, file.as_bytes()).await?;
                let status = client.create(&file_id, batch::CHAT_URL).await?;
                // Kept before the first poll: a kill from here on resumes this batch.
                open.batches.push(OpenBatch {
                    id: status.id.clone(),
                    store,
                    requests: file.lines().count(),
                });
                open.save(&dir)?;
            }
            sent.extend(mine.into_iter().map(|p| p.line.custom_id));
        }
    }
    bail!("the batches did not converge after {MAX_ROUNDS} rounds; run the sweep again (the cache keeps what they answered)")
}

/// Rounds of batches at most: rewrites, answers, grades, and one retry each.
const MAX_ROUNDS: usize = 8;

/// Wait for batch `b` to end, then import its output and error files: how many lines were
/// answered, and the `custom_id`s of those that failed.
async fn finish(
    s: &SweepOptions,
    client: &batch::client::Client,
    b: &OpenBatch,
    dir: &Path,
) -> Result<(usize, Vec<String>)> {
    let status = wait(s.quiet(), client, &b.id).await?;
    if status.status == "failed" {
        let errors = if status.errors.is_empty() {
            "the server gave no reason".to_string()
        } else {
            status.errors.join("; ")
        };
        bail!(
            "batch {} at {} failed: {errors}; no request of it was answered (its id is kept in `{}`; remove the file to start anew)",
            b.id,
            client.shown(),
            Open::path(dir).display()
        );
    }
    let mut files = Vec::new();
    let tmp = tempfile::tempdir()?;
    for (name, id) in [
        ("output", &status.output_file_id),
        ("errors", &status.error_file_id),
    ] {
        if let Some(id) = id {
            let bytes = client.content(id).await?;
            let path = tmp.path().join(format!("{}-{name}.jsonl", b.id));
            std::fs::write(&path, bytes)?;
            files.push(path);
        }
    }
    // Through the sweep's own stores: the next round, and the sweep, see the answers at once.
    let p = s.pipeline();
    let imported = batch::import::import_into(&files, dir, &|kind| {
        let open = match kind {
            StoreKind::Chat => p.chat_store.clone(),
            StoreKind::Judge => p.judge_store.clone(),
        };
        match open {
            Some(store) => Ok(store),
            None => Ok(Arc::new(crate::adapters::cache::Store::open(
                &dir.join(kind.file()),
                crate::adapters::cache::CacheMode::Use,
            )?)),
        }
    })?;
    let answered = imported.imported + imported.already;
    let failed = b.requests.saturating_sub(answered);
    for f in imported
        .failed
        .iter()
        .take(MAX_SHOWN)
        .filter(|_| !s.quiet())
    {
        super::eprint_line(&format!("note: batch {}: {}", b.id, f.message));
    }
    if !s.quiet() {
        let ended = match status.status.as_str() {
            "completed" => String::new(),
            other => format!(" (the batch ended `{other}`: its answered lines are kept)"),
        };
        super::eprint_line(&format!(
            "batch {}: {answered} of {} requests answered, {failed} failed{ended}",
            b.id, b.requests
        ));
    }
    Ok((
        answered,
        imported.failed.into_iter().map(|f| f.custom_id).collect(),
    ))
}

/// Poll batch `id` until it ends: a bar on a terminal, a plain line every few seconds
/// elsewhere, nothing with `--quiet`.
async fn wait(
    quiet: bool,
    client: &batch::client::Client,
    id: &str,
) -> Result<batch::client::Status> {
    use std::io::IsTerminal;
    let fixed = std::env::var(POLL_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(std::time::Duration::from_millis);
    let mut pause = fixed.unwrap_or(std::time::Duration::from_secs(1));
    let bar = (!quiet && std::io::stderr().is_terminal()).then(|| {
        let bar =
            indicatif::ProgressBar::with_draw_target(None, indicatif::ProgressDrawTarget::stderr());
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} batch {prefix} {pos}/{len} {wide_bar} {msg}",
            )
            .expect("a valid template"),
        );
        bar.set_prefix(id.to_string());
        bar
    });
    let interval = std::env::var(crate::app::progress::INTERVAL_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|&ms| ms > 0)
        .map_or(
            crate::app::progress::DEFAULT_INTERVAL,
            std::time::Duration::from_millis,
        );
    let start = std::time::Instant::now();
    let mut next_line = std::time::Duration::ZERO;
    loop {
        let st = client.get(id).await.map_err(|e| {
            anyhow::anyhow!("cannot poll batch {id}: {e:#}; its id is kept in the cache folder, so the next run resumes it")
        })?;
        let line = format!(
            "batch {id}: {}, {}/{} requests done, {} failed",
            st.status,
            st.completed + st.failed,
            st.total,
            st.failed
        );
        match &bar {
            Some(bar) => {
                bar.set_length(st.total);
                bar.set_position(st.completed + st.failed);
                bar.set_message(format!("{} failed {}", st.status, st.failed));
            }
            None if !quiet && (st.is_done() || start.elapsed() >= next_line) => {
                next_line = start.elapsed() + interval;
                super::eprint_line(&line);
            }
            None => {}
        }
        if st.is_done() {
            if let Some(bar) = bar {
                bar.finish_and_clear();
            }
            return Ok(st);
        }
        tokio::time::sleep(pause).await;
        if fixed.is_none() {
            pause = (pause * 3 / 2).min(std::time::Duration::from_secs(30));
        }
    }
}

/// Overrides the poll interval (1 s, growing to 30 s), in milliseconds: for tests.
pub const POLL_ENV: &str = "RAGEVAL_BATCH_POLL_MS";
