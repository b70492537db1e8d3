//! The labels file (docs/labels.md): one CSV row per sampled distinct model reply, with what a
//! person needs to grade it and two columns for the grade, `refused` and `correct`. `rageval
//! label` writes it and its page fills it in; `--labels` and `recommend.labels` read it back.
//!
//! Read: the columns are checked by name, every value of `refused` and `correct` is `yes`,
//! `no` or empty, `inclusion` a probability, the seed one for the whole file, every reply id
//! one the results hold, and a reply listed twice has one label. Any other file is refused
//! naming file, line and field (exit status 2). Written: atomically and synced, rows kept in
//! their order, fields byte for byte; text cells that a spreadsheet would read as a formula
//! are prefixed with `'` as in runs.csv.

pub mod sample;
pub mod serve;

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::adapters::classify::Label;
use crate::base::error::InputError;
use crate::output::report::neutralize;
use crate::results::labels::{Checked, Given, LabelSet};
use crate::results::Results;

/// The columns, in the order they are written.
pub const COLUMNS: [&str; 14] = [
    "reply_id",
    "question_id",
    "answerable",
    "question",
    "expected_answers",
    "passages",
    "reply",
    "graded_refused",
    "graded_correct",
    "graded_by",
    "inclusion",
    "seed",
    "refused",
    "correct",
];

/// The largest labels file read: far more rows than anyone labels by hand.
pub const MAX_LABELS_BYTES: u64 = 1 << 30;

/// One row, every field as the file holds it (so that a row read is written back byte for
/// byte).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Row {
    /// The reply's id (see [`crate::adapters::classify::reply_id`]).
    pub reply_id: String,
    pub question_id: String,
    /// `yes` or `no`: whether the question has an answer in the documents.
    pub answerable: String,
    /// The text asked.
    pub question: String,
    /// The expected answer texts, one per line.
    pub expected_answers: String,
    /// The passages as the model saw them: `[n] (file.md > Heading) text`, a blank line apart.
    pub passages: String,
    pub reply: String,
    /// The grader's reading: `yes` / `no`, and for an answer, right or wrong (empty when there
    /// was nothing to check it against).
    pub graded_refused: String,
    pub graded_correct: String,
    /// Which tier read the refusal, or what graded the answer (`answer_match`, `judge`).
    pub graded_by: String,
    /// The probability with which this reply was sampled.
    pub inclusion: String,
    /// The seed of the sample.
    pub seed: String,
    /// The person's grade: `yes`, `no` or empty.
    pub refused: String,
    pub correct: String,
}

impl Row {
    /// The person's label, as checked when the file was read.
    pub fn label(&self) -> Label {
        Label {
            refused: yes_no(&self.refused).ok().flatten(),
            correct: yes_no(&self.correct).ok().flatten(),
        }
    }
}

/// A labels file read and checked.
#[derive(Debug, Clone, Default)]
pub struct LabelsFile {
    pub rows: Vec<Row>,
    /// The seed every row was sampled with; `None` for a file without rows.
    pub seed: Option<u64>,
    /// The line each row starts on, when it was read from a file (for messages).
    lines: Vec<usize>,
}

/// `yes` -> true, `no` -> false, empty -> none (case and surrounding blanks forgiven).
fn yes_no(value: &str) -> Result<Option<bool>, ()> {
    match value.trim().to_ascii_lowercase().as_str() {
        "yes" => Ok(Some(true)),
        "no" => Ok(Some(false)),
        "" => Ok(None),
        _ => Err(()),
    }
}

/// A value for a yes/no cell.
pub fn yes_no_text(value: Option<bool>) -> &'static str {
    match value {
        Some(true) => "yes",
        Some(false) => "no",
        None => "",
    }
}

impl LabelsFile {
    /// Read `path` and check it, as labels of `r` ([`LabelsFile::check_for`]).
    pub fn read(path: &Path, r: &Results) -> Result<LabelsFile, InputError> {
        let file = LabelsFile::load(path)?;
        file.check_for(path, r, &r.reply_ids())?;
        Ok(file)
    }

