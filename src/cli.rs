//! The command line: clap derive types, and their conversion into checked settings.
//! Nothing below this module knows about clap.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Tune and gate the refusal behaviour of a retrieval-augmented generation (RAG) system.
///
/// rageval runs your question sets through retrieval and generation over a grid of settings
/// (minScore, k), classifies every run (answer, early refusal, model refusal, false refusal,
/// unwanted answer) and writes tables and reports. Exit status: 0 success, 1 a gate failed,
/// 2 bad input or a run that could not complete.
#[derive(Debug, Parser)]
#[command(
    name = "rageval",
    version,
    propagate_version = true,
    max_term_width = 100
)]
pub struct Cli {
    /// Config file [default: rageval.yaml when it exists, else built-in defaults]
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Print nothing but errors (and the output of --format json)
    #[arg(long, short, global = true)]
    pub quiet: bool,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run every question over a grid of settings and write reports
    Sweep(SweepArgs),
    /// Answer one question and show its labelled sources
    Ask(AskArgs),
    /// Print exactly the messages the model would receive for a question
    Prompt(AskArgs),
    /// Check question sets without running them
    Validate(ValidateArgs),
}

#[derive(Debug, Args)]
pub struct SweepArgs {
    /// minScore values: `a..b` (step 0.1), `a..b:step`, or a list `a,b,c` [default: from config, else 0.1..0.5]
    #[arg(long, value_name = "SPEC", allow_hyphen_values = true)]
    pub min_score: Option<String>,

    /// k values: a list `1,2,4,8` or a range `1..8[:step]` [default: from config, else 1,2,4,8]
    #[arg(long, short, value_name = "SPEC")]
    pub k: Option<String>,

    /// Question set to run (repeatable) [default: the config's `evalsets`, else evalsets/*.yaml]
    #[arg(long, short, value_name = "FILE")]
    pub evalset: Vec<PathBuf>,

    /// Folder for summary.csv, runs.csv, results.json, report.md and report.html [default: from config, else reports/latest]
    #[arg(long, short, value_name = "DIR")]
    pub out: Option<PathBuf>,

    /// Count a reply as a refusal only when it equals the refusal sentence exactly
    #[arg(long)]
    pub strict_refusal: bool,

    /// Model calls in flight at once [default: from config, else 8]
    #[arg(long, short = 'j', value_name = "N")]
    pub concurrency: Option<usize>,

    /// What to print on stdout
    #[arg(long, value_enum, default_value_t = OutputFormat::Table)]
    pub format: OutputFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// Tables for people
    Table,
    /// The results document (as results.json) for programs
    Json,
}

#[derive(Debug, Args)]
pub struct AskArgs {
    /// The question
    pub question: String,

    /// Passages to retrieve
    #[arg(long, short, default_value_t = 4)]
    pub k: usize,

    /// Minimum similarity for a passage to be sent
    #[arg(long, default_value = "0.2", allow_hyphen_values = true)]
    pub min_score: String,

    /// Folder of markdown documents [default: the corpus of the first question set]
    #[arg(long, value_name = "DIR")]
    pub corpus: Option<PathBuf>,

    /// Count a reply as a refusal only when it equals the refusal sentence exactly
    #[arg(long)]
    pub strict_refusal: bool,
}

#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Question sets to check [default: the config's `evalsets`, else evalsets/*.yaml]
    pub files: Vec<PathBuf>,
}
