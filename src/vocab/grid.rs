//! The sweep grid: the settings the dimensions' value lists span ([`super::values`] parses
//! the lists).

use serde::Serialize;

use super::choices::{Format, Order, Rewrite};
use super::dim::{Dim, FromValue, Value};
pub use super::values::*;

/// One point of the grid: a typed field per [`Dim`], which the engine reads. Every writer
/// flattens it through [`Dim::ALL`] and [`Setting::get`].
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

    /// The value of dimension `d`: the one place that maps dimensions to fields, with
    /// [`Setting::set`].
    pub fn get(&self, d: Dim) -> Value {
        match d {
            Dim::MinScore => Value::Decimal(self.min_score),
            Dim::K => Value::Whole(self.k),
            Dim::Order => Value::Order(self.order),
            Dim::Format => Value::Format(self.format),
            Dim::Rewrite => Value::Rewrite(self.rewrite),
            Dim::Chat => Value::Name(self.chat.clone()),
            Dim::Temperature => Value::OptDecimal(self.temperature),
            Dim::Embedder => Value::Name(self.embedder.clone()),
            Dim::ChunkTokens => Value::OptWhole(self.chunk_tokens),
        }
    }

    /// Set dimension `d` to `v`, a value of `d` (as [`Dim::parse`] gives them).
    pub fn set(&mut self, d: Dim, v: Value) {
        match (d, v) {
            (Dim::MinScore, Value::Decimal(x)) => self.min_score = x,
            (Dim::K, Value::Whole(x)) => self.k = x,
            (Dim::Order, Value::Order(x)) => self.order = x,
            (Dim::Format, Value::Format(x)) => self.format = x,
            (Dim::Rewrite, Value::Rewrite(x)) => self.rewrite = x,
            (Dim::Chat, Value::Name(x)) => self.chat = x,
            (Dim::Temperature, Value::OptDecimal(x)) => self.temperature = x,
            (Dim::Embedder, Value::Name(x)) => self.embedder = x,
            (Dim::ChunkTokens, Value::OptWhole(x)) => self.chunk_tokens = x,
            (d, v) => panic!("`{v:?}` is no value of dimension `{d}`"),
        }
    }

    /// The dimension values as text, for tables and CSV, in [`Dim::ALL`] order.
    pub fn values(&self) -> Vec<String> {
        Dim::ALL.map(|d| self.get(d).to_string()).to_vec()
    }

    /// The setting as an ordered map `{dimension: value}` of the dimensions in `columns`
    /// (see [`recorded_columns`]): how the results record stores it. A temperature or chunk
    /// size at its default is `null`.
    pub fn to_map(&self, columns: &[Dim]) -> indexmap::IndexMap<String, serde_json::Value> {
        columns
            .iter()
            .map(|&d| {
                let value = serde_json::to_value(self.get(d)).expect("a value serializes");
                (d.name().to_string(), value)
            })
            .collect()
    }

    /// The setting [`Setting::to_map`] wrote; an error names a missing or malformed value.
    /// The dimensions records name only when moved may be absent (or `null`): their default.
    pub fn from_map(map: &indexmap::IndexMap<String, serde_json::Value>) -> Result<Self, String> {
        let mut s = Setting::new(Decimal::ZERO, 0);
        for d in Dim::ALL {
            let name = d.name();
            let text = match map.get(name) {
                None | Some(serde_json::Value::Null) if !d.always_recorded() => continue,
                None => return Err(format!("no value for dimension `{name}`")),
                Some(serde_json::Value::String(s)) => s.clone(),
                // Rust prints floats without an exponent (0.00001, never 1e-5).
                Some(serde_json::Value::Number(n)) => match n.as_f64() {
                    Some(f) if !(n.is_u64() || n.is_i64()) => f.to_string(),
                    _ => n.to_string(),
                },
                Some(other) => return Err(format!("`{name}` is `{other}`, not a value")),
            };
            s.set(d, d.value_from_text(&text)?);
        }
        Ok(s)
    }

    /// The setting's retrieval variant as `embedder=NAME`, `chunk_tokens=N` or both: those of
    /// the retrieval dimensions that `dims` (dimension names) holds.
    pub fn retrieval_label<S: AsRef<str>>(&self, dims: &[S]) -> String {
        Dim::ALL
            .into_iter()
            .filter(|d| d.is_retrieval() && dims.iter().any(|n| n.as_ref() == d.name()))
            .map(|d| format!("{d}={}", self.get(d)))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// A compact, stable identifier: `min_score=0.3,k=4`, plus every dimension that is not at
    /// its default (`min_score=0.3,k=4,order=edge`), so ids of older results stay valid.
    pub fn id(&self) -> String {
        Dim::ALL
            .into_iter()
            .filter(|d| !d.is_default_in(self))
            .map(|d| format!("{d}={}", self.get(d)))
            .collect::<Vec<_>>()
            .join(",")
    }
}

