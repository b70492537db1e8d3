//! The history for people and programs: one [`Row`] per entry at one setting, shown as a
//! table with a sparkline per rate, or written as CSV or JSON (the same rows).

use std::fmt::Write as _;

use serde::Serialize;

use super::{Entry, Rate, SettingEntry};
use crate::analysis::insight::format::percent;
use crate::analysis::insight::wilson::wilson;
use crate::output::gate::SettingSpec;
use crate::vocab::grid::Setting;

/// An entry as read, with its place in the file and what changed since the entry before it.
#[derive(Debug, Clone)]
pub struct Line {
    pub line: usize,
    /// The config, the question set, or both differ from the previous entry's.
    pub changed: Changed,
    pub entry: Entry,
}

/// What differs from the previous entry of the file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Changed {
    pub config: bool,
    pub questions: bool,
}

/// Follows the file's entries one after another, saying what changed at each.
#[derive(Debug, Default)]
pub struct Changes {
    /// The previous entry's config and question set digests.
    previous: Option<(String, String)>,
}

impl Changes {
    /// What `entry` changed since the entry before it (nothing for the first).
    pub fn next(&mut self, entry: &Entry) -> Changed {
        let now = (entry.config_digest.clone(), entry.questions_digest.clone());
        let changed = self
            .previous
            .as_ref()
            .map_or_else(Changed::default, |b| Changed {
                config: b.0 != now.0,
                questions: b.1 != now.1,
            });
        self.previous = Some(now);
        changed
    }
}

impl Changed {
    /// `config`, `questions`, `config, questions` or nothing.
    pub fn text(self) -> String {
        let mut parts = Vec::new();
        if self.config {
            parts.push("config");
        }
        if self.questions {
            parts.push("questions");
        }
        parts.join(", ")
    }
}

/// One entry at the chosen setting: a row of the table, the CSV and the JSON.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// The entry's line in the history file.
    pub line: usize,
    pub time: String,
    pub commit: Option<String>,
    pub dirty: Option<bool>,
    /// `config`, `questions` or both: what differs from the entry before it in the file.
    pub changed: String,
    pub tool_version: String,
    pub config_digest: String,
    pub questions_digest: String,
    pub results_digest: String,
    pub results: String,
    pub questions: usize,
    pub recommended: Option<String>,
    pub certified: bool,
    /// The setting of the columns below; null when this entry did not sweep it.
    pub setting: Option<String>,
    pub unwanted_answer: Option<usize>,
    pub unanswerable: Option<usize>,
    pub unwanted_answer_rate: Option<f64>,
    pub unwanted_answer_rate_lo: Option<f64>,
    pub unwanted_answer_rate_hi: Option<f64>,
    pub false_refusal: Option<usize>,
    pub answerable: Option<usize>,
    pub false_refusal_rate: Option<f64>,
    pub false_refusal_rate_lo: Option<f64>,
    pub false_refusal_rate_hi: Option<f64>,
    pub wrong_answer: Option<usize>,
    pub wrong_answer_rate: Option<f64>,
    pub wrong_answer_rate_lo: Option<f64>,
    pub wrong_answer_rate_hi: Option<f64>,
    pub error: Option<usize>,
    pub prompt_tokens_per_question: Option<f64>,
    /// Tokens and cost of the calls the sweep made.
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub cost: f64,
    pub currency: String,
}

/// A rate of a row with its 95% Wilson interval.
pub struct Point {
    pub x: u64,
    pub n: u64,
    pub rate: f64,
    pub lo: f64,
    pub hi: f64,
}