    /// The labels of `path` (read by [`LabelsFile::load`]), checked as labels of `r`, with
    /// the reply ids they were checked by, for [`Results::apply_labels`].
    pub fn checked(&self, path: &Path, r: &Results) -> Result<Checked, InputError> {
        let ids = r.reply_ids();
        self.check_for(path, r, &ids)?;
        Ok(Checked {
            labels: self.labels(),
            ids,
        })
    }

    /// Read `path` and check everything but its reply ids (which need the results).
    pub fn load(path: &Path) -> Result<LabelsFile, InputError> {
        let bytes = crate::base::input::read_limited(path, MAX_LABELS_BYTES)
            .map_err(|e| InputError::reading(path, "labels file", e))?;
        LabelsFile::parse(path, &bytes)
    }

    /// Parse the CSV text of a labels file; `path` names it in errors.
    pub fn parse(path: &Path, bytes: &[u8]) -> Result<LabelsFile, InputError> {
        let bytes = bytes.strip_prefix("\u{feff}".as_bytes()).unwrap_or(bytes);
        let mut reader = ::csv::ReaderBuilder::new().from_reader(bytes);
        let mut counter = LineCounter::new(bytes);
        let error = |line: Option<u64>, message: String| {
            InputError::new(path, message).at(line.map(|l| l as usize))
        };
        let headers = reader
            .headers()
            .map_err(|e| error(Some(1), csv_message(&e)))?
            .clone();
        check_columns(&headers).map_err(|(field, m)| error(Some(1), m).field(field))?;
        let (mut rows, mut lines) = (Vec::new(), Vec::new());
        let mut seed = None;
        for record in reader.records() {
            let record = match record {
                Ok(record) => record,
                Err(e) => return Err(error(counter.at(e.position()), csv_message(&e))),
            };
            let line = counter.at(record.position());
            let row: Row = record
                .deserialize(Some(&headers))
                .map_err(|e| error(line, csv_message(&e)))?;
            let at = |field: &str, message: String| error(line, message).field(field);
            for (field, value) in [("refused", &row.refused), ("correct", &row.correct)] {
                if yes_no(value).is_err() {
                    return Err(at(
                        field,
                        format!("is `{}`: write `yes`, `no` or leave it empty", clip(value)),
                    ));
                }
            }
            inclusion(&row.inclusion).map_err(|m| at("inclusion", m))?;
            let s: u64 = row.seed.trim().parse().map_err(|_| {
                at(
                    "seed",
                    format!("is `{}`, not a whole number", clip(&row.seed)),
                )
            })?;
            match seed {
                Some(first) if first != s => {
                    return Err(at(
                        "seed",
                        format!("is {s}, but the rows above were sampled with seed {first}: one file holds one sample"),
                    ))
                }
                _ => seed = Some(s),
            }
            rows.push(row);
            lines.push(line.unwrap_or_default() as usize);
        }
        let file = LabelsFile { rows, seed, lines };
        file.check_duplicates(path)?;
        Ok(file)
    }

    /// A file of `rows` sampled with `seed`.
    pub fn new(rows: Vec<Row>, seed: u64) -> LabelsFile {
        LabelsFile {
            rows,
            seed: Some(seed),
            lines: Vec::new(),
        }
    }

    /// The line row `i` was read from.
    fn line(&self, i: usize) -> Option<usize> {
        self.lines.get(i).copied()
    }

    /// A reply listed twice must have one label.
    fn check_duplicates(&self, path: &Path) -> Result<(), InputError> {
        let mut first: HashMap<&str, (Option<usize>, Label)> = HashMap::new();
        for (i, row) in self.rows.iter().enumerate() {
            let (line, label) = (self.line(i), row.label());
            match first.get(row.reply_id.as_str()) {
                Some(&(at, earlier)) if earlier != label => {
                    let field = if earlier.refused != label.refused {
                        "refused"
                    } else {
                        "correct"
                    };
                    return Err(InputError::new(
                        path,
                        format!(
                            "reply `{}` is labelled again, differently from line {}: keep one row per reply",
                            clip(&row.reply_id),
                            at.unwrap_or_default()
                        ),
                    )
                    .at(line)
                    .field(field));
                }
                Some(_) => {}
                None => {
                    first.insert(&row.reply_id, (line, label));
                }
            }
        }
        Ok(())
    }

