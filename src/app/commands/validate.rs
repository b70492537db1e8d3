//! `rageval validate`: check question sets (and the configured retriever) without running them.

use anyhow::Result;

use crate::adapters::evalset::Workspace;
use crate::app::options::{Connect, ValidateOptions};
use crate::base::exit::ExitStatus;
use crate::output::explain::SetSize;

/// Check the question sets of `s`. `--connect` also opens the retriever and asks it for the
/// first question's best passage, and probes the reranker if there is one; without it no
/// service is contacted.
pub async fn run(s: ValidateOptions) -> Result<ExitStatus> {
    let (files, kind, quiet) = (s.files(), s.kind(), s.quiet());
    let foreign = !kind.chunks_itself();
    let mut failed = 0;
    for file in files {
        match Workspace::load_for(std::slice::from_ref(file), foreign) {
            Ok(ws) => {
                if !quiet {
                    let set = &ws.sets[0];
                    let answerable = set.questions.iter().filter(|q| q.answerable).count();
                    let passages = if foreign && ws.corpora[0].chunks.is_empty() {
                        format!("passages from the `{}` retriever", kind)
                    } else {
                        format!(
                            "corpus `{}` ({})",
                            ws.corpora[0].describe(),
                            crate::base::text::plural(ws.corpora[0].chunks.len(), "chunk"),
                        )
                    };
                    let generated = set.questions.iter().filter(|q| q.origin.is_some()).count();
                    let unreviewed = set.questions.iter().filter(|q| !q.reviewed()).count();
                    let origin = match (generated, unreviewed) {
                        (0, _) => String::new(),
                        (g, 0) => format!("; {g} generated, all reviewed"),
                        (g, u) => format!(
                            "; {g} generated, {u} not reviewed yet (set `reviewed: true` once checked)"
                        ),
                    };
                    let size = SetSize {
                        answerable: answerable as u64,
                        unanswerable: (set.questions.len() - answerable) as u64,
                        probes: set.questions.iter().filter(|q| q.attack.is_some()).count() as u64,
                    };
                    let sizes: String = size_lines(&s, size)
                        .iter()
                        .map(|l| format!("      {l}\n"))
                        .collect();
                    super::print(&format!(
                        "ok    {}: {} answerable, {} unanswerable; {passages}{origin}\n{sizes}",
                        file.display(),
                        size.answerable,
                        size.unanswerable,
                    ))?;
                }
            }
            Err(e) => {
                failed += 1;
                super::eprint_line(&format!("error: {e:#}"));
            }
        }
    }
    // Ids must also be unique across the sets that run together.
    let mut ws = None;
    if failed == 0 && (files.len() > 1 || s.connect().is_some()) {
        match Workspace::load_for(files, foreign) {
            Ok(w) => ws = Some(w),
            Err(e) => {
                failed += 1;
                super::eprint_line(&format!("error: {e:#}"));
            }
        }
    }
    if let (0, Some(connect), Some(ws)) = (failed, s.connect(), &ws) {
        match probe(connect, ws).await {
            Ok(lines) if !quiet => {
                for line in lines {
                    super::print(&format!("ok    {line}\n"))?;
                }
            }
            Ok(_) => {}
            Err(e) => {
                failed += 1;
                super::eprint_line(&format!("error: {e:#}"));
            }
        }
    }
    Ok(if failed == 0 {
        ExitStatus::Success
    } else {
        ExitStatus::Error
    })
}

/// What a set of this size can certify and how many questions the policy's limits need, at
/// the config's confidence and under its procedure over its grid (one setting without a
/// config).
fn size_lines(s: &ValidateOptions, size: SetSize) -> Vec<String> {
    use crate::analysis::insight::certifier::Certifier;
    let (policy, settings) = (s.policy(), s.settings());
    let procedure = Certifier::new(policy, settings).procedure();
    crate::output::explain::size_lines(size, policy, procedure.as_ref(), settings.len())
}

/// Two fixed documents for the reranker probe: one about the query, one not.
const PROBE_QUERY: &str = "When does the shop open?";
const PROBE_DOCUMENTS: [&str; 2] = [
    "The shop opens at nine on weekdays.",
    "Parking is free behind the station.",
];

/// `--connect`: open the configured retriever (pgvector: connect, find the table and its
/// columns, compare dimensions) and retrieve the first question at k = 1 under the contract;
/// with a `reranker:`, send it one request of two fixed documents. One line per service.
async fn probe(connect: &Connect, ws: &Workspace) -> Result<Vec<String>> {
    let r = &connect.retriever;
    let pipeline = match &connect.pipeline {
        Ok(p) => p,
        Err(e) => anyhow::bail!("{e:#}"),
    };
    let mut lines = Vec::new();
    if r.kind.chunks_itself() {
        lines.push(format!("retriever `{}`: nothing to connect to", r.kind));
    } else {
        let Some(retriever) =
            crate::adapters::retriever::open(r, pipeline.embedder.clone()).await?
        else {
            anyhow::bail!("retriever `{}` did not open", r.kind);
        };
        let Some(q) = ws.questions().next() else {
            anyhow::bail!("no question to retrieve");
        };
        let texts = [q.question.clone()];
        let passages = retriever
            .retrieve(&texts, 1)
            .await
            .remove(0)
            .map_err(|e| anyhow::anyhow!("retrieval for question `{}` failed: {e}", q.id))?;
        lines.push(format!(
            "retriever `{}` at {}: question `{}` got {} at k = 1",
            r.kind,
            retriever.describe(),
            q.id,
            crate::base::text::plural(passages.len(), "passage"),
        ));
    }
    if let Some(reranker) = &pipeline.reranker {
        let documents = PROBE_DOCUMENTS.map(String::from);
        let scored = reranker
            .rerank(PROBE_QUERY, &documents, documents.len())
            .await
            .map_err(|e| anyhow::anyhow!("the reranker probe failed: {e}"))?
            .scored;
        let best = scored
            .first()
            .map(|s| format!(", best document {} at {:.3}", s.index + 1, s.score))
            .unwrap_or_default();
        lines.push(format!(
            "reranker `{}`: scored {} of 2 probe documents{best}",
            reranker.model(),
            scored.len()
        ));
    }
    Ok(lines)
}
