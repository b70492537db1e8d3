//! `rageval validate`: check question sets without running them.

use std::path::PathBuf;

use anyhow::Result;

use crate::config::LoadedConfig;
use crate::evalset::Workspace;
use crate::exit::ExitStatus;

pub fn run(files: Vec<PathBuf>, config: Option<PathBuf>, quiet: bool) -> Result<ExitStatus> {
    let files = if files.is_empty() {
        LoadedConfig::load(config.as_deref())?.evalsets()
    } else {
        files
    };
    if files.is_empty() {
        anyhow::bail!("no question sets to check: name files, or list `evalsets:` in rageval.yaml");
    }
    let mut failed = 0;
    for file in &files {
        match Workspace::load(std::slice::from_ref(file)) {
            Ok(ws) => {
                if !quiet {
                    let set = &ws.sets[0];
                    let answerable = set.questions.iter().filter(|q| q.answerable).count();
                    super::print(&format!(
                        "ok    {}: {} answerable, {} unanswerable; corpus `{}` ({})\n",
                        file.display(),
                        answerable,
                        set.questions.len() - answerable,
                        ws.corpora[0].describe(),
                        crate::gate::output::plural(ws.corpora[0].chunks.len(), "chunk"),
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
    if failed == 0 && files.len() > 1 {
        if let Err(e) = Workspace::load(&files) {
            failed += 1;
            super::eprint_line(&format!("error: {e:#}"));
        }
    }
    Ok(if failed == 0 {
        ExitStatus::Success
    } else {
        ExitStatus::Error
    })
}
