//! The command line: clap derive types, and their conversion into checked settings.
//! Nothing below this module knows about clap.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::vocab::dim::Dim;
use crate::vocab::limit::Limit;

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

    /// Print nothing but errors (and, for sweep, the output of --output json)
    #[arg(long, short, global = true)]
    pub quiet: bool,

    #[command(subcommand)]
    pub command: Command,
}

// Parsed once per process: the size of the largest variant costs nothing worth boxing for.
#[allow(clippy::large_enum_variant)]
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
    /// Write a question set from the corpus: answerable and near-miss unanswerable questions, verified (docs/generate.md)
    Generate(GenerateArgs),
    /// Serve the mock model and hash embedder over an OpenAI-compatible HTTP API
    MockLlm(MockLlmArgs),
    /// List document chunks that match suspicious prompt-injection patterns (a tripwire, not a defence)
    Scan(ScanArgs),
    /// Check one setting of a results file against limits and a baseline (exit 1 on regression)
    Gate(GateCmdArgs),
    /// Compare two runs question by question: each rate before and after with the exact McNemar test, and the questions that changed (docs/ci.md)
    Compare(CompareArgs),
    /// Show the history of sweeps at one setting: a table with a sparkline per rate, CSV, JSON or a page (docs/history.md)
    History(HistoryArgs),
    /// Join the results of `sweep --shard I/N` (one folder or results.json per shard) and write every report
    Merge(MergeArgs),
    /// Sample distinct replies of a finished sweep for a person to grade, into a CSV or on a local page (docs/labels.md)
    Label(LabelArgs),
    /// Start a project here: a commented rageval.yaml and a starter question set (never overwrites)
    Init(InitArgs),
    /// Print the JSON Schema of rageval.yaml or of a question set, for editors
    Schema(SchemaArgs),
    /// Print a shell completion script for bash, zsh, fish or PowerShell (docs/editors.md)
    Completions(CompletionsArgs),
    /// Load the corpus of the configured question sets into the pgvector table (retriever.kind: pgvector)
    Index(IndexArgs),
    /// Turn QA data you already have into a question set and its corpus (docs/question-sets.md)
    #[command(subcommand)]
    Import(ImportCommand),
    /// Batch engines: read a batch's output and error files into the response cache (docs/batch.md)
    #[command(subcommand)]
    Batch(BatchCommand),
}

/// The formats `rageval import` reads.
#[derive(Debug, Subcommand)]
pub enum ImportCommand {
    /// SQuAD 2.0 (or 1.1) JSON: one markdown file per article, a section per paragraph, and DIR/questions.yaml
    Squad(ImportSquadArgs),
}

#[derive(Debug, Args)]
pub struct ImportSquadArgs {
    /// The SQuAD JSON file (`{"data": [{"title", "paragraphs": [{"context", "qas"}]}]}`)
    #[arg(value_name = "FILE")]
    pub file: PathBuf,

    /// Folder to write: DIR/docs/ (the corpus) and DIR/questions.yaml
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,

    /// Replace `--out` when it exists (only once the import succeeded)
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Subcommand)]
pub enum BatchCommand {
    /// Put the answers of batch output files (and the failures of error files) into the response cache, by `custom_id`
    Import(BatchImportArgs),
}

#[derive(Debug, Args)]
pub struct BatchImportArgs {
    /// Output and error files of a batch engine (OpenAI's batch output format)
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,

