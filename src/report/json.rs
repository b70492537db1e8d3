//! `results.json`: the results record (`rageval.results/2`, see [`crate::record`]) that the
//! gate, `merge` and baselines read.

use std::io::Write;

use anyhow::Result;

use super::{Exporter, Results};
use crate::record::Record;

pub struct JsonResults;

impl Exporter for JsonResults {
    fn file_name(&self) -> &'static str {
        "results.json"
    }

    fn write(&self, r: &Results, out: &mut dyn Write) -> Result<()> {
        Record::of(r).write(out)?;
        Ok(())
    }
}
