//! `rageval schema` and `rageval completions`: what editors and shells need, generated from the
//! types that parse the files and from the command line's own definition.

use anyhow::Result;

use crate::app::cli::{SchemaFile, Shell};
use crate::base::exit::ExitStatus;

pub fn schema(file: SchemaFile) -> Result<ExitStatus> {
    let schema = match file {
        SchemaFile::Config => crate::app::config::json_schema(),
        SchemaFile::Evalset => crate::adapters::evalset::json_schema(),
    };
    super::print_raw(&format!("{}\n", serde_json::to_string_pretty(&schema)?))?;
    Ok(ExitStatus::Success)
}

pub fn completions(shell: Shell) -> Result<ExitStatus> {
    super::print_raw(&crate::app::cli::completions(shell))?;
    Ok(ExitStatus::Success)
}
