//! `rageval init`: a project a newcomer can sweep at once — a commented `rageval.yaml`, a
//! starter question set over their markdown (or a sample document), and editor schemas.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::adapters::corpus::Corpus;
use crate::base::exit::ExitStatus;
use crate::output::report::write_atomic;

/// Where init writes, relative to the current folder.
pub const CONFIG: &str = "rageval.yaml";
pub const EVALSET: &str = "evalsets/starter.yaml";
/// Where `init --generate` writes the generated questions.
pub const GENERATED: &str = "evalsets/generated.yaml";
pub const SAMPLE_DOC: &str = "docs/welcome.md";
pub const CONFIG_SCHEMA: &str = ".rageval/config.schema.json";
pub const EVALSET_SCHEMA: &str = ".rageval/evalset.schema.json";

/// Headings listed in the starter set's comments; the rest are counted.
const MAX_LISTED: usize = 40;

/// `config`: the global `--config`, read only by `--generate` (its model writes the
/// questions); refused without it, since init writes `rageval.yaml` and reads no config.
pub async fn run(
    corpus: Option<PathBuf>,
    generate: bool,
    config: Option<PathBuf>,
    quiet: bool,
) -> Result<ExitStatus> {
    if config.is_some() && !generate {
        bail!("`rageval init` writes {CONFIG} and reads no config: `--config` names the model of `--generate` only");
    }
    let (corpus_dir, sample) = match corpus {
        Some(dir) => (dir, false),
        None if has_markdown(Path::new("docs")) => (PathBuf::from("docs"), false),
        None if has_markdown(Path::new(".")) => (PathBuf::from("."), false),
        None => (PathBuf::from("docs"), true),
    };
    let mut targets = vec![CONFIG, EVALSET];
    if generate {
        targets.push(GENERATED);
    }
    if sample {
        targets.push(SAMPLE_DOC);
    }
    refuse_links(&targets)?;
    // `--generate --config C`: C's generator writes the questions. It is loaded (and its model
    // built) before anything is written, so a config that cannot generate leaves no project
    // half made.
    let options = match &config {
        Some(c) if generate => Some(generate_options(
            c,
            (!sample).then(|| corpus_dir.clone()),
            quiet,
        )?),
        _ => None,
    };
    refuse_existing(&targets)?;
    write_project(&corpus_dir, sample, generate)?;
    if !quiet {
        let mut written = vec![CONFIG, EVALSET];
        if sample {
            written.push(SAMPLE_DOC);
        }
        super::print(&format!(
            "wrote {}, and the schemas {CONFIG_SCHEMA}, {EVALSET_SCHEMA} for editors\nnext: rageval sweep\nthen: write your own questions in {EVALSET} (`rageval validate` checks them)\n",
            written.join(", "),
        ))?;
    }
    if generate {
        // `--config`'s model, else the config just written (the offline mock), with the
        // defaults of `rageval generate`.
        let options = match options {
            Some(mut o) => {
                // The sample document exists only now.
                o.default_corpus(corpus_dir);
                o
            }
            None => generate_options(Path::new(CONFIG), None, quiet)?,
        };
        return super::generate::run(options).await;
    }
    Ok(ExitStatus::Success)
}

/// Only regular files inside this folder are written: a link on the way (`docs` pointing at
/// `/etc`) is refused before anything is written, and a link in a file's place, even a
/// dangling one, counts as a file that exists.
fn refuse_links(targets: &[&str]) -> Result<()> {
    for target in targets.iter().chain(&[CONFIG_SCHEMA, EVALSET_SCHEMA]) {
        if let Some(link) = linked_folder(Path::new(target)) {
            bail!(
                "`{}` is a link: `rageval init` writes only inside this folder; remove the link or run it elsewhere",
                link.display()
            );
        }
    }
    Ok(())
}

/// `rageval init` never overwrites: a target that exists (a link counts) is an error.
fn refuse_existing(targets: &[&str]) -> Result<()> {
    let existing: Vec<String> = targets
        .iter()
        .filter(|t| std::fs::symlink_metadata(t).is_ok())
        .map(|t| format!("`{t}`"))
        .collect();
    if !existing.is_empty() {
        bail!(
            "{} already {}: `rageval init` never overwrites; edit {}, or run it in an empty folder",
            existing.join(" and "),
            if existing.len() == 1 {
                "exists"
            } else {
                "exist"
            },
            if existing.len() == 1 { "it" } else { "them" }
        );
    }
    Ok(())
}

