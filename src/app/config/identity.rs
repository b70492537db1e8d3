//! The recorded identity of a sweep built from its checked config: the config converts
//! itself into the results layer's [`EffectiveConfig`], which holds no credential.

use crate::base::redact;
use crate::results::identity::*;

use super::Config;
use crate::vocab::dim::Dim;

/// What a sweep's flags chose on top of its config, as the identity records it: the resolved
/// options hand it over, so the config is never written.
pub struct Chosen<'a> {
    /// Each dimension's spec in the flag syntax as given: the flag's text, else the config's;
    /// `None`: neither gave one (the dimension's default).
    pub specs: &'a [Option<String>; Dim::COUNT],
    /// The chat and the embedder profiles the specs name, in their order (empty when their
    /// spec is `None`).
    pub chats: Vec<String>,
    pub embedders: Vec<String>,
    /// `prompt.strict_refusal` or `--strict-refusal`.
    pub strict_refusal: bool,
    /// `--repeat`.
    pub repeat: u32,
}

impl EffectiveConfig {
    /// The effective settings of `c` alone, as a sweep with no flag would record them.
    pub fn new(c: &Config) -> Self {
        let specs: [Option<String>; Dim::COUNT] =
            std::array::from_fn(|i| c.sweep.spec(Dim::ALL[i]));
        let profiles = |d: Dim| -> Vec<String> {
            specs[d as usize]
                .iter()
                .flat_map(|spec| crate::vocab::grid::parse_profiles(spec))
                .flatten()
                .collect()
        };
        let chosen = Chosen {
            chats: profiles(Dim::Chat),
            embedders: profiles(Dim::Embedder),
            specs: &specs,
            strict_refusal: c.prompt.strict_refusal,
            repeat: 1,
        };
        EffectiveConfig::chosen(c, &chosen)
    }

    /// The effective settings of `c` with what the flags `chosen`.
    pub fn chosen(c: &Config, chosen: &Chosen<'_>) -> Self {
        EffectiveConfig {
            embedder: EmbedderIdentity::new(&c.embedder),
            embedders: chosen
                .embedders
                .iter()
                .filter_map(|name| {
                    let e = c.embedders.get(name)?;
                    Some((name.clone(), EmbedderIdentity::new(e)))
                })
                .collect(),
            chat: ChatIdentity::new(&c.chat),
            models: chosen
                .chats
                .iter()
                .filter_map(|name| Some((name.clone(), ChatIdentity::new(c.models.get(name)?))))
                .collect(),
            prompt: PromptIdentity {
                refusal: c.prompt.refusal.clone(),
                strict_refusal: chosen.strict_refusal,
                system: c.prompt.system.clone(),
                user: c.prompt.user.clone(),
                passage: c.prompt.passage.clone(),
                refusal_patterns: c.prompt.refusal_patterns.clone(),
            },
            sweep: GridIdentity::new(|d| chosen.specs[d as usize].clone(), chosen.repeat),
            pricing: PricingIdentity {
                prompt_per_million: c.pricing.prompt_per_million,
                cached_prompt_per_million: c.pricing.cached_prompt_per_million,
                completion_per_million: c.pricing.completion_per_million,
                currency: if c.pricing.currency.is_empty() {
                    "USD".into()
                } else {
                    c.pricing.currency.clone()
                },
            },
            scan_patterns: c.scan.patterns.clone(),
            retriever: {
                let r = &c.retriever;
                let pg = r.kind.reads_table();
                (!r.kind.chunks_itself()).then(|| RetrieverIdentity {
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
                // `http` is refused for the judge when the config is loaded.
                model: j.as_chat().model_name(),
                endpoint: j.kind.is_remote().then(|| EndpointIdentity::new(j.http())),
                structured_output: j.structured_output,
                prompt_per_million: j.prompt_per_million,
                completion_per_million: j.completion_per_million,
            }),
        }
    }
}

/// This rageval's identity for `c` swept as the flags `chosen`, its digest taken against the
/// default config.
pub fn run_identity(c: &Config, chosen: &Chosen<'_>) -> RunIdentity {
    RunIdentity::new(
        EffectiveConfig::chosen(c, chosen),
        &EffectiveConfig::new(&Config::default()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapters::http::config::BaseUrls;

    /// The identity of a sweep of `c` with no flag.
    fn identity_of(c: &Config) -> RunIdentity {
        RunIdentity::new(
            EffectiveConfig::new(c),
            &EffectiveConfig::new(&Config::default()),
        )
    }

    fn http_config(yaml: &str) -> Config {
        serde_yaml::from_str(yaml).unwrap()
    }

    #[test]
    fn endpoints_hold_no_credential() {
        let c = http_config(
            "chat:\n  kind: openai\n  base_url: http://user:sk-canary@127.0.0.1:8787/v1?api_key=sk-q\n  headers: {X-Api-Key: sk-header}\n",
        );
        let id = identity_of(&c);
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
        let a = identity_of(&Config::default());
        let back: RunIdentity = serde_json::from_str(&serde_json::to_string(&a).unwrap()).unwrap();
        assert_eq!(back, a);
        assert_eq!(a, identity_of(&Config::default()));
        let mut c = Config::default();
        c.chat.temperature = 0.5;
        assert_ne!(identity_of(&c).digest, a.digest);
        // Neither where reports go nor how fast calls are made is part of it.
        let mut c = Config::default();
        c.sweep.concurrency = 1;
        c.out = Some("elsewhere".into());
        c.chat.stream = true;
        assert_eq!(identity_of(&c).digest, a.digest);
        // A template, a refusal pattern or a judge changes results, so the digest.
        for yaml in [
            "prompt: {user: \"Q: {question}\\n{context}\"}",
            "prompt: {refusal_patterns: [\"not mention\"]}",
            "judge: {kind: mock}",
        ] {
            let c = http_config(yaml);
            assert_ne!(identity_of(&c).digest, a.digest, "{yaml}");
        }
    }

    #[test]
    fn a_judge_endpoint_holds_no_credential() {
        let c = http_config(
            "judge:\n  base_url: http://u:sk-judge@127.0.0.1:9/v1\n  headers: {X-Key: sk-h}\n",
        );
        let id = identity_of(&c);
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
        let digest = |yaml: &str| identity_of(&http_config(yaml));
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
        let a = identity_of(&Config::default());
        assert_eq!(a.digest, crate::base::digest::digest(&[b"{}"]));
        let mut c = Config::default();
        c.chat.temperature = 0.5;
        assert_eq!(
            identity_of(&c).digest,
            crate::base::digest::digest(&[br#"{"chat":{"temperature":0.5}}"#])
        );
    }

    /// Adding a dimension is one place: a grid that names every dimension records each
    /// under its config key.
    #[test]
    fn the_recorded_grid_names_every_dimension() {
        use crate::vocab::dim::Dim;
        let grid = GridIdentity::new(|d| Some(d.name().to_uppercase()), 1);
        let json = serde_json::to_value(&grid).unwrap();
        let keys: Vec<&str> = json
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let mut want: Vec<&str> = Dim::ALL.iter().map(|d| d.config_key()).collect();
        want.sort();
        assert_eq!(keys, want, "serde_json's map is sorted");
        for d in Dim::ALL {
            assert_eq!(json[d.config_key()], d.name().to_uppercase());
        }
    }
}
