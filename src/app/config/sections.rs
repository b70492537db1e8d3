//! The sections of `rageval.yaml`, each with its documented defaults.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::base::problem::{Checked, Problem};
use crate::vocab::dim::Dim;
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

/// A dimension's field of `sweep:`: its spec in the flag syntax, absent when not given.
trait DimSpec {
    fn spec(&self) -> Option<String>;
}

impl DimSpec for ValueSpec {
    fn spec(&self) -> Option<String> {
        Some(self.to_spec())
    }
}

impl DimSpec for NameSpec {
    fn spec(&self) -> Option<String> {
        Some(self.to_spec())
    }
}

impl DimSpec for Option<ValueSpec> {
    fn spec(&self) -> Option<String> {
        self.as_ref().map(ValueSpec::to_spec)
    }
}

impl DimSpec for Option<NameSpec> {
    fn spec(&self) -> Option<String> {
        self.as_ref().map(NameSpec::to_spec)
    }
}

/// The one place that maps the dimension fields of [`SweepConfig`] to [`Dim`]: a test holds
/// it to [`Dim::ALL`] and to the section's schema.
macro_rules! dim_fields {
    ($($dim:ident => $field:ident),* $(,)?) => {
        impl SweepConfig {
            /// The spec of dimension `d` in the flag syntax; `None`: not given, its default.
            pub fn spec(&self, d: Dim) -> Option<String> {
                match d {
                    $(Dim::$dim => DimSpec::spec(&self.$field),)*
                }
            }
        }
    };
}

dim_fields!(
    MinScore => min_score,
    K => k,
    Order => order,
    Format => format,
    Rewrite => rewrite,
    Chat => chat,
    Temperature => temperature,
    Embedder => embedder,
    ChunkTokens => chunk_tokens,
);

impl SweepConfig {
    /// The section's own check (its dimensions' values are checked with the profiles they
    /// name, by [`super::sweep_grid`]).
    pub fn check(&self) -> Checked {
        if let Some(why) = crate::base::input::concurrency_problem(self.concurrency) {
            return Err(Problem::new("concurrency", why));
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct PricingConfig {
    /// Price of a million prompt tokens.
    pub prompt_per_million: f64,
    /// Price of a million prompt tokens the server reused from its prompt cache (OpenAI bills
    /// them at a discount); unset: `prompt_per_million`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cached_prompt_per_million: Option<f64>,
    /// Price of a million completion tokens.
    pub completion_per_million: f64,
    /// Currency of the prices, for display.
    pub currency: String,
    /// The share taken off the price of tokens answered through a batch engine
    /// (`sweep --batch-out` and `batch import`, `chat.batch`): 0.5 at OpenAI and Azure.
    pub batch_discount: f64,
}

impl Default for PricingConfig {
    fn default() -> Self {
        PricingConfig {
            prompt_per_million: 0.0,
            cached_prompt_per_million: None,
            completion_per_million: 0.0,
            currency: String::new(),
            batch_discount: 0.5,
        }
    }
}

impl PricingConfig {
    /// The section's own check: prices of 0 or more.
    pub fn check(&self) -> Checked {
        let cached = self
            .cached_prompt_per_million
            .map(|v| ("cached_prompt_per_million", v));
        for (field, v) in [
            ("prompt_per_million", self.prompt_per_million),
            ("completion_per_million", self.completion_per_million),
        ]
        .into_iter()
        .chain(cached)
        {
            crate::vocab::call::check_price(v).map_err(|msg| Problem::new(field, msg))?;
        }
        if !(0.0..1.0).contains(&self.batch_discount) {
            return Err(Problem::new(
                "batch_discount",
                format!(
                    "must be a share from 0 to below 1 (0.5: half price), got {}",
                    self.batch_discount
                ),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::SweepConfig;
    use crate::analysis::insight::config::RecommendConfig;
    use crate::output::gate::config::GateConfig;
    use crate::vocab::dim::Dim;
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

    /// Adding a dimension is one place: the keys of `sweep:` are the dimensions' config keys
    /// (and `concurrency`), and each key reads into its own [`Dim`].
    #[test]
    fn the_sweep_keys_are_the_dimensions() {
        let schema = schemars::schema_for!(SweepConfig).to_value();
        let mut keys: Vec<&str> = schema["properties"]
            .as_object()
            .expect("a section is an object")
            .keys()
            .map(String::as_str)
            .filter(|k| *k != "concurrency")
            .collect();
        keys.sort();
        let mut want: Vec<&str> = Dim::ALL.iter().map(|d| d.config_key()).collect();
        want.sort();
        assert_eq!(keys, want);

        let defaults = SweepConfig::default();
        for dim in Dim::ALL {
            let section: SweepConfig =
                serde_yaml::from_str(&format!("{}: \"x,y\"", dim.config_key())).unwrap();
            for d in Dim::ALL {
                let want = if d == dim {
                    Some("x,y".to_string())
                } else {
                    defaults.spec(d)
                };
                assert_eq!(section.spec(d), want, "{} sets {d:?}", dim.config_key());
            }
        }
    }
}