/// Write the config, the starter set over `corpus_dir` (over the sample document, written
/// too, when `sample`) and the schemas; with `generate`, the config lists [`GENERATED`].
fn write_project(corpus_dir: &Path, sample: bool, generate: bool) -> Result<()> {
    let set = if sample {
        write(SAMPLE_DOC, WELCOME)?;
        SAMPLE_SET.to_string()
    } else {
        let corpus = Corpus::load(corpus_dir).with_context(|| {
            format!(
                "`rageval init` asks about the markdown in `{}`",
                corpus_dir.display()
            )
        })?;
        starter_set(&corpus, &relative_to_evalsets(corpus_dir))
    };
    let config = if generate {
        CONFIG_TEXT.replacen(
            &format!("  - {EVALSET}\n"),
            &format!("  - {EVALSET}\n  - {GENERATED}\n"),
            1,
        )
    } else {
        CONFIG_TEXT.to_string()
    };
    write(
        CONFIG,
        &format!("# yaml-language-server: $schema={CONFIG_SCHEMA}\n{config}"),
    )?;
    write(
        EVALSET,
        &format!("# yaml-language-server: $schema=../{EVALSET_SCHEMA}\n{set}"),
    )?;
    // The schemas are generated, not written by hand: refreshing them loses nothing.
    for (path, schema) in [
        (CONFIG_SCHEMA, crate::app::config::json_schema()),
        (EVALSET_SCHEMA, crate::adapters::evalset::json_schema()),
    ] {
        write(
            path,
            &format!("{}\n", serde_json::to_string_pretty(&schema)?),
        )?;
    }
    Ok(())
}

/// `rageval generate`'s defaults, writing [`GENERATED`] over `corpus` (else the corpus of the
/// config's question sets) with the model of `config`.
fn generate_options(
    config: &Path,
    corpus: Option<PathBuf>,
    quiet: bool,
) -> Result<crate::app::options::GenerateOptions> {
    let args = crate::app::cli::GenerateArgs {
        answerable: 10,
        unanswerable: 10,
        off_topic: 0.2,
        false_premise: 0.0,
        out: PathBuf::from(GENERATED),
        corpus,
        seed: 0,
        force: false,
        append: false,
        dry_run: false,
        rejected: None,
        concurrency: None,
        no_cache: false,
    };
    crate::app::options::GenerateOptions::new(args, Some(config.to_path_buf()), quiet)
}

fn has_markdown(dir: &Path) -> bool {
    dir.is_dir() && Corpus::load(dir).is_ok()
}

/// The corpus folder as the question set names it: relative to `evalsets/`.
fn relative_to_evalsets(dir: &Path) -> String {
    if dir.is_absolute() {
        return dir.display().to_string();
    }
    let rel = dir.to_string_lossy().replace('\\', "/");
    let rel = rel.trim_start_matches("./").trim_end_matches('/');
    if rel.is_empty() || rel == "." {
        "..".into()
    } else {
        format!("../{rel}")
    }
}

/// The first folder on the way to `path` (relative) that is a symbolic link, if any; a link in
/// the file's own place is a file that exists (see `run`).
fn linked_folder(path: &Path) -> Option<PathBuf> {
    let mut prefix = PathBuf::new();
    let parent = path.parent()?;
    for part in parent.components() {
        prefix.push(part);
        let is_link = std::fs::symlink_metadata(&prefix).is_ok_and(|m| m.file_type().is_symlink());
        if is_link {
            return Some(prefix);
        }
    }
    None
}

fn write(path: &str, text: &str) -> Result<()> {
    let path = Path::new(path);
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create folder `{}`", dir.display()))?;
    }
    write_atomic(path, |w| Ok(w.write_all(text.as_bytes())?))
        .with_context(|| format!("cannot write `{}`", path.display()))
}

