//! What the gate demands: the gated setting, absolute limits and the baseline rules, merged
//! from the `gate:` section of `rageval.yaml` and the flags (flags win) by `settings.rs`.

use std::fmt;
use std::path::PathBuf;

use super::results::{ResultsFile, SettingRow};

/// The checked gate policy.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    /// The gated setting; `None`: the results' recommended setting.
    pub setting: Option<SettingSpec>,
    /// Results to compare with.
    pub baseline: Option<PathBuf>,
    pub limits: Limits,
    /// How much each rate may worsen against the baseline (a share, 0.05 = 5 points).
    pub tolerance: f64,
    /// Significance level of the paired test.
    pub alpha: f64,
    /// Fail a baseline regression only when the paired test finds it significant.
    pub require_significance: bool,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            setting: None,
            baseline: None,
            limits: Limits::default(),
            tolerance: 0.0,
            alpha: DEFAULT_ALPHA,
            require_significance: false,
        }
    }
}

/// The default significance level.
pub const DEFAULT_ALPHA: f64 = 0.05;

/// Absolute limits at the gated setting; `None` is not checked.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Limits {
    pub max_unwanted_answer_rate: Option<f64>,
    pub max_false_refusal_rate: Option<f64>,
    pub max_error_runs: u64,
    pub max_prompt_tokens_per_question: Option<f64>,
    pub min_answer_match_rate: Option<f64>,
    /// Highest share of repeated runs whose outcome differs from their question's most
    /// frequent one (`--repeat N`).
    pub max_flip_rate: Option<f64>,
    /// Highest share of answerable questions answered wrongly (the judge marked the answer
    /// incorrect or, ungraded, it holds none of the expected answer texts).
    pub max_wrong_answer_rate: Option<f64>,
}

/// A check of one number of the policy: the number, or why it is wrong.
pub type Validator = fn(f64) -> Result<f64, String>;

/// Check a share such as a rate limit or the tolerance: a number from 0 to 1.
pub fn check_share(v: f64) -> Result<f64, String> {
    if (0.0..=1.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!("must be a share from 0 to 1, not {v}"))
    }
}

/// Check a significance level: strictly between 0 and 1.
pub fn check_alpha(v: f64) -> Result<f64, String> {
    if v > 0.0 && v < 1.0 {
        Ok(v)
    } else {
        Err(format!("must be between 0 and 1 (exclusive), not {v}"))
    }
}

/// Check a token count limit: 0 or more.
pub fn check_tokens(v: f64) -> Result<f64, String> {
    if v >= 0.0 && v.is_finite() {
        Ok(v)
    } else {
        Err(format!("must be a number of tokens of 0 or more, not {v}"))
    }
}

/// A setting named by its dimension values, `min_score=0.3,k=4`, in any order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingSpec {
    pairs: Vec<(String, String)>,
}

impl std::str::FromStr for SettingSpec {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let mut pairs: Vec<(String, String)> = Vec::new();
        for item in s.split(',') {
            let Some((key, value)) = item.split_once('=') else {
                return Err(format!(
                    "`{}` is not `name=value` (write e.g. `min_score=0.3,k=4`)",
                    item.trim()
                ));
            };
            let (key, value) = (key.trim(), value.trim());
            if key.is_empty() || value.is_empty() {
                return Err(format!(
                    "`{}` is not `name=value` (write e.g. `min_score=0.3,k=4`)",
                    item.trim()
                ));
            }
            if pairs.iter().any(|(k, _)| k == key) {
                return Err(format!("`{key}` is given twice"));
            }
            pairs.push((key.to_string(), value.to_string()));
        }
        Ok(SettingSpec { pairs })
    }
}

impl fmt::Display for SettingSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text: Vec<String> = self.pairs.iter().map(|(k, v)| format!("{k}={v}")).collect();
        f.write_str(&text.join(","))
    }
}

impl SettingSpec {
    /// The one setting of `results` that this spec names. Numbers compare as numbers, so
    /// `min_score=0.30` names the setting `min_score=0.3`.
    pub fn find<'r>(&self, results: &'r ResultsFile) -> Result<&'r SettingRow, String> {
        for (key, _) in &self.pairs {
            let known = if results.dimensions.is_empty() {
                results.settings.iter().any(|s| s.fields.contains_key(key))
            } else {
                results.dimensions.contains(key)
            };
            if !known {
                return Err(format!(
                    "`{key}` is not a setting dimension; the dimensions are {}",
                    backticked(&results.dimensions)
                ));
            }
        }
        let matches: Vec<&SettingRow> = results
            .settings
            .iter()
            .filter(|s| self.matches(s))
            .collect();
        // A dimension the spec leaves out means that dimension at its default: ids name only
        // dimensions off their default, so the setting whose id uses no other key is the one.
        let narrowed: Vec<&SettingRow> = matches
            .iter()
            .copied()
            .filter(|s| {
                s.id.split(',')
                    .filter_map(|pair| pair.split_once('=').map(|(k, _)| k))
                    .all(|k| self.pairs.iter().any(|(key, _)| key == k))
            })
            .collect();
        let matches = if matches.len() > 1 && narrowed.len() == 1 {
            narrowed
        } else {
            matches
        };
        match matches.as_slice() {
            [one] => Ok(one),
            [] => Err(format!(
                "no setting is `{self}`; the settings are {}",
                listed(results.settings.iter().map(|s| s.id.as_str()), 8)
            )),
            many => Err(format!(
                "`{self}` matches {} settings ({}); name every dimension",
                many.len(),
                listed(many.iter().map(|s| s.id.as_str()), 8)
            )),
        }
    }

    fn matches(&self, setting: &SettingRow) -> bool {
        self.pairs.iter().all(|(key, want)| {
            let Some(have) = setting.fields.get(key) else {
                return false;
            };
            match have {
                serde_json::Value::Number(n) => match (n.as_f64(), want.parse::<f64>()) {
                    (Some(a), Ok(b)) => (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0),
                    _ => false,
                },
                serde_json::Value::String(s) => s == want,
                serde_json::Value::Bool(b) => want.parse::<bool>() == Ok(*b),
                _ => false,
            }
        })
    }
}