impl Row {
    /// Row of `read` at `setting` (an id of its settings, or absent).
    pub fn new(read: &Line, setting: Option<&str>) -> Row {
        let e = &read.entry;
        let s = setting.and_then(|id| e.settings.get(id).map(|s| (id, s)));
        let point = |rate: Rate| s.and_then(|(_, s)| point(s, rate));
        let (ua, fr, wa) = (
            point(Rate::UnwantedAnswerRate),
            point(Rate::FalseRefusalRate),
            point(Rate::WrongAnswerRate),
        );
        Row {
            line: read.line,
            time: e.time.clone(),
            commit: e.commit.clone(),
            dirty: e.dirty,
            changed: read.changed.text(),
            tool_version: e.tool_version.clone(),
            config_digest: e.config_digest.clone(),
            questions_digest: e.questions_digest.clone(),
            results_digest: e.results_digest.clone(),
            results: e.results.clone(),
            questions: e.questions,
            recommended: e.recommended.clone(),
            certified: e.certified,
            setting: s.map(|(id, _)| id.to_string()),
            unwanted_answer: s.map(|(_, s)| s.unwanted_answer),
            unanswerable: s.map(|(_, s)| s.unanswerable),
            unwanted_answer_rate: ua.as_ref().map(|p| p.rate),
            unwanted_answer_rate_lo: ua.as_ref().map(|p| p.lo),
            unwanted_answer_rate_hi: ua.as_ref().map(|p| p.hi),
            false_refusal: s.map(|(_, s)| s.false_refusal),
            answerable: s.map(|(_, s)| s.answerable),
            false_refusal_rate: fr.as_ref().map(|p| p.rate),
            false_refusal_rate_lo: fr.as_ref().map(|p| p.lo),
            false_refusal_rate_hi: fr.as_ref().map(|p| p.hi),
            wrong_answer: s.map(|(_, s)| s.wrong_answer),
            wrong_answer_rate: wa.as_ref().map(|p| p.rate),
            wrong_answer_rate_lo: wa.as_ref().map(|p| p.lo),
            wrong_answer_rate_hi: wa.as_ref().map(|p| p.hi),
            error: s.map(|(_, s)| s.error),
            prompt_tokens_per_question: s.map(|(_, s)| s.prompt_tokens_per_question),
            prompt_tokens: e.prompt_tokens,
            completion_tokens: e.completion_tokens,
            cost: e.cost,
            currency: e.currency.clone(),
        }
    }
}

/// `rate` of a setting with its Wilson interval; `None` without trials.
pub fn point(s: &SettingEntry, rate: Rate) -> Option<Point> {
    let (x, n) = s.counts(rate);
    let ci = wilson(x as usize, n as usize)?;
    Some(Point {
        x,
        n,
        rate: x as f64 / n as f64,
        lo: ci.lo,
        hi: ci.hi,
    })
}

/// The setting the rows show: the one `spec` names in the newest entry that sweeps it, else
/// the newest entry's recommended setting. An error says why there is none.
pub fn chosen_setting(reads: &[Line], spec: Option<&SettingSpec>) -> Result<String, String> {
    let Some(newest) = reads.last() else {
        return Err("the history holds no entry".into());
    };
    let Some(spec) = spec else {
        return newest.entry.recommended.clone().ok_or_else(|| {
            "the newest entry recommends no setting: name one with `--setting`".to_string()
        });
    };
    let mut first_error = None;
    for read in reads.iter().rev() {
        match find(&read.entry, spec) {
            Ok(id) => return Ok(id),
            Err(e) => {
                first_error.get_or_insert(format!("line {}: {e}", read.line));
            }
        }
    }
    Err(first_error.unwrap_or_default())
}

/// The id of the setting of `entry` that `spec` names, as the gate finds one in results.
pub fn find(entry: &Entry, spec: &SettingSpec) -> Result<String, String> {
    let ids: Vec<&String> = entry.settings.keys().collect();
    let settings: Vec<Setting> = ids
        .iter()
        .map(|id| setting_of_id(id))
        .collect::<Result<_, _>>()?;
    let i = spec.find(&settings, &crate::vocab::dim::Dim::ALL)?;
    Ok(ids[i].clone())
}

/// The setting an id (`min_score=0.3,k=1,order=edge`) names: a dimension it leaves out is at
/// its default.
fn setting_of_id(id: &str) -> Result<Setting, String> {
    let mut map: indexmap::IndexMap<String, serde_json::Value> = id
        .split(',')
        .map(|pair| {
            let (k, v) = pair
                .split_once('=')
                .ok_or_else(|| format!("`{id}` is not a setting id"))?;
            Ok((k.to_string(), serde_json::Value::String(v.to_string())))
        })
        .collect::<Result<_, String>>()?;
    for d in crate::vocab::dim::Dim::ALL {
        if let (false, true, Some(v)) = (
            map.contains_key(d.name()),
            d.always_recorded(),
            d.default_value(),
        ) {
            map.insert(
                d.name().to_string(),
                serde_json::Value::String(v.to_string()),
            );
        }
    }
    Setting::from_map(&map)
}

/// `▁▂▃▄▅▆▇█` from the lowest value to the highest; a space where a value is missing.
pub fn sparkline(values: &[Option<f64>]) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let known = values.iter().flatten();
    let lo = known.clone().copied().fold(f64::INFINITY, f64::min);
    let hi = known.copied().fold(f64::NEG_INFINITY, f64::max);
    values
        .iter()
        .map(|v| match v {
            None => ' ',
            Some(_) if hi - lo < 1e-12 => BARS[0],
            Some(v) => BARS[(((v - lo) / (hi - lo)) * 7.0).round() as usize],
        })
        .collect()
}

/// A count as `22.2% (2/9)`, or `-`.
fn cell(x: Option<usize>, n: Option<usize>, rate: Option<f64>) -> String {
    match (x, n, rate) {
        (Some(x), Some(n), Some(r)) => format!("{} ({x}/{n})", percent(r)),
        _ => "-".into(),
    }
}

