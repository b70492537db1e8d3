//! `rageval schema` and `rageval completions`: what editors and shells need, generated from the
//! types that parse the files and from the command line's own definition.

use anyhow::Result;

use crate::cli::{SchemaFile, Shell};
use crate::exit::ExitStatus;

pub fn schema(file: SchemaFile) -> Result<ExitStatus> {
    let schema = match file {
        SchemaFile::Config => crate::config::json_schema(),
        SchemaFile::Evalset => crate::evalset::json_schema(),
    };
    super::print_raw(&format!("{}\n", serde_json::to_string_pretty(&schema)?))?;
    Ok(ExitStatus::Success)
}

pub fn completions(shell: Shell) -> Result<ExitStatus> {
    super::print_raw(&crate::cli::completions(shell))?;
    Ok(ExitStatus::Success)
}
