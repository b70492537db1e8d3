//! The resolved options of the commands that read the config for a few values: `index`,
//! `validate`, `scan`, `history`, `label` and `batch import`. Each is built once from the
//! flags and `rageval.yaml` (flags win), in the order the checks always ran, so the command
//! reads values and never the config.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Result};

use crate::adapters::cache::CacheMode;
use crate::adapters::evalset::Workspace;
use crate::adapters::retriever::config::{RetrieverConfig, RetrieverKind};
use crate::adapters::retriever::pgvector::PgTable;
use crate::adapters::scan::Scanner;
use crate::analysis::insight::config::RecommendConfig;
use crate::app::cli::{BatchImportArgs, HistoryArgs, IndexArgs, LabelArgs};
use crate::app::config::LoadedConfig;
use crate::app::wiring::{Pipeline, Wiring};
use crate::output::gate::SettingSpec;
use crate::output::labels::sample::{Oversample, Size};
use crate::vocab::grid::Setting;

/// Everything `rageval index` needs, checked.
pub struct IndexOptions {
    table: PgTable,
    table_name: String,
    workspace: Workspace,
    pipeline: Pipeline,
    max_chunk_tokens: usize,
    replace: bool,
    quiet: bool,
}

impl IndexOptions {
    pub fn new(args: IndexArgs, config: Option<PathBuf>, quiet: bool) -> Result<Self> {
        let cfg = LoadedConfig::load(config.as_deref())?;
        let r = &cfg.config.retriever;
        if !r.kind.reads_table() {
            bail!(
                "`rageval index` loads a pgvector table: set `retriever.kind: pgvector` in rageval.yaml"
            );
        }
        let files = if args.files.is_empty() {
            cfg.evalsets()
        } else {
            args.files
        };
        if files.is_empty() {
            bail!("no question sets: name files, or list `evalsets:` in rageval.yaml");
        }
        let table = PgTable::from_env(
            &r.dsn_env,
            &r.table,
            r.columns.clone(),
            r.distance,
            r.ef_search,
        )?;
        let workspace = Workspace::load(&files)?;
        let pipeline = Pipeline::from_config(
            &cfg,
            &Wiring {
                cache: Some(CacheMode::Use),
                ..Default::default()
            },
        )?;
        Ok(IndexOptions {
            table,
            table_name: r.table.clone(),
            workspace,
            pipeline,
            max_chunk_tokens: cfg.config.corpus.max_chunk_tokens,
            replace: args.replace,
            quiet,
        })
    }

    /// The pgvector table (`retriever.table`, `retriever.dsn_env`).
    pub fn table(&self) -> &PgTable {
        &self.table
    }

    /// The table's name, as `retriever.table` gives it.
    pub fn table_name(&self) -> &str {
        &self.table_name
    }

    /// The question sets whose corpora are loaded.
    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }

    pub fn workspace_mut(&mut self) -> &mut Workspace {
        &mut self.workspace
    }

    pub fn pipeline(&self) -> &Pipeline {
        &self.pipeline
    }

    /// `corpus.max_chunk_tokens`.
    pub fn max_chunk_tokens(&self) -> usize {
        self.max_chunk_tokens
    }

    /// `--replace`: drop the table and load it again.
    pub fn replace(&self) -> bool {
        self.replace
    }

    pub fn quiet(&self) -> bool {
        self.quiet
    }
}

/// Everything `rageval validate` needs, checked.
pub struct ValidateOptions {
    files: Vec<PathBuf>,
    kind: RetrieverKind,
    policy: RecommendConfig,
    settings: Vec<Setting>,
    connect: Option<Connect>,
    quiet: bool,
}

/// What `validate --connect` opens: the configured retriever, and the pipeline (its embedder
/// and reranker), or why it cannot be built (reported as the probe's failure).
pub struct Connect {
    pub retriever: RetrieverConfig,
    pub pipeline: Result<Pipeline>,
}

