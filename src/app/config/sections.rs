//! The sections of `rageval.yaml`, each with its documented defaults.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::vocab::spec::{NameSpec, ValueSpec};

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

#[cfg(test)]
mod tests {
    use crate::analysis::insight::config::RecommendConfig;
    use crate::output::gate::config::GateConfig;
    use crate::vocab::limit::{Limit, Limits, Scope};
    use schemars::JsonSchema;

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
