//! `rageval generate`: a question set written from the corpus (docs/generate.md), answerable
//! and near-miss unanswerable questions, each verified before it is written, with the account
//! of what was tried and rejected in the file's header and on stdout.

use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::Serialize;

use crate::adapters::corpus::Corpus;
use crate::adapters::evalset::{load_set, slug, Workspace};
use crate::adapters::generate::{Kind, Reject};
use crate::app::options::{GenerateOptions, WriteMode};
use crate::base::exit::ExitStatus;
use crate::output::report::{write_to, Existing};
use crate::sweep::generate::{first_round, generate, Generated, Job, Tally};

pub async fn run(s: GenerateOptions) -> Result<ExitStatus> {
    let out_exists = std::fs::symlink_metadata(&s.out).is_ok();
    if out_exists && s.write == WriteMode::New {
        bail!(
            "`{}` exists: pass --force to overwrite it, or --append to add to it",
            s.out.display()
        );
    }
    let appending = out_exists && s.write == WriteMode::Append;
    // The configured sets, but not the file about to be replaced.
    let foreign = !s.config.config.retriever.kind.chunks_itself();
    let mut set_paths: Vec<PathBuf> = s
        .config
        .evalsets()
        .into_iter()
        .filter(|p| !same_file(p, &s.out))
        .collect();
    if appending {
        set_paths.push(s.out.clone());
    }
    let ws = if set_paths.is_empty() {
        None
    } else {
        Some(Workspace::load_for(&set_paths, foreign)?)
    };
    let roots = corpus_roots(&s, ws.as_ref())?;
    let mut corpus = Corpus::load_many(&roots)?;
    corpus.split_long_sections(crate::adapters::corpus::chunk_limit(
        s.config.config.corpus.max_chunk_tokens,
        s.pipeline.embedder.max_input_tokens(),
    ));
    let existing: Vec<String> = ws
        .iter()
        .flat_map(|w| w.questions().map(|q| q.question.clone()))
        .collect();
    let mut ids: HashSet<String> = ws
        .iter()
        .flat_map(|w| w.questions().map(|q| q.id.clone()))
        .collect();

    let g = &s.config.config.generate;
    let off_topic = (s.unanswerable as f64 * s.off_topic).round() as usize;
    let false_premise = ((s.unanswerable as f64 * s.false_premise).round() as usize)
        .min(s.unanswerable - off_topic);
    let wanted = [
        s.answerable,
        s.unanswerable - off_topic - false_premise,
        off_topic,
        false_premise,
    ];
    let budget = wanted.map(|n| g.max_candidates.unwrap_or(n.saturating_mul(4)));
    let prompts = g
        .prompts()
        .map_err(|e| anyhow::anyhow!("`generate.{}`: {}", e.field, e.error))?;
    let job = Job {
        corpus: &corpus,
        existing: &existing,
        wanted,
        budget,
        seed: s.seed,
        prompts: &prompts,
        verify_k: g.verify_k,
        max_similarity: g.max_similarity,
    };
    if s.dry_run {
        return dry_run(&s, &job);
    }
    let engine = s.pipeline.engine(
        crate::adapters::retriever::open(&s.config.config.retriever, s.pipeline.embedder.clone())
            .await?,
        Vec::new(),
        s.concurrency,
    );
    // With `batch: true`, the batches answer into the cache; the run below reads it.
    super::batch::run_generate(&s, &engine, &job).await?;
    let quiet = s.quiet;
    let progress = move |g: &Generated, round: usize| {
        if quiet {
            return;
        }
        // The false-premise kind is named only when asked for.
        let shown = if false_premise > 0 { 4 } else { 3 };
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
    let generated = generate(&engine, &s.generator, &job, Some(&progress)).await?;
    for w in s.generator.warnings() {
        super::eprint_line(&format!("warning: {w}"));
    }
    let account = account(&generated);
    if let Some(path) = &s.rejected {
        write_rejected(path, &corpus, &generated)?;
    }
    if generated.kept.is_empty() {
        print_calls(&s, &generated);
        let rejected = match &s.rejected {
            Some(path) => format!(
                "each rejected candidate and its reason: `{}`",
                path.display()
            ),
            None => "pass `--rejected FILE` to read each rejected candidate and its reason".into(),
        };
        bail!(
            "no candidate passed, so `{}` was not written:\n{}\n{rejected}",
            s.out.display(),
            account.join("\n")
        );
    }
    let model = s.generator.model();
    let mut items = (Vec::new(), Vec::new());
    for k in &generated.kept {
        let chunk = &corpus.chunks[k.chunk];
        let from = source_name(&corpus, chunk);
        let item = Item {
            id: fresh_id(&mut ids, &k.question),
            question: k.question.clone(),
            expect: k.answer.as_ref().map(|a| Expect {
                sources: vec![from.clone()],
                answer: vec![a.clone()],
            }),
            tags: match k.kind {
                Kind::Answerable => Vec::new(),
                kind => vec![kind.name().to_string()],
            },
            note: k.premise.as_ref().map(|(premise, truth)| {
                format!("false premise: {premise}; the passage says: {truth}")
            }),
            generated: Origin {
                model: model.clone(),
                from,
                seed: s.seed,
            },
            reviewed: false,
        };
        if k.kind == Kind::Answerable {
            items.0.push(item);
        } else {
            items.1.push(item);
        }
    }
    let header = header(&s, &model, &account);
    let text = if appending {
        append(&s.out, &roots, &header, items)?
    } else {
        let dir = parent(&s.out);
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create folder `{}`", dir.display()))?;
        let corpus_field = corpus_field(&dir, &roots);
        let set = Set {
            corpus: corpus_field,
            description: format!(
                "Questions written by `rageval generate` from this corpus with {model} (seed {}). Review each one, then set `reviewed: true`.",
                s.seed
            ),
            answerable: items.0,
            unanswerable: items.1,
        };
        format!("{header}{}", serde_yaml::to_string(&set)?)
    };
    check_written(&s.out, &text)?;
    // A file absent at the start is created exclusively: one that appeared meanwhile (another
    // run, or the user) is kept, not replaced without --force.
    let existing = if appending || s.write == WriteMode::Force {
        Existing::Replace
    } else {
        Existing::Keep
    };
    write_to(&s.out, existing, |w| Ok(w.write_all(text.as_bytes())?)).map_err(|e| {
        let appeared = e
            .chain()
            .filter_map(|c| c.downcast_ref::<std::io::Error>())
            .any(|io| io.kind() == std::io::ErrorKind::AlreadyExists);
        match appeared && existing == Existing::Keep {
            true => anyhow::anyhow!(
                "`{}` was created while the questions were generated: pass --force to overwrite it, or --append to add to it",
                s.out.display()
            ),
            false => e,
        }
    })?;
    print_calls(&s, &generated);
    let kept = generated.kept.len();
    let asked: usize = wanted.iter().sum();
    let mut lines = vec![format!(
        "wrote {kept} of {asked} questions asked for to {}{}",
        s.out.display(),
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
    if let Some(path) = &s.rejected {
        lines.push(format!(
            "rejected candidates, each with its reason: {}",
            path.display()
        ));
    }
    if s.generator.is_mock() {
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
    if !s.quiet {
        let c = g.calls;
        super::eprint_line(&format!(
            "generate: {} generation and {} verification calls, {} answered from the cache",
            c.generation, c.verification, c.cached
        ));
    }
}

/// `--rejected`: one JSON object per rejected candidate, in the order decided: its kind, the
/// reason, the passage asked about, and its question and answer (or the reply that did not
/// parse, or the failed call's message).
fn write_rejected(path: &Path, corpus: &Corpus, g: &Generated) -> Result<()> {
    #[derive(Serialize)]
    struct Line<'a> {
        kind: &'static str,
        reason: &'static str,
        from: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        question: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        answer: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        reply: Option<&'a str>,
    }
    let mut text = String::new();
    for r in &g.rejected {
        let line = Line {
            kind: r.kind.name(),
            reason: r.reason.label(),
            from: corpus.chunks[r.chunk].label(),
            question: r.question.as_deref(),
            answer: r.answer.as_deref(),
            reply: r.reply.as_deref(),
        };
        text.push_str(&serde_json::to_string(&line)?);
        text.push('\n');
    }
    let dir = parent(path);
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("cannot create folder `{}`", dir.display()))?;
    write_to(path, Existing::Replace, |w| {
        Ok(w.write_all(text.as_bytes())?)
    })
    .with_context(|| format!("cannot write `{}`", path.display()))
}

/// One line per kind: asked, tried, kept, and each reason of rejection with its count.
fn account(g: &Generated) -> Vec<String> {
    Kind::ALL
        .iter()
        .zip(&g.tallies)
        .filter(|(_, t)| t.wanted > 0)
        .map(|(kind, t)| {
            let rejected: Vec<String> = Reject::ALL
                .iter()
                .filter_map(|r| t.rejected.get(r).map(|n| format!("{n} {}", r.label())))
                .collect();
            let mut line = format!(
                "{}: {} asked, {} tried, {} kept",
                kind.name(),
                t.wanted,
                t.tried,
                t.kept
            );
            if !rejected.is_empty() {
                line.push_str(&format!("; rejected: {}", rejected.join(", ")));
            }
            line
        })
        .collect()
}

fn header(s: &GenerateOptions, model: &str, account: &[String]) -> String {
    let mut out = format!(
        "# Written by `rageval generate` with {model}, seed {}, off-topic share {}",
        s.seed, s.off_topic
    );
    if s.false_premise > 0.0 {
        out.push_str(&format!(", false-premise share {}", s.false_premise));
    }
    out.push_str(".\n");
    for line in account {
        out.push_str(&format!("# {line}\n"));
    }
    if s.generator.is_mock() {
        out.push_str("# Placeholders: the offline mock model wrote them; point `chat:` at a real model for real questions.\n");
    }
    out.push_str(
        "# Generated questions carry `reviewed: false` until a person has checked them.\n",
    );
    out
}

/// The corpus folders to ask about: `--corpus`, else the one corpus of the question sets.
fn corpus_roots(s: &GenerateOptions, ws: Option<&Workspace>) -> Result<Vec<PathBuf>> {
    if let Some(dir) = &s.corpus {
        return Ok(vec![dir.clone()]);
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

fn same_roots(a: &[PathBuf], b: &[PathBuf]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same_file(x, y))
}

/// Whether two paths name one file, whether or not it exists yet.
fn same_file(a: &Path, b: &Path) -> bool {
    let real = |p: &Path| {
        p.canonicalize().ok().or_else(|| {
            let dir = parent(p).canonicalize().ok()?;
            Some(dir.join(p.file_name()?))
        })
    };
    match (real(a), real(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

fn parent(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// The `corpus:` of a set written in `dir`: each folder relative to it (absolute when no
/// relative path leads there).
fn corpus_field(dir: &Path, roots: &[PathBuf]) -> CorpusField {
    let rel: Vec<String> = roots.iter().map(|r| relative(dir, r)).collect();
    match rel.as_slice() {
        [one] => CorpusField::One(one.clone()),
        _ => CorpusField::Many(rel),
    }
}

/// `to` as a path relative to the folder `from`, with `/` separators.
fn relative(from: &Path, to: &Path) -> String {
    let (Ok(from), Ok(to)) = (from.canonicalize(), to.canonicalize()) else {
        return to.display().to_string();
    };
    let a: Vec<_> = from.components().collect();
    let b: Vec<_> = to.components().collect();
    let common = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    if common == 0 {
        return to.display().to_string();
    }
    let mut parts: Vec<String> = vec!["..".into(); a.len() - common];
    parts.extend(
        b[common..]
            .iter()
            .map(|c| c.as_os_str().to_string_lossy().into_owned()),
    );
    if parts.is_empty() {
        ".".into()
    } else {
        parts.join("/")
    }
}

/// How an expected source names `chunk`: `file.md#Heading` when that names it alone (or only
/// the parts of its split section), else its id.
fn source_name(corpus: &Corpus, chunk: &crate::adapters::corpus::Chunk) -> String {
    let label = chunk.label();
    let section = |id: &str| id.split('.').next().unwrap_or(id).to_string();
    let own = section(&chunk.id);
    if corpus
        .chunks
        .iter()
        .filter(|c| c.matches(&label))
        .all(|c| section(&c.id) == own)
    {
        label
    } else {
        chunk.id.clone()
    }
}

/// `gen-` and the question's slug, made unique among `ids` with `-2`, `-3`, ...
fn fresh_id(ids: &mut HashSet<String>, question: &str) -> String {
    let base = format!("gen-{}", slug(question));
    let mut id = base.clone();
    let mut n = 2;
    while ids.contains(&id) {
        id = format!("{base}-{n}");
        n += 1;
    }
    ids.insert(id.clone());
    id
}

/// `--append`: the file's own header comments, this run's header, and its questions followed
/// by the new ones. Comments inside the file are not kept (it is rewritten from its values).
fn append(
    path: &Path,
    roots: &[PathBuf],
    header: &str,
    items: (Vec<Item>, Vec<Item>),
) -> Result<String> {
    let text = crate::base::input::read_yaml(path)
        .map_err(|e| crate::base::error::InputError::reading(path, "question set", e))?;
    let kept_header: String = text
        .lines()
        .take_while(|l| l.starts_with('#'))
        .map(|l| format!("{l}\n"))
        .collect();
    let mut doc: serde_yaml::Value = serde_yaml::from_str(&text)?;
    // The file was loaded as a set already: its corpus is the one asked about, or it is named.
    let loaded = load_set(path, &mut Vec::new(), false)?;
    if !same_roots(&loaded.corpus_paths, roots) {
        bail!(
            "`{}` asks about another corpus ({}): --append adds only questions about its own",
            path.display(),
            loaded
                .corpus_paths
                .iter()
                .map(|p| format!("`{}`", p.display()))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let map = doc
        .as_mapping_mut()
        .context("a question set is a mapping")?;
    for (key, new) in [("answerable", items.0), ("unanswerable", items.1)] {
        if new.is_empty() {
            continue;
        }
        let list = map
            .entry(serde_yaml::Value::from(key))
            .or_insert_with(|| serde_yaml::Value::Sequence(Vec::new()));
        let Some(seq) = list.as_sequence_mut() else {
            bail!("`{}`: `{key}` is not a list", path.display());
        };
        for item in new {
            seq.push(serde_yaml::to_value(item)?);
        }
    }
    Ok(format!(
        "{kept_header}{header}{}",
        serde_yaml::to_string(&doc)?
    ))
}

/// The text about to be written loads as a question set (in the same folder, so that its
/// corpus resolves): a bug here is found before the file is touched.
fn check_written(out: &Path, text: &str) -> Result<()> {
    let dir = parent(out);
    let mut tmp = tempfile::Builder::new()
        .prefix(".rageval-generate-")
        .suffix(".yaml")
        .tempfile_in(&dir)
        .with_context(|| format!("cannot write in `{}`", dir.display()))?;
    tmp.write_all(text.as_bytes())?;
    load_set(tmp.path(), &mut Vec::new(), false)
        .map(|_| ())
        .context("the generated question set does not load (a rageval bug: please report it)")
}

/// `--dry-run`: the first round's calls, counted, and the first one shown.
fn dry_run(s: &GenerateOptions, job: &Job<'_>) -> Result<ExitStatus> {
    let calls = first_round(job);
    let cached = calls.iter().filter(|r| s.generator.is_cached(r)).count();
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

#[derive(Serialize)]
struct Set {
    corpus: CorpusField,
    description: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    answerable: Vec<Item>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    unanswerable: Vec<Item>,
}

#[derive(Serialize)]
#[serde(untagged)]
enum CorpusField {
    One(String),
    Many(Vec<String>),
}

#[derive(Serialize)]
struct Item {
    id: String,
    question: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    expect: Option<Expect>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tags: Vec<String>,
    /// A false-premise question's premise and the passage's truth, for its reviewer.
    #[serde(skip_serializing_if = "Option::is_none")]
    note: Option<String>,
    generated: Origin,
    reviewed: bool,
}

#[derive(Serialize)]
struct Expect {
    sources: Vec<String>,
    answer: Vec<String>,
}

#[derive(Serialize)]
struct Origin {
    model: String,
    from: String,
    seed: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_corpus_is_named_relative_to_the_set() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        std::fs::create_dir_all(root.join("evalsets")).unwrap();
        std::fs::create_dir_all(root.join("docs/guide")).unwrap();
        assert_eq!(
            relative(&root.join("evalsets"), &root.join("docs/guide")),
            "../docs/guide"
        );
        assert_eq!(relative(root, &root.join("docs")), "docs");
        assert_eq!(relative(&root.join("docs"), &root.join("docs")), ".");
    }

    #[test]
    fn ids_are_unique() {
        let mut ids: HashSet<String> = ["gen-how-much".to_string()].into();
        assert_eq!(fresh_id(&mut ids, "How much?"), "gen-how-much-2");
        assert_eq!(fresh_id(&mut ids, "How much?"), "gen-how-much-3");
        assert_eq!(fresh_id(&mut ids, "When?"), "gen-when");
    }
}