impl ValidateOptions {
    /// The config is read when no file is named, `--config` is given or `--connect` asks for
    /// the services: with an `http` or `pgvector` retriever a set then needs no corpus folder,
    /// as in a sweep.
    pub fn new(
        files: Vec<PathBuf>,
        config: Option<PathBuf>,
        quiet: bool,
        connect: bool,
    ) -> Result<Self> {
        let cfg = if files.is_empty() || config.is_some() || connect {
            Some(LoadedConfig::load(config.as_deref())?)
        } else {
            None
        };
        let kind = cfg
            .as_ref()
            .map(|c| c.config.retriever.kind)
            .unwrap_or_default();
        let files = match (&cfg, files.is_empty()) {
            (Some(c), true) => c.evalsets(),
            _ => files,
        };
        if files.is_empty() {
            bail!("no question sets to check: name files, or list `evalsets:` in rageval.yaml");
        }
        let policy = cfg
            .as_ref()
            .map(|c| c.config.recommend.clone())
            .unwrap_or_default();
        let settings = cfg
            .as_ref()
            .and_then(|c| crate::app::config::sweep_grid(&c.config).ok())
            .map(|g| g.settings())
            .unwrap_or_default();
        let connect = cfg.filter(|_| connect).map(|c| Connect {
            retriever: c.config.retriever.clone(),
            pipeline: Pipeline::from_config(&c, &Wiring::default()),
        });
        Ok(ValidateOptions {
            files,
            kind,
            policy,
            settings,
            connect,
            quiet,
        })
    }

    /// The question sets to check.
    pub fn files(&self) -> &[PathBuf] {
        &self.files
    }

    /// The configured retriever's kind (the builtin one without a config).
    pub fn kind(&self) -> RetrieverKind {
        self.kind
    }

    /// The recommendation policy a set's size is measured against (`recommend:`).
    pub fn policy(&self) -> &RecommendConfig {
        &self.policy
    }

    /// The settings of the configured grid (none without a config).
    pub fn settings(&self) -> &[Setting] {
        &self.settings
    }

    /// `--connect`: the services to probe.
    pub fn connect(&self) -> Option<&Connect> {
        self.connect.as_ref()
    }

    pub fn quiet(&self) -> bool {
        self.quiet
    }
}

/// Everything `rageval scan` needs, checked.
pub struct ScanOptions {
    scanner: Scanner,
    corpora: CorpusSource,
    fail_on_match: bool,
    quiet: bool,
}

/// Where `rageval scan` finds its corpora.
pub enum CorpusSource {
    /// Folders named on the command line.
    Folders(Vec<PathBuf>),
    /// The corpora of the configured question sets.
    Sets(Vec<PathBuf>),
}

impl ScanOptions {
    pub fn new(
        folders: Vec<PathBuf>,
        config: Option<PathBuf>,
        fail_on_match: bool,
        quiet: bool,
    ) -> Result<Self> {
        let cfg = LoadedConfig::load(config.as_deref())?;
        let scanner = Scanner::new(&cfg.config.scan.patterns).map_err(anyhow::Error::msg)?;
        let corpora = if folders.is_empty() {
            let sets = cfg.evalsets();
            if sets.is_empty() {
                bail!(
                    "nothing to scan: name corpus folders, or list question sets in rageval.yaml"
                );
            }
            CorpusSource::Sets(sets)
        } else {
            CorpusSource::Folders(folders)
        };
        Ok(ScanOptions {
            scanner,
            corpora,
            fail_on_match,
            quiet,
        })
    }

    /// The suspicious patterns (`scan.patterns`), compiled.
    pub fn scanner(&self) -> &Scanner {
        &self.scanner
    }

    pub fn corpora(&self) -> &CorpusSource {
        &self.corpora
    }

    /// `--fail-on-match`.
    pub fn fail_on_match(&self) -> bool {
        self.fail_on_match
    }

    pub fn quiet(&self) -> bool {
        self.quiet
    }
}

/// Everything `rageval history` needs, checked.
pub struct HistoryOptions {
    file: PathBuf,
    setting: Option<SettingSpec>,
    last: usize,
    html: Option<PathBuf>,
    csv: bool,
    json: bool,
    quiet: bool,
}

impl HistoryOptions {
    pub fn new(args: &HistoryArgs, config: Option<&Path>, quiet: bool) -> Result<Self> {
        let cfg = LoadedConfig::load(config)?;
        let file = args.file.clone().unwrap_or_else(|| cfg.history_file());
        let setting = args
            .setting
            .as_deref()
            .map(str::parse)
            .transpose()
            .map_err(|e| anyhow!("invalid --setting: {e}"))?;
        if args.last == 0 {
            bail!("invalid --last: show at least 1 entry");
        }
        Ok(HistoryOptions {
            file,
            setting,
            last: args.last,
            html: args.html.clone(),
            csv: args.csv,
            json: args.json,
            quiet,
        })
    }

    /// The history file (`--file`, else `history.file`).
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// `--setting`: the setting shown, else the last entry's chosen one.
    pub fn setting(&self) -> Option<&SettingSpec> {
        self.setting.as_ref()
    }

    /// `--last N`: how many entries, at least 1.
    pub fn last(&self) -> usize {
        self.last
    }

