//! The recorded identity of a run: which rageval, and every effective setting that changes a
//! result, with credentials left out by construction (URLs redacted, header names without
//! values, the key's variable name without its value).
//!
//! It is built from the checked settings as its own value, not by deleting keys from a copy of
//! the config: a field added to the config reaches results.json only when it is added here,
//! so a new secret cannot leak by default. Reports, the gate and baselines read it back.

use serde::{Deserialize, Serialize};

use crate::app::config::{BaseUrls, ChatKind, Config, EmbedderKind, HttpConfig};
use crate::base::redact;

/// Who made a run and with what: `tool_version`, `config_digest` and `config` in
/// results.json.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunIdentity {
    /// The rageval version that ran.
    pub tool_version: String,
    /// `sha256:<hex>` of the values of `config` that differ from the defaults, as compact
    /// JSON (see [`crate::output::record::digest`]). Equal digests: the same settings; a field added
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
    pub kind: crate::app::config::RerankerKind,
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
    pub kind: crate::app::config::RetrieverKind,
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
    pub prompt_per_million: f64,
    pub completion_per_million: f64,
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
    /// `mock` for the builtin model, else `chat.model`.
    pub model: String,
    pub temperature: f64,
    pub max_tokens: Option<u32>,
    /// The server, for `openai`; `null` for the builtin model.
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
    pub completion_per_million: f64,
    pub currency: String,
}

