//! `rageval.yaml`: the project's configuration. Every field is optional; the defaults run
//! offline on the builtin embedder and mock model.

use std::path::{Path, PathBuf};

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

use crate::base::error::InputError;
use crate::vocab::dim::{Dim, Value};
use crate::vocab::grid::Grid;

/// rageval's configuration, `rageval.yaml` (docs/config.md). Every field is optional.
#[derive(Debug, Clone, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
#[schemars(title = "rageval configuration")]
pub struct Config {
    /// Question sets, relative to the config file. Default: every `evalsets/*.yaml`.
    pub evalsets: Vec<String>,
    /// How markdown sections become chunks.
    pub corpus: CorpusConfig,
    pub embedder: EmbedderConfig,
    pub chat: ChatConfig,
    /// Named chat profiles, each with the fields of `chat:`, for `--chat NAME,NAME`
    /// (docs/models.md). `default` names the `chat:` section.
    #[serde(skip_serializing_if = "IndexMap::is_empty")]
    pub models: IndexMap<String, ChatConfig>,
    /// Named embedder profiles, each with the fields of `embedder:`, for `--embedder NAME,NAME`.
    /// `default` names the `embedder:` section.
    #[serde(skip_serializing_if = "IndexMap::is_empty")]
    pub embedders: IndexMap<String, EmbedderConfig>,
    pub prompt: PromptConfig,
    pub sweep: SweepConfig,
    pub pricing: PricingConfig,
    pub cache: CacheConfig,
    pub scan: ScanConfig,
    /// How the recommended setting is chosen (docs/insight.md).
    pub recommend: RecommendConfig,
    /// Report folder, relative to the config file.
    pub out: Option<String>,
    pub gate: GateConfig,
    /// Where every sweep appends one line (docs/history.md).
    pub history: HistoryConfig,
    /// Where passages come from (docs/retrievers.md).
    pub retriever: RetrieverConfig,
    /// The optional judge model; absent: no judge.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub judge: Option<JudgeConfig>,
    /// The optional reranker; absent: passages keep their retrieval order and scores.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reranker: Option<RerankerConfig>,
    /// How `rageval generate` writes and verifies questions (docs/generate.md).
    pub generate: GenerateConfig,
}

mod check;
pub mod identity;
pub mod profiles;
mod sections;

/// The JSON Schema of `rageval.yaml`, generated from the types that parse it.
pub fn json_schema() -> serde_json::Value {
    schemars::schema_for!(Config).to_value()
}

pub use sections::*;

// Each adapter owns its section; the config file is their sum.
pub use crate::adapters::cache::config::*;
pub use crate::adapters::chat::config::*;
pub use crate::adapters::corpus::config::*;
pub use crate::adapters::embed::config::*;
pub use crate::adapters::http::config::*;
pub use crate::adapters::judge::config::*;
pub use crate::adapters::prompt::config::*;
pub use crate::adapters::rerank::config::*;
pub use crate::adapters::retriever::config::*;
pub use crate::adapters::scan::config::*;
pub use crate::analysis::insight::config::*;
pub use crate::generate::config::*;
pub use crate::output::gate::config::*;
pub use crate::output::history::config::*;
pub use crate::vocab::spec::*;

/// The grid `sweep:` of `c` names: each dimension's values, parsed by [`Dim::values`], or the
/// first dimension (in [`Dim::ALL`] order) whose spec is wrong and why.
pub fn sweep_grid(c: &Config) -> Result<Grid, (Dim, String)> {
    Grid::try_from_fn(|d| {
        d.values(c.sweep.spec(d).as_deref())
            .and_then(|values| known_profiles(c, d, &values).map(|()| values))
            .map_err(|msg| (d, msg))
    })
}