/// A question set over the user's own corpus: one placeholder question per first headings,
/// every heading listed as a candidate `expect.sources`, and two questions no corpus answers.
fn starter_set(corpus: &Corpus, corpus_rel: &str) -> String {
    let quote = |s: &str| serde_json::to_string(s).unwrap_or_else(|_| format!("'{s}'"));
    let mut out = format!(
        "# A starter question set written by `rageval init` (docs/question-sets.md).\n\
         # Replace the questions with real ones your users ask: answerable ones the documents\n\
         # answer, unanswerable ones they do not (the pipeline should refuse those).\n\
         corpus: {}\n\n\
         # Headings of the corpus, as `expect.sources` names them:\n",
        quote(corpus_rel)
    );
    for c in corpus.chunks.iter().take(MAX_LISTED) {
        out.push_str(&format!("#   {}\n", quote(&c.label())));
    }
    if corpus.chunks.len() > MAX_LISTED {
        out.push_str(&format!(
            "#   ... and {} more\n",
            corpus.chunks.len() - MAX_LISTED
        ));
    }
    out.push_str("answerable:\n");
    for c in corpus.chunks.iter().take(3) {
        out.push_str(&format!(
            "  - question: {}\n    expect:\n      sources: [{}]\n      # answer: [\"a text a correct answer contains\"]\n",
            quote(&format!("What do the documents say about {}?", c.heading)),
            quote(&c.label())
        ));
    }
    out.push_str(UNANSWERABLE);
    out
}

const UNANSWERABLE: &str = "unanswerable:
  - id: wifi-password
    question: What is the password of the office Wi-Fi?
  - id: world-cup
    question: Who will win the next football world cup?
";

const CONFIG_TEXT: &str =
    "# rageval configuration, written by `rageval init`. Every field is optional; the
# documentation (docs/config.md) lists them with their defaults. These values run offline: the
# builtin `hash` embedder and `mock` model. To measure your own pipeline, point `embedder` and
# `chat` at an OpenAI-compatible server (docs/http.md).

# Question sets to sweep, relative to this file.
evalsets:
  - evalsets/starter.yaml

embedder:
  kind: hash              # builtin bag-of-words embedder; or `openai` with `base_url`, `model`

chat:
  kind: mock              # builtin deterministic model; or `openai` with `base_url`, `model`

sweep:
  min_score: \"0.1..0.5\"   # a..b (step 0.1), a..b:step, or a list a,b,c
  k: \"1,2,4,8\"

recommend:                # a setting above a limit is never recommended
  max_unwanted_answer_rate: 0.2
  max_false_refusal_rate: 0.5

out: reports/latest

# The CI gate: `rageval sweep --gate`. It holds one setting to these limits (and to a baseline,
# once you commit one: `rageval sweep --gate --update-baseline`).
gate:
  # setting: \"min_score=0.2,k=4\"       # your production setting; default: the recommended one
  # baseline: reports/baseline.json
  max_unwanted_answer_rate: 0.2
  max_false_refusal_rate: 0.5
  max_error_runs: 0
";

const WELCOME: &str = "# Welcome

This is a sample document written by `rageval init`. Replace this folder with your own markdown
documents: every heading starts a passage that retrieval can find.

## Opening hours

The help desk is open Monday to Friday from 9:00 to 17:00, and closed on public holidays.

## Contact

Write to help@example.com; every message is answered within two working days.

## Returns

You can return an item within 30 days of purchase, with the receipt.
";

const SAMPLE_SET: &str =
    "# A starter question set written by `rageval init` (docs/question-sets.md), over the
# sample document in docs/. Replace both with your own: answerable questions the documents
# answer, unanswerable ones they do not (the pipeline should refuse those).
corpus: ../docs

# Headings of the corpus, as `expect.sources` names them:
#   \"welcome.md#Welcome\"
#   \"welcome.md#Opening hours\"
#   \"welcome.md#Contact\"
#   \"welcome.md#Returns\"
answerable:
  - id: opening-hours
    question: When is the help desk open?
    expect:
      sources: [\"welcome.md#Opening hours\"]
      answer: [\"9:00\"]
  - id: contact
    question: How do I contact the help desk?
    expect:
      sources: [\"welcome.md#Contact\"]
      answer: [\"help@example.com\"]
  - id: returns
    question: How long do I have to return an item?
    expect:
      sources: [\"welcome.md#Returns\"]
      answer: [\"30 days\"]
unanswerable:
  - question: What is the password of the office Wi-Fi?
  - question: Who will win the next football world cup?
";
