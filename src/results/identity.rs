//! The recorded identity of a run: which rageval, and every effective setting that changes a
//! result, with credentials left out by construction (URLs redacted, header names without
//! values, the key's variable name without its value).
//!
//! It is built from the checked settings as its own value, not by deleting keys from a copy of
//! the config: a field added to the config reaches results.json only when it is added here,
//! so a new secret cannot leak by default. Reports, the gate and baselines read it back.

use serde::{Deserialize, Serialize};

use crate::adapters::chat::config::ChatKind;
use crate::adapters::embed::config::EmbedderKind;
use crate::adapters::http::config::{BaseUrls, HttpConfig};
use crate::base::redact;
use crate::vocab::dim::Dim;

/// Who made a run and with what: `tool_version`, `config_digest` and `config` in
/// results.json.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunIdentity {
    /// The rageval version that ran.
    pub tool_version: String,
    /// `sha256:<hex>` of the values of `config` that differ from the defaults, as compact
    /// JSON (see [`crate::base::digest`]). Equal digests: the same settings; a field added
    /// with a default changes no digest.
    #[serde(rename = "config_digest")]
    pub digest: String,
    pub config: EffectiveConfig,
}

/// The effective settings that change a result: config fields with defaults filled in and
/// flags merged. Where reports go, how fast calls are made, caching, streaming, gating and the
/// recommendation policy do not change a result and are not here.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EffectiveConfig {
    pub embedder: EmbedderIdentity,
    pub chat: ChatIdentity,
    /// The chat profiles of `models:` the grid names (`--chat`), by name; absent without.
    #[serde(default, skip_serializing_if = "indexmap::IndexMap::is_empty")]
    pub models: indexmap::IndexMap<String, ChatIdentity>,
    /// The embedder profiles of `embedders:` the grid names (`--embedder`); absent without.
    #[serde(default, skip_serializing_if = "indexmap::IndexMap::is_empty")]
    pub embedders: indexmap::IndexMap<String, EmbedderIdentity>,
    pub prompt: PromptIdentity,
    pub sweep: GridIdentity,
    pub pricing: PricingIdentity,
    /// `scan.patterns`: they decide which passages are flagged.
    pub scan_patterns: Vec<String>,
    /// The judge that graded the replies; absent without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge: Option<JudgeIdentity>,
    /// A foreign retriever; absent for the builtin one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retriever: Option<RetrieverIdentity>,
    /// The reranker; absent without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reranker: Option<RerankerIdentity>,
}

/// The reranker that rescored the passages: its model, server (redacted) and sizes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RerankerIdentity {
    pub kind: crate::adapters::rerank::config::RerankerKind,
    pub model: String,
    pub endpoint: EndpointIdentity,
    /// Passages sent per question; absent: the grid's largest k.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub candidates: Option<usize>,
    /// `top_n` sent; absent: the grid's largest k.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_n: Option<usize>,
}

/// Where passages came from: URL redacted, header names only, the DSN's variable name only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RetrieverIdentity {
    pub kind: crate::adapters::retriever::config::RetrieverKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dsn_env: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distance: Option<crate::adapters::retriever::pgvector::Distance>,
    /// `retriever.query_per_k`: one retrieval per distinct k; absent when false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub query_per_k: bool,
}

/// The judge model (docs/judge.md): its grades change outcomes and wrong answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JudgeIdentity {
    pub kind: ChatKind,
    /// `mock` for the builtin judge, else `judge.model`.
    pub model: String,
    /// The server, for `openai`; `null` for the builtin judge.
    pub endpoint: Option<EndpointIdentity>,
    /// `judge.structured_output` of an `openai` judge (absent in records before it existed:
    /// on, its default).
    #[serde(default = "structured_default")]
    pub structured_output: bool,
    pub prompt_per_million: f64,
    pub completion_per_million: f64,
}