/// For a dimension of profiles, that each of `values` is `default` or a profile of `c`.
pub(crate) fn known_profiles(c: &Config, d: Dim, values: &[Value]) -> Result<(), String> {
    let (kind, section, names): (_, _, Vec<&String>) = match d {
        Dim::Chat => ("chat", "models", c.models.keys().collect()),
        Dim::Embedder => ("embedder", "embedders", c.embedders.keys().collect()),
        _ => return Ok(()),
    };
    for v in values {
        let name = v.to_string();
        if name != crate::vocab::grid::DEFAULT_PROFILE && !names.contains(&&name) {
            return Err(format!(
                "unknown {kind} profile `{name}`; `{section}:` defines {}",
                profiles::known(names.into_iter())
            ));
        }
    }
    Ok(())
}

/// A loaded config and the folder its relative paths start from.
#[derive(Debug, Clone)]
pub struct LoadedConfig {
    pub config: Config,
    /// The file it came from; `None` when the defaults are used.
    pub path: Option<PathBuf>,
    pub base: PathBuf,
    /// The file's text, for the results' digest.
    pub text: String,
    /// The grid `sweep:` names, parsed (once) by the check: what flags do not replace.
    pub grid: Grid,
}

impl LoadedConfig {
    /// `explicit` must exist; without it, `rageval.yaml` in the current folder is read when it
    /// exists and the defaults are used when it does not.
    pub fn load(explicit: Option<&Path>) -> Result<Self, InputError> {
        let path = match explicit {
            Some(p) => p.to_path_buf(),
            None if Path::new("rageval.yaml").exists() => PathBuf::from("rageval.yaml"),
            None => {
                let config = Config::default();
                return Ok(LoadedConfig {
                    grid: sweep_grid(&config).expect("the default grid parses"),
                    config,
                    path: None,
                    base: PathBuf::from("."),
                    text: String::new(),
                });
            }
        };
        let text = crate::base::input::read_yaml(&path)
            .map_err(|e| InputError::reading(&path, "config", e))?;
        let config: Config = if text.trim().is_empty() {
            Config::default()
        } else {
            serde_yaml::from_str(&text).map_err(|e| InputError::from_yaml_text(&path, &text, &e))?
        };
        let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let base = if base.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            base
        };
        let mut loaded = LoadedConfig {
            config,
            path: Some(path),
            base,
            text,
            grid: Grid::new(Vec::new(), Vec::new()),
        };
        loaded.grid = loaded.check()?;
        Ok(loaded)
    }

    /// Check the config; its grid, when it is valid. A problem names file, line and field.
    fn check(&self) -> Result<Grid, InputError> {
        self.config.check().map_err(|p| {
            let path = self.path.as_deref().unwrap_or(Path::new("rageval.yaml"));
            let line = crate::base::yaml_loc::Locator::new(&self.text).line(&p.line_path());
            InputError::new(path, p.message.clone())
                .at(line)
                .field(p.field_name())
        })
    }

    /// The question sets the config names, or every `evalsets/*.yaml` beside it.
    pub fn evalsets(&self) -> Vec<PathBuf> {
        if !self.config.evalsets.is_empty() {
            return self
                .config
                .evalsets
                .iter()
                .map(|p| self.resolve(p))
                .collect();
        }
        let dir = self.resolve("evalsets");
        let mut found: Vec<PathBuf> = std::fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
            .collect();
        found.sort();
        found
    }

    /// The report folder.
    pub fn out_dir(&self) -> PathBuf {
        self.resolve(self.config.out.as_deref().unwrap_or("reports/latest"))
    }

    /// The history file (`history.file`), whether or not sweeps append to it.
    pub fn history_file(&self) -> PathBuf {
        self.resolve(&self.config.history.file)
    }

    /// A path from the config, relative to the config's folder (`scripts/../x` reads as `x`).
    pub fn resolve(&self, path: impl AsRef<Path>) -> PathBuf {
        let joined = if self.base == Path::new(".") {
            path.as_ref().to_path_buf()
        } else {
            self.base.join(path)
        };
        let mut out = PathBuf::new();
        for part in joined.components() {
            match part {
                std::path::Component::CurDir => {}
                std::path::Component::ParentDir
                    if matches!(
                        out.components().next_back(),
                        Some(std::path::Component::Normal(_))
                    ) =>
                {
                    out.pop();
                }
                other => out.push(other),
            }
        }
        if out.as_os_str().is_empty() {
            out.push(".");
        }
        out
    }
}