    /// `--html FILE`: the page written instead of a table.
    pub fn html(&self) -> Option<&Path> {
        self.html.as_deref()
    }

    pub fn csv(&self) -> bool {
        self.csv
    }

    pub fn json(&self) -> bool {
        self.json
    }

    pub fn quiet(&self) -> bool {
        self.quiet
    }
}

/// Everything `rageval label` needs, checked.
pub struct LabelOptions {
    args: LabelArgs,
    size: Option<Size>,
    oversample: Oversample,
    results: PathBuf,
    quiet: bool,
}

impl LabelOptions {
    /// The config is read only for its `out` folder, when `--results` is not given.
    pub fn new(args: LabelArgs, config: Option<PathBuf>, quiet: bool) -> Result<Self> {
        let size = match (args.sample, args.share) {
            (Some(0), _) => bail!("invalid --sample: must be at least 1"),
            (Some(n), _) => Some(Size::Sample(n)),
            (_, Some(p)) if !(p > 0.0 && p <= 1.0) => {
                bail!("invalid --share: must be above 0 and at most 1, got {p}")
            }
            (_, Some(p)) => Some(Size::Share(p)),
            (None, None) => None,
        };
        let oversample = Oversample::parse(&args.oversample)
            .map_err(|e| anyhow::anyhow!("invalid --oversample: {e}"))?;
        if size.is_none() && !args.oversample.is_empty() {
            bail!("--oversample raises the probability of a sample: say its size with `--sample N` or `--share P`");
        }
        let results = match args.results.clone() {
            Some(p) => p,
            None => LoadedConfig::load(config.as_deref())?.out_dir(),
        };
        Ok(LabelOptions {
            args,
            size,
            oversample,
            results,
            quiet,
        })
    }

    /// `--sample N` or `--share P`, checked; `None` when neither is given.
    pub fn size(&self) -> Option<Size> {
        self.size
    }

    /// `--results` (a folder or its results.json), else the config's `out` folder.
    pub fn results(&self) -> &Path {
        &self.results
    }

    /// `--oversample`: the strata drawn with a raised probability.
    pub fn oversample(&self) -> &Oversample {
        &self.oversample
    }

    /// `--out`: the labels file, when given.
    pub fn out(&self) -> Option<&Path> {
        self.args.out.as_deref()
    }

    /// `--seed`.
    pub fn seed(&self) -> Option<u64> {
        self.args.seed
    }

    /// `--serve`, on `--addr` when given.
    pub fn serve(&self) -> bool {
        self.args.serve
    }

    pub fn addr(&self) -> Option<&str> {
        self.args.addr.as_deref()
    }

    pub fn quiet(&self) -> bool {
        self.quiet
    }
}

/// Everything `rageval batch import` needs, checked.
pub struct BatchImportOptions {
    files: Vec<PathBuf>,
    cache_dir: PathBuf,
    /// The shard whose folder under the cache folder the answers feed, if they feed one.
    shard: Option<crate::sweep::Shard>,
    quiet: bool,
}

impl BatchImportOptions {
    /// The cache folder is the one the answers feed: under `--cache-dir` (else `cache.dir`),
    /// the shard folder whose ledger wrote them when a sharded sweep wrote any
    /// ([`crate::batch::import::cache_folder`]).
    pub fn new(args: BatchImportArgs, config: Option<PathBuf>, quiet: bool) -> Result<Self> {
        let cfg = LoadedConfig::load(config.as_deref())?;
        let base = crate::app::wiring::cache_folder(&cfg, args.cache_dir.as_deref(), None)?;
        let cache_dir = crate::batch::import::cache_folder(&base, &args.files)?;
        // A shard folder only when the import chose one below the cache folder: a cache
        // folder the user named `shard-1-of-2` is no shard's.
        let shard = (cache_dir != base)
            .then(|| cache_dir.file_name()?.to_str())
            .flatten()
            .and_then(crate::sweep::Shard::from_folder);
        Ok(BatchImportOptions {
            files: args.files,
            cache_dir,
            shard,
            quiet,
        })
    }

    /// The engine's output and error files.
    pub fn files(&self) -> &[PathBuf] {
        &self.files
    }

    /// The cache folder the answers go into.
    pub fn cache_dir(&self) -> &Path {
        &self.cache_dir
    }

    /// The shard whose cache folder that is (`shard-I-of-N`), if it is one.
    pub fn shard(&self) -> Option<crate::sweep::Shard> {
        self.shard
    }

    pub fn quiet(&self) -> bool {
        self.quiet
    }
}
