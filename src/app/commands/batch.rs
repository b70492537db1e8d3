//! Batch engines from the command line: `sweep --batch-out FILE` (the requests a sweep needs,
//! for any engine) and `rageval batch import FILE...` (the engine's answers, into the cache).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Result};

use crate::adapters::batch::{self, Collector, Ledger, Pending, StoreKind};
use crate::adapters::evalset::Workspace;
use crate::app::cli::BatchImportArgs;
use crate::app::config::{ChatConfig, Config, EmbedderConfig, JudgeConfig};
use crate::app::options::SweepOptions;
use crate::base::exit::ExitStatus;
use crate::sweep::{Engine, RetrievalVariant};
use crate::vocab::grid::DEFAULT_PROFILE;

/// The sweep's retriever, as `sweep` opens it.
type Retriever = Option<Arc<dyn crate::adapters::retriever::Retriever>>;

/// Whether the requests of config section `section` (see [`Pending::section`]) go through
/// batches in a `batch: true` sweep: the chat section's and the judge's with `chat.batch` (or
/// `--batch`), a profile's and an embedder's with their own `batch` (or
/// `--batch-embeddings`).
fn batched(s: &SweepOptions, section: &str) -> bool {
    match section.split_once('.') {
        None if section == "embedder" => embeds_in_batches(s, DEFAULT_PROFILE),
        None => s.batch(),
        Some(("models", name)) => s.chat(name).is_some_and(|m| m.batch),
        Some(("embedders", name)) => embeds_in_batches(s, name),
        Some(_) => false,
    }
}

/// Whether embedder profile `profile` (`default`: `embedder:`) sends its texts through
/// batches: its own `batch`, or `--batch-embeddings`.
fn embeds_in_batches(s: &SweepOptions, profile: &str) -> bool {
    s.embedder(profile).is_some_and(|e| e.batch)
}

/// Whether any request of the sweep goes through batches (`batch: true` somewhere).
pub fn any_batched(s: &SweepOptions) -> bool {
    use crate::app::wiring::batch::chat_section;
    s.grid().chats().any(|p| batched(s, &chat_section(p)))
        || s.grid().embedders().any(|p| embeds_in_batches(s, p))
        || s.batch()
}

/// Plan the sweep as a live one and collect, instead of sending, every request the cache does
/// not hold and `wanted` keeps (one round: embeddings first, then rewrites, then answers, then
/// the judge's grades). Every chat model and the judge are kept; the embedders whose profile
/// `embeddings` names are kept too, and then a first plan, with no reranker and no judge (so
/// that nothing is called live on stand-in vectors), looks for their texts alone.
async fn collect(
    s: &SweepOptions,
    ws: &Workspace,
    retriever: Retriever,
    retrieval: Vec<RetrievalVariant>,
    wanted: &dyn Fn(&Pending) -> bool,
    embeddings: &dyn Fn(&str) -> bool,
) -> Result<Vec<Pending>> {
    need_cache(s.pipeline())?;
    let collector = Arc::new(Collector::default());
    let d = s.pipeline().deferred(&collector, embeddings, retrieval);
    let engine = |judge, reranker| Engine {
        repeat: s.repeat(),
        judge,
        reranker,
        ..d.pipeline
            .engine(retriever.clone(), d.retrieval.clone(), s.concurrency())
    };
    if d.embeddings {
        engine(None, None).sweep(ws, s.grid()).await?;
        if collector.has_embeddings() {
            return Ok(collector.take(wanted));
        }
        collector.take(&|_| false);
    }
    engine(d.pipeline.judge.clone(), d.pipeline.reranker.clone())
        .sweep(ws, s.grid())
        .await?;
    Ok(collector.take(wanted))
}