impl Dim {
    /// Whether `s` holds this dimension's default (defaults are left out of ids); never for
    /// minScore and k, which have none.
    pub fn is_default_in(self, s: &Setting) -> bool {
        self.default_value().is_some_and(|v| s.get(self) == v)
    }
}

/// The columns worth showing for `settings`: minScore and k always, the other dimensions
/// when some setting moves them off their default.
pub fn shown_columns(settings: &[Setting]) -> Vec<Dim> {
    Dim::ALL
        .into_iter()
        .filter(|d| d.default_value().is_none() || settings.iter().any(|s| !d.is_default_in(s)))
        .collect()
}

/// The columns a record and the CSV files name for `settings`: those
/// [`Dim::always_recorded`], and each other one that some setting moves off its default.
pub fn recorded_columns(settings: &[Setting]) -> Vec<Dim> {
    Dim::ALL
        .into_iter()
        .filter(|d| d.always_recorded() || settings.iter().any(|s| !d.is_default_in(s)))
        .collect()
}

/// The dimensions of a sweep, a map from [`Dim`] to its values; settings are their
/// cartesian product.
#[derive(Debug, Clone, PartialEq)]
pub struct Grid {
    axes: [Vec<Value>; Dim::COUNT],
}

impl Grid {
    /// A grid over minScore and k, every other dimension at its default.
    pub fn new(min_scores: Vec<Decimal>, ks: Vec<usize>) -> Self {
        Grid::from_fn(|d| d.default_value().into_iter().collect())
            .with(Dim::MinScore, min_scores)
            .with(Dim::K, ks)
    }

    /// A grid with the values `values(d)` for every dimension `d`.
    pub fn from_fn(values: impl FnMut(Dim) -> Vec<Value>) -> Self {
        Grid {
            axes: Dim::ALL.map(values),
        }
    }

    /// A grid with the values `values(d)` for every dimension `d`, or the first error.
    pub fn try_from_fn<E>(mut values: impl FnMut(Dim) -> Result<Vec<Value>, E>) -> Result<Self, E> {
        let mut axes: [Vec<Value>; Dim::COUNT] = Default::default();
        for d in Dim::ALL {
            axes[d as usize] = values(d)?;
        }
        Ok(Grid { axes })
    }

    /// This grid with the values of `d` replaced.
    pub fn with<T: Into<Value>>(mut self, d: Dim, values: impl IntoIterator<Item = T>) -> Self {
        self.axes[d as usize] = values.into_iter().map(Into::into).collect();
        self
    }

    /// The values of `d`.
    pub fn axis(&self, d: Dim) -> &[Value] {
        &self.axes[d as usize]
    }

    /// The values of `d`, typed (`grid.typed::<usize>(Dim::K)`).
    pub fn typed<'a, T: FromValue<'a>>(&'a self, d: Dim) -> impl Iterator<Item = T> + 'a {
        self.axis(d).iter().map(move |v| {
            T::from_value(v).unwrap_or_else(|| panic!("`{v:?}` is no value of dimension `{d}`"))
        })
    }

    /// Whether `d` holds its default alone (the grid does not sweep it).
    pub fn at_default(&self, d: Dim) -> bool {
        d.default_value().is_some_and(|v| self.axis(d) == [v])
    }

    pub fn ks(&self) -> impl Iterator<Item = usize> + '_ {
        self.typed(Dim::K)
    }

