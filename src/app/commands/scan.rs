//! `rageval scan`: list the chunks that match the suspicious patterns, for review.

use std::path::PathBuf;

use anyhow::Result;

use crate::adapters::corpus::Corpus;
use crate::adapters::evalset::Workspace;
use crate::adapters::scan::Scanner;
use crate::app::config::LoadedConfig;
use crate::base::exit::ExitStatus;

pub fn run(
    folders: Vec<PathBuf>,
    config: Option<PathBuf>,
    fail_on_match: bool,
    quiet: bool,
) -> Result<ExitStatus> {
    let cfg = LoadedConfig::load(config.as_deref())?;
    let scanner = Scanner::new(&cfg.config.scan.patterns).map_err(anyhow::Error::msg)?;
    let corpora = if folders.is_empty() {
        let sets = cfg.evalsets();
        if sets.is_empty() {
            anyhow::bail!(
                "nothing to scan: name corpus folders, or list question sets in rageval.yaml"
            );
        }
        Workspace::load(&sets)?.corpora
    } else {
        folders
            .iter()
            .map(|f| Corpus::load(f))
            .collect::<Result<Vec<_>>>()?
            .into()
    };
    let mut out = String::new();
    let (mut flagged, mut total) = (0, 0);
    for corpus in corpora.iter() {
        total += corpus.chunks.len();
        for (i, pattern) in scanner.flag(corpus) {
            flagged += 1;
            let c = &corpus.chunks[i];
            out.push_str(&format!(
                "flagged: {}  {}  (matches `{pattern}`)\n",
                c.id, c.heading
            ));
        }
    }
    if !quiet {
        out.push_str(&format!(
            "{flagged} of {total} chunks flagged. The scan is a tripwire for review, not a defence: a reworded attack passes it.\n"
        ));
    }
    super::print(&out)?;
    Ok(if fail_on_match && flagged > 0 {
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    })
}
