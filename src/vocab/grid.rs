//! The sweep grid: value lists parsed from `a..b[:step]` and `a,b,c`, and the settings they
//! span.
//!
//! Thresholds are decimals, not floats, until the moment they are compared with a score: an
//! inclusive range `0.1..0.3` yields exactly 0.1, 0.2 and 0.3, printed as written.

use std::fmt;
use std::str::FromStr;

use serde::{Serialize, Serializer};

use crate::vocab::choices::{Format, Order, Rewrite};

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

/// The profile a setting uses when no `--chat`/`--embedder` flag names one: the config's
/// `chat:` or `embedder:` section.
pub const DEFAULT_PROFILE: &str = "default";

/// One point of the grid. Every writer flattens it through [`Setting::COLUMNS`] and
/// [`Setting::values`], so adding a dimension means adding a field here, nothing else.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct Setting {
    pub min_score: Decimal,
    pub k: usize,
    pub order: Order,
    pub format: Format,
    pub rewrite: Rewrite,
    /// The chat profile (a key of `models:`, or `default` for the `chat:` section).
    pub chat: String,
    /// The chat request's temperature; `None`: the profile's own `temperature`.
    pub temperature: Option<Decimal>,
    /// The embedder profile (a key of `embedders:`, or `default` for the `embedder:` section).
    pub embedder: String,
    /// The builtin chunker's `max_chunk_tokens`; `None`: `corpus.max_chunk_tokens`.
    pub chunk_tokens: Option<usize>,
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
            chat: DEFAULT_PROFILE.to_string(),
            temperature: None,
            embedder: DEFAULT_PROFILE.to_string(),
            chunk_tokens: None,
        }
    }

    /// Names of the dimension columns, in the order [`Setting::values`] gives them.
    pub const COLUMNS: &'static [&'static str] = &[
        "min_score",
        "k",
        "order",
        "format",
        "rewrite",
        "chat",
        "temperature",
        "embedder",
        "chunk_tokens",
    ];

    /// The first [`Setting::COLUMNS`] every record and CSV file names; the later ones (model
    /// profiles, temperature, chunk size) only when some setting moves them off their default,
    /// so results of sweeps without them stay byte-identical.
    pub const ALWAYS_RECORDED: usize = 5;

    /// The dimension values as text, for tables and CSV.
    pub fn values(&self) -> Vec<String> {
        vec![
            self.min_score.to_string(),
            self.k.to_string(),
            self.order.to_string(),
            self.format.to_string(),
            self.rewrite.to_string(),
            self.chat.clone(),
            self.temperature
                .map_or_else(|| DEFAULT_PROFILE.to_string(), |t| t.to_string()),
            self.embedder.clone(),
            self.chunk_tokens
                .map_or_else(|| DEFAULT_PROFILE.to_string(), |n| n.to_string()),
        ]
    }

    /// Whether dimension `i` holds its default value (defaults are left out of ids).
    pub fn is_default(&self, i: usize) -> bool {
        match i {
            2 => self.order == Order::default(),
            3 => self.format == Format::default(),
            4 => self.rewrite == Rewrite::default(),
            5 => self.chat == DEFAULT_PROFILE,
            6 => self.temperature.is_none(),
            7 => self.embedder == DEFAULT_PROFILE,
            8 => self.chunk_tokens.is_none(),
            _ => false,
        }
    }

    /// The setting as an ordered map `{dimension: value}` of the dimensions in `columns`
    /// (indices of [`Setting::COLUMNS`], see [`recorded_columns`]): how the results record
    /// stores it. A temperature or chunk size at its default is `null`.
    pub fn to_map(&self, columns: &[usize]) -> indexmap::IndexMap<String, serde_json::Value> {
        let serde_json::Value::Object(map) =
            serde_json::to_value(self).expect("a setting serializes")
        else {
            unreachable!("a setting serializes as an object")
        };
        columns
            .iter()
            .map(|&i| {
                let name = Self::COLUMNS[i];
                (name.to_string(), map[name].clone())
            })
            .collect()
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
        // The later dimensions are absent from records of sweeps that did not move them.
        let optional = |name: &str| -> Result<Option<String>, String> {
            match map.get(name) {
                None | Some(serde_json::Value::Null) => Ok(None),
                Some(_) => text(name).map(Some),
            }
        };
        let chunk_tokens = match optional("chunk_tokens")? {
            None => None,
            Some(n) => Some(
                n.parse()
                    .map_err(|_| format!("`chunk_tokens` is `{n}`, not a whole number"))?,
            ),
        };
        Ok(Setting {
            min_score: text("min_score")?.parse()?,
            k: k.parse()
                .map_err(|_| format!("`k` is `{k}`, not a whole number"))?,
            order: text("order")?.parse()?,
            format: text("format")?.parse()?,
            rewrite: text("rewrite")?.parse()?,
            chat: optional("chat")?.unwrap_or_else(|| DEFAULT_PROFILE.to_string()),
            temperature: optional("temperature")?.map(|t| t.parse()).transpose()?,
            embedder: optional("embedder")?.unwrap_or_else(|| DEFAULT_PROFILE.to_string()),
            chunk_tokens,
        })
    }

    /// The setting's retrieval variant as `embedder=NAME`, `chunk_tokens=N` or both: those of
    /// the two that `dims` (dimension names) holds.
    pub fn retrieval_label<S: AsRef<str>>(&self, dims: &[S]) -> String {
        let values = self.values();
        (7..=8)
            .filter(|&i| dims.iter().any(|d| d.as_ref() == Self::COLUMNS[i]))
            .map(|i| format!("{}={}", Self::COLUMNS[i], values[i]))
            .collect::<Vec<_>>()
            .join(",")
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

/// Indices of the columns a record and the CSV files name for `settings`: the first
/// [`Setting::ALWAYS_RECORDED`], and each later one that some setting moves off its default.
pub fn recorded_columns(settings: &[Setting]) -> Vec<usize> {
    (0..Setting::COLUMNS.len())
        .filter(|&i| i < Setting::ALWAYS_RECORDED || settings.iter().any(|s| !s.is_default(i)))
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
    /// Chat profiles by name (`default`: the `chat:` section).
    pub chats: Vec<String>,
    /// Chat temperatures (`None`: each profile's own).
    pub temperatures: Vec<Option<Decimal>>,
    /// Embedder profiles by name (`default`: the `embedder:` section).
    pub embedders: Vec<String>,
    /// Chunk sizes of the builtin chunker (`None`: `corpus.max_chunk_tokens`).
    pub chunk_tokens: Vec<Option<usize>>,
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
            chats: vec![DEFAULT_PROFILE.to_string()],
            temperatures: vec![None],
            embedders: vec![DEFAULT_PROFILE.to_string()],
            chunk_tokens: vec![None],
        }
    }

    /// Every setting, minScore-major (the order the flags are usually written in); the model
    /// dimensions vary fastest.
    pub fn settings(&self) -> Vec<Setting> {
        let mut out = Vec::new();
        for &min_score in &self.min_scores {
            for &k in &self.ks {
                for &order in &self.orders {
                    for &format in &self.formats {
                        for &rewrite in &self.rewrites {
                            self.push_models(&mut out, Setting::new(min_score, k), |s| {
                                s.order = order;
                                s.format = format;
                                s.rewrite = rewrite;
                            });
                        }
                    }
                }
            }
        }
        out
    }

    /// Push `base` (after `fill`) once per (chat, temperature, embedder, chunk size).
    fn push_models(&self, out: &mut Vec<Setting>, mut base: Setting, fill: impl Fn(&mut Setting)) {
        fill(&mut base);
        for chat in &self.chats {
            for &temperature in &self.temperatures {
                for embedder in &self.embedders {
                    for &chunk_tokens in &self.chunk_tokens {
                        out.push(Setting {
                            chat: chat.clone(),
                            temperature,
                            embedder: embedder.clone(),
                            chunk_tokens,
                            ..base.clone()
                        });
                    }
                }
            }
        }
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
            self.chats.len(),
            self.temperatures.len(),
            self.embedders.len(),
            self.chunk_tokens.len(),
        ]
        .iter()
        .fold(1usize, |n, &d| n.saturating_mul(d))
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Parse a list of profile names (`default,fast`): duplicates dropped, order kept; whether
/// each is defined is the config's to say.
pub fn parse_profiles(spec: &str) -> Result<Vec<String>, String> {
    let mut out: Vec<String> = Vec::new();
    for item in spec.split(',') {
        let name = item.trim();
        if name.is_empty() {
            return Err(format!("`{spec}` has an empty item"));
        }
        if !out.iter().any(|n| n == name) {
            out.push(name.to_string());
        }
    }
    Ok(out)
}

