//! `rageval scan`: list the chunks that match the suspicious patterns, for review.

use anyhow::Result;

use crate::adapters::corpus::Corpus;
use crate::adapters::evalset::Workspace;
use crate::app::options::{CorpusSource, ScanOptions};
use crate::base::exit::ExitStatus;

pub fn run(s: &ScanOptions) -> Result<ExitStatus> {
    let scanner = s.scanner();
    let corpora = match s.corpora() {
        CorpusSource::Sets(sets) => Workspace::load(sets)?.corpora,
        CorpusSource::Folders(folders) => folders
            .iter()
            .map(|f| Corpus::load(f))
            .collect::<Result<Vec<_>>>()?
            .into(),
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
    if !s.quiet() {
        out.push_str(&format!(
            "{flagged} of {total} chunks flagged. The scan is a tripwire for review, not a defence: a reworded attack passes it.\n"
        ));
    }
    super::print(&out)?;
    Ok(if s.fail_on_match() && flagged > 0 {
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    })
}
