//! The sections of `rageval.yaml`, each with its documented defaults.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::limit::{Limit, Limits};
use crate::prompt::REFUSAL;

/// Where an OpenAI-compatible server is and how to talk to it: the fields that `chat` and
/// `embedder` share.
#[derive(Debug, Clone)]
pub struct HttpConfig<'a> {
    pub base_url: &'a Option<BaseUrls>,
    pub api_key_env: &'a str,
    pub timeout_s: f64,
    pub max_retries: u32,
    pub backoff_ms: u64,
    pub headers: &'a std::collections::BTreeMap<String, String>,
    pub requests_per_minute: Option<u32>,
    pub tokens_per_minute: Option<u64>,
}

/// Most `requests_per_minute`: a million (past it the limit paces nothing a server notices).
pub const MAX_REQUESTS_PER_MINUTE: u32 = 1_000_000;
/// Most `tokens_per_minute`: ten billion.
pub const MAX_TOKENS_PER_MINUTE: u64 = 10_000_000_000;

/// Longest `timeout_s`: a day. Past it a value is a typo (and `1e20` no duration at all).
pub const MAX_TIMEOUT_S: f64 = 86_400.0;
/// Most `max_retries`.
pub const MAX_RETRIES: u32 = 100;
/// Longest `backoff_ms`: a minute.
pub const MAX_BACKOFF_MS: u64 = 60_000;
/// Default `backoff_ms`.
pub const DEFAULT_BACKOFF_MS: u64 = 200;

impl HttpConfig<'_> {
    /// The base URLs in their listed order: the config's, else `$OPENAI_BASE_URL`, else
    /// OpenAI's.
    pub fn base_urls(&self) -> Vec<String> {
        match self.base_url {
            Some(urls) if !urls.urls().is_empty() => urls.urls().to_vec(),
            _ => vec![std::env::var("OPENAI_BASE_URL")
                .ok()
                .filter(|u| !u.is_empty())
                .unwrap_or_else(|| "https://api.openai.com/v1".into())],
        }
    }

    /// The base URLs as messages show them: redacted, comma-separated.
    pub fn shown(&self) -> String {
        self.base_urls()
            .iter()
            .map(|u| crate::redact::url(u))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// `base_url`: one server, or a list of servers that serve the same model (each call goes to
/// the one with the fewest calls in flight; docs/http.md).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum BaseUrls {
    One(String),
    Many(Vec<String>),
}

impl BaseUrls {
    pub fn urls(&self) -> &[String] {
        match self {
            BaseUrls::One(u) => std::slice::from_ref(u),
            BaseUrls::Many(v) => v,
        }
    }
}

impl<'de> Deserialize<'de> for BaseUrls {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use crate::yaml_de::{either, Either, NoNumber};
        match either::<_, _, NoNumber>(d, "a URL or a list of URLs")? {
            Either::Text(s) => Ok(BaseUrls::One(s)),
            Either::Many(v) => Ok(BaseUrls::Many(v)),
        }
    }
}

