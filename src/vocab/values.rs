//! A dimension's value list parsed from `a..b[:step]` and `a,b,c`: exact decimals, whole
//! numbers, profile names and named choices.
//!
//! Thresholds are decimals, not floats, until the moment they are compared with a score: an
//! inclusive range `0.1..0.3` yields exactly 0.1, 0.2 and 0.3, printed as written.

use std::fmt;
use std::str::FromStr;

use serde::{Serialize, Serializer};

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
    /// Zero, with no digits after the point.
    pub const ZERO: Decimal = Decimal { units: 0, scale: 0 };

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
