//! The engine runs `rageval sweep` makes, plain or adaptive: the sweep of some questions with
//! its progress bar, and the engine of a dry run (the planner that counts calls).

use anyhow::Result;

use crate::adapters::evalset::Workspace;
use crate::app::cli::OutputFormat;
use crate::app::options::SweepOptions;
use crate::sweep::{Coverage, Engine, RetrievalVariant, Sweep};

/// The sweep's retriever over the default embedder (`None`: the builtin search).
pub type Retriever = Option<std::sync::Arc<dyn crate::adapters::retriever::Retriever>>;

/// Run the sweep of `ws` with its progress bar, at the (setting, question) pairs `coverage`
/// keeps (every one, but in an adaptive sweep that dropped settings); its notes and warnings
/// are kept for the command to print once the bar is gone.
pub async fn sweep_only(
    s: &SweepOptions,
    ws: &Workspace,
    retriever: Retriever,
    retrieval: Vec<RetrievalVariant>,
    coverage: Coverage,
) -> Result<Sweep> {
    let p = s.pipeline();
    let bar = crate::app::progress::call_bar(
        s.quiet() || s.output() == OutputFormat::Json,
        p.rate_limited.clone(),
    );
    let engine = Engine {
        progress: bar.as_ref().map(|(_, feed)| feed.clone()),
        repeat: s.repeat(),
        coverage,
        ..p.engine(retriever, retrieval, s.concurrency())
    };
    let sweep = engine.sweep(ws, s.grid()).await;
    if let Some((bar, _)) = bar {
        bar.finish();
    }
    sweep
}

/// The engine of a dry run: no chat call, so nothing to grade.
pub fn dry_engine(
    s: &SweepOptions,
    retriever: Retriever,
    retrieval: Vec<RetrievalVariant>,
) -> Engine {
    Engine {
        judge: None,
        repeat: s.repeat(),
        ..s.pipeline().engine(retriever, retrieval, s.concurrency())
    }
}
