//! rageval: tune and gate the refusal behaviour of retrieval-augmented generation systems.
//!
//! The library holds the whole pipeline; `main.rs` only parses arguments and maps the result to
//! an exit status.

pub mod cache;
pub mod chat;
pub mod classify;
pub mod corpus;
pub mod embed;
pub mod error;
pub mod evalset;
pub mod gate;
pub mod http;
pub mod identity;
pub mod input;
pub mod insight;
pub mod judge;
pub mod limit;
pub mod mock_server;
pub mod progress;
pub mod prompt;
pub mod record;
pub mod redact;
pub mod refusal;
pub mod repeat;
pub mod rerank;
pub mod retrieve;
pub mod retriever;
pub mod rewrite;
pub mod safe_text;
pub mod scan;
pub mod stats;
pub mod sweep;
pub mod template;
pub mod term;
pub mod text;
pub mod timing;
mod yaml_de;
mod yaml_loc;

use std::future::Future;
use std::pin::Pin;

/// A boxed future, so that model and embedder traits can be used as trait objects.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

pub mod cli;
pub mod commands;
pub mod config;
pub mod exit;
pub mod profiles;
pub mod report;
pub mod settings;

use cli::{Cli, Command};
use exit::ExitStatus;

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