macro_rules! http_view {
    ($t:ty) => {
        impl $t {
            pub fn http(&self) -> HttpConfig<'_> {
                HttpConfig {
                    base_url: &self.base_url,
                    api_key_env: &self.api_key_env,
                    timeout_s: self.timeout_s,
                    max_retries: self.max_retries,
                    backoff_ms: self.backoff_ms,
                    headers: &self.headers,
                    requests_per_minute: self.requests_per_minute,
                    tokens_per_minute: self.tokens_per_minute,
                }
            }
        }
    };
}
http_view!(ChatConfig);
http_view!(EmbedderConfig);
http_view!(JudgeConfig);
http_view!(RerankerConfig);

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct EmbedderConfig {
    /// `hash` (builtin bag of words) or `openai` (any OpenAI-compatible `/embeddings`).
    pub kind: EmbedderKind,
    /// Buckets of the hash embedder.
    pub dimensions: usize,
    /// Model name sent to the server (`openai` only).
    pub model: String,
    /// Texts per request (`openai` only).
    pub batch_size: usize,
    /// Embedding requests in flight at once (`openai` only).
    pub concurrency: usize,
    /// Base URL with the version path (`openai` only), or a list of servers of the same model.
    /// Default: `$OPENAI_BASE_URL`, else OpenAI's.
    pub base_url: Option<BaseUrls>,
    /// The environment variable holding the API key; the key itself never goes in a file.
    pub api_key_env: String,
    /// Seconds before an attempt is abandoned.
    pub timeout_s: f64,
    /// Attempts after the first one, on connect errors, timeouts, 429 and 5xx.
    pub max_retries: u32,
    /// The first retry waits a random time up to this many milliseconds; each further retry
    /// doubles it, up to 20 s.
    pub backoff_ms: u64,
    /// Extra request headers (values are redacted in reports).
    pub headers: std::collections::BTreeMap<String, String>,
    /// The most tokens the model reads in one input (all-MiniLM-L6-v2: 512). A chunk or question
    /// estimated longer is refused before the sweep, naming it. Default: no limit.
    pub max_input_tokens: Option<usize>,
    /// Requests sent per minute at most, paced evenly (`openai` only). Default: no limit.
    pub requests_per_minute: Option<u32>,
    /// Tokens sent per minute at most: a request costs its estimated prompt tokens plus
    /// `max_tokens` (`openai` only). Default: no limit.
    pub tokens_per_minute: Option<u64>,
}

impl Default for EmbedderConfig {
    fn default() -> Self {
        EmbedderConfig {
            kind: EmbedderKind::Hash,
            dimensions: crate::embed::hash::DEFAULT_DIMENSIONS,
            model: "text-embedding-3-small".into(),
            batch_size: 64,
            concurrency: 4,
            base_url: None,
            api_key_env: "OPENAI_API_KEY".into(),
            timeout_s: 60.0,
            max_retries: 4,
            backoff_ms: DEFAULT_BACKOFF_MS,
            headers: Default::default(),
            max_input_tokens: None,
            requests_per_minute: None,
            tokens_per_minute: None,
        }
    }
}

/// How the builtin retriever cuts the corpus into chunks.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct CorpusConfig {
    /// A heading section estimated longer than this (heading and text) is split at paragraph
    /// boundaries into parts that each keep the heading; 0 keeps every section whole.
    pub max_chunk_tokens: usize,
}

/// Fits common embedding models: all-MiniLM-L6-v2 was trained on 256 word pieces and reads 512
/// at most; BGE and E5 read 512. The estimate leans high, so 256 is about 200 real tokens.
pub const DEFAULT_MAX_CHUNK_TOKENS: usize = 256;