/// Batches answer into the response cache: without one (`--no-cache`, `cache.enabled:
/// false`) there is nowhere to read their answers from.
fn need_cache(p: &crate::app::wiring::Pipeline) -> Result<()> {
    if p.cache.is_none() {
        bail!("batches need the response cache (the answers are read into it): remove `--no-cache`, or set `cache.enabled: true`");
    }
    Ok(())
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
    let embeddings = |profile: &str| embeds_in_batches(s, profile);
    let pending = collect(s, ws, retriever, retrieval, &|_| true, &embeddings).await?;
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
    text.push_str(if done.vectors > 0 {
        "next: `rageval sweep --batch-out FILE` writes the chat requests, whose prompts depend on what these embeddings retrieve (`rageval sweep` makes them live, and embeds live what failed).\n"
    } else if done.failed.is_empty() {
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
    /// The config section whose server runs it (see [`Pending::section`]); empty (as an
    /// earlier rageval wrote it): the store's own.
    #[serde(default)]
    section: String,
    /// The number of requests it holds.
    requests: usize,
}

impl OpenBatch {
    fn section(&self) -> &str {
        if self.section.is_empty() {
            self.store.default_section()
        } else {
            &self.section
        }
    }
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

/// `batch: true`: collect the sweep's requests round by round (embeddings, rewrites, answers,
/// the judge's grades), send each round as batches to the server of its section (split at the
/// provider's limits), wait, import; batches left open by a killed run are finished first.
/// What no batch answered is left for the sweep that follows to call live.
pub async fn run(
    s: &SweepOptions,
    ws: &Workspace,
    retriever: Retriever,
    retrieval: Vec<RetrievalVariant>,
) -> Result<()> {
    // What a section with `batch: true` would send; the rest is called live after.
    let wanted = |p: &Pending| batched(s, &p.section);
    let embeddings = |profile: &str| embeds_in_batches(s, profile);
    let cycle = Cycle {
        sections: s,
        pipeline: s.pipeline(),
        quiet: s.quiet(),
        max_rounds: MAX_ROUNDS,
    };
    cycle
        .run(async || {
            collect(
                s,
                ws,
                retriever.clone(),
                retrieval.clone(),
                &wanted,
                &embeddings,
            )
            .await
        })
        .await
}

/// `rageval generate` with a generator whose section (`generate.model`'s, else `chat:`) says
/// `batch: true`: each round's generation calls, then its verification calls, as batches to
/// that section's server, until the generator asks nothing the cache does not hold; the run
/// that follows reads the cache. Without `batch: true`, nothing.
pub async fn run_generate(
    s: &crate::app::options::GenerateOptions,
    engine: &Engine,
    job: &crate::sweep::generate::Job<'_>,
) -> Result<()> {
    let name = s.config.config.generate.model.as_deref();
    let name = name.unwrap_or(crate::vocab::grid::DEFAULT_PROFILE);
    if !crate::app::wiring::profiles::chat_profile(&s.config, name)?.batch {
        return Ok(());
    }
    let section = &crate::app::wiring::batch::chat_section(name);
    need_cache(&s.pipeline)?;
    let cycle = Cycle {
        sections: &s.config.config,
        pipeline: &s.pipeline,
        quiet: s.quiet,
        // Two rounds (the candidates, then their verification) per round of the generator.
        max_rounds: 2 * MAX_ROUNDS,
    };
    cycle
        .run(async || {
            let collector = Arc::new(Collector::default());
            let model: Arc<dyn crate::adapters::chat::ChatModel> =
                Arc::new(batch::DeferredModel::new(
                    s.generator.clone(),
                    StoreKind::Chat,
                    section,
                    collector.clone(),
                ));
            crate::sweep::generate::generate(engine, &model, job, None).await?;
            Ok(collector.take(&|_| true))
        })
        .await
}

/// The config sections a batch cycle sends to: each chat and embedder profile's (`default`:
/// `chat:` and `embedder:`) and the judge's; the sweep's plan has them, and so has the config.
trait Sections {
    fn chat(&self, profile: &str) -> Option<&ChatConfig>;
    fn embedder(&self, profile: &str) -> Option<&EmbedderConfig>;
    fn judge(&self) -> Option<&JudgeConfig>;
}

impl Sections for SweepOptions {
    fn chat(&self, profile: &str) -> Option<&ChatConfig> {
        SweepOptions::chat(self, profile)
    }
    fn embedder(&self, profile: &str) -> Option<&EmbedderConfig> {
        SweepOptions::embedder(self, profile)
    }
    fn judge(&self) -> Option<&JudgeConfig> {
        SweepOptions::judge(self)
    }
}

impl Sections for Config {
    fn chat(&self, profile: &str) -> Option<&ChatConfig> {
        match profile {
            DEFAULT_PROFILE => Some(&self.chat),
            name => self.models.get(name),
        }
    }
    fn embedder(&self, profile: &str) -> Option<&EmbedderConfig> {
        match profile {
            DEFAULT_PROFILE => Some(&self.embedder),
            name => self.embedders.get(name),
        }
    }
    fn judge(&self) -> Option<&JudgeConfig> {
        self.judge.as_ref()
    }
}

/// What a batch cycle reads: the config sections (their servers, `chat.batch_retry`), the
/// pipeline's cache files, and whether to print progress.
struct Cycle<'a> {
    sections: &'a dyn Sections,
    pipeline: &'a crate::app::wiring::Pipeline,
    quiet: bool,
    /// Rounds of batches at most.
    max_rounds: usize,
}

impl Cycle<'_> {
    /// Finish the batches left open, then round by round: `collect` the requests, send them
    /// as batches, wait, import; until `collect` gives nothing new.
    async fn run(&self, mut collect: impl AsyncFnMut() -> Result<Vec<Pending>>) -> Result<()> {
        let c = self.sections;
        let dir = self.pipeline.cache_dir.clone();
        let client_for = |section: &str| -> Result<batch::client::Client> {
            let (http, switch) = section_http(c, section)?;
            let held = Arc::new(crate::adapters::http::Held::default());
            let endpoints = crate::app::wiring::endpoint(http, &held)?;
            let first =
                endpoints.servers().first().cloned().ok_or_else(|| {
                    anyhow::anyhow!("`{section}` has no base_url to send batches to")
                })?;
            batch::client::Client::new(first, switch)
        };
        // Batches a killed run left open come first.
        let mut open = Open::load(&dir)?;
        if !open.batches.is_empty() && !self.quiet {
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
        for _round in 0..self.max_rounds {
            while let Some(b) = open.batches.first().cloned() {
                let client = client_for(b.section())?;
                let failed = self.finish(&client, &b, &dir).await?;
                // A resumed batch's failed lines count as sent, as this run's own do.
                sent.extend(failed);
                open.batches.remove(0);
                open.save(&dir)?;
            }
            let mut pending = collect().await?;
            // A request sent before and still unanswered is a failed line.
            let again = pending.iter().any(|p| sent.contains(&p.line.custom_id));
            if again {
                let retry = c.chat(DEFAULT_PROFILE).map(|chat| chat.batch_retry);
                if retry == Some(batch::BatchRetry::Batch) && !retried {
                    retried = true;
                } else {
                    pending.retain(|p| !sent.contains(&p.line.custom_id));
                }
            }
            if pending.is_empty() {
                return Ok(());
            }
            Ledger::open(&dir)?.record(&pending)?;
            // One run of batches per server and URL, in the order first asked.
            let mut groups: Vec<(String, StoreKind, Vec<Pending>)> = Vec::new();
            for p in pending {
                match groups
                    .iter_mut()
                    .find(|g| g.0 == p.section && g.1.url() == p.store.url())
                {
                    Some(g) => g.2.push(p),
                    None => groups.push((p.section.clone(), p.store, vec![p])),
                }
            }
            for (section, store, mine) in groups {
                let client = client_for(&section)?;
                for (i, file) in batch::split(&mine, batch::Limits::default())
                    .iter()
                    .enumerate()
                {
                    let name = format!("rageval-{}-{}.jsonl", section.replace('.', "-"), i + 1);
                    let file_id = client.upload(&name, file.as_bytes()).await?;
                    let status = client.create(&file_id, store.url()).await?;
                    // Kept before the first poll: a kill from here on resumes this batch.
                    open.batches.push(OpenBatch {
                        id: status.id.clone(),
                        store,
                        section: section.clone(),
                        requests: file.lines().count(),
                    });
                    open.save(&dir)?;
                }
                sent.extend(mine.into_iter().map(|p| p.line.custom_id));
            }
        }
        bail!("the batches did not converge after {} rounds; run the command again (the cache keeps what they answered)", self.max_rounds)
    }
}

/// Rounds of batches at most: embeddings, rewrites, the rewrites' embeddings, answers,
/// grades, and one retry.
const MAX_ROUNDS: usize = 8;

/// The HTTP fields of config section `section` (see [`Pending::section`]), and what to set to
/// stop batching it, for messages.
fn section_http<'a>(
    c: &'a dyn Sections,
    section: &str,
) -> Result<(crate::app::config::HttpConfig<'a>, String)> {
    let off = |field: &str, flag: &str| format!("`{field}.batch: false` (or drop `{flag}`)");
    let missing = || {
        anyhow::anyhow!("no config section `{section}` to send batches to (the cache folder's `batch/open.json` names it: remove the file to start anew)")
    };
    Ok(match section.split_once('.') {
        None if section == "chat" => (
            c.chat(DEFAULT_PROFILE).ok_or_else(missing)?.http(),
            off("chat", "--batch"),
        ),
        None if section == "judge" => (
            c.judge().ok_or_else(missing)?.http(),
            off("chat", "--batch"),
        ),
        None if section == "embedder" => (
            c.embedder(DEFAULT_PROFILE).ok_or_else(missing)?.http(),
            off("embedder", "--batch-embeddings"),
        ),
        Some(("models", name)) => (
            c.chat(name).ok_or_else(missing)?.http(),
            format!("`{section}.batch: false`"),
        ),
        Some(("embedders", name)) => (
            c.embedder(name).ok_or_else(missing)?.http(),
            off(section, "--batch-embeddings"),
        ),
        _ => return Err(missing()),
    })
}

impl Cycle<'_> {
    /// Wait for batch `b` to end, then import its output and error files: the `custom_id`s of
    /// the lines that failed.
    async fn finish(
        &self,
        client: &batch::client::Client,
        b: &OpenBatch,
        dir: &Path,
    ) -> Result<Vec<String>> {
        let status = wait(self.quiet, client, &b.id).await?;
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
        let p = self.pipeline;
        let stores = batch::import::Stores {
            replies: &|kind| {
                let shared = match kind {
                    StoreKind::Judge => p.judge_store.clone(),
                    StoreKind::Chat | StoreKind::Embedding => p.chat_store.clone(),
                };
                match shared {
                    Some(store) => Ok(store),
                    None => batch::import::open(dir, kind),
                }
            },
            vectors: &|| match &p.embed_store {
                Some(store) => Ok(store.clone()),
                None => batch::import::open(dir, StoreKind::Embedding),
            },
        };
        let imported = batch::import::import_into(&files, dir, &stores)?;
        let answered = imported.imported + imported.already;
        let failed = b.requests.saturating_sub(answered);
        for f in imported
            .failed
            .iter()
            .take(MAX_SHOWN)
            .filter(|_| !self.quiet)
        {
            super::eprint_line(&format!("note: batch {}: {}", b.id, f.message));
        }
        if !self.quiet {
            let ended = match status.status.as_str() {
                "completed" => String::new(),
                other => format!(" (the batch ended `{other}`: its answered lines are kept)"),
            };
            super::eprint_line(&format!(
                "batch {}: {answered} of {} requests answered, {failed} failed{ended}",
                b.id, b.requests
            ));
        }
        Ok(imported.failed.into_iter().map(|f| f.custom_id).collect())
    }
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
    let interval = crate::app::progress::interval();
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
