//! `rageval generate`: a question set written from the corpus (docs/generate.md), answerable
//! and near-miss unanswerable questions, each verified before it is written, with the account
//! of what was tried and rejected in the file's header and on stdout. The file itself is
//! `output::question_set`'s; the rounds of candidates are `generate::engine`'s.

use std::collections::HashSet;
use std::path::PathBuf;

use anyhow::{bail, Result};

use crate::adapters::corpus::Corpus;
use crate::adapters::evalset::Workspace;
use crate::app::options::{GenerateOptions, WriteMode};
use crate::base::exit::ExitStatus;
use crate::base::input::same_file;
use crate::generate::engine::{first_round, generate, Generated, Job, Tally};
use crate::generate::{Kind, Prompts};
use crate::output::question_set::{self, same_roots, Provenance};
use crate::output::report::{write_to, Existing};

pub async fn run(s: GenerateOptions) -> Result<ExitStatus> {
    let appending = check_out(&s)?;
    let mut input = Input::load(&s, appending)?;
    let prompts = prompts(&s)?;
    let job = input.job(&s, &prompts);
    if s.dry_run() {
        return dry_run(&s, &job);
    }
    let generated = generate_questions(&s, &job).await?;
    let account = question_set::account(&generated);
    keep_rejected(&s, &input.corpus, &generated, &account)?;
    let text = set_text(&s, &mut input, appending, &generated, &account)?;
    write_set(&s, &text, appending)?;
    print_calls(&s, &generated);
    print_written(&s, &generated, &account, appending)
}

/// An `--out` or `--rejected` file that exists is refused unless `--force` or `--append`, and
/// `--rejected` cannot be `--out`; whether this run appends to `--out`.
fn check_out(s: &GenerateOptions) -> Result<bool> {
    let exists = |path: &std::path::Path| std::fs::symlink_metadata(path).is_ok();
    if let Some(rejected) = &s.rejected() {
        if same_file(rejected, s.out()) {
            bail!(
                "`--rejected {}` names the `--out` file: the rejected candidates would replace the question set; choose another file",
                rejected.display()
            );
        }
        if exists(rejected) && s.write() == WriteMode::New {
            bail!(
                "`{}` (`--rejected`) exists: pass --force to overwrite it, or --append to add to it",
                rejected.display()
            );
        }
    }
    let out_exists = exists(s.out());
    if out_exists && s.write() == WriteMode::New {
        bail!(
            "`{}` exists: pass --force to overwrite it, or --append to add to it",
            s.out().display()
        );
    }
    Ok(out_exists && s.write() == WriteMode::Append)
}

/// What the generator asks about and must not repeat: the corpus, and the questions (and ids)
/// of the configured sets and of the file appended to.
struct Input {
    roots: Vec<PathBuf>,
    corpus: Corpus,
    existing: Vec<String>,
    ids: HashSet<String>,
}

impl Input {
    fn load(s: &GenerateOptions, appending: bool) -> Result<Input> {
        // The configured sets, but not the file about to be replaced.
        let foreign = !s.retriever().kind.chunks_itself();
        let mut set_paths: Vec<PathBuf> = s
            .evalsets()
            .iter()
            .filter(|p| !same_file(p, s.out()))
            .cloned()
            .collect();
        if appending {
            set_paths.push(s.out().to_path_buf());
        }
        let ws = if set_paths.is_empty() {
            None
        } else {
            Some(Workspace::load_for(&set_paths, foreign)?)
        };
        let roots = corpus_roots(s, ws.as_ref())?;
        let mut corpus = Corpus::load_many(&roots)?;
        corpus.split_long_sections(crate::adapters::corpus::chunk_limit(
            s.max_chunk_tokens(),
            s.pipeline().embedder.max_input_tokens(),
        ));
        let questions = || ws.iter().flat_map(|w| w.questions());
        Ok(Input {
            existing: questions().map(|q| q.question.clone()).collect(),
            ids: questions().map(|q| q.id.clone()).collect(),
            roots,
            corpus,
        })
    }

    /// The generator's job: how many of each kind, within what budget of candidates.
    fn job<'a>(&'a self, s: &GenerateOptions, prompts: &'a Prompts) -> Job<'a> {
        let g = s.generate();
        let off_topic = (s.unanswerable() as f64 * s.off_topic()).round() as usize;
        let false_premise = ((s.unanswerable() as f64 * s.false_premise()).round() as usize)
            .min(s.unanswerable() - off_topic);
        let wanted = [
            s.answerable(),
            s.unanswerable() - off_topic - false_premise,
            off_topic,
            false_premise,
        ];
        Job {
            corpus: &self.corpus,
            existing: &self.existing,
            wanted,
            budget: wanted.map(|n| g.max_candidates.unwrap_or(n.saturating_mul(4))),
            seed: s.seed(),
            prompts,
            verify_k: g.verify_k,
            max_similarity: g.max_similarity,
        }
    }
}