impl EmbedderIdentity {
    /// The identity of an `embedder:` section or an `embedders:` profile.
    fn new(e: &crate::app::config::EmbedderConfig) -> Self {
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
    fn new(chat: &crate::app::config::ChatConfig) -> Self {
        ChatIdentity {
            kind: chat.kind,
            model: match chat.kind {
                ChatKind::Mock => "mock".into(),
                ChatKind::Openai => chat.model.clone(),
            },
            temperature: chat.temperature,
            max_tokens: chat.max_tokens,
            endpoint: (chat.kind == ChatKind::Openai).then(|| EndpointIdentity::new(chat.http())),
        }
    }
}

impl EndpointIdentity {
    fn new(http: HttpConfig<'_>) -> Self {
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
    /// The effective settings of `c`, whose `sweep` and `prompt` sections already hold the
    /// values the flags chose.
    pub fn new(c: &Config) -> Self {
        let spec = |s: &crate::app::config::NameSpec| s.to_spec();
        EffectiveConfig {
            embedder: EmbedderIdentity::new(&c.embedder),
            embedders: c
                .sweep
                .embedder
                .iter()
                .flat_map(|spec| crate::vocab::grid::parse_profiles(&spec.to_spec()))
                .flatten()
                .filter_map(|name| {
                    let e = c.embedders.get(&name)?;
                    Some((name, EmbedderIdentity::new(e)))
                })
                .collect(),
            chat: ChatIdentity::new(&c.chat),
            models: c
                .sweep
                .chat
                .iter()
                .flat_map(|spec| crate::vocab::grid::parse_profiles(&spec.to_spec()))
                .flatten()
                .filter_map(|name| Some((name.clone(), ChatIdentity::new(c.models.get(&name)?))))
                .collect(),
            prompt: PromptIdentity {
                refusal: c.prompt.refusal.clone(),
                strict_refusal: c.prompt.strict_refusal,
                system: c.prompt.system.clone(),
                user: c.prompt.user.clone(),
                passage: c.prompt.passage.clone(),
                refusal_patterns: c.prompt.refusal_patterns.clone(),
            },
            sweep: GridIdentity {
                min_score: c.sweep.min_score.to_spec(),
                k: c.sweep.k.to_spec(),
                order: spec(&c.sweep.order),
                format: spec(&c.sweep.format),
                rewrite: spec(&c.sweep.rewrite),
                chat: c.sweep.chat.as_ref().map(spec),
                temperature: c.sweep.temperature.as_ref().map(|v| v.to_spec()),
                embedder: c.sweep.embedder.as_ref().map(spec),
                chunk_tokens: c.sweep.chunk_tokens.as_ref().map(|v| v.to_spec()),
                repeat: 1,
            },
            pricing: PricingIdentity {
                prompt_per_million: c.pricing.prompt_per_million,
                completion_per_million: c.pricing.completion_per_million,
                currency: if c.pricing.currency.is_empty() {
                    "USD".into()
                } else {
                    c.pricing.currency.clone()
                },
            },
            scan_patterns: c.scan.patterns.clone(),
            retriever: {
                use crate::app::config::RetrieverKind;
                let r = &c.retriever;
                let pg = r.kind == RetrieverKind::Pgvector;
                (r.kind != RetrieverKind::Builtin).then(|| RetrieverIdentity {
                    kind: r.kind,
                    url: r.url.as_deref().map(redact::url),
                    headers: r.headers.keys().cloned().collect(),
                    dsn_env: pg.then(|| r.dsn_env.clone()),
                    table: pg.then(|| r.table.clone()),
                    distance: pg.then_some(r.distance),
                    query_per_k: r.query_per_k,
                })
            },
            reranker: c.reranker.as_ref().map(|r| RerankerIdentity {
                kind: r.kind,
                model: r.model.clone(),
                endpoint: EndpointIdentity::new(r.http()),
                candidates: r.candidates,
                top_n: r.top_n,
            }),
            judge: c.judge.as_ref().map(|j| JudgeIdentity {
                kind: j.kind,
                model: match j.kind {
                    ChatKind::Mock => "mock".into(),
                    ChatKind::Openai => j.model.clone(),
                },
                endpoint: (j.kind == ChatKind::Openai).then(|| EndpointIdentity::new(j.http())),
                prompt_per_million: j.prompt_per_million,
                completion_per_million: j.completion_per_million,
            }),
        }
    }
}

impl EffectiveConfig {
    /// What the digest covers: everything but the servers' addresses, so listing another
    /// server, or the same ones in another order, keeps the digest (and the baseline's).
    fn digested(&self) -> EffectiveConfig {
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
    /// This rageval's identity for `config`.
    pub fn new(config: EffectiveConfig) -> Self {
        // Plain structs with string keys: serialising cannot fail.
        // The servers' addresses are left out of both sides (see `digested`).
        let value = |c: &EffectiveConfig| {
            serde_json::to_value(c.digested()).expect("the identity serialises")
        };
        let defaults = EffectiveConfig::new(&Config::default());
        RunIdentity {
            tool_version: env!("CARGO_PKG_VERSION").to_string(),
            digest: crate::output::record::digest::config_digest(&value(&config), &value(&defaults)),
            config,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn http_config(yaml: &str) -> Config {
        serde_yaml::from_str(yaml).unwrap()
    }

    #[test]
    fn endpoints_hold_no_credential() {
        let c = http_config(
            "chat:\n  kind: openai\n  base_url: http://user:sk-canary@127.0.0.1:8787/v1?api_key=sk-q\n  headers: {X-Api-Key: sk-header}\n",
        );
        let id = RunIdentity::new(EffectiveConfig::new(&c));
        let json = serde_json::to_string(&id).unwrap();
        for secret in ["sk-canary", "sk-q", "sk-header", "user"] {
            assert!(!json.contains(secret), "{secret} in {json}");
        }
        let ep = id.config.chat.endpoint.as_ref().unwrap();
        assert_eq!(
            ep.base_url,
            BaseUrls::One("http://<redacted>@127.0.0.1:8787/v1?<redacted>".into())
        );
        assert_eq!(ep.headers, ["X-Api-Key"]);
        assert_eq!(id.config.embedder.endpoint, None, "the builtin embedder");
    }

    #[test]
    fn round_trips_and_the_digest_follows_the_settings() {
        let a = RunIdentity::new(EffectiveConfig::new(&Config::default()));
        let back: RunIdentity = serde_json::from_str(&serde_json::to_string(&a).unwrap()).unwrap();
        assert_eq!(back, a);
        assert_eq!(
            a,
            RunIdentity::new(EffectiveConfig::new(&Config::default()))
        );
        let mut c = Config::default();
        c.chat.temperature = 0.5;
        assert_ne!(RunIdentity::new(EffectiveConfig::new(&c)).digest, a.digest);
        // Neither where reports go nor how fast calls are made is part of it.
        let mut c = Config::default();
        c.sweep.concurrency = 1;
        c.out = Some("elsewhere".into());
        c.chat.stream = true;
        assert_eq!(RunIdentity::new(EffectiveConfig::new(&c)).digest, a.digest);
        // A template, a refusal pattern or a judge changes results, so the digest.
        for yaml in [
            "prompt: {user: \"Q: {question}\\n{context}\"}",
            "prompt: {refusal_patterns: [\"not mention\"]}",
            "judge: {kind: mock}",
        ] {
            let c = http_config(yaml);
            assert_ne!(
                RunIdentity::new(EffectiveConfig::new(&c)).digest,
                a.digest,
                "{yaml}"
            );
        }
    }

    #[test]
    fn a_judge_endpoint_holds_no_credential() {
        let c = http_config(
            "judge:\n  base_url: http://u:sk-judge@127.0.0.1:9/v1\n  headers: {X-Key: sk-h}\n",
        );
        let id = RunIdentity::new(EffectiveConfig::new(&c));
        let json = serde_json::to_string(&id).unwrap();
        assert!(
            !json.contains("sk-judge") && !json.contains("sk-h"),
            "{json}"
        );
        let ep = id.config.judge.unwrap().endpoint.unwrap();
        assert_eq!(
            ep.base_url,
            BaseUrls::One("http://<redacted>@127.0.0.1:9/v1".into())
        );
        assert_eq!(ep.headers, ["X-Key"]);
    }

    #[test]
    fn servers_are_listed_redacted_but_leave_the_digest_alone() {
        let digest = |yaml: &str| RunIdentity::new(EffectiveConfig::new(&http_config(yaml)));
        let one = digest("chat:\n  kind: openai\n  base_url: http://127.0.0.1:1/v1\n");
        let two = digest(
            "chat:\n  kind: openai\n  base_url: [http://127.0.0.1:1/v1, 'http://k:sk-x@127.0.0.1:2/v1/']\n",
        );
        let swapped = digest(
            "chat:\n  kind: openai\n  base_url: ['http://k:sk-x@127.0.0.1:2/v1/', http://127.0.0.1:1/v1]\n",
        );
        assert_eq!(
            two.config.chat.endpoint.as_ref().unwrap().base_url,
            BaseUrls::Many(vec![
                "http://127.0.0.1:1/v1".into(),
                "http://<redacted>@127.0.0.1:2/v1".into()
            ])
        );
        assert!(!serde_json::to_string(&two).unwrap().contains("sk-x"));
        assert_eq!(one.digest, two.digest, "the count of servers");
        assert_eq!(two.digest, swapped.digest, "their order");
        // What the servers are asked still counts.
        let other =
            digest("chat:\n  kind: openai\n  base_url: http://127.0.0.1:1/v1\n  model: m2\n");
        assert_ne!(one.digest, other.digest);
        // A list reads back as written; a recorded single URL stays a string.
        let back: RunIdentity =
            serde_json::from_str(&serde_json::to_string(&two).unwrap()).unwrap();
        assert_eq!(back, two);
        let json = serde_json::to_value(&one).unwrap();
        assert_eq!(
            json["config"]["chat"]["endpoint"]["base_url"],
            serde_json::json!("http://127.0.0.1:1/v1")
        );
    }

    #[test]
    fn the_default_config_digests_as_nothing_set() {
        // Every value at its default: the digest of `{}`, whatever fields later versions add
        // with defaults.
        let a = RunIdentity::new(EffectiveConfig::new(&Config::default()));
        assert_eq!(a.digest, crate::output::report::digest(&[b"{}"]));
        let mut c = Config::default();
        c.chat.temperature = 0.5;
        assert_eq!(
            RunIdentity::new(EffectiveConfig::new(&c)).digest,
            crate::output::report::digest(&[br#"{"chat":{"temperature":0.5}}"#])
        );
    }
}