/// The table for the terminal: a header line, one line per row, a sparkline per rate.
pub fn table(file: &str, total: usize, setting: &str, rows: &[Row]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "history: {file}, the last {} of {total} entries, at {setting}",
        rows.len()
    );
    let header = [
        "line",
        "time",
        "commit",
        "changed",
        "recommended",
        "unwanted",
        "false refusals",
        "wrong answers",
        "tokens/q",
    ];
    let cells: Vec<[String; 9]> = rows.iter().map(|r| row_cells(r, setting)).collect();
    let widths: Vec<usize> = (0..header.len())
        .map(|c| {
            cells
                .iter()
                .map(|r| r[c].chars().count())
                .chain([header[c].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut line = |values: &[&str]| {
        let parts: Vec<String> = values
            .iter()
            .zip(&widths)
            .map(|(v, &w)| format!("{v:<w$}"))
            .collect();
        let _ = writeln!(s, "{}", parts.join("  ").trim_end());
    };
    line(&header);
    for r in &cells {
        line(&r.iter().map(String::as_str).collect::<Vec<_>>());
    }
    for rate in Rate::ALL {
        let values: Vec<Option<f64>> = rows.iter().map(|r| rate_of(r, rate)).collect();
        let _ = writeln!(s, "{:<21} {}", rate.as_str(), spark_summary(&values));
    }
    s
}

/// A rate's sparkline and its range.
fn spark_summary(values: &[Option<f64>]) -> String {
    let known: Vec<f64> = values.iter().flatten().copied().collect();
    let (Some(first), Some(last)) = (known.first(), known.last()) else {
        return "(no runs)".into();
    };
    let lo = known.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = known.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    format!(
        "{}  first {}, last {}, from {} to {}",
        sparkline(values),
        percent(*first),
        percent(*last),
        percent(lo),
        percent(hi)
    )
}

/// The rate of `r`.
pub fn rate_of(r: &Row, rate: Rate) -> Option<f64> {
    match rate {
        Rate::UnwantedAnswerRate => r.unwanted_answer_rate,
        Rate::FalseRefusalRate => r.false_refusal_rate,
        Rate::WrongAnswerRate => r.wrong_answer_rate,
    }
}

/// The interval of the rate of `r`.
pub fn band_of(r: &Row, rate: Rate) -> Option<(f64, f64)> {
    match rate {
        Rate::UnwantedAnswerRate => r.unwanted_answer_rate_lo.zip(r.unwanted_answer_rate_hi),
        Rate::FalseRefusalRate => r.false_refusal_rate_lo.zip(r.false_refusal_rate_hi),
        Rate::WrongAnswerRate => r.wrong_answer_rate_lo.zip(r.wrong_answer_rate_hi),
    }
}

/// The short commit, `+` when the tree was dirty, `-` outside a repository. The commit is
/// text from the history file (which people edit): cut by characters, not bytes.
pub fn commit_text(r: &Row) -> String {
    match &r.commit {
        Some(c) => format!(
            "{}{}",
            c.chars().take(10).collect::<String>(),
            if r.dirty == Some(true) { "+" } else { "" }
        ),
        None => "-".into(),
    }
}

/// Whether the row recommended the shown setting (and certified it), or which it did.
fn recommended_text(r: &Row, setting: &str) -> String {
    match &r.recommended {
        Some(id) if id == setting && r.certified => "this, certified".into(),
        Some(id) if id == setting => "this".into(),
        Some(id) => id.clone(),
        None => "none".into(),
    }
}

fn row_cells(r: &Row, setting: &str) -> [String; 9] {
    [
        r.line.to_string(),
        r.time.clone(),
        commit_text(r),
        r.changed.clone(),
        recommended_text(r, setting),
        cell(r.unwanted_answer, r.unanswerable, r.unwanted_answer_rate),
        cell(r.false_refusal, r.answerable, r.false_refusal_rate),
        cell(r.wrong_answer, r.answerable, r.wrong_answer_rate),
        r.prompt_tokens_per_question
            .map_or_else(|| "-".into(), |t| format!("{t:.1}")),
    ]
}

/// The rows as CSV, with a header line.
pub fn csv(rows: &[Row]) -> anyhow::Result<String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    if rows.is_empty() {
        return Ok(String::new());
    }
    for r in rows {
        w.serialize(r)?;
    }
    Ok(String::from_utf8(w.into_inner()?)?)
}

/// The rows as a JSON array.
pub fn json(rows: &[Row]) -> anyhow::Result<String> {
    Ok(format!("{}\n", serde_json::to_string_pretty(rows)?))
}
