//! `rageval index`: load the markdown corpus of the configured question sets into the pgvector
//! table, so a new user can start a pgvector sweep from a folder of markdown.

use std::path::PathBuf;

use anyhow::Result;

use crate::adapters::cache::CacheMode;
use crate::adapters::evalset::Workspace;
use crate::adapters::retriever::pgvector::{self, PgTable, Row};
use crate::app::cli::IndexArgs;
use crate::app::config::LoadedConfig;
use crate::app::wiring::Pipeline;
use crate::base::exit::ExitStatus;

pub async fn run(args: IndexArgs, config: Option<PathBuf>, quiet: bool) -> Result<ExitStatus> {
    let cfg = LoadedConfig::load(config.as_deref())?;
    let r = &cfg.config.retriever;
    if !r.kind.reads_table() {
        anyhow::bail!(
            "`rageval index` loads a pgvector table: set `retriever.kind: pgvector` in rageval.yaml"
        );
    }
    let files = if args.files.is_empty() {
        cfg.evalsets()
    } else {
        args.files
    };
    if files.is_empty() {
        anyhow::bail!("no question sets: name files, or list `evalsets:` in rageval.yaml");
    }
    let table = PgTable::from_env(
        &r.dsn_env,
        &r.table,
        r.columns.clone(),
        r.distance,
        r.ef_search,
    )?;
    let mut ws = Workspace::load(&files)?;
    let pipeline = Pipeline::from_config(
        &cfg,
        &crate::app::wiring::Wiring {
            cache: Some(CacheMode::Use),
            ..Default::default()
        },
    )?;
    // The table holds the chunks the builtin retriever would search: long sections split alike.
    ws.split_long_sections(crate::adapters::corpus::chunk_limit(
        cfg.config.corpus.max_chunk_tokens,
        pipeline.embedder.max_input_tokens(),
    ));
    // Corpora that join folders repeat a folder's chunks: each id is loaded once.
    let mut seen = std::collections::HashSet::new();
    let chunks: Vec<_> = ws
        .corpora
        .iter()
        .flat_map(|c| &c.chunks)
        .filter(|c| seen.insert(c.id.as_str()))
        .collect();
    let texts: Vec<String> = chunks.iter().map(|c| c.embed_text()).collect();
    let vectors = pipeline
        .embedder
        .embed(&texts)
        .await
        .map_err(|e| anyhow::anyhow!("cannot embed the corpus: {e}"))?;
    let rows = chunks
        .iter()
        .zip(vectors)
        .map(|(c, embedding)| Row {
            id: &c.id,
            source: &c.source,
            heading: &c.heading,
            text: &c.text,
            embedding,
        })
        .collect();
    let n = pgvector::load(&table, rows, args.replace).await?;
    for w in pipeline.embedder.warnings() {
        super::eprint_line(&format!("warning: {w}"));
    }
    if !quiet {
        super::print(&format!(
            "loaded {n} chunks into `{}` at {} (embedder `{}`)\n",
            r.table,
            table.shown,
            pipeline.embedder.model()
        ))?;
    }
    Ok(ExitStatus::Success)
}
