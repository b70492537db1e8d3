//! `rageval.yaml`: the project's configuration. Every field is optional; the defaults run
//! offline on the builtin embedder and mock model.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::InputError;
use crate::prompt::REFUSAL;

/// The config file as written.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Question sets, relative to the config file. Default: every `evalsets/*.yaml`.
    pub evalsets: Vec<String>,
    pub embedder: EmbedderConfig,
    pub chat: ChatConfig,
    pub prompt: PromptConfig,
    pub sweep: SweepConfig,
    pub pricing: PricingConfig,
    /// How the recommended setting is chosen (docs/insight.md).
    pub recommend: RecommendConfig,
    /// Report folder, relative to the config file.
    pub out: Option<String>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct EmbedderConfig {
    /// `hash`: the builtin bag-of-words embedder.
    pub kind: EmbedderKind,
    /// Buckets of the hash embedder.
    pub dimensions: usize,
}

impl Default for EmbedderConfig {
    fn default() -> Self {
        EmbedderConfig {
            kind: EmbedderKind::Hash,
            dimensions: crate::embed::hash::DEFAULT_DIMENSIONS,
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EmbedderKind {
    #[default]
    Hash,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct ChatConfig {
    /// `mock`: the builtin deterministic model.
    pub kind: ChatKind,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ChatKind {
    #[default]
    Mock,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct PromptConfig {
    /// The sentence the model must reply when the passages do not answer.
    pub refusal: String,
    /// Demand the exact sentence instead of forgiving case, whitespace, curly apostrophes and a
    /// missing final period.
    pub strict_refusal: bool,
}

impl Default for PromptConfig {
    fn default() -> Self {
        PromptConfig {
            refusal: REFUSAL.to_string(),
            strict_refusal: false,
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct SweepConfig {
    /// minScore values: `a..b`, `a..b:step`, `a,b,c`, a number, or a list of numbers.
    pub min_score: ValueSpec,
    /// k values, in the same forms.
    pub k: ValueSpec,
    /// Model calls in flight at once.
    pub concurrency: usize,
}

impl Default for SweepConfig {
    fn default() -> Self {
        SweepConfig {
            min_score: ValueSpec::Text("0.1..0.5".into()),
            k: ValueSpec::Text("1,2,4,8".into()),
            concurrency: 8,
        }
    }
}

/// A value list as YAML may write it: `"0.1..0.5"`, `0.3` or `[0.1, 0.2]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(untagged)]
pub enum ValueSpec {
    Text(String),
    Number(serde_yaml::Number),
    List(Vec<serde_yaml::Number>),
}

impl ValueSpec {
    /// The spec in the flag syntax.
    pub fn to_spec(&self) -> String {
        match self {
            ValueSpec::Text(s) => s.clone(),
            ValueSpec::Number(n) => n.to_string(),
            ValueSpec::List(v) => v
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(","),
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct PricingConfig {
    /// Price of a million prompt tokens.
    pub prompt_per_million: f64,
    /// Price of a million completion tokens.
    pub completion_per_million: f64,
    /// Currency of the prices, for display.
    pub currency: String,
}

/// The recommendation policy: hard limits a setting must meet, then weights that rank the
/// settings that meet them (lower weighted cost wins). See docs/insight.md.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct RecommendConfig {
    /// Highest acceptable unwanted-answer rate (0 to 1).
    pub max_unwanted_answer_rate: f64,
    /// Highest acceptable false-refusal rate (0 to 1).
    pub max_false_refusal_rate: f64,
    /// Highest acceptable prompt tokens per question; no limit when absent.
    pub max_prompt_tokens_per_question: Option<f64>,
    pub weights: WeightsConfig,
}

impl Default for RecommendConfig {
    /// Loose guard rails that only rule out settings nobody should ship; tighten them to the
    /// product's needs.
    fn default() -> Self {
        RecommendConfig {
            max_unwanted_answer_rate: 0.2,
            max_false_refusal_rate: 0.5,
            max_prompt_tokens_per_question: None,
            weights: WeightsConfig::default(),
        }
    }
}

/// Weights of the objective: cost = sum of weight x metric, each metric named as its
/// summary.csv column.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct WeightsConfig {
    /// Weight of the false-refusal rate.
    pub false_refusal_rate: f64,
    /// Weight of the unwanted-answer rate: an answer made up from unrelated passages usually
    /// costs more than a refusal the user can work around, hence 3 by default.
    pub unwanted_answer_rate: f64,
    /// Weight of one prompt token per question: 0.00005 makes 1000 tokens per question weigh
    /// as much as 5 points of false refusals.
    pub prompt_tokens_per_question: f64,
}

impl Default for WeightsConfig {
    fn default() -> Self {
        WeightsConfig {
            false_refusal_rate: 1.0,
            unwanted_answer_rate: 3.0,
            prompt_tokens_per_question: 0.00005,
        }
    }
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
}

impl LoadedConfig {
    /// `explicit` must exist; without it, `rageval.yaml` in the current folder is read when it
    /// exists and the defaults are used when it does not.
    pub fn load(explicit: Option<&Path>) -> Result<Self, InputError> {
        let path = match explicit {
            Some(p) => p.to_path_buf(),
            None if Path::new("rageval.yaml").is_file() => PathBuf::from("rageval.yaml"),
            None => {
                return Ok(LoadedConfig {
                    config: Config::default(),
                    path: None,
                    base: PathBuf::from("."),
                    text: String::new(),
                })
            }
        };
        let text = std::fs::read_to_string(&path)
            .map_err(|e| InputError::new(&path, format!("cannot read config: {e}")))?;
        let config: Config = if text.trim().is_empty() {
            Config::default()
        } else {
            serde_yaml::from_str(&text).map_err(|e| InputError::from_yaml(&path, &e))?
        };
        let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let base = if base.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            base
        };
        let loaded = LoadedConfig {
            config,
            path: Some(path),
            base,
            text,
        };
        loaded.check()?;
        Ok(loaded)
    }

    fn check(&self) -> Result<(), InputError> {
        let path = self.path.as_deref().unwrap_or(Path::new("rageval.yaml"));
        let loc = crate::yaml_loc::Locator::new(&self.text);
        let fail = |segs: &[crate::yaml_loc::Seg<'_>], field: &str, msg: String| {
            Err(InputError::new(path, msg).at(loc.line(segs)).field(field))
        };
        use crate::yaml_loc::Seg::Key;
        let c = &self.config;
        if c.embedder.dimensions == 0 {
            return fail(
                &[Key("embedder"), Key("dimensions")],
                "embedder.dimensions",
                "must be at least 1".into(),
            );
        }
        if c.sweep.concurrency == 0 {
            return fail(
                &[Key("sweep"), Key("concurrency")],
                "sweep.concurrency",
                "must be at least 1".into(),
            );
        }
        if c.prompt.refusal.trim().is_empty() {
            return fail(
                &[Key("prompt"), Key("refusal")],
                "prompt.refusal",
                "is empty".into(),
            );
        }
        for (field, v) in [
            ("prompt_per_million", c.pricing.prompt_per_million),
            ("completion_per_million", c.pricing.completion_per_million),
        ] {
            if !(v >= 0.0 && v.is_finite()) {
                return fail(
                    &[Key("pricing"), Key(field)],
                    &format!("pricing.{field}"),
                    "must be a price of 0 or more".into(),
                );
            }
        }
        let r = &c.recommend;
        for (field, v) in [
            ("max_unwanted_answer_rate", r.max_unwanted_answer_rate),
            ("max_false_refusal_rate", r.max_false_refusal_rate),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return fail(
                    &[Key("recommend"), Key(field)],
                    &format!("recommend.{field}"),
                    format!("must be a rate from 0 to 1, got {v}"),
                );
            }
        }
        if let Some(v) = r.max_prompt_tokens_per_question {
            if !(v > 0.0 && v.is_finite()) {
                return fail(
                    &[Key("recommend"), Key("max_prompt_tokens_per_question")],
                    "recommend.max_prompt_tokens_per_question",
                    format!("must be a number of tokens above 0, got {v}"),
                );
            }
        }
        for (field, v) in [
            ("false_refusal_rate", r.weights.false_refusal_rate),
            ("unwanted_answer_rate", r.weights.unwanted_answer_rate),
            (
                "prompt_tokens_per_question",
                r.weights.prompt_tokens_per_question,
            ),
        ] {
            if !(v >= 0.0 && v.is_finite()) {
                return fail(
                    &[Key("recommend"), Key("weights"), Key(field)],
                    &format!("recommend.weights.{field}"),
                    format!("must be a weight of 0 or more, got {v}"),
                );
            }
        }
        for (field, spec) in [("min_score", &c.sweep.min_score), ("k", &c.sweep.k)] {
            let checked = if field == "k" {
                crate::sweep::grid::parse_ks(&spec.to_spec()).map(drop)
            } else {
                crate::sweep::grid::parse_min_scores(&spec.to_spec()).map(drop)
            };
            if let Err(msg) = checked {
                return fail(&[Key("sweep"), Key(field)], &format!("sweep.{field}"), msg);
            }
        }
        Ok(())
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

    /// A path from the config, relative to the config's folder.
    pub fn resolve(&self, path: impl AsRef<Path>) -> PathBuf {
        if self.base == Path::new(".") {
            path.as_ref().to_path_buf()
        } else {
            self.base.join(path)
        }
    }
}
