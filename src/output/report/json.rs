//! `results.json`: the results record (`rageval.results/2`, see [`crate::output::record`]) that the
//! gate, `merge` and baselines read.

use std::io::Write;

use anyhow::Result;

use super::{Exporter, Results};

pub struct JsonResults;

impl Exporter for JsonResults {
    fn file_name(&self) -> &'static str {
        "results.json"
    }

    fn write(&self, r: &Results, out: &mut dyn Write) -> Result<()> {
        // Streamed: the runs are not copied into a record first.
        crate::output::record::stream::write(r, out)?;
        Ok(())
    }
}