/// The prompts of `generate:`, checked.
fn prompts(s: &GenerateOptions) -> Result<Prompts> {
    s.generate()
        .prompts()
        .map_err(|e| anyhow::anyhow!("`generate.{}`: {}", e.field, e.error))
}

/// Round after round of candidates (through batches first with `batch: true`), a progress
/// line after each unless `--quiet`; then the generator's warnings.
async fn generate_questions(s: &GenerateOptions, job: &Job<'_>) -> Result<Generated> {
    let engine = s.pipeline().engine(
        crate::adapters::retriever::open(s.retriever(), s.pipeline().embedder.clone()).await?,
        Vec::new(),
        s.concurrency(),
    );
    // With `batch: true`, the batches answer into the cache; the run below reads it.
    super::batch::run_generate(s, &engine, job).await?;
    let quiet = s.quiet();
    // The false-premise kind is named only when asked for.
    let shown = if job.wanted[3] > 0 { 4 } else { 3 };
    let progress = move |g: &Generated, round: usize| {
        if quiet {
            return;
        }
        let part = |f: fn(&Tally) -> usize| {
            g.tallies[..shown]
                .iter()
                .map(|t| f(t).to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let names: Vec<&str> = Kind::ALL[..shown].iter().map(|k| k.name()).collect();
        super::eprint_line(&format!(
            "generate: round {round}: tried {} ({}); kept {}",
            part(|t| t.tried),
            names.join(", "),
            part(|t| t.kept)
        ));
    };
    let generated = generate(&engine, s.generator(), job, Some(&progress)).await?;
    for w in s.generator().warnings() {
        super::eprint_line(&format!("warning: {w}"));
    }
    for (kind, pass) in Kind::ALL.iter().zip(generated.repeated) {
        if let Some(pass) = pass {
            super::eprint_line(&format!(
                "warning: {}: pass {} over the passages repeated pass {} reply for reply, so it stopped there: the model gives one reply per prompt whatever the `seed` (llama-server does at temperature 0); raise the generator's `temperature` for more candidates",
                kind.name(),
                pass + 1,
                pass
            ));
        }
    }
    Ok(generated)
}

/// `--rejected`: every rejected candidate with its reason, written whatever was kept; with
/// nothing kept, the set is not written and the account says why.
fn keep_rejected(
    s: &GenerateOptions,
    corpus: &Corpus,
    generated: &Generated,
    account: &[String],
) -> Result<()> {
    if let Some(path) = &s.rejected() {
        question_set::write_rejected(path, corpus, generated, s.write() == WriteMode::Append)?;
    }
    if !generated.kept.is_empty() {
        return Ok(());
    }
    print_calls(s, generated);
    let rejected = match &s.rejected() {
        Some(path) => format!(
            "each rejected candidate and its reason: `{}`",
            path.display()
        ),
        None => "pass `--rejected FILE` to read each rejected candidate and its reason".into(),
    };
    bail!(
        "no candidate passed, so `{}` was not written:\n{}\n{rejected}",
        s.out().display(),
        account.join("\n")
    );
}

/// The text of the question set: the kept questions, new or after the file's own, checked.
fn set_text(
    s: &GenerateOptions,
    input: &mut Input,
    appending: bool,
    generated: &Generated,
    account: &[String],
) -> Result<String> {
    let p = Provenance {
        model: s.generator().model(),
        seed: s.seed(),
        off_topic: s.off_topic(),
        false_premise: s.false_premise(),
        mock: s.generator().is_mock(),
    };
    let items = question_set::items(&input.corpus, &generated.kept, &mut input.ids, &p);
    let header = question_set::header(&p, account);
    question_set::text(s.out(), &input.roots, appending, &header, items, &p)
}

/// Write the set. A file absent at the start is created exclusively: one that appeared
/// meanwhile (another run, or the user) is kept, not replaced without --force.
fn write_set(s: &GenerateOptions, text: &str, appending: bool) -> Result<()> {
    let existing = if appending || s.write() == WriteMode::Force {
        Existing::Replace
    } else {
        Existing::Keep
    };
    write_to(s.out(), existing, |w| Ok(w.write_all(text.as_bytes())?)).map_err(|e| {
        let appeared = e
            .chain()
            .filter_map(|c| c.downcast_ref::<std::io::Error>())
            .any(|io| io.kind() == std::io::ErrorKind::AlreadyExists);
        match appeared && existing == Existing::Keep {
            true => anyhow::anyhow!(
                "`{}` was created while the questions were generated: pass --force to overwrite it, or --append to add to it",
                s.out().display()
            ),
            false => e,
        }
    })
}

/// What was written, the account, the kinds short of what was asked, and what comes next.
fn print_written(
    s: &GenerateOptions,
    generated: &Generated,
    account: &[String],
    appending: bool,
) -> Result<ExitStatus> {
    let kept = generated.kept.len();
    let asked: usize = generated.tallies.iter().map(|t| t.wanted).sum();
    let mut lines = vec![format!(
        "wrote {kept} of {asked} questions asked for to {}{}",
        s.out().display(),
        if appending { " (appended)" } else { "" }
    )];
    lines.extend(account.iter().map(|l| format!("  {l}")));
    for (kind, t) in Kind::ALL.iter().zip(&generated.tallies) {
        if t.kept < t.wanted {
            lines.push(format!(
                "warning: only {} of {} {} questions passed within {} candidates (`generate.max_candidates`)",
                t.kept,
                t.wanted,
                kind.name(),
                t.tried
            ));
        }
    }
    if let Some(path) = &s.rejected() {
        lines.push(format!(
            "rejected candidates, each with its reason: {}",
            path.display()
        ));
    }
    if s.generator().is_mock() {
        lines.push(MOCK_NOTE.into());
    }
    lines.push("next: review them (set `reviewed: true`), then `rageval validate` and `rageval sweep --only reviewed`".into());
    super::print(&format!("{}\n", lines.join("\n")))?;
    Ok(ExitStatus::Success)
}

/// What `generate` says when the questions come from the builtin mock model.
const MOCK_NOTE: &str = "note: these questions are placeholders: the offline mock model (`chat: {kind: mock}`, the default) wrote them from the passages' words, to show the file's shape. For real ones, point `chat:` (or `generate.model`) at a model, e.g. `chat: {kind: openai, model: gpt-4o-mini, api_key_env: OPENAI_API_KEY}` or a local server's `base_url` (docs/generate.md), then run `rageval generate --force`";

/// The calls made, on stderr (unless `--quiet`).
fn print_calls(s: &GenerateOptions, g: &Generated) {
    if !s.quiet() {
        let c = g.calls;
        super::eprint_line(&format!(
            "generate: {} generation and {} verification calls, {} answered from the cache",
            c.generation, c.verification, c.cached
        ));
    }
}

/// The corpus folders to ask about: `--corpus`, else the one corpus of the question sets.
fn corpus_roots(s: &GenerateOptions, ws: Option<&Workspace>) -> Result<Vec<PathBuf>> {
    if let Some(dir) = &s.corpus() {
        return Ok(vec![dir.to_path_buf()]);
    }
    let mut distinct: Vec<&Vec<PathBuf>> = Vec::new();
    for set in ws.iter().flat_map(|w| &w.sets) {
        if !set.corpus_paths.is_empty()
            && !distinct.iter().any(|d| same_roots(d, &set.corpus_paths))
        {
            distinct.push(&set.corpus_paths);
        }
    }
    match distinct.as_slice() {
        [] => bail!("no corpus to ask about: pass `--corpus DIR`, or list a question set with a corpus folder in rageval.yaml"),
        [one] => Ok(one.to_vec()),
        many => bail!(
            "the question sets ask about {} corpora: pass `--corpus DIR` to choose one",
            many.len()
        ),
    }
}

/// `--dry-run`: the first round's calls, counted, and the first one shown.
fn dry_run(s: &GenerateOptions, job: &Job<'_>) -> Result<ExitStatus> {
    let calls = first_round(job);
    let cached = calls.iter().filter(|r| s.generator().is_cached(r)).count();
    let unanswerable: usize = job.wanted[1..].iter().sum();
    let most: usize = job.budget.iter().sum();
    let mut out = format!(
        "dry run: the first round makes {} generation calls ({cached} answered from the cache), then up to {unanswerable} verification calls (one per unanswerable candidate that passes its checks); later rounds replace rejected candidates, at most {most} generation calls in all\n",
        calls.len()
    );
    if let Some(first) = calls.first() {
        out.push_str("first call:\n");
        for m in &first.messages {
            out.push_str(&format!("--- {}\n{}\n", m.role.as_str(), m.content));
        }
    }
    super::print(&out)?;
    Ok(ExitStatus::Success)
}
