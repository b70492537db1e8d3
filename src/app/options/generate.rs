//! The options of `rageval generate`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Result};

use crate::adapters::cache::CacheMode;
use crate::adapters::chat::ChatModel;
use crate::adapters::retriever::config::RetrieverConfig;
use crate::app::cli::GenerateArgs;
use crate::app::config::{ChatConfig, LoadedConfig};
use crate::app::wiring::{Pipeline, Wiring};
use crate::generate::config::GenerateConfig;

/// What `rageval generate` does with an `--out` that exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteMode {
    /// Refuse to touch it.
    New,
    /// `--force`: replace it.
    Force,
    /// `--append`: add to it.
    Append,
}

/// Everything `rageval generate` needs, checked.
pub struct GenerateOptions {
    pipeline: Pipeline,
    /// The model that writes and verifies the questions.
    generator: Arc<dyn ChatModel>,
    /// The generator's chat profile (`generate.model`, else `default`) and its section.
    generator_profile: (String, ChatConfig),
    answerable: usize,
    unanswerable: usize,
    off_topic: f64,
    false_premise: f64,
    out: PathBuf,
    corpus: Option<PathBuf>,
    seed: u64,
    write: WriteMode,
    dry_run: bool,
    /// `--rejected`: where every rejected candidate is written.
    rejected: Option<PathBuf>,
    concurrency: usize,
    quiet: bool,
    /// The sections of the config the command reads.
    generate: GenerateConfig,
    retriever: RetrieverConfig,
    evalsets: Vec<PathBuf>,
    max_chunk_tokens: usize,
}

impl GenerateOptions {
    pub fn new(args: GenerateArgs, config: Option<PathBuf>, quiet: bool) -> Result<Self> {
        use crate::generate::MAX_QUESTIONS;
        let cfg = LoadedConfig::load(config.as_deref())?;
        for (flag, n) in [
            ("--answerable", args.answerable),
            ("--unanswerable", args.unanswerable),
        ] {
            if n > MAX_QUESTIONS {
                bail!("invalid {flag}: at most {MAX_QUESTIONS} questions per run, got {n}");
            }
        }
        if args.answerable == 0 && args.unanswerable == 0 {
            bail!("nothing to generate: --answerable and --unanswerable are both 0");
        }
        if !(0.0..=1.0).contains(&args.off_topic) {
            bail!(
                "invalid --off-topic: must be a share from 0 to 1, got {}",
                args.off_topic
            );
        }
        if !(0.0..=1.0).contains(&args.false_premise) {
            bail!(
                "invalid --false-premise: must be a share from 0 to 1, got {}",
                args.false_premise
            );
        }
        if args.off_topic + args.false_premise > 1.0 + 1e-9 {
            bail!(
                "invalid --false-premise: with --off-topic {} the shares add up to more than 1",
                args.off_topic
            );
        }
        let concurrency = args.concurrency.unwrap_or(cfg.config.sweep.concurrency);
        if let Some(why) = crate::sweep::concurrency_problem(concurrency) {
            bail!("invalid --concurrency: {why}");
        }
        let cache = (!args.no_cache).then_some(CacheMode::Use);
        let mut pipeline = Pipeline::from_config(
            &cfg,
            &Wiring {
                cache,
                ..Wiring::default()
            },
        )?;
        let generator = pipeline.generator(&cfg)?;
        let name = cfg.config.generate.model.as_deref();
        let name = name.unwrap_or(crate::vocab::grid::DEFAULT_PROFILE);
        let section = crate::app::wiring::profiles::chat_profile(&cfg, name)?.clone();
        Ok(GenerateOptions {
            generator_profile: (name.to_string(), section),
            generate: cfg.config.generate.clone(),
            retriever: cfg.config.retriever.clone(),
            evalsets: cfg.evalsets(),
            max_chunk_tokens: cfg.config.corpus.max_chunk_tokens,
            write: match (args.force, args.append) {
                (true, _) => WriteMode::Force,
                (_, true) => WriteMode::Append,
                _ => WriteMode::New,
            },
            answerable: args.answerable,
            unanswerable: args.unanswerable,
            off_topic: args.off_topic,
            false_premise: args.false_premise,
            out: args.out,
            corpus: args.corpus,
            seed: args.seed,
            dry_run: args.dry_run,
            rejected: args.rejected,
            concurrency,
            quiet,
            generator,
            pipeline,
        })
    }

    pub fn pipeline(&self) -> &Pipeline {
        &self.pipeline
    }

    /// The model that writes and verifies the questions.
    pub fn generator(&self) -> &Arc<dyn ChatModel> {
        &self.generator
    }

    /// The generator's chat profile (`generate.model`, else `default`).
    pub fn generator_profile(&self) -> &str {
        &self.generator_profile.0
    }

    /// The section of chat profile `profile`, when it is the generator's (the only chat
    /// section `generate` sends to).
    pub fn chat(&self, profile: &str) -> Option<&ChatConfig> {
        (profile == self.generator_profile.0).then_some(&self.generator_profile.1)
    }

    /// `--answerable` and `--unanswerable`: how many of each to write.
    pub fn answerable(&self) -> usize {
        self.answerable
    }

    pub fn unanswerable(&self) -> usize {
        self.unanswerable
    }

    /// `--off-topic` and `--false-premise`: shares of the unanswerable questions, together at
    /// most 1.
    pub fn off_topic(&self) -> f64 {
        self.off_topic
    }

    pub fn false_premise(&self) -> f64 {
        self.false_premise
    }

    /// `--out`: the question set written.
    pub fn out(&self) -> &Path {
        &self.out
    }

    /// `--corpus DIR`, when given.
    pub fn corpus(&self) -> Option<&Path> {
        self.corpus.as_deref()
    }

    /// The corpus `dir` when no `--corpus` was given (`rageval init --generate`, whose sample
    /// document exists only once the options are built).
    pub fn default_corpus(&mut self, dir: PathBuf) {
        self.corpus.get_or_insert(dir);
    }

    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// What becomes of an `--out` that exists.
    pub fn write(&self) -> WriteMode {
        self.write
    }

    pub fn dry_run(&self) -> bool {
        self.dry_run
    }

    /// `--rejected`: where every rejected candidate is written.
    pub fn rejected(&self) -> Option<&Path> {
        self.rejected.as_deref()
    }

    pub fn concurrency(&self) -> usize {
        self.concurrency
    }

    pub fn quiet(&self) -> bool {
        self.quiet
    }

    /// The `generate:` section.
    pub fn generate(&self) -> &GenerateConfig {
        &self.generate
    }

    /// The `retriever:` section.
    pub fn retriever(&self) -> &RetrieverConfig {
        &self.retriever
    }

    /// The configured question sets.
    pub fn evalsets(&self) -> &[PathBuf] {
        &self.evalsets
    }

    /// `corpus.max_chunk_tokens`.
    pub fn max_chunk_tokens(&self) -> usize {
        self.max_chunk_tokens
    }
}
