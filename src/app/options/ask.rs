//! The options of `rageval ask` and `rageval prompt`.

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};

use crate::adapters::cache::CacheMode;
use crate::adapters::prompt::{Format, Order};
use crate::adapters::retriever::config::RetrieverConfig;
use crate::app::cli::AskArgs;
use crate::app::config::LoadedConfig;
use crate::app::wiring::{Pipeline, Wiring};
use crate::vocab::grid::Decimal;

/// Everything `rageval ask` and `rageval prompt` need, checked.
pub struct AskOptions {
    question: String,
    k: usize,
    min_score: Decimal,
    order: Order,
    format: Format,
    /// A corpus folder given on the command line; else the first question set's.
    corpus: Option<PathBuf>,
    pipeline: Pipeline,
    /// The configured question sets (the first one's corpus is searched without `--corpus`).
    evalsets: Vec<PathBuf>,
    retriever: RetrieverConfig,
    max_chunk_tokens: usize,
}

impl AskOptions {
    pub fn new(args: AskArgs, config: Option<PathBuf>) -> Result<Self> {
        let cfg = LoadedConfig::load(config.as_deref())?;
        if args.question.trim().is_empty() {
            bail!("the question is empty");
        }
        if args.k == 0 {
            bail!("invalid --k: must be at least 1");
        }
        let min_score: Decimal = args
            .min_score
            .parse()
            .map_err(|e| anyhow::anyhow!("invalid --min-score: {e}"))?;
        let pipeline = Pipeline::from_config(
            &cfg,
            &Wiring {
                strict_refusal: args.strict_refusal,
                cache: Some(CacheMode::Use),
                ..Wiring::default()
            },
        )?;
        let order = args
            .order
            .parse()
            .map_err(|e| anyhow::anyhow!("invalid --order: {e}"))?;
        let format = args
            .format
            .parse()
            .map_err(|e| anyhow::anyhow!("invalid --format: {e}"))?;
        Ok(AskOptions {
            order,
            format,
            question: args.question,
            k: args.k,
            min_score,
            corpus: args.corpus,
            pipeline,
            evalsets: cfg.evalsets(),
            retriever: cfg.config.retriever.clone(),
            max_chunk_tokens: cfg.config.corpus.max_chunk_tokens,
        })
    }

    /// The question, not empty.
    pub fn question(&self) -> &str {
        &self.question
    }

    /// `--k`: how many passages are retrieved, at least 1.
    pub fn k(&self) -> usize {
        self.k
    }

    /// `--min-score`: the score a passage needs to be sent.
    pub fn min_score(&self) -> Decimal {
        self.min_score
    }

    /// `--order` of the passages in the prompt.
    pub fn order(&self) -> Order {
        self.order
    }

    /// `--format` of the passages in the prompt.
    pub fn format(&self) -> Format {
        self.format
    }

    /// `--corpus DIR`, when given.
    pub fn corpus(&self) -> Option<&Path> {
        self.corpus.as_deref()
    }

    pub fn pipeline(&self) -> &Pipeline {
        &self.pipeline
    }

    /// The first configured question set, whose corpus is searched without `--corpus`.
    pub fn first_evalset(&self) -> Option<&Path> {
        self.evalsets.first().map(PathBuf::as_path)
    }

    /// The `retriever:` section.
    pub fn retriever(&self) -> &RetrieverConfig {
        &self.retriever
    }

    /// `corpus.max_chunk_tokens`.
    pub fn max_chunk_tokens(&self) -> usize {
        self.max_chunk_tokens
    }
}
