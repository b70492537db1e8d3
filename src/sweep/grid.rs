//! The sweep grid: value lists parsed from `a..b[:step]` and `a,b,c`, and the settings they
//! span.
//!
//! Thresholds are decimals, not floats, until the moment they are compared with a score: an
//! inclusive range `0.1..0.3` yields exactly 0.1, 0.2 and 0.3, printed as written.

use std::fmt;
use std::str::FromStr;

use serde::{Serialize, Serializer};

use crate::prompt::{Format, Order};
use crate::rewrite::Rewrite;

/// At most this many values in one dimension; a typo like `0..1:0.0001` should not plan a
/// million runs.
pub const MAX_VALUES: usize = 1000;

/// An exact decimal number: `units / 10^scale`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Decimal {
    units: i64,
    scale: u32,
}

impl Decimal {
    pub fn to_f64(self) -> f64 {
        // Parsing the decimal text gives the f64 nearest to the written value.
        self.to_string()
            .parse()
            .expect("a decimal prints as a valid float")
    }

    fn rescale(self, scale: u32) -> i64 {
        self.units * 10i64.pow(scale - self.scale)
    }
}

impl FromStr for Decimal {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let t = s.trim();
        let (neg, digits) = match t.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, t.strip_prefix('+').unwrap_or(t)),
        };
        let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
        let valid = !(int.is_empty() && frac.is_empty())
            && int.bytes().all(|b| b.is_ascii_digit())
            && frac.bytes().all(|b| b.is_ascii_digit());
        if !valid {
            return Err(format!("`{s}` is not a number"));
        }
        let frac = frac.trim_end_matches('0');
        if frac.len() > 9 || int.trim_start_matches('0').len() > 9 {
            return Err(format!(
                "`{s}` has too many digits (at most 9 before and 9 after the point)"
            ));
        }
        let scale = frac.len() as u32;
        let units: i64 = format!("{int}{frac}").parse().unwrap_or(0);
        Ok(Decimal {
            units: if neg { -units } else { units },
            scale,
        })
    }
}

impl fmt::Display for Decimal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.units < 0 { "-" } else { "" };
        let abs = self.units.unsigned_abs();
        if self.scale == 0 {
            return write!(f, "{sign}{abs}");
        }
        let div = 10u64.pow(self.scale);
        write!(
            f,
            "{sign}{}.{:0width$}",
            abs / div,
            abs % div,
            width = self.scale as usize
        )
    }
}

impl Serialize for Decimal {
    /// As a JSON number with the written digits (0.3, never 0.30000000000000004).
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(self.to_f64())
    }
}

/// Parse a value list: comma-separated items, each a number or an inclusive range
/// `a..b[:step]` (`default_step` when the step is omitted). Duplicates are dropped; the order
/// is ascending.
pub fn parse_decimals(spec: &str, default_step: Decimal) -> Result<Vec<Decimal>, String> {
    let mut values = Vec::new();
    for item in spec.split(',') {
        let item = item.trim();
        if item.is_empty() {
            return Err(format!("`{spec}` has an empty item"));
        }
        match item.split_once("..") {
            None => values.push(item.parse()?),
            Some((a, rest)) => {
                let (b, step) = match rest.split_once(':') {
                    Some((b, step)) => (b, step.parse()?),
                    None => (rest, default_step),
                };
                let (a, b): (Decimal, Decimal) = (a.parse()?, b.parse()?);
                let scale = a.scale.max(b.scale).max(step.scale);
                let (a_u, b_u, s_u) = (a.rescale(scale), b.rescale(scale), step.rescale(scale));
                if s_u <= 0 {
                    return Err(format!("range `{item}`: the step must be greater than 0"));
                }
                if b_u < a_u {
                    return Err(format!("range `{item}` runs backwards: write `{b}..{a}`"));
                }
                let count = (b_u - a_u) / s_u + 1;
                if count as usize > MAX_VALUES {
                    return Err(format!(
                        "range `{item}` gives {count} values, more than {MAX_VALUES}"
                    ));
                }
                values.extend((0..count).map(|i| normalized(a_u + i * s_u, scale)));
            }
        }
        if values.len() > MAX_VALUES {
            return Err(format!("`{spec}` gives more than {MAX_VALUES} values"));
        }
    }
    values.sort_by(|x, y| x.to_f64().total_cmp(&y.to_f64()));
    values.dedup_by(|x, y| x.to_f64() == y.to_f64());
    Ok(values)
}

fn normalized(mut units: i64, mut scale: u32) -> Decimal {
    while scale > 0 && units % 10 == 0 {
        units /= 10;
        scale -= 1;
    }
    Decimal { units, scale }
}

/// Parse a list of minimum scores (default step 0.1).
pub fn parse_min_scores(spec: &str) -> Result<Vec<Decimal>, String> {
    parse_decimals(spec, Decimal { units: 1, scale: 1 })
}

