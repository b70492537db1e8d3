//! `rageval index`: load the markdown corpus of the configured question sets into the pgvector
//! table, so a new user can start a pgvector sweep from a folder of markdown.

use anyhow::Result;

use crate::adapters::retriever::pgvector::{self, Row};
use crate::app::options::IndexOptions;
use crate::base::exit::ExitStatus;

pub async fn run(mut s: IndexOptions) -> Result<ExitStatus> {
    let limit = crate::adapters::corpus::chunk_limit(
        s.max_chunk_tokens(),
        s.pipeline().embedder.max_input_tokens(),
    );
    // The table holds the chunks the builtin retriever would search: long sections split alike.
    s.workspace_mut().split_long_sections(limit);
    let (ws, pipeline, table) = (s.workspace(), s.pipeline(), s.table());
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
    let n = pgvector::load(table, rows, s.replace()).await?;
    for w in pipeline.embedder.warnings() {
        super::eprint_line(&format!("warning: {w}"));
    }
    if !s.quiet() {
        super::print(&format!(
            "loaded {n} chunks into `{}` at {} (embedder `{}`)\n",
            s.table_name(),
            table.shown,
            pipeline.embedder.model()
        ))?;
    }
    Ok(ExitStatus::Success)
}