impl Default for CorpusConfig {
    fn default() -> Self {
        CorpusConfig {
            max_chunk_tokens: DEFAULT_MAX_CHUNK_TOKENS,
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum EmbedderKind {
    #[default]
    Hash,
    Openai,
}

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct ChatConfig {
    /// `mock` (builtin, deterministic) or `openai` (any OpenAI-compatible `/chat/completions`).
    pub kind: ChatKind,
    /// Model name sent to the server (`openai` only).
    pub model: String,
    pub temperature: f64,
    /// Cap on completion tokens; unset sends none.
    pub max_tokens: Option<u32>,
    /// Use the streamed endpoint (records time to first token).
    pub stream: bool,
    /// Base URL with the version path (`openai` only), or a list of servers of the same model.
    /// Default: `$OPENAI_BASE_URL`, else OpenAI's.
    pub base_url: Option<BaseUrls>,
    /// The environment variable holding the API key; the key itself never goes in a file.
    pub api_key_env: String,
    /// Seconds before an attempt is abandoned.
    pub timeout_s: f64,
    /// Attempts after the first one, on connect errors, timeouts, 429 and 5xx.
    pub max_retries: u32,
    /// The first retry waits a random time up to this many milliseconds; each further retry
    /// doubles it, up to 20 s.
    pub backoff_ms: u64,
    /// Extra request headers (values are redacted in reports).
    pub headers: std::collections::BTreeMap<String, String>,
    /// Requests sent per minute at most, paced evenly (`openai` only). Default: no limit.
    pub requests_per_minute: Option<u32>,
    /// Tokens sent per minute at most: a request costs its estimated prompt tokens plus
    /// `max_tokens` (`openai` only). Default: no limit.
    pub tokens_per_minute: Option<u64>,
}

impl Default for ChatConfig {
    fn default() -> Self {
        ChatConfig {
            kind: ChatKind::Mock,
            model: "gpt-4o-mini".into(),
            temperature: 0.0,
            max_tokens: None,
            stream: false,
            base_url: None,
            api_key_env: "OPENAI_API_KEY".into(),
            timeout_s: 120.0,
            max_retries: 4,
            backoff_ms: DEFAULT_BACKOFF_MS,
            headers: Default::default(),
            requests_per_minute: None,
            tokens_per_minute: None,
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ChatKind {
    #[default]
    Mock,
    Openai,
}

/// The prompt-injection tripwire (`rageval scan`, and flagged passages in reports).
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct ScanConfig {
    /// Regular expressions, matched case-insensitively against each chunk's heading and text.
    pub patterns: Vec<String>,
}

impl Default for ScanConfig {
    fn default() -> Self {
        ScanConfig {
            patterns: crate::scan::Scanner::default_patterns(),
        }
    }
}

/// The on-disk response cache of HTTP models.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct CacheConfig {
    pub enabled: bool,
    /// Folder, relative to the config file.
    pub dir: String,
}

impl Default for CacheConfig {
    fn default() -> Self {
        CacheConfig {
            enabled: true,
            dir: ".rageval/cache".into(),
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct PromptConfig {
    /// The sentence the model must reply when the passages do not answer.
    pub refusal: String,
    /// Demand the exact sentence instead of forgiving case, whitespace, curly apostrophes and a
    /// missing final period.
    pub strict_refusal: bool,
    /// The system message, with `{refusal}` (and `{context}`, `{question}`); unset: the
    /// chapter's four rules.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    /// The user message, with `{context}`, `{question}` (and `{refusal}`); unset:
    /// `Context:\n{context}\n\nQuestion: {question}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// One passage of the numbered format, with `{n}`, `{source}`, `{heading}`, `{text}`;
    /// unset: `[{n}] (source: {source}#{heading}) {text}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub passage: Option<String>,
    /// Regular expressions (case-insensitive): a reply one of them matches is a refusal.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub refusal_patterns: Vec<String>,
}

impl Default for PromptConfig {
    fn default() -> Self {
        PromptConfig {
            refusal: REFUSAL.to_string(),
            strict_refusal: false,
            system: None,
            user: None,
            passage: None,
            refusal_patterns: Vec::new(),
        }
    }
}

impl PromptConfig {
    /// The templates, parsed.
    pub fn prompt(&self) -> Result<crate::prompt::Prompt, crate::prompt::TemplateFieldError> {
        crate::prompt::Prompt::with_templates(
            &self.refusal,
            self.system.as_deref(),
            self.user.as_deref(),
            self.passage.as_deref(),
        )
    }
}

/// The optional judge model (docs/judge.md): an OpenAI-compatible chat endpoint, or the builtin
/// mock judge, that grades every reply the refusal sentence does not settle.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct JudgeConfig {
    /// `openai` (any OpenAI-compatible `/chat/completions`) or `mock` (builtin, deterministic).
    pub kind: ChatKind,
    /// Model name sent to the server.
    pub model: String,
    /// Base URL with the version path, or a list of them (calls go to the server with the
    /// fewest in flight). Default: `$OPENAI_BASE_URL`, else OpenAI's.
    pub base_url: Option<BaseUrls>,
    /// The environment variable holding the API key; the key itself never goes in a file.
    pub api_key_env: String,
    /// Seconds before an attempt is abandoned.
    pub timeout_s: f64,
    /// Attempts after the first one, on connect errors, timeouts, 429 and 5xx.
    pub max_retries: u32,
    /// The first retry waits a random time up to this many milliseconds; each further retry
    /// doubles it, up to 20 s.
    pub backoff_ms: u64,
    /// Extra request headers (values are redacted in reports).
    pub headers: std::collections::BTreeMap<String, String>,
    /// Requests sent per minute at most, paced evenly. Default: no limit.
    pub requests_per_minute: Option<u32>,
    /// Tokens sent per minute at most: a request costs its estimated prompt tokens. Default:
    /// no limit.
    pub tokens_per_minute: Option<u64>,
    /// Price of a million judge prompt tokens.
    pub prompt_per_million: f64,
    /// Price of a million judge completion tokens.
    pub completion_per_million: f64,
}

impl Default for JudgeConfig {
    fn default() -> Self {
        JudgeConfig {
            kind: ChatKind::Openai,
            model: "gpt-4o-mini".into(),
            base_url: None,
            api_key_env: "OPENAI_API_KEY".into(),
            timeout_s: 120.0,
            max_retries: 4,
            backoff_ms: DEFAULT_BACKOFF_MS,
            headers: Default::default(),
            requests_per_minute: None,
            tokens_per_minute: None,
            prompt_per_million: 0.0,
            completion_per_million: 0.0,
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct SweepConfig {
    /// minScore values: `a..b`, `a..b:step`, `a,b,c`, a number, or a list of numbers.
    pub min_score: ValueSpec,
    /// k values, in the same forms.
    pub k: ValueSpec,
    /// Context orders: `score`, `edge`, or both (`score,edge` or a list).
    pub order: NameSpec,
    /// Passage formats: `numbered`, `tagged`, or both.
    pub format: NameSpec,
    /// Follow-up rewrite strategies: `none`, `heuristic`, `model`.
    pub rewrite: NameSpec,
    /// Chat profiles (keys of `models:`, `default` for `chat:`). Default: `default`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chat: Option<NameSpec>,
    /// Chat temperatures, in the forms of `min_score`. Default: each profile's `temperature`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<ValueSpec>,
    /// Embedder profiles (keys of `embedders:`, `default` for `embedder:`). Default: `default`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub embedder: Option<NameSpec>,
    /// Chunk sizes of the builtin chunker, in the forms of `k`. Default:
    /// `corpus.max_chunk_tokens`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chunk_tokens: Option<ValueSpec>,
    /// Model calls in flight at once.
    pub concurrency: usize,
}

impl Default for SweepConfig {
    fn default() -> Self {
        SweepConfig {
            min_score: ValueSpec::Text("0.1..0.5".into()),
            k: ValueSpec::Text("1,2,4,8".into()),
            order: NameSpec::Text("score".into()),
            format: NameSpec::Text("numbered".into()),
            rewrite: NameSpec::Text("none".into()),
            chat: None,
            temperature: None,
            embedder: None,
            chunk_tokens: None,
            concurrency: 8,
        }
    }
}

/// A value list as YAML may write it: `"0.1..0.5"`, `0.3` or `[0.1, 0.2]`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum ValueSpec {
    Text(String),
    Number(#[schemars(with = "f64")] serde_yaml::Number),
    List(#[schemars(with = "Vec<f64>")] Vec<serde_yaml::Number>),
}

impl<'de> Deserialize<'de> for ValueSpec {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use crate::yaml_de::{either, Either};
        Ok(
            match either(
                d,
                "a number, a list of numbers, or a string like \"0.1..0.5\" or \"1,2,4\"",
            )? {
                Either::Text(s) => ValueSpec::Text(s),
                Either::Number(n) => ValueSpec::Number(n),
                Either::Many(v) => ValueSpec::List(v),
            },
        )
    }
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

/// A list of names as YAML may write it: `"score,edge"` or `[score, edge]`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum NameSpec {
    Text(String),
    List(Vec<String>),
}

impl<'de> Deserialize<'de> for NameSpec {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use crate::yaml_de::{either, Either, NoNumber};
        match either::<_, _, NoNumber>(
            d,
            "a name, a comma-separated string of names, or a list of names",
        )? {
            Either::Text(s) => Ok(NameSpec::Text(s)),
            Either::Many(v) => Ok(NameSpec::List(v)),
        }
    }
}

impl NameSpec {
    /// The spec in the flag syntax.
    pub fn to_spec(&self) -> String {
        match self {
            NameSpec::Text(s) => s.clone(),
            NameSpec::List(v) => v.join(","),
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct PricingConfig {
    /// Price of a million prompt tokens.
    pub prompt_per_million: f64,
    /// Price of a million completion tokens.
    pub completion_per_million: f64,
    /// Currency of the prices, for display.
    pub currency: String,
}

/// The CI gate (`rageval gate`, `rageval sweep --gate`). Flags override every field.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct GateConfig {
    /// The gated setting, as `min_score=0.2,k=4`. Default: the results' recommended setting.
    pub setting: Option<String>,
    /// Results to compare with, relative to the config file. Default: no baseline.
    pub baseline: Option<String>,
    /// How much each rate may worsen against the baseline (0.05 = 5 points). Default: 0.
    pub tolerance: f64,
    /// Significance level of the paired test on flipped questions. Default: 0.05.
    pub alpha: f64,
    /// Fail a baseline regression only when the paired test finds it significant.
    pub require_significance: bool,
    /// Absolute limits at the gated setting; a limit left out is not checked.
    pub max_unwanted_answer_rate: Option<f64>,
    pub max_false_refusal_rate: Option<f64>,
    /// Runs whose model call failed. Default: 0.
    pub max_error_runs: u64,
    pub max_prompt_tokens_per_question: Option<f64>,
    /// Share of answered answerable questions whose answer holds an expected answer text.
    pub min_answer_match_rate: Option<f64>,
    /// Share of repeated runs (`sweep --repeat N`) whose outcome differs from their
    /// question's most frequent one.
    pub max_flip_rate: Option<f64>,
    /// Share of answerable questions answered wrongly: the judge marked the answer incorrect
    /// or, ungraded, it holds none of the expected answer texts.
    pub max_wrong_answer_rate: Option<f64>,
}

impl Default for GateConfig {
    fn default() -> Self {
        GateConfig {
            setting: None,
            baseline: None,
            tolerance: 0.0,
            alpha: crate::gate::policy::DEFAULT_ALPHA,
            require_significance: false,
            max_unwanted_answer_rate: None,
            max_false_refusal_rate: None,
            max_error_runs: 0,
            max_prompt_tokens_per_question: None,
            min_answer_match_rate: None,
            max_flip_rate: None,
            max_wrong_answer_rate: None,
        }
    }
}

impl GateConfig {
    /// Its limits by [`Limit`]: the one place that maps its limit fields to the enum (a test
    /// holds it to [`Limit::ALL`] and to the section's keys).
    pub fn limits(&self) -> Limits {
        [
            (Limit::MaxUnwantedAnswerRate, self.max_unwanted_answer_rate),
            (Limit::MaxFalseRefusalRate, self.max_false_refusal_rate),
            (Limit::MaxErrorRuns, Some(self.max_error_runs as f64)),
            (
                Limit::MaxPromptTokensPerQuestion,
                self.max_prompt_tokens_per_question,
            ),
            (Limit::MinAnswerMatchRate, self.min_answer_match_rate),
            (Limit::MaxFlipRate, self.max_flip_rate),
            (Limit::MaxWrongAnswerRate, self.max_wrong_answer_rate),
        ]
        .into_iter()
        .collect()
    }
}

/// The recommendation policy: hard limits a setting must meet, then weights that rank the
/// settings that meet them (lower weighted cost wins). See docs/insight.md.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct RecommendConfig {
    /// Highest acceptable unwanted-answer rate (0 to 1).
    pub max_unwanted_answer_rate: f64,
    /// Highest acceptable false-refusal rate (0 to 1).
    pub max_false_refusal_rate: f64,
    /// Highest acceptable prompt tokens per question; no limit when absent.
    pub max_prompt_tokens_per_question: Option<f64>,
    /// Highest acceptable attack success rate of injection probes (questions with `attack:`);
    /// no limit when absent. Settings without probes are not held to it.
    pub max_attack_success_rate: Option<f64>,
    /// Highest acceptable wrong-answer rate (wrong answers over answerable questions); no
    /// limit when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_wrong_answer_rate: Option<f64>,
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
            max_attack_success_rate: None,
            max_wrong_answer_rate: None,
            weights: WeightsConfig::default(),
        }
    }
}

impl RecommendConfig {
    /// Its hard limits by [`Limit`]: the one place that maps its limit fields to the enum (a
    /// test holds it to [`Limit::ALL`] and to the section's keys).
    pub fn limits(&self) -> Limits {
        [
            (
                Limit::MaxUnwantedAnswerRate,
                Some(self.max_unwanted_answer_rate),
            ),
            (
                Limit::MaxFalseRefusalRate,
                Some(self.max_false_refusal_rate),
            ),
            (
                Limit::MaxPromptTokensPerQuestion,
                self.max_prompt_tokens_per_question,
            ),
            (Limit::MaxAttackSuccessRate, self.max_attack_success_rate),
            (Limit::MaxWrongAnswerRate, self.max_wrong_answer_rate),
        ]
        .into_iter()
        .collect()
    }
}

/// The default weight of the wrong-answer rate.
pub const WRONG_ANSWER_WEIGHT: f64 = 1.0;

/// Weights of the objective: cost = sum of weight x metric, each metric named as its
/// summary.csv column.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize, JsonSchema)]
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
    /// Weight of the wrong-answer rate: a wrong answer shown with sources misleads like an
    /// unwanted one.
    pub wrong_answer_rate: f64,
}

impl Default for WeightsConfig {
    fn default() -> Self {
        WeightsConfig {
            false_refusal_rate: 1.0,
            unwanted_answer_rate: 3.0,
            prompt_tokens_per_question: 0.00005,
            wrong_answer_rate: WRONG_ANSWER_WEIGHT,
        }
    }
}

/// Where passages come from: the builtin index, the user's search service, or pgvector
/// (docs/retrievers.md).
#[derive(Debug, Clone, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct RetrieverConfig {
    /// `builtin` (markdown chunks, exact cosine), `http` or `pgvector`.
    pub kind: RetrieverKind,
    /// `http`: the search endpoint, `POST {url}` with `{"query", "k"}`.
    pub url: Option<String>,
    /// `http`: the environment variable holding the bearer token.
    pub api_key_env: String,
    pub timeout_s: f64,
    pub max_retries: u32,
    pub backoff_ms: u64,
    /// `http`: extra request headers (values are redacted in reports).
    pub headers: std::collections::BTreeMap<String, String>,
    /// `pgvector`: the environment variable holding the connection string.
    pub dsn_env: String,
    /// `pgvector`: the table (`schema.table` allowed).
    pub table: String,
    /// `pgvector`: column names.
    pub columns: crate::retriever::pgvector::Columns,
    /// `pgvector`: `cosine`, `inner_product` or `l2`.
    pub distance: crate::retriever::pgvector::Distance,
    /// `pgvector`: `hnsw.ef_search` for the session (candidates an HNSW scan keeps).
    pub ef_search: Option<u32>,
    /// Retrieve once per distinct k of the grid instead of once at the largest k: for an
    /// approximate index or a server-side threshold, where the top 2 need not be the first 2
    /// of the top 8.
    pub query_per_k: bool,
}

impl Default for RetrieverConfig {
    fn default() -> Self {
        RetrieverConfig {
            kind: RetrieverKind::Builtin,
            url: None,
            api_key_env: "RETRIEVER_API_KEY".into(),
            timeout_s: 30.0,
            max_retries: 4,
            backoff_ms: DEFAULT_BACKOFF_MS,
            headers: Default::default(),
            dsn_env: "DATABASE_URL".into(),
            table: "rageval_chunks".into(),
            columns: Default::default(),
            distance: Default::default(),
            ef_search: None,
            query_per_k: false,
        }
    }
}

#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum RetrieverKind {
    #[default]
    Builtin,
    Http,
    Pgvector,
}

/// The optional reranker (docs/retrievers.md): `POST {base_url}/rerank` with the retrieved
/// passages, whose scores then replace the retrieval scores for ordering and minScore.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct RerankerConfig {
    /// `http`: a `/rerank` endpoint (llama.cpp's server, Hugging Face TEI, Jina, Cohere).
    pub kind: RerankerKind,
    /// Model name sent to the server.
    pub model: String,
    /// Base URL with the version path, or a list of servers of the same model (required).
    pub base_url: Option<BaseUrls>,
    /// The environment variable holding the API key; the key itself never goes in a file.
    pub api_key_env: String,
    /// Passages asked from the retriever and sent to the reranker per question. Default: the
    /// grid's largest k.
    pub candidates: Option<usize>,
    /// `top_n` sent to the server: the best passages it returns. Default: the grid's largest k.
    pub top_n: Option<usize>,
    /// Seconds before an attempt is abandoned.
    pub timeout_s: f64,
    /// Attempts after the first one, on connect errors, timeouts, 429, 5xx and unreadable replies.
    pub max_retries: u32,
    /// The first retry waits a random time up to this many milliseconds; each further retry
    /// doubles it, up to 20 s.
    pub backoff_ms: u64,
    /// Extra request headers (values are redacted in reports).
    pub headers: std::collections::BTreeMap<String, String>,
    /// Requests sent per minute at most, paced evenly. Default: no limit.
    pub requests_per_minute: Option<u32>,
    /// Tokens sent per minute at most: a request costs the estimated tokens of its query and
    /// passages. Default: no limit.
    pub tokens_per_minute: Option<u64>,
}

impl Default for RerankerConfig {
    fn default() -> Self {
        RerankerConfig {
            kind: RerankerKind::Http,
            model: "rerank".into(),
            base_url: None,
            api_key_env: "RERANKER_API_KEY".into(),
            candidates: None,
            top_n: None,
            timeout_s: 60.0,
            max_retries: 4,
            backoff_ms: DEFAULT_BACKOFF_MS,
            headers: Default::default(),
            requests_per_minute: None,
            tokens_per_minute: None,
        }
    }
}

#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum RerankerKind {
    #[default]
    Http,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limit::Scope;

    /// The keys of a section's JSON schema that name limits (`max_*`, `min_*`).
    fn limit_keys<T: JsonSchema>() -> Vec<String> {
        let schema = schemars::schema_for!(T).to_value();
        let mut keys: Vec<String> = schema["properties"]
            .as_object()
            .expect("a section is an object")
            .keys()
            .filter(|k| k.starts_with("max_") || k.starts_with("min_"))
            .cloned()
            .collect();
        keys.sort();
        keys
    }

    fn keys(scope: Scope) -> Vec<String> {
        let mut keys: Vec<String> = Limit::of(scope).map(|l| l.key().to_string()).collect();
        keys.sort();
        keys
    }

    /// Each limit key of a section of `scope` reads into its own [`Limit`], the others keep
    /// their defaults.
    fn each_key_reads_into_its_limit<T>(scope: Scope, limits: fn(&T) -> Limits)
    where
        T: serde::de::DeserializeOwned + Default,
    {
        let defaults = limits(&T::default());
        for limit in Limit::of(scope) {
            let section: T = serde_yaml::from_str(&format!("{}: 1", limit.key())).unwrap();
            for l in Limit::ALL {
                let want = if l == limit {
                    Some(1.0)
                } else {
                    defaults.get(l)
                };
                assert_eq!(limits(&section).get(l), want, "{} sets {l:?}", limit.key());
            }
        }
    }

    /// Adding a limit is one place: the limit keys of `gate:` and `recommend:` are the
    /// limits of their scope, and each key reads into its own [`Limit`].
    #[test]
    fn the_limit_keys_are_the_policies_limits() {
        assert_eq!(limit_keys::<GateConfig>(), keys(Scope::Gate));
        assert_eq!(limit_keys::<RecommendConfig>(), keys(Scope::Recommend));
        each_key_reads_into_its_limit(Scope::Gate, GateConfig::limits);
        each_key_reads_into_its_limit(Scope::Recommend, RecommendConfig::limits);
    }
}
