//! `rageval import squad FILE --out DIR`: QA data a team already has, as a question set and its
//! corpus (the reader is `import::squad`).

use anyhow::Result;

use crate::app::cli::ImportCommand;
use crate::base::exit::ExitStatus;

pub fn run(cmd: ImportCommand, quiet: bool) -> Result<ExitStatus> {
    match cmd {
        ImportCommand::Squad(args) => {
            let imported = crate::import::squad::import(&args.file, &args.out, args.force)?;
            if !quiet {
                super::print(&format!(
                    "imported {imported} into {}: docs/ and questions.yaml\nnext: rageval validate {}\n",
                    args.out.display(),
                    args.out.join("questions.yaml").display()
                ))?;
            }
            Ok(ExitStatus::Success)
        }
    }
}