/// Parse a list of `k` values (default step 1); each must be a whole number of at least 1.
pub fn parse_ks(spec: &str) -> Result<Vec<usize>, String> {
    let values = parse_decimals(spec, Decimal { units: 1, scale: 0 })?;
    values
        .iter()
        .map(|d| {
            if d.scale != 0 || d.units < 1 {
                Err(format!("k must be a whole number of at least 1, got `{d}`"))
            } else {
                Ok(d.units as usize)
            }
        })
        .collect()
}

/// One point of the grid. Every writer flattens it through [`Setting::COLUMNS`] and
/// [`Setting::values`], so adding a dimension means adding a field here, nothing else.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct Setting {
    pub min_score: Decimal,
    pub k: usize,
    pub order: Order,
    pub format: Format,
    pub rewrite: Rewrite,
}

impl Setting {
    /// minScore and k, every other dimension at its default.
    pub fn new(min_score: Decimal, k: usize) -> Self {
        Setting {
            min_score,
            k,
            order: Order::default(),
            format: Format::default(),
            rewrite: Rewrite::default(),
        }
    }

    /// Names of the dimension columns, in the order [`Setting::values`] gives them.
    pub const COLUMNS: &'static [&'static str] = &["min_score", "k", "order", "format", "rewrite"];

    /// The dimension values as text, for tables and CSV.
    pub fn values(&self) -> Vec<String> {
        vec![
            self.min_score.to_string(),
            self.k.to_string(),
            self.order.to_string(),
            self.format.to_string(),
            self.rewrite.to_string(),
        ]
    }

    /// Whether dimension `i` holds its default value (defaults are left out of ids).
    fn is_default(&self, i: usize) -> bool {
        match i {
            2 => self.order == Order::default(),
            3 => self.format == Format::default(),
            4 => self.rewrite == Rewrite::default(),
            _ => false,
        }
    }

    /// The setting as an ordered map `{dimension: value}`, in [`Setting::COLUMNS`] order: how
    /// the results record stores it.
    pub fn to_map(&self) -> indexmap::IndexMap<String, serde_json::Value> {
        match serde_json::to_value(self) {
            Ok(serde_json::Value::Object(map)) => map.into_iter().collect(),
            _ => unreachable!("a setting serializes as an object"),
        }
    }

    /// The setting [`Setting::to_map`] wrote; an error names a missing or malformed value.
    pub fn from_map(map: &indexmap::IndexMap<String, serde_json::Value>) -> Result<Self, String> {
        let get = |name: &str| {
            map.get(name)
                .ok_or_else(|| format!("no value for dimension `{name}`"))
        };
        let text = |name: &str| -> Result<String, String> {
            match get(name)? {
                serde_json::Value::String(s) => Ok(s.clone()),
                // Rust prints floats without an exponent (0.00001, never 1e-5).
                serde_json::Value::Number(n) => Ok(match n.as_f64() {
                    Some(f) if !(n.is_u64() || n.is_i64()) => f.to_string(),
                    _ => n.to_string(),
                }),
                other => Err(format!("`{name}` is `{other}`, not a value")),
            }
        };
        let k = text("k")?;
        Ok(Setting {
            min_score: text("min_score")?.parse()?,
            k: k.parse()
                .map_err(|_| format!("`k` is `{k}`, not a whole number"))?,
            order: text("order")?.parse()?,
            format: text("format")?.parse()?,
            rewrite: text("rewrite")?.parse()?,
        })
    }

    /// A compact, stable identifier: `min_score=0.3,k=4`, plus every dimension that is not at
    /// its default (`min_score=0.3,k=4,order=edge`), so ids of older results stay valid.
    pub fn id(&self) -> String {
        Self::COLUMNS
            .iter()
            .zip(self.values())
            .enumerate()
            .filter(|(i, _)| !self.is_default(*i))
            .map(|(_, (c, v))| format!("{c}={v}"))
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// Indices of the columns worth showing for `settings`: minScore and k always, the other
/// dimensions when some setting moves them off their default.
pub fn shown_columns(settings: &[Setting]) -> Vec<usize> {
    (0..Setting::COLUMNS.len())
        .filter(|&i| i < 2 || settings.iter().any(|s| !s.is_default(i)))
        .collect()
}

/// The dimensions of a sweep; settings are their cartesian product.
#[derive(Debug, Clone, PartialEq)]
pub struct Grid {
    pub min_scores: Vec<Decimal>,
    pub ks: Vec<usize>,
    pub orders: Vec<Order>,
    pub formats: Vec<Format>,
    pub rewrites: Vec<Rewrite>,
}

impl Grid {
    /// A grid over minScore and k, every other dimension at its default.
    pub fn new(min_scores: Vec<Decimal>, ks: Vec<usize>) -> Self {
        Grid {
            min_scores,
            ks,
            orders: vec![Order::default()],
            formats: vec![Format::default()],
            rewrites: vec![Rewrite::default()],
        }
    }

    /// Every setting, minScore-major (the order the flags are usually written in).
    pub fn settings(&self) -> Vec<Setting> {
        let mut out = Vec::new();
        for &min_score in &self.min_scores {
            for &k in &self.ks {
                for &order in &self.orders {
                    for &format in &self.formats {
                        for &rewrite in &self.rewrites {
                            out.push(Setting {
                                min_score,
                                k,
                                order,
                                format,
                                rewrite,
                            });
                        }
                    }
                }
            }
        }
        out
    }

    pub fn max_k(&self) -> usize {
        self.ks.iter().copied().max().unwrap_or(0)
    }

    /// How many settings [`Grid::settings`] would give, without making them.
    pub fn len(&self) -> usize {
        [
            self.min_scores.len(),
            self.ks.len(),
            self.orders.len(),
            self.formats.len(),
            self.rewrites.len(),
        ]
        .iter()
        .fold(1usize, |n, &d| n.saturating_mul(d))
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Parse a list of named values (`score,edge`): each known, duplicates dropped, order kept.
pub fn parse_names<T: FromStr<Err = String> + PartialEq>(spec: &str) -> Result<Vec<T>, String> {
    let mut out = Vec::new();
    for item in spec.split(',') {
        if item.trim().is_empty() {
            return Err(format!("`{spec}` has an empty item"));
        }
        let v: T = item.parse()?;
        if !out.contains(&v) {
            out.push(v);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[Decimal]) -> Vec<String> {
        v.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn inclusive_ranges_are_exact() {
        let v = parse_min_scores("0.1..0.5").unwrap();
        assert_eq!(strings(&v), ["0.1", "0.2", "0.3", "0.4", "0.5"]);
        assert_eq!(v[2].to_f64(), 0.3);
        assert_eq!(
            strings(&parse_min_scores("0..1:0.25").unwrap()),
            ["0", "0.25", "0.5", "0.75", "1"]
        );
        assert_eq!(
            strings(&parse_min_scores("0.1..0.35:0.1").unwrap()),
            ["0.1", "0.2", "0.3"]
        );
        assert_eq!(
            strings(&parse_min_scores("-0.2..0").unwrap()),
            ["-0.2", "-0.1", "0"]
        );
    }

    #[test]
    fn lists_mix_items_sort_and_dedupe() {
        let v = parse_min_scores("0.3, 0.1,0.10,0.2..0.3").unwrap();
        assert_eq!(strings(&v), ["0.1", "0.2", "0.3"]);
        assert_eq!(parse_ks("8,1,2,4").unwrap(), [1, 2, 4, 8]);
        assert_eq!(parse_ks("1..4").unwrap(), [1, 2, 3, 4]);
        assert_eq!(parse_ks("2..8:3").unwrap(), [2, 5, 8]);
    }

    #[test]
    fn bad_specs_name_the_problem() {
        assert!(parse_min_scores("0.5..0.1")
            .unwrap_err()
            .contains("backwards"));
        assert!(parse_min_scores("0.1..0.5:0").unwrap_err().contains("step"));
        assert!(parse_min_scores("0.1..0.5:-0.1")
            .unwrap_err()
            .contains("step"));
        assert!(parse_min_scores("abc")
            .unwrap_err()
            .contains("not a number"));
        assert!(parse_min_scores("0.1,,0.2").unwrap_err().contains("empty"));
        assert!(parse_min_scores("").unwrap_err().contains("empty"));
        assert!(parse_min_scores("0..1:0.0001")
            .unwrap_err()
            .contains("more than"));
        assert!(parse_ks("0,1").unwrap_err().contains("at least 1"));
        assert!(parse_ks("1.5").unwrap_err().contains("whole"));
        assert!(parse_min_scores("1e3").is_err());
        assert!(parse_min_scores(".").is_err());
    }

    #[test]
    fn settings_are_min_score_major_with_stable_ids() {
        let mut grid = Grid::new(parse_min_scores("0.1,0.2").unwrap(), vec![1, 4]);
        let ids: Vec<_> = grid.settings().iter().map(Setting::id).collect();
        assert_eq!(
            ids,
            [
                "min_score=0.1,k=1",
                "min_score=0.1,k=4",
                "min_score=0.2,k=1",
                "min_score=0.2,k=4"
            ]
        );
        assert_eq!(grid.max_k(), 4);
        assert_eq!(shown_columns(&grid.settings()), [0, 1]);
        grid.orders = parse_names("score,edge,score").unwrap();
        grid.formats = parse_names("numbered,tagged").unwrap();
        let settings = grid.settings();
        assert_eq!(settings.len(), 2 * 2 * 2 * 2);
        assert_eq!(
            settings[3].id(),
            "min_score=0.1,k=1,order=edge,format=tagged"
        );
        assert_eq!(shown_columns(&settings), [0, 1, 2, 3]);
        assert!(parse_names::<Order>("score,,edge").is_err());
    }
}