    /// Every reply id is one the results hold (`known`).
    pub fn check_replies(&self, path: &Path, known: &HashSet<String>) -> Result<(), InputError> {
        if let Some(i) = self.rows.iter().position(|r| !known.contains(&r.reply_id)) {
            let line = self.line(i);
            return Err(InputError::new(
                path,
                format!(
                    "reply `{}` is not a reply of these results: the labels belong to another sweep (or the reply changed since)",
                    clip(&self.rows[i].reply_id)
                ),
            )
            .at(line)
            .field("reply_id"));
        }
        Ok(())
    }

    /// Every reply id is a reply of `r` (whose [`Results::reply_ids`] are `ids`), or, when `r`
    /// is one shard of a sweep, a reply to a question of another shard.
    pub fn check_for(
        &self,
        path: &Path,
        r: &Results,
        ids: &[Option<String>],
    ) -> Result<(), InputError> {
        let mut known: HashSet<String> = ids.iter().flatten().cloned().collect();
        if r.shard.is_some() {
            let questions: HashSet<&str> = r.questions.iter().map(|q| q.id.as_str()).collect();
            known.extend(
                self.rows
                    .iter()
                    .filter(|row| !questions.contains(shown(&row.question_id).as_str()))
                    .map(|row| row.reply_id.clone()),
            );
        }
        self.check_replies(path, &known)
    }

    /// The labels given, by reply id, each with the probability that its reply was
    /// *labelled*: the sample's `inclusion` times the share of the sampled rows (of that
    /// inclusion) that carry a label. A sampled row left empty is no label; the statistics
    /// weigh a correction by one over the chance of seeing it, so counting empty rows in
    /// would understate that weight and pull every corrected rate towards the grader's. The
    /// share assumes rows are skipped at random, which docs/labels.md asks of the person.
    pub fn labels(&self) -> LabelSet {
        let mut by_inclusion: HashMap<&str, (usize, usize)> = HashMap::new();
        for r in &self.rows {
            let e = by_inclusion.entry(r.inclusion.as_str()).or_default();
            e.0 += 1;
            e.1 += usize::from(r.label().is_given());
        }
        self.rows
            .iter()
            .filter(|r| r.label().is_given())
            .map(|r| {
                let (rows, given) = by_inclusion[r.inclusion.as_str()];
                let sampled = inclusion(&r.inclusion).unwrap_or(1.0);
                let given = Given {
                    label: r.label(),
                    inclusion: sampled * given as f64 / rows as f64,
                };
                (r.reply_id.clone(), given)
            })
            .collect()
    }

    /// Rows with a label given.
    pub fn labelled(&self) -> usize {
        self.rows.iter().filter(|r| r.label().is_given()).count()
    }

    /// Write the file atomically, then sync it and its folder: a label acknowledged is on
    /// disk, whatever happens to the process after.
    pub fn write(&self, path: &Path) -> Result<()> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create folder `{}`", dir.display()))?;
        }
        crate::output::report::write_atomic(path, |out| self.write_to(out))?;
        sync_folder(path);
        Ok(())
    }

    /// The CSV text.
    pub fn write_to(&self, out: &mut dyn Write) -> Result<()> {
        let mut w = ::csv::WriterBuilder::new()
            .has_headers(false)
            .terminator(::csv::Terminator::CRLF)
            .from_writer(out);
        w.write_record(COLUMNS)?;
        for row in &self.rows {
            w.serialize(row)?;
        }
        w.flush()?;
        Ok(())
    }
}

/// Sync the folder holding `path`, so that the rename that put the file there is on disk.
fn sync_folder(path: &Path) {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
}

