//! `rageval merge`: join the results of `sweep --shard I/N` and write every report, as one
//! unsharded sweep would have.

use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::base::exit::ExitStatus;
use crate::base::text::plural;
use crate::output::record::{merge::merge, Record};
use crate::output::report;

pub fn run(inputs: &[PathBuf], out: &Path, quiet: bool) -> Result<ExitStatus> {
    let mut parts = Vec::with_capacity(inputs.len());
    for input in inputs {
        let path = if input.is_dir() {
            input.join("results.json")
        } else {
            input.clone()
        };
        let record = Record::load(&path)?;
        parts.push((path, record));
    }
    let shards = parts.len();
    let record = merge(parts)?;
    let results = record
        .into_results()
        .map_err(|e| anyhow::anyhow!("cannot merge: {e}"))?;
    let written = report::write_all(&results, &report::Summary::of(&results), out)?;
    if !quiet {
        let names: Vec<String> = written
            .paths
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        super::print(&format!(
            "merged {}: {} x {} = {}\nwrote {}\n",
            plural(shards, "shard"),
            plural(results.questions.len(), "question"),
            plural(results.settings.len(), "setting"),
            plural(results.runs.len(), "run"),
            names.join(", ")
        ))?;
    }
    Ok(ExitStatus::Success)
}