/// The largest chunk size `--chunk-tokens` takes: far beyond any embedding model's input.
pub const MAX_CHUNK_TOKENS: usize = 1_000_000;

/// Parse a list of chunk sizes (default step 1): whole numbers from 1 to [`MAX_CHUNK_TOKENS`].
pub fn parse_chunk_tokens(spec: &str) -> Result<Vec<usize>, String> {
    let values = parse_decimals(spec, Decimal { units: 1, scale: 0 })?;
    values
        .iter()
        .map(|d| {
            if d.scale != 0 || d.units < 1 || d.units as usize > MAX_CHUNK_TOKENS {
                Err(format!(
                    "a chunk size must be a whole number from 1 to {MAX_CHUNK_TOKENS}, got `{d}`"
                ))
            } else {
                Ok(d.units as usize)
            }
        })
        .collect()
}

/// The highest temperature OpenAI-compatible servers accept.
pub const MAX_TEMPERATURE: f64 = 2.0;

/// Parse a list of temperatures (default step 0.1), each from 0 to [`MAX_TEMPERATURE`].
pub fn parse_temperatures(spec: &str) -> Result<Vec<Decimal>, String> {
    let values = parse_decimals(spec, Decimal { units: 1, scale: 1 })?;
    match values
        .iter()
        .find(|t| !(0.0..=MAX_TEMPERATURE).contains(&t.to_f64()))
    {
        Some(t) => Err(format!(
            "a temperature must be from 0 to {MAX_TEMPERATURE}, got `{t}`"
        )),
        None => Ok(values),
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