/// The header names every column, once, and no other.
fn check_columns(headers: &::csv::StringRecord) -> Result<(), (String, String)> {
    let names: Vec<&str> = headers.iter().map(str::trim).collect();
    for (i, name) in names.iter().enumerate() {
        if !COLUMNS.contains(name) {
            return Err((
                clip(name),
                format!(
                    "is not a column of a labels file: the columns are {}",
                    COLUMNS.join(", ")
                ),
            ));
        }
        if names[..i].contains(name) {
            return Err((clip(name), "is a column twice".into()));
        }
    }
    if let Some(missing) = COLUMNS.iter().find(|c| !names.contains(c)) {
        return Err((
            missing.to_string(),
            "is missing: a labels file has the columns `rageval label` writes".into(),
        ));
    }
    Ok(())
}

/// The line of a CSV record's position, counted as the reader moves forward. The csv crate's
/// line numbers miscount CRLF files (a record's position is the `\n` ending the line before
/// it): the line breaks up to that byte are counted instead, each once, not once per record
/// after it (counting from the start for each record took minutes for a 28,000-row file).
struct LineCounter<'b> {
    bytes: &'b [u8],
    /// Bytes counted so far, and the line breaks among them.
    upto: usize,
    breaks: u64,
}

impl<'b> LineCounter<'b> {
    fn new(bytes: &'b [u8]) -> Self {
        LineCounter {
            bytes,
            upto: 0,
            breaks: 0,
        }
    }

    /// The line of the record at `p` (counted afresh should a position go backwards).
    fn at(&mut self, p: Option<&::csv::Position>) -> Option<u64> {
        let end = (p?.byte() as usize + 1).min(self.bytes.len());
        if end < self.upto {
            (self.upto, self.breaks) = (0, 0);
        }
        let counted = &self.bytes[self.upto..end];
        self.breaks += counted.iter().filter(|&&b| b == b'\n').count() as u64;
        self.upto = end;
        Some(1 + self.breaks)
    }
}

/// A probability as a labels file writes it: the shortest text that reads back as the same
/// number.
fn probability(p: f64) -> String {
    format!("{p}")
}

/// An inclusion probability: a number above 0 and at most 1.
fn inclusion(value: &str) -> Result<f64, String> {
    match value.trim().parse::<f64>() {
        Ok(p) if p > 0.0 && p <= 1.0 => Ok(p),
        _ => Err(format!(
            "is `{}`, not a probability above 0 and at most 1",
            clip(value)
        )),
    }
}

/// The csv crate's message without its position (the error names the line already).
fn csv_message(e: &::csv::Error) -> String {
    match e.kind() {
        ::csv::ErrorKind::UnequalLengths {
            expected_len, len, ..
        } => format!("has {len} fields, but the header has {expected_len}"),
        ::csv::ErrorKind::Utf8 { .. } => "is not UTF-8 text: save the file as UTF-8".into(),
        ::csv::ErrorKind::Deserialize { err, .. } => err.to_string(),
        _ => e.to_string(),
    }
}

/// A value from the file as a message quotes it: one line (control characters and bidi
/// overrides shown escaped, as all outside text is), at most 60 characters.
fn clip(value: &str) -> String {
    let one = crate::base::safe_text::one_line(value);
    match one.char_indices().nth(60) {
        Some((i, _)) => format!("{}...", &one[..i]),
        None => one.into_owned(),
    }
}

/// A text cell as written, without the `'` that keeps a spreadsheet from reading it as a
/// formula.
pub fn shown(cell: &str) -> String {
    match cell.strip_prefix('\'') {
        Some(rest) if rest.starts_with(['=', '+', '-', '@', '\t', '\r']) => rest.to_string(),
        _ => cell.to_string(),
    }
}

/// Where the labels file of `dir` is by default.
pub fn default_path(dir: &Path) -> PathBuf {
    dir.join("labels.csv")
}

#[cfg(test)]
mod checked_tests;
#[cfg(test)]
mod tests;