fn backticked(names: &[String]) -> String {
    let v: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    v.join(", ")
}

/// `a, b, c and 5 more`, for messages about long lists.
pub fn listed<'a>(items: impl IntoIterator<Item = &'a str>, max: usize) -> String {
    let items: Vec<&str> = items.into_iter().collect();
    if items.is_empty() {
        return "none".into();
    }
    let shown: Vec<String> = items.iter().take(max).map(|i| format!("`{i}`")).collect();
    let mut text = shown.join(", ");
    if items.len() > max {
        text.push_str(&format!(" and {} more", items.len() - max));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unnamed_dimensions_mean_their_defaults() {
        let text = r#"{"schema": "rageval.results/2", "dimensions": ["min_score", "k", "order"],
            "settings": [
              {"id": "min_score=0.2,k=4", "min_score": 0.2, "k": 4, "order": "score"},
              {"id": "min_score=0.2,k=4,order=edge", "min_score": 0.2, "k": 4, "order": "edge"}
            ], "questions": [], "runs": []}"#;
        let r = super::super::results::parse(std::path::Path::new("r.json"), text).unwrap();
        let find = |spec: &str| {
            spec.parse::<SettingSpec>()
                .unwrap()
                .find(&r)
                .map(|s| s.id.clone())
        };
        assert_eq!(find("min_score=0.2,k=4").unwrap(), "min_score=0.2,k=4");
        assert_eq!(
            find("k=4,order=edge,min_score=0.20").unwrap(),
            "min_score=0.2,k=4,order=edge"
        );
        assert!(find("k=4,order=edge,min_score=0.5").is_err());
    }

    fn results() -> ResultsFile {
        let settings: Vec<String> = ["0.1", "0.3"]
            .iter()
            .flat_map(|m| {
                [1, 4].map(|k| {
                    format!(r#"{{"id": "min_score={m},k={k}", "min_score": {m}, "k": {k}}}"#)
                })
            })
            .collect();
        let text = format!(
            r#"{{"schema": "rageval.results/2", "dimensions": ["min_score", "k"],
            "settings": [{}], "questions": [], "runs": []}}"#,
            settings.join(",")
        );
        super::super::results::parse(std::path::Path::new("r.json"), &text).unwrap()
    }

    fn spec(s: &str) -> SettingSpec {
        s.parse().unwrap()
    }

    #[test]
    fn finds_a_setting_in_any_order_comparing_numbers() {
        let r = results();
        assert_eq!(
            spec("min_score=0.3,k=4").find(&r).unwrap().id,
            "min_score=0.3,k=4"
        );
        assert_eq!(
            spec(" k = 4 , min_score=0.30").find(&r).unwrap().id,
            "min_score=0.3,k=4"
        );
        assert_eq!(
            spec("k=1,min_score=.1").find(&r).unwrap().id,
            "min_score=0.1,k=1"
        );
    }

    #[test]
    fn says_what_is_wrong_with_a_spec() {
        let r = results();
        let err = spec("min_score=0.2,k=4").find(&r).unwrap_err();
        assert!(err.contains("no setting is `min_score=0.2,k=4`"), "{err}");
        assert!(err.contains("`min_score=0.1,k=1`"), "{err}");
        let err = spec("min_score=0.3").find(&r).unwrap_err();
        assert!(err.contains("matches 2 settings"), "{err}");
        let err = spec("order=edge").find(&r).unwrap_err();
        assert!(err.contains("`order` is not a setting dimension"), "{err}");
        assert!("min_score"
            .parse::<SettingSpec>()
            .unwrap_err()
            .contains("name=value"));
        assert!("k=1,k=2"
            .parse::<SettingSpec>()
            .unwrap_err()
            .contains("twice"));
        assert!("k=".parse::<SettingSpec>().is_err());
    }

    #[test]
    fn checks_shares_and_alpha() {
        assert!(check_share(0.0).is_ok() && check_share(1.0).is_ok());
        assert!(check_share(1.5).is_err() && check_share(-0.1).is_err());
        assert!(check_share(f64::NAN).is_err());
        assert!(check_alpha(0.05).is_ok());
        assert!(check_alpha(0.0).is_err() && check_alpha(1.0).is_err());
        assert!(check_tokens(f64::INFINITY).is_err() && check_tokens(300.0).is_ok());
    }
}
