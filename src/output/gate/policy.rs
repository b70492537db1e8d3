//! What the gate demands: the gated setting, absolute limits and the baseline rules, merged
//! from the `gate:` section of `rageval.yaml` and the flags (flags win) by `settings.rs`.

use std::fmt;
use std::path::PathBuf;

use crate::output::report::Results;
use crate::sweep::Setting;
use crate::vocab::dim::Dim;
use crate::vocab::limit::Limits;

/// The checked gate policy.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    /// The gated setting; `None`: the results' recommended setting.
    pub setting: Option<SettingSpec>,
    /// Results to compare with.
    pub baseline: Option<PathBuf>,
    /// Absolute limits at the gated setting; a limit left out is not checked.
    pub limits: Limits,
    /// How much each rate may worsen against the baseline (a share, 0.05 = 5 points).
    pub tolerance: f64,
    /// Significance level of the paired test.
    pub alpha: f64,
    /// Fail a baseline regression only when the paired test finds it significant.
    pub require_significance: bool,
    /// Fail when the gated setting is not certified.
    pub require_certified: bool,
    /// Limits for the questions of a tag (`gate.tags`), in the config's order.
    pub tags: Vec<(String, Limits)>,
    /// The trend alarm, when on.
    pub trend: Option<super::trend::TrendPolicy>,
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
            require_certified: false,
            tags: Vec::new(),
            trend: None,
        }
    }
}

/// The default significance level.
pub const DEFAULT_ALPHA: f64 = 0.05;

/// A check of one number of the policy: the number, or why it is wrong.
pub type Validator = fn(f64) -> Result<f64, String>;

pub use crate::vocab::limit::check_share;

/// Check a significance level: strictly between 0 and 1.
pub fn check_alpha(v: f64) -> Result<f64, String> {
    if v > 0.0 && v < 1.0 {
        Ok(v)
    } else {
        Err(format!("must be between 0 and 1 (exclusive), not {v}"))
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
    /// The one setting of `results` that this spec names, by index. Numbers compare as
    /// numbers, so `min_score=0.30` names the setting `min_score=0.3`.
    pub fn find_in(&self, results: &Results) -> Result<usize, String> {
        self.find(&results.settings, results.recorded())
    }

    /// The one of `settings` that this spec names, by index, when the dimensions are
    /// `columns`.
    pub fn find(&self, settings: &[Setting], columns: &[Dim]) -> Result<usize, String> {
        let dimensions: Vec<String> = columns.iter().map(|d| d.name().to_string()).collect();
        for (key, _) in &self.pairs {
            if !dimensions.contains(key) {
                return Err(format!(
                    "`{key}` is not a setting dimension; the dimensions are {}",
                    backticked(&dimensions)
                ));
            }
        }
        let ids: Vec<String> = settings.iter().map(Setting::id).collect();
        let matches: Vec<usize> = (0..settings.len())
            .filter(|&i| self.matches(&settings[i].to_map(columns)))
            .collect();
        // A dimension the spec leaves out means that dimension at its default: ids name only
        // dimensions off their default, so the setting whose id uses no other key is the one.
        let narrowed: Vec<usize> = matches
            .iter()
            .copied()
            .filter(|&i| {
                ids[i]
                    .split(',')
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
            [one] => Ok(*one),
            [] => Err(format!(
                "no setting is `{self}`; the settings are {}",
                listed(ids.iter().map(String::as_str), 8)
            )),
            many => Err(format!(
                "`{self}` matches {} settings ({}); name every dimension",
                many.len(),
                listed(many.iter().map(|&i| ids[i].as_str()), 8)
            )),
        }
    }

    fn matches(&self, fields: &indexmap::IndexMap<String, serde_json::Value>) -> bool {
        self.pairs.iter().all(|(key, want)| {
            let Some(have) = fields.get(key) else {
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
    use crate::vocab::grid::recorded_columns;

    fn setting(min_score: &str, k: usize) -> Setting {
        Setting::new(min_score.parse().unwrap(), k)
    }

    /// The id of the setting of `settings` that `spec` names, as a record holds them.
    fn find(settings: &[Setting], spec: &str) -> Result<String, String> {
        spec.parse::<SettingSpec>()
            .unwrap()
            .find(settings, &recorded_columns(settings))
            .map(|i| settings[i].id())
    }

    #[test]
    fn unnamed_dimensions_mean_their_defaults() {
        let mut edge = setting("0.2", 4);
        edge.order = crate::adapters::prompt::Order::Edge;
        let settings = [setting("0.2", 4), edge];
        assert_eq!(settings[1].id(), "min_score=0.2,k=4,order=edge");
        assert_eq!(
            find(&settings, "min_score=0.2,k=4").unwrap(),
            "min_score=0.2,k=4"
        );
        assert_eq!(
            find(&settings, "k=4,order=edge,min_score=0.20").unwrap(),
            "min_score=0.2,k=4,order=edge"
        );
        assert!(find(&settings, "k=4,order=edge,min_score=0.5").is_err());
    }

    /// The grid 0.1, 0.3 x 1, 4.
    fn grid() -> Vec<Setting> {
        ["0.1", "0.3"]
            .iter()
            .flat_map(|m| [1, 4].map(|k| setting(m, k)))
            .collect()
    }

    #[test]
    fn finds_a_setting_in_any_order_comparing_numbers() {
        let g = grid();
        assert_eq!(find(&g, "min_score=0.3,k=4").unwrap(), "min_score=0.3,k=4");
        assert_eq!(
            find(&g, " k = 4 , min_score=0.30").unwrap(),
            "min_score=0.3,k=4"
        );
        assert_eq!(find(&g, "k=1,min_score=.1").unwrap(), "min_score=0.1,k=1");
    }

    #[test]
    fn finds_a_setting_of_the_fixture_results() {
        let r = crate::output::report::fixture::results();
        let i = "k=2,min_score=0.40"
            .parse::<SettingSpec>()
            .unwrap()
            .find_in(&r)
            .unwrap();
        assert_eq!(r.setting_id(i), "min_score=0.4,k=2");
    }

    #[test]
    fn says_what_is_wrong_with_a_spec() {
        let g = grid();
        let err = find(&g, "min_score=0.2,k=4").unwrap_err();
        assert!(err.contains("no setting is `min_score=0.2,k=4`"), "{err}");
        assert!(err.contains("`min_score=0.1,k=1`"), "{err}");
        let err = find(&g, "min_score=0.3").unwrap_err();
        assert!(err.contains("matches 2 settings"), "{err}");
        let err = find(&g, "chat=big").unwrap_err();
        assert!(err.contains("`chat` is not a setting dimension"), "{err}");
        assert!(err.contains("`min_score`, `k`, `order`"), "{err}");
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
    }
}
