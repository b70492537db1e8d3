//! The recorded identity of a run: which rageval, and every effective setting that changes a
//! result, with credentials left out by construction (URLs redacted, header names without
//! values, the key's variable name without its value).
//!
//! It is built from the checked settings as its own value, not by deleting keys from a copy of
//! the config: a field added to the config reaches results.json only when it is added here,
//! so a new secret cannot leak by default. Reports, the gate and baselines read it back.

use serde::{Deserialize, Serialize};

use crate::config::{BaseUrls, ChatKind, Config, EmbedderKind, HttpConfig};
use crate::redact;

/// Who made a run and with what: `tool_version`, `config_digest` and `config` in
/// results.json.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunIdentity {
    /// The rageval version that ran.
    pub tool_version: String,
    /// `sha256:<hex>` of the values of `config` that differ from the defaults, as compact
    /// JSON (see [`crate::record::digest`]). Equal digests: the same settings; a field added
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
    pub prompt: PromptIdentity,
    pub sweep: GridIdentity,
    pub pricing: PricingIdentity,
    /// `scan.patterns`: they decide which passages are flagged.
    pub scan_patterns: Vec<String>,
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
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PricingIdentity {
    pub prompt_per_million: f64,
    pub completion_per_million: f64,
    pub currency: String,
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
        let spec = |s: &crate::config::NameSpec| s.to_spec();
        EffectiveConfig {
            embedder: EmbedderIdentity {
                kind: c.embedder.kind,
                model: match c.embedder.kind {
                    EmbedderKind::Hash => format!("hash-{}", c.embedder.dimensions),
                    EmbedderKind::Openai => c.embedder.model.clone(),
                },
                endpoint: (c.embedder.kind == EmbedderKind::Openai)
                    .then(|| EndpointIdentity::new(c.embedder.http())),
            },
            chat: ChatIdentity {
                kind: c.chat.kind,
                model: match c.chat.kind {
                    ChatKind::Mock => "mock".into(),
                    ChatKind::Openai => c.chat.model.clone(),
                },
                temperature: c.chat.temperature,
                max_tokens: c.chat.max_tokens,
                endpoint: (c.chat.kind == ChatKind::Openai)
                    .then(|| EndpointIdentity::new(c.chat.http())),
            },
            prompt: PromptIdentity {
                refusal: c.prompt.refusal.clone(),
                strict_refusal: c.prompt.strict_refusal,
            },
            sweep: GridIdentity {
                min_score: c.sweep.min_score.to_spec(),
                k: c.sweep.k.to_spec(),
                order: spec(&c.sweep.order),
                format: spec(&c.sweep.format),
                rewrite: spec(&c.sweep.rewrite),
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
            .flatten()
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
            digest: crate::record::digest::config_digest(&value(&config), &value(&defaults)),
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
        assert_eq!(a.digest, crate::report::digest(&[b"{}"]));
        let mut c = Config::default();
        c.chat.temperature = 0.5;
        assert_eq!(
            RunIdentity::new(EffectiveConfig::new(&c)).digest,
            crate::report::digest(&[br#"{"chat":{"temperature":0.5}}"#])
        );
    }
}