    pub fn rewrites(&self) -> impl Iterator<Item = Rewrite> + '_ {
        self.typed(Dim::Rewrite)
    }

    /// Chat profiles by name (`default`: the `chat:` section).
    pub fn chats(&self) -> impl Iterator<Item = &str> + '_ {
        self.typed(Dim::Chat)
    }

    /// Chat temperatures (`None`: each profile's own).
    pub fn temperatures(&self) -> impl Iterator<Item = Option<Decimal>> + '_ {
        self.typed(Dim::Temperature)
    }

    /// Embedder profiles by name (`default`: the `embedder:` section).
    pub fn embedders(&self) -> impl Iterator<Item = &str> + '_ {
        self.typed(Dim::Embedder)
    }

    /// Chunk sizes of the builtin chunker (`None`: `corpus.max_chunk_tokens`).
    pub fn chunk_tokens(&self) -> impl Iterator<Item = Option<usize>> + '_ {
        self.typed(Dim::ChunkTokens)
    }

    /// Every setting, minScore-major (the order the flags are usually written in): the
    /// dimensions in [`Dim::ALL`] order, the last varying fastest.
    pub fn settings(&self) -> Vec<Setting> {
        let n = self.len();
        let mut out = Vec::with_capacity(n);
        let mut s = Setting::new(Decimal::ZERO, 0);
        for i in 0..n {
            let mut rest = i;
            for d in Dim::ALL.into_iter().rev() {
                let axis = self.axis(d);
                s.set(d, axis[rest % axis.len()].clone());
                rest /= axis.len();
            }
            out.push(s.clone());
        }
        out
    }

    pub fn max_k(&self) -> usize {
        self.ks().max().unwrap_or(0)
    }

    /// How many settings [`Grid::settings`] would give, without making them.
    pub fn len(&self) -> usize {
        self.axes
            .iter()
            .fold(1usize, |n, axis| n.saturating_mul(axis.len()))
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
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
        let grid = Grid::new(parse_min_scores("0.1,0.2").unwrap(), vec![1, 4]);
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
        assert_eq!(shown_columns(&grid.settings()), [Dim::MinScore, Dim::K]);
        let grid = grid
            .with(
                Dim::Order,
                parse_names::<Order>("score,edge,score").unwrap(),
            )
            .with(
                Dim::Format,
                parse_names::<Format>("numbered,tagged").unwrap(),
            );
        let settings = grid.settings();
        assert_eq!(settings.len(), 2 * 2 * 2 * 2);
        assert_eq!(grid.len(), settings.len());
        assert_eq!(
            settings[3].id(),
            "min_score=0.1,k=1,order=edge,format=tagged"
        );
        assert_eq!(
            shown_columns(&settings),
            [Dim::MinScore, Dim::K, Dim::Order, Dim::Format]
        );
        assert!(parse_names::<Order>("score,,edge").is_err());
    }

    /// The grid's loops nest in [`Dim::ALL`] order, the last dimension fastest, as the nested
    /// loops over typed fields did.
    #[test]
    fn the_last_dimension_varies_fastest() {
        let grid = Dim::ALL[2..].iter().fold(
            Grid::new(parse_min_scores("0.1,0.2").unwrap(), vec![1, 2]),
            |g, &d| {
                let spec = match d {
                    Dim::Order => "score,edge",
                    Dim::Format => "numbered,tagged",
                    Dim::Rewrite => "none,model",
                    Dim::Chat | Dim::Embedder => "default,b",
                    _ => "1,2",
                };
                let values = d.parse(spec).unwrap();
                g.with(d, values)
            },
        );
        let settings = grid.settings();
        assert_eq!(settings.len(), 1 << Dim::COUNT);
        for (i, s) in settings.iter().enumerate() {
            for (j, d) in Dim::ALL.into_iter().enumerate() {
                let bit = (i >> (Dim::COUNT - 1 - j)) & 1;
                assert_eq!(s.get(d), grid.axis(d)[bit], "setting {i}, {d}");
            }
        }
        let map = settings[5].to_map(&Dim::ALL);
        assert_eq!(Setting::from_map(&map).unwrap(), settings[5]);
        assert_eq!(
            serde_json::to_string(&map).unwrap(),
            r#"{"min_score":0.1,"k":1,"order":"score","format":"numbered","rewrite":"none","chat":"default","temperature":2.0,"embedder":"default","chunk_tokens":2}"#
        );
    }
}