fn structured_default() -> bool {
    true
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EmbedderIdentity {
    #[schemars(with = "String")]
    pub kind: EmbedderKind,
    /// `hash-<dimensions>` for the builtin embedder, else `embedder.model`.
    pub model: String,
    /// The server, for `openai`; `null` for the builtin embedder.
    pub endpoint: Option<EndpointIdentity>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChatIdentity {
    #[schemars(with = "String")]
    pub kind: ChatKind,
    /// `mock` for the builtin model, else `chat.model` (its default for the kind when unset).
    pub model: String,
    pub temperature: f64,
    pub max_tokens: Option<u32>,
    /// The server, for `openai` and `http`; `null` for the builtin model.
    pub endpoint: Option<EndpointIdentity>,
}

/// An OpenAI-compatible server as it may be shown: no credential in any field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EndpointIdentity {
    /// The effective base URL (config, else `$OPENAI_BASE_URL`, else OpenAI's), or the list
    /// of them as the config gave it, each with its userinfo and query shown as `<redacted>`.
    /// Not part of the digest: which servers answered does not change a result.
    pub base_url: BaseUrls,
    /// The variable the key is read from; never the key.
    pub api_key_env: String,
    /// Names of the extra headers; never their values.
    pub headers: Vec<String>,
    pub timeout_s: f64,
    pub max_retries: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PromptIdentity {
    pub refusal: String,
    pub strict_refusal: bool,
    /// The templates as written, when set (unset: the chapter's prompt). A changed template
    /// changes the digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passage: Option<String>,
    /// `prompt.refusal_patterns`: the `pattern` refusal tier.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refusal_patterns: Vec<String>,
}

/// The grid, as spec text in the flag syntax (`0.1..0.5`, `1,2,4,8`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GridIdentity {
    pub min_score: String,
    pub k: String,
    pub order: String,
    pub format: String,
    pub rewrite: String,
    /// `--chat`, `--temperature`, `--embedder`, `--chunk-tokens`: absent when not given, so
    /// a sweep without them keeps its digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedder: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunk_tokens: Option<String>,
    /// `--repeat N`; absent for 1, so a sweep without repeats keeps its digest.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub repeat: u32,
}

impl GridIdentity {
    /// The grid of `spec(d)` for each dimension `d` (flag syntax; `None`: not given) and
    /// `repeat`: the one place that maps the dimension fields above to [`Dim`].
    pub fn new(spec: impl Fn(Dim) -> Option<String>, repeat: u32) -> Self {
        let given = |d| spec(d).unwrap_or_default();
        GridIdentity {
            min_score: given(Dim::MinScore),
            k: given(Dim::K),
            order: given(Dim::Order),
            format: given(Dim::Format),
            rewrite: given(Dim::Rewrite),
            chat: spec(Dim::Chat),
            temperature: spec(Dim::Temperature),
            embedder: spec(Dim::Embedder),
            chunk_tokens: spec(Dim::ChunkTokens),
            repeat,
        }
    }
}

fn one() -> u32 {
    1
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PricingIdentity {
    pub prompt_per_million: f64,
    /// Absent when unset (prompt tokens reused cost `prompt_per_million`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_prompt_per_million: Option<f64>,
    pub completion_per_million: f64,
    pub currency: String,
}

impl EmbedderIdentity {
    /// The identity of an `embedder:` section or an `embedders:` profile.
    pub fn new(e: &crate::adapters::embed::config::EmbedderConfig) -> Self {
        EmbedderIdentity {
            kind: e.kind,
            model: match e.kind {
                EmbedderKind::Hash => format!("hash-{}", e.dimensions),
                EmbedderKind::Openai => e.model.clone(),
            },
            endpoint: (e.kind == EmbedderKind::Openai).then(|| EndpointIdentity::new(e.http())),
        }
    }
}

impl ChatIdentity {
    /// The identity of a `chat:` section or a `models:` profile.
    pub fn new(chat: &crate::adapters::chat::config::ChatConfig) -> Self {
        ChatIdentity {
            kind: chat.kind,
            model: chat.model_name(),
            temperature: chat.temperature,
            max_tokens: chat.max_tokens,
            endpoint: chat
                .kind
                .is_remote()
                .then(|| EndpointIdentity::new(chat.endpoint())),
        }
    }
}

impl EndpointIdentity {
    pub fn new(http: HttpConfig<'_>) -> Self {
        EndpointIdentity {
            base_url: {
                let shown = |u: &String| redact::url(u.trim_end_matches('/'));
                match http.base_url {
                    Some(BaseUrls::Many(urls)) => BaseUrls::Many(urls.iter().map(shown).collect()),
                    _ => BaseUrls::One(shown(&http.base_urls()[0])),
                }
            },
            api_key_env: http.api_key_env.to_string(),
            headers: http.headers.keys().cloned().collect(),
            timeout_s: http.timeout_s,
            max_retries: http.max_retries,
        }
    }
}

impl EffectiveConfig {
    /// What the digest covers: everything but the servers' addresses, so listing another
    /// server, or the same ones in another order, keeps the digest (and the baseline's).
    pub fn digested(&self) -> EffectiveConfig {
        let mut c = self.clone();
        for ep in [&mut c.embedder.endpoint, &mut c.chat.endpoint]
            .into_iter()
            .chain(c.models.values_mut().map(|m| &mut m.endpoint))
            .chain(c.embedders.values_mut().map(|e| &mut e.endpoint))
            .flatten()
            .chain(c.reranker.as_mut().map(|r| &mut r.endpoint))
        {
            ep.base_url = BaseUrls::Many(Vec::new());
        }
        c
    }
}

impl RunIdentity {
    /// This rageval's identity for `config`; its digest covers what differs from `defaults`
    /// (the effective settings of the default config).
    pub fn new(config: EffectiveConfig, defaults: &EffectiveConfig) -> Self {
        // Plain structs with string keys: serialising cannot fail.
        // The servers' addresses are left out of both sides (see `digested`).
        let value = |c: &EffectiveConfig| {
            serde_json::to_value(c.digested()).expect("the identity serialises")
        };
        RunIdentity {
            tool_version: env!("CARGO_PKG_VERSION").to_string(),
            digest: crate::base::digest::config_digest(&value(&config), &value(defaults)),
            config,
        }
    }
}