    /// The response cache folder, as given to `sweep --cache-dir` [default: the config's `cache.dir`]
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct IndexArgs {
    /// Question sets whose corpora are loaded [default: the config's `evalsets`, else evalsets/*.yaml]
    pub files: Vec<PathBuf>,

    /// Drop the table and load it again (without it, a table that holds rows is left alone)
    #[arg(long)]
    pub replace: bool,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The earlier results: a results.json file or the folder that holds one
    #[arg(value_name = "BEFORE")]
    pub before: PathBuf,

    /// The later results: a results.json file or the folder that holds one
    #[arg(value_name = "AFTER")]
    pub after: PathBuf,

    /// Also write the comparison as Markdown to FILE
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct LabelArgs {
    /// The sweep's report folder (or its results.json) [default: the config's `out` folder, else reports/latest]
    #[arg(long, value_name = "DIR")]
    pub results: Option<PathBuf>,

    /// Sample each distinct model reply with probability N / replies: about N rows (the count varies around N)
    #[arg(long, value_name = "N", conflicts_with = "share")]
    pub sample: Option<usize>,

    /// Sample each distinct model reply with probability P (above 0, at most 1)
    #[arg(long, value_name = "P")]
    pub share: Option<f64>,

    /// Seed of the sample; a file keeps the seed it was drawn with [default: the file's, else 0]
    #[arg(long, value_name = "S")]
    pub seed: Option<u64>,

    /// Draw the replies of a stratum (the grader's outcome: unwanted_answer, model_refusal, false_refusal, wrong_answer, answer) with FACTOR times the probability, at most 1; repeatable
    #[arg(long, value_name = "STRATUM=FACTOR")]
    pub oversample: Vec<String>,

    /// The labels file [default: labels.csv in the results folder]
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,

    /// Serve a page on loopback to grade the replies with the keyboard; every label is written to the file as it is given
    #[arg(long)]
    pub serve: bool,

    /// Where the page listens: a loopback address [default: 127.0.0.1:0, any free port]
    #[arg(long, value_name = "ADDR", requires = "serve")]
    pub addr: Option<String>,
}

#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// The history file [default: the config's `history.file`, else reports/history.jsonl]
    #[arg(long, value_name = "FILE")]
    pub file: Option<PathBuf>,

    /// How many of the newest entries to show
    #[arg(long, short = 'n', value_name = "N", default_value_t = 20)]
    pub last: usize,

    /// The setting to show, as `min_score=0.3,k=1` [default: the newest entry's recommended setting]
    #[arg(long, value_name = "SPEC")]
    pub setting: Option<String>,

    /// Print the rows as CSV (one per entry; for spreadsheets)
    #[arg(long, conflicts_with_all = ["json", "html"])]
    pub csv: bool,

    /// Print the rows as a JSON array (for programs and DuckDB)
    #[arg(long, conflicts_with = "html")]
    pub json: bool,

    /// Write a self-contained page charting each rate with its 95% Wilson band to FILE
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The shards' report folders (or their results.json files)
    #[arg(required = true, value_name = "DIR")]
    pub inputs: Vec<PathBuf>,

    /// Folder for the merged reports
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

#[derive(Debug, Args)]
pub struct InitArgs {
    /// Folder of markdown documents to ask about [default: `docs/` when it holds markdown, else this folder when it does, else a sample `docs/welcome.md` is written]
    #[arg(long, value_name = "DIR")]
    pub corpus: Option<PathBuf>,

    /// Then run `rageval generate` over it, writing evalsets/generated.yaml with the model of `--config` (default: the offline mock, which writes placeholders)
    #[arg(long)]
    pub generate: bool,
}

#[derive(Debug, Args)]
pub struct GenerateArgs {
    /// Answerable questions to write (at most 10000)
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub answerable: usize,

    /// Unanswerable questions to write, near-miss and off-topic together (at most 10000)
    #[arg(long, value_name = "M", default_value_t = 10)]
    pub unanswerable: usize,

    /// Share of the unanswerable questions that are plainly off-topic (0 to 1)
    #[arg(long, value_name = "SHARE", default_value_t = 0.2)]
    pub off_topic: f64,

    /// Share of the unanswerable questions that take for granted a fact their passage contradicts (0 to 1; with --off-topic at most 1)
    #[arg(long, value_name = "SHARE", default_value_t = 0.0)]
    pub false_premise: f64,

    /// The question set to write
    #[arg(long, value_name = "FILE", default_value = "evalsets/generated.yaml")]
    pub out: PathBuf,

    /// Folder of markdown documents to ask about [default: the corpus of the configured question sets]
    #[arg(long, value_name = "DIR")]
    pub corpus: Option<PathBuf>,

    /// Seed of the passage sampling: the same seed, corpus and model write the same file
    #[arg(long, default_value_t = 0)]
    pub seed: u64,

    /// Overwrite `--out` (and `--rejected`) when it exists
    #[arg(long, conflicts_with = "append")]
    pub force: bool,

    /// Add the new questions to `--out` (its questions count as existing ones for duplicates), and the rejected candidates to `--rejected`
    #[arg(long)]
    pub append: bool,

    /// Print the calls the first round would make, without any chat call
    #[arg(long)]
    pub dry_run: bool,

    /// Write every rejected candidate with its reason to FILE (JSON lines), kept or not
    #[arg(long, value_name = "FILE")]
    pub rejected: Option<PathBuf>,

    /// Model calls in flight at once [default: from config, else 8]
    #[arg(long, short = 'j', value_name = "N")]
    pub concurrency: Option<usize>,

    /// Neither read nor write the response cache
    #[arg(long)]
    pub no_cache: bool,
}

#[derive(Debug, Args)]
pub struct SchemaArgs {
    /// Which file's schema
    #[arg(value_enum)]
    pub file: SchemaFile,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SchemaFile {
    /// `rageval.yaml`
    Config,
    /// A question set, `evalsets/NAME.yaml`
    Evalset,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell
    #[arg(value_enum)]
    pub shell: Shell,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
    Powershell,
}

/// The completion script for `shell`.
pub fn completions(shell: Shell) -> String {
    use clap::CommandFactory;
    use clap_complete::{generate, shells};
    let mut cmd = Cli::command();
    let mut out = Vec::new();
    match shell {
        Shell::Bash => generate(shells::Bash, &mut cmd, "rageval", &mut out),
        Shell::Zsh => generate(shells::Zsh, &mut cmd, "rageval", &mut out),
        Shell::Fish => generate(shells::Fish, &mut cmd, "rageval", &mut out),
        Shell::Powershell => generate(shells::PowerShell, &mut cmd, "rageval", &mut out),
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[derive(Debug, Args)]
pub struct ScanArgs {
    /// Corpus folders [default: the corpora of the config's question sets]
    pub folders: Vec<PathBuf>,

    /// Exit 1 when a chunk is flagged
    #[arg(long)]
    pub fail_on_match: bool,
}

#[derive(Debug, Args)]
pub struct SweepArgs {
    /// minScore values: `a..b` (step 0.1), `a..b:step`, or a list `a,b,c` [default: from config, else 0.1..0.5]
    #[arg(long, value_name = "SPEC", allow_hyphen_values = true)]
    pub min_score: Option<String>,

    /// k values: a list `1,2,4,8` or a range `1..8[:step]` [default: from config, else 1,2,4,8]
    #[arg(long, short, value_name = "SPEC")]
    pub k: Option<String>,

    /// Context orders to compare: `score` (best first), `edge` (best first, second best last) [default: from config, else score]
    #[arg(long, value_name = "LIST")]
    pub order: Option<String>,

    /// Passage formats to compare: `numbered` (`[n] (source: ..)`) or `tagged` (`<passage ..>`) [default: from config, else numbered]; what goes to stdout is `--output`
    #[arg(long, value_name = "LIST")]
    pub format: Option<String>,

    /// Follow-up rewrite strategies to compare: `none`, `heuristic`, `model` [default: from config, else none]
    #[arg(long, value_name = "LIST")]
    pub rewrite: Option<String>,

    /// Chat profiles to compare: keys of the config's `models:`, `default` for its `chat:` section [default: from config, else default]
    #[arg(long, value_name = "LIST")]
    pub chat: Option<String>,

    /// Chat temperatures to compare, as a list `0,0.7` or a range `0..1:0.5` [default: from config, else each profile's `temperature`]
    #[arg(long, value_name = "SPEC")]
    pub temperature: Option<String>,

    /// Embedder profiles to compare: keys of the config's `embedders:`, `default` for its `embedder:` section [default: from config, else default]
    #[arg(long, value_name = "LIST")]
    pub embedder: Option<String>,

    /// Chunk sizes to compare (the builtin chunker's `max_chunk_tokens`, one index each): a list `128,256,512` [default: from config, else `corpus.max_chunk_tokens`]
    #[arg(long, value_name = "SPEC")]
    pub chunk_tokens: Option<String>,

    /// Question set to run (repeatable) [default: the config's `evalsets`, else evalsets/*.yaml]
    #[arg(long, short, value_name = "FILE")]
    pub evalset: Vec<PathBuf>,

    /// Folder for summary.csv, runs.csv, results.json, report.md and report.html [default: from config, else reports/latest]
    #[arg(long, short, value_name = "DIR")]
    pub out: Option<PathBuf>,

    /// Turn the lenient refusal match off: the sentence counts only when the reply equals it exactly (`prompt.refusal_patterns` and a judge still apply)
    #[arg(long)]
    pub strict_refusal: bool,

    /// Model calls in flight at once [default: from config, else 8]
    #[arg(long, short = 'j', value_name = "N")]
    pub concurrency: Option<usize>,

    /// What to print on stdout [default: table]
    #[arg(long = "output", value_enum, value_name = "OUTPUT")]
    pub output: Option<OutputFormat>,

    /// Neither read nor write the response cache
    #[arg(long, conflicts_with = "refresh_cache")]
    pub no_cache: bool,

    /// Append no line to the history of sweeps (`history.file`; docs/history.md)
    #[arg(long)]
    pub no_history: bool,

    /// Make every call again; the new answers are appended to the cache and replace the old ones
    #[arg(long)]
    pub refresh_cache: bool,

    /// Keep the response cache in DIR instead of `cache.dir` (a folder the machine keeps
    /// between CI runs, say)
    #[arg(long, value_name = "DIR", conflicts_with = "no_cache")]
    pub cache_dir: Option<PathBuf>,

    /// Exit 0 even when some model calls failed (their runs are `error` in the reports)
    #[arg(long)]
    pub allow_errors: bool,

    /// Use the streamed chat endpoint and record time to first token
    #[arg(long)]
    pub stream: bool,

    /// Show every column of the settings table, however wide [default: fit the terminal, else $COLUMNS, else 100]
    #[arg(long)]
    pub wide: bool,

    /// Gate the new results (as `rageval gate`); the exit status is the gate's
    #[arg(long)]
    pub gate: bool,

    /// Refuse a sweep that plans more runs (questions x settings) than this, before any work
    #[arg(long, value_name = "N", default_value_t = crate::sweep::DEFAULT_MAX_RUNS)]
    pub max_runs: u64,

    /// Plan the sweep and print what it would cost (runs, early refusals, distinct and cached prompts, calls, estimated prompt tokens and cost) without any chat call; embeddings are computed and rerank calls made (retrieval decides which prompts exist)
    #[arg(long)]
    pub dry_run: bool,

    /// Make no chat call: write every request the sweep needs and the cache does not hold to FILE, in the OpenAI batch input format, for a batch engine (docs/batch.md)
    #[arg(long, value_name = "FILE", conflicts_with_all = ["dry_run", "no_cache", "refresh_cache"])]
    pub batch_out: Option<PathBuf>,

    /// Send the calls through the chat server's Batch API (upload, create, poll, download, import), then finish from the cache; as `chat.batch: true` (docs/batch.md)
    #[arg(long, conflicts_with_all = ["dry_run", "batch_out", "no_cache", "refresh_cache"])]
    pub batch: bool,

    /// Embed the texts the cache does not hold through batches too: into the --batch-out file (before any chat request: the prompts depend on what they retrieve), or through the embedder server's Batch API; as `embedder.batch: true` on every `openai` embedder of the sweep (docs/batch.md)
    #[arg(long, conflicts_with_all = ["dry_run", "no_cache", "refresh_cache"])]
    pub batch_embeddings: bool,

    /// Sweep only some questions: `generated` (written by `rageval generate`) or `reviewed` (written or reviewed by a person)
    #[arg(long, value_name = "WHICH")]
    pub only: Option<Only>,

    /// Run only shard I of N: the questions whose id hashes to I (docs/ci.md); `rageval merge` joins the shards' results
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,

    /// Make every distinct model answer call N times (each with `seed` set to its repeat index) and report outcome rates over all repeats and flip rates
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub repeat: u32,

    /// Cross-validate the recommendation over K folds of the questions (0: none) [default: `recommend.folds`, else 5 with at least 10 questions per class]
    #[arg(long, value_name = "K")]
    pub folds: Option<usize>,

    /// Certify with anytime-valid tests, so that questions may be added and the sweep re-run until a setting is certified (docs/insight.md) [default: `recommend.sequential`]
    #[arg(long)]
    pub sequential: bool,

    /// A labels file (`rageval label`): a person's grades replace the grader's in every run sharing a reply (docs/labels.md) [default: `recommend.labels`]
    #[arg(long, value_name = "FILE")]
    pub labels: Option<PathBuf>,

    #[command(flatten)]
    pub adaptive: AdaptiveArgs,

    #[command(flatten)]
    pub gate_args: GateArgs,
}

/// An adaptive sweep: the questions in seeded rounds, stopped when the answer is known
/// (docs/adaptive.md).
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Adaptive sweep")]
pub struct AdaptiveArgs {
    /// Take the questions in seeded rounds and stop once the recommendation is certified, when no setting can be, or at a budget; settings already out get no more calls (needs `--sequential`; docs/adaptive.md)
    #[arg(long, conflicts_with_all = ["dry_run", "batch_out", "shard", "no_cache"])]
    pub until_certified: bool,

    /// Seed of the order the questions of each class are taken in [default: 0]
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,

    /// Questions of each class added per round [default: 10% of the smaller class, at least 10]
    #[arg(long, value_name = "N")]
    pub step: Option<usize>,

    /// Stop before a round would make the sweep's model calls more than N
    #[arg(long, value_name = "N")]
    pub max_calls: Option<u64>,

    /// Stop before a round would make the sweep's estimated prompt cost more than USD (in the pricing's currency)
    #[arg(long, value_name = "USD")]
    pub max_cost: Option<f64>,
}

impl AdaptiveArgs {
    /// The flags of an adaptive sweep given besides `--until-certified`.
    pub fn given(&self) -> Vec<&'static str> {
        [
            (self.seed.is_some(), "--seed"),
            (self.step.is_some(), "--step"),
            (self.max_calls.is_some(), "--max-calls"),
            (self.max_cost.is_some(), "--max-cost"),
        ]
        .into_iter()
        .filter_map(|(given, flag)| given.then_some(flag))
        .collect()
    }
}

impl SweepArgs {
    /// The dimension flags and their specs: the one place that maps the dimension fields
    /// above to [`Dim`] (a test holds it to [`Dim::ALL`] and to the parsed flags).
    pub fn dim_flags(&self) -> [(Dim, Option<String>); Dim::COUNT] {
        [
            (Dim::MinScore, self.min_score.clone()),
            (Dim::K, self.k.clone()),
            (Dim::Order, self.order.clone()),
            (Dim::Format, self.format.clone()),
            (Dim::Rewrite, self.rewrite.clone()),
            (Dim::Chat, self.chat.clone()),
            (Dim::Temperature, self.temperature.clone()),
            (Dim::Embedder, self.embedder.clone()),
            (Dim::ChunkTokens, self.chunk_tokens.clone()),
        ]
    }
}

#[derive(Debug, Args)]
pub struct GateCmdArgs {
    /// The results to gate [default: results.json in the config's `out` folder, else reports/latest]
    #[arg(value_name = "RESULTS")]
    pub results: Option<PathBuf>,

    /// A labels file (`rageval label`): a person's grades replace the grader's in every run sharing a reply before the gate counts (docs/labels.md) [default: `recommend.labels`]
    #[arg(long, value_name = "FILE")]
    pub labels: Option<PathBuf>,

    #[command(flatten)]
    pub gate: GateArgs,
}

/// The gate policy; each flag overrides the `gate:` section of rageval.yaml.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Gate")]
pub struct GateArgs {
    /// The gated setting, as `min_score=0.2,k=4` [default: the config's `gate.setting`, else the results' recommended setting]
    #[arg(long, value_name = "SPEC")]
    pub setting: Option<String>,

    /// Results to compare with, question by question [default: the config's `gate.baseline`]
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,

    /// Write the results as the new baseline (on purpose: the comparison is skipped)
    #[arg(long)]
    pub update_baseline: bool,

    /// How much each rate may worsen against the baseline, as a share [default: 0]
    #[arg(long, value_name = "SHARE")]
    pub tolerance: Option<f64>,

    /// Significance level of the paired test on flipped questions [default: 0.05]
    #[arg(long, value_name = "P")]
    pub alpha: Option<f64>,

    /// Fail a baseline regression only when the paired test finds it significant
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    pub require_significance: Option<bool>,

    /// Fail when the gated setting is not certified at `recommend.confidence` [default: false]
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    pub require_certified: Option<bool>,

    /// Highest share of unanswerable questions answered
    #[arg(long, value_name = "SHARE")]
    pub max_unwanted_answer_rate: Option<f64>,

    /// Highest share of answerable questions refused
    #[arg(long, value_name = "SHARE")]
    pub max_false_refusal_rate: Option<f64>,

    /// Most runs whose model call failed [default: 0]
    #[arg(long, value_name = "N")]
    pub max_error_runs: Option<u64>,

    /// Most prompt tokens per question
    #[arg(long, value_name = "N")]
    pub max_prompt_tokens_per_question: Option<f64>,

    /// Lowest share of answered answerable questions whose answer holds an expected text
    #[arg(long, value_name = "SHARE")]
    pub min_answer_match_rate: Option<f64>,

    /// Highest share of repeated runs (`sweep --repeat N`) whose outcome differs from their question's most frequent one
    #[arg(long, value_name = "SHARE")]
    pub max_flip_rate: Option<f64>,

    /// Highest share of answerable questions answered wrongly (judged incorrect, or holding no expected answer text)
    #[arg(long, value_name = "SHARE")]
    pub max_wrong_answer_rate: Option<f64>,

    /// Fail when a rate of the gated setting rises across the last N comparable runs of the history (an exact test at `gate.trend.alpha`; docs/history.md) [default: the config's `gate.trend.runs`, else off]
    #[arg(long, value_name = "N")]
    pub trend: Option<usize>,

    /// Write the checks as JUnit XML to FILE
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,

    /// Write the checks as Markdown to FILE (also appended to $GITHUB_STEP_SUMMARY when set)
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,

    /// On GitHub Actions, post the gate's summary as one pull-request comment, updated on later pushes (needs GITHUB_TOKEN; without a pull request or a token it says so and the verdict stands; docs/ci.md)
    #[arg(long)]
    pub comment: bool,

    /// Write the gated setting's rates and prompt tokens per question to FILE as github-action-benchmark's `customSmallerIsBetter` JSON
    #[arg(long, value_name = "FILE")]
    pub benchmark_json: Option<PathBuf>,

    /// Write the gated setting's rates and prompt tokens per question to FILE as a GitLab metrics report (OpenMetrics text, `metrics.txt`)
    #[arg(long, value_name = "FILE")]
    pub openmetrics: Option<PathBuf>,
}

impl GateArgs {
    /// The limit flags and their values: the one place that maps the limit fields above to
    /// [`Limit`] (a test holds it to [`Limit::ALL`] and to the parsed flags).
    pub fn limit_flags(&self) -> [(Limit, Option<f64>); 7] {
        [
            (Limit::MaxUnwantedAnswerRate, self.max_unwanted_answer_rate),
            (Limit::MaxFalseRefusalRate, self.max_false_refusal_rate),
            (Limit::MaxErrorRuns, self.max_error_runs.map(|n| n as f64)),
            (
                Limit::MaxPromptTokensPerQuestion,
                self.max_prompt_tokens_per_question,
            ),
            (Limit::MaxFlipRate, self.max_flip_rate),
            (Limit::MaxWrongAnswerRate, self.max_wrong_answer_rate),
            (Limit::MinAnswerMatchRate, self.min_answer_match_rate),
        ]
    }

    /// The flags given, by name: they mean nothing without a gate.
    pub fn given(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        let mut add = |set: bool, name| {
            if set {
                v.push(name);
            }
        };
        add(self.setting.is_some(), "--setting");
        add(self.baseline.is_some(), "--baseline");
        add(self.update_baseline, "--update-baseline");
        add(self.tolerance.is_some(), "--tolerance");
        add(self.alpha.is_some(), "--alpha");
        add(
            self.require_significance.is_some(),
            "--require-significance",
        );
        add(self.require_certified.is_some(), "--require-certified");
        for (limit, value) in self.limit_flags() {
            add(value.is_some(), limit.flag());
        }
        add(self.trend.is_some(), "--trend");
        add(self.junit.is_some(), "--junit");
        add(self.markdown.is_some(), "--markdown");
        add(self.comment, "--comment");
        add(self.benchmark_json.is_some(), "--benchmark-json");
        add(self.openmetrics.is_some(), "--openmetrics");
        v
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// Tables for people
    Table,
    /// The results document (as results.json) for programs
    Json,
}

/// Which questions `sweep --only` keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Only {
    /// Questions `rageval generate` wrote
    Generated,
    /// Questions a person wrote or reviewed
    Reviewed,
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

    /// Context order: `score` or `edge`
    #[arg(long, default_value = "score")]
    pub order: String,

    /// Passage format: `numbered` or `tagged`
    #[arg(long, default_value = "numbered")]
    pub format: String,

    /// Folder of markdown documents [default: the corpus of the first question set]
    #[arg(long, value_name = "DIR")]
    pub corpus: Option<PathBuf>,

    /// Turn the lenient refusal match off: the sentence counts only when the reply equals it exactly (`prompt.refusal_patterns` and a judge still apply)
    #[arg(long)]
    pub strict_refusal: bool,
}

#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Question sets to check [default: the config's `evalsets`, else evalsets/*.yaml]
    pub files: Vec<PathBuf>,

    /// Also open the configured `http` or `pgvector` retriever and retrieve the first question (contacts the service)
    #[arg(long)]
    pub connect: bool,
}

#[derive(Debug, Args)]
pub struct MockLlmArgs {
    /// Address to listen on (port 0 picks a free port; the first line printed names it)
    #[arg(long, default_value = "127.0.0.1:8787")]
    pub addr: std::net::SocketAddr,

    /// Bearer key clients must send
    #[arg(long, default_value = "test-key", conflicts_with = "no_auth")]
    pub api_key: String,

    /// Accept requests without a key
    #[arg(long)]
    pub no_auth: bool,

    /// Send every answer this long after its request arrived
    #[arg(long, default_value_t = 0, value_name = "MS")]
    pub delay_ms: u64,

    /// Wait this long between streamed words
    #[arg(long, default_value_t = 0, value_name = "MS")]
    pub token_delay_ms: u64,

    /// Buckets of the hash embedder (match the sweep's `embedder.dimensions`)
    #[arg(long, default_value_t = crate::adapters::embed::hash::DEFAULT_DIMENSIONS)]
    pub dimensions: usize,

    /// Share of chat requests answered with --fail-status
    #[arg(long, default_value_t = 0.0, value_name = "P")]
    pub fail_rate: f64,

    /// Status of injected failures: 500, 503 or 429 (429 and 503 carry Retry-After)
    #[arg(long, default_value_t = 500, value_name = "CODE")]
    pub fail_status: u16,

    /// Seconds in the Retry-After header of injected 429 and 503
    #[arg(long, default_value_t = 1, value_name = "S")]
    pub retry_after: u64,

    /// Answer every Nth chat request with --fail-status, exactly (0: none); in a batch, those lines go to the error file
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub fail_every: u64,

    /// How long a batch (`POST /v1/batches`) takes: its lines are answered spread over this time
    #[arg(long = "batch-delay", default_value_t = 0, value_name = "MS")]
    pub batch_delay_ms: u64,

    /// Share of chat requests answered with an invalid JSON body
    #[arg(long, default_value_t = 0.0, value_name = "P")]
    pub malformed_rate: f64,

    /// Share of chat requests whose connection is closed mid-response
    #[arg(long, default_value_t = 0.0, value_name = "P")]
    pub drop_rate: f64,

    /// Share of chat requests never answered
    #[arg(long, default_value_t = 0.0, value_name = "P")]
    pub hang_rate: f64,

    /// Seed of the fault generator
    #[arg(long, default_value_t = 0)]
    pub seed: u64,

    /// Inject faults into embeddings too (default: chat only)
    #[arg(long)]
    pub faults_on_embeddings: bool,

    /// Reword answers and refusals deterministically, as a real model would (docs/judge.md)
    #[arg(long)]
    pub paraphrase: bool,

    /// Keep the last N chat request bodies, as received, at `GET /requests`
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub keep_requests: usize,

    /// Request bodies larger than this get 413
    #[arg(long, default_value_t = 8 << 20, value_name = "BYTES")]
    pub max_body_bytes: usize,

    /// Refuse every chat request whose `seed` is odd (as `sweep --repeat N` sends), to test flip rates
    #[arg(long)]
    pub vary_per_repeat: bool,

    /// Serve chat from N slots that each keep their last prompt, as llama-server does, and report the words reused (`cached_tokens`, `timings.cache_n`); 0: no prompt cache (docs/http.md)
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub prompt_cache_slots: usize,

    /// With --prompt-cache-slots: each prompt word evaluated (not reused) adds this much to a reply
    #[arg(
        long,
        default_value_t = 0,
        value_name = "US",
        requires = "prompt_cache_slots"
    )]
    pub prompt_word_us: u64,
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, FromArgMatches};

