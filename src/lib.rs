//! rageval: tune and gate the refusal behaviour of retrieval-augmented generation systems.
//!
//! The library holds the whole pipeline; `main.rs` only parses arguments and maps the result to
//! an exit status.

pub mod adapters;
pub mod analysis;
pub mod app;
pub mod base;
pub mod output;
pub mod results;
pub mod sweep;
pub mod vocab;

use app::cli::{Cli, Command};
use app::commands;
use app::options as settings;
use base::exit::ExitStatus;

/// Run one command line. Setup errors come back as `Err` (exit status 2); a gate failure is
/// `Ok(ExitStatus::Failure)`.
pub async fn run(cli: Cli) -> anyhow::Result<ExitStatus> {
    match cli.command {
        Command::Sweep(args) => {
            commands::sweep::run(settings::SweepSettings::new(args, cli.config, cli.quiet)?).await
        }
        Command::Ask(args) => {
            commands::ask::ask(settings::AskSettings::new(args, cli.config)?).await
        }
        Command::Prompt(args) => {
            commands::ask::prompt(settings::AskSettings::new(args, cli.config)?).await
        }
        Command::Validate(args) => {
            commands::validate::run(args.files, cli.config, cli.quiet, args.connect).await
        }
        Command::MockLlm(args) => commands::mock_llm::run(args).await,
        Command::Scan(args) => {
            commands::scan::run(args.folders, cli.config, args.fail_on_match, cli.quiet)
        }
        Command::Init(args) => commands::init::run(args.corpus, cli.quiet),
        Command::Schema(args) => commands::schema::schema(args.file),
        Command::Completions(args) => commands::schema::completions(args.shell),
        Command::Gate(args) => commands::gate::run(&settings::GateSettings::from_command(
            args.gate,
            args.results,
            cli.config,
            cli.quiet,
        )?),
        Command::Index(args) => commands::index::run(args, cli.config, cli.quiet).await,
        Command::Merge(args) => commands::merge::run(&args.inputs, &args.out, cli.quiet),
    }
}
