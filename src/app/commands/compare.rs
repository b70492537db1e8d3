//! `rageval compare BEFORE AFTER`: what changed between two runs, question by question, with
//! the exact paired test behind each rate (`output::compare`).

use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::app::cli::CompareArgs;
use crate::base::exit::ExitStatus;
use crate::output::compare;

pub fn run(args: &CompareArgs, quiet: bool) -> Result<ExitStatus> {
    let before_path = results_file(&args.before);
    let after_path = results_file(&args.after);
    let hint = "run `rageval sweep` first, or name a results file or its folder";
    let before = super::gate::load(&before_path, "results", hint)?;
    let after = super::gate::load(&after_path, "results", hint)?;
    let diff = compare::diff(
        (&before, &before_path.display().to_string()),
        (&after, &after_path.display().to_string()),
    )?;
    if let Some(path) = &args.markdown {
        super::gate::write_file(path, compare::markdown(&diff).as_bytes())?;
    }
    if !quiet {
        super::print(&compare::human(&diff))?;
    }
    Ok(ExitStatus::Success)
}

/// A folder names the results.json in it.
fn results_file(path: &Path) -> PathBuf {
    if path.is_dir() {
        path.join("results.json")
    } else {
        path.to_path_buf()
    }
}