    use super::*;
    use crate::vocab::limit::Scope;

    /// Adding a limit is one place: the gate's limit flags are exactly the gate's limits, each
    /// parsed into its own [`Limit`].
    #[test]
    fn the_limit_flags_are_the_gates_limits() {
        let gate = GateArgs::default();
        let mapped: Vec<Limit> = gate.limit_flags().iter().map(|(l, _)| *l).collect();
        let mut sorted = mapped.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), mapped.len(), "a limit is mapped twice");
        assert_eq!(sorted, Limit::of(Scope::Gate).collect::<Vec<_>>());

        let cmd = Cli::command();
        let gate_cmd = cmd.find_subcommand("gate").unwrap();
        let mut flags: Vec<String> = gate_cmd
            .get_arguments()
            .filter_map(|a| a.get_long())
            .filter(|f| f.starts_with("max-") || f.starts_with("min-"))
            .map(|f| format!("--{f}"))
            .collect();
        flags.sort();
        let mut want: Vec<String> = Limit::of(Scope::Gate).map(|l| l.flag().into()).collect();
        want.sort();
        assert_eq!(flags, want);

        for limit in Limit::of(Scope::Gate) {
            let cli = Cli::try_parse_from(["rageval", "gate", limit.flag(), "1"]).unwrap();
            let Command::Gate(args) = cli.command else {
                panic!("not the gate")
            };
            for (l, v) in args.gate.limit_flags() {
                assert_eq!(
                    v,
                    (l == limit).then_some(1.0),
                    "{} sets {l:?}",
                    limit.flag()
                );
            }
            assert_eq!(args.gate.given(), [limit.flag()]);
        }
    }

    /// Adding a dimension is one place: the sweep's dimension flags (its `SPEC` and `LIST`
    /// flags but the gate's) are exactly [`Dim::ALL`]'s, each parsed into its own [`Dim`].
    #[test]
    fn the_dimension_flags_are_the_dimensions() {
        let mut mapped: Vec<Dim> = SweepArgs::augment_args(clap::Command::new("x"))
            .try_get_matches_from(["x"])
            .map(|m| SweepArgs::from_arg_matches(&m).unwrap())
            .unwrap()
            .dim_flags()
            .iter()
            .map(|(d, _)| *d)
            .collect();
        mapped.sort();
        mapped.dedup();
        assert_eq!(mapped, Dim::ALL, "each dimension mapped once");

        let gate: Vec<String> = GateArgs::augment_args(clap::Command::new("gate"))
            .get_arguments()
            .filter_map(|a| a.get_long().map(String::from))
            .collect();
        let cmd = Cli::command();
        let sweep = cmd.find_subcommand("sweep").unwrap();
        let mut flags: Vec<String> = sweep
            .get_arguments()
            .filter(|a| {
                a.get_value_names()
                    .is_some_and(|v| v.iter().any(|n| n == "SPEC" || n == "LIST"))
            })
            .filter_map(|a| a.get_long())
            .filter(|f| !gate.iter().any(|g| g == f))
            .map(|f| format!("--{f}"))
            .collect();
        flags.sort();
        let mut want: Vec<String> = Dim::ALL.iter().map(|d| d.flag().to_string()).collect();
        want.sort();
        assert_eq!(flags, want);

        for dim in Dim::ALL {
            let cli = Cli::try_parse_from(["rageval", "sweep", dim.flag(), "x"]).unwrap();
            let Command::Sweep(args) = cli.command else {
                panic!("not the sweep")
            };
            for (d, v) in args.dim_flags() {
                assert_eq!(
                    v.as_deref(),
                    (d == dim).then_some("x"),
                    "{} sets {d:?}",
                    dim.flag()
                );
            }
        }
    }
}
