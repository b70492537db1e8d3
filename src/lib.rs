//! rageval: tune and gate the refusal behaviour of retrieval-augmented generation systems.
//!
//! The library holds the whole pipeline; `main.rs` only parses arguments and maps the result to
//! an exit status.

// The layers, bottom first: a file imports only files of its own layer or of one declared
// before it here, and no import circle; only the app imports a side floor (docs/architecture.md;
// `layering::tests` checks it).

/// Leaves: text, escaping, redaction, terminal width, timing, input files, errors, digests.
pub mod base;

/// The shared vocabulary: a setting and its dimensions, limits, a call's record.
pub mod vocab;

/// The parts of the pipeline under test, each with its own config section, and the mock models.
pub mod adapters;

/// The sweep engine: plan, retrieve, call, build runs.
pub mod sweep;

/// Question generation (`rageval generate`): the generator's prompts, reply checks, `generate:`
/// section, engine and mock generator.
pub mod generate;

/// The batch engine: a sweep's requests written as batches, sent, polled and imported into
/// the response cache (the cycle reports through events; the app renders them).
pub mod batch;

/// A side floor: the mock model server (`rageval mock-llm`); only the app imports it.
pub mod mock_llm;

/// Statistics, repeat stability and insight over the runs.
pub mod analysis;

/// The one results value and its identity.
pub mod results;

/// The record (results.json), the report writers and the gate.
pub mod output;

/// A side floor: the importers of question data (`rageval import`); only the app imports it.
pub mod import;

/// Config file shapes, resolved options, wiring, commands and the command line.
pub mod app;

#[cfg(test)]
mod layering;

use app::cli::{Cli, Command};
use app::commands;
use app::options;
use base::exit::ExitStatus;

/// Run one command line. Setup errors come back as `Err` (exit status 2); a gate failure is
/// `Ok(ExitStatus::Failure)`.
pub async fn run(cli: Cli) -> anyhow::Result<ExitStatus> {
    match cli.command {
        Command::Sweep(args) => {
            commands::sweep::run(options::SweepOptions::new(args, cli.config, cli.quiet)?).await
        }
        Command::Ask(args) => commands::ask::ask(options::AskOptions::new(args, cli.config)?).await,
        Command::Prompt(args) => {
            commands::ask::prompt(options::AskOptions::new(args, cli.config)?).await
        }
        Command::Validate(args) => {
            let s = options::ValidateOptions::new(args.files, cli.config, cli.quiet, args.connect)?;
            commands::validate::run(s).await
        }
        Command::MockLlm(args) => commands::mock_llm::run(args).await,
        Command::Scan(args) => commands::scan::run(&options::ScanOptions::new(
            args.folders,
            cli.config,
            args.fail_on_match,
            cli.quiet,
        )?),
        Command::Generate(args) => {
            commands::generate::run(options::GenerateOptions::new(args, cli.config, cli.quiet)?)
                .await
        }
        Command::Init(args) => {
            commands::init::run(args.corpus, args.generate, cli.config, cli.quiet).await
        }
        Command::Schema(args) => commands::schema::schema(args.file),
        Command::Completions(args) => commands::schema::completions(args.shell),
        Command::Gate(args) => {
            commands::gate::run(&options::GateOptions::from_command(
                args.gate,
                args.results,
                args.labels,
                cli.config,
                cli.quiet,
            )?)
            .await
        }
        Command::Batch(app::cli::BatchCommand::Import(args)) => commands::batch::import(
            &options::BatchImportOptions::new(args, cli.config, cli.quiet)?,
        ),
        Command::Index(args) => {
            commands::index::run(options::IndexOptions::new(args, cli.config, cli.quiet)?).await
        }
        Command::Compare(args) => commands::compare::run(&args, cli.quiet),
        Command::History(args) => commands::history::run(&options::HistoryOptions::new(
            &args,
            cli.config.as_deref(),
            cli.quiet,
        )?),
        Command::Merge(args) => commands::merge::run(&args.inputs, &args.out, cli.quiet),
        Command::Label(args) => {
            commands::label::run(options::LabelOptions::new(args, cli.config, cli.quiet)?).await
        }
        Command::Import(cmd) => commands::import::run(cmd, cli.quiet),
    }
}
