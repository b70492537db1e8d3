//! The history file: appended one whole line at a time, read as a stream.
//!
//! An append is one `write` of the whole line on a file opened with `O_APPEND`: the kernel
//! moves to the end and writes in one step, so two sweeps finishing at once leave two whole
//! lines, in either order, never one inside the other. A line is never rewritten or removed.
//! A reader goes through the file line by line, holding one line (at most
//! [`MAX_LINE_BYTES`]) and what its caller keeps; a line that is not an entry (cut short by a
//! crash, edited by hand, a longer line) is skipped with a warning naming its number.

use std::collections::VecDeque;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use super::{Entry, SCHEMA};
use crate::base::input::{bounded_lines, check_regular, FileError};

/// The longest line read; a longer one is skipped as damaged.
pub const MAX_LINE_BYTES: usize = 16 << 20;

/// Warnings shown one by one; past them, one line counts the rest.
const MAX_WARNINGS: usize = 10;

/// Append `entry` to the history at `path`, creating it (and its folder) when absent.
pub fn append(path: &Path, entry: &Entry) -> std::io::Result<()> {
    if path.exists() {
        check_regular(path).map_err(to_io)?;
    } else if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .read(true)
        .open(path)?;
    let mut line = entry.line();
    // A last line cut short (a crash mid-write) must not swallow this one: start afresh.
    if !ends_a_line(&mut file)? {
        line.insert(0, '\n');
    }
    let written = file.write(line.as_bytes())?;
    if written != line.len() {
        return Err(std::io::Error::other(format!(
            "only {written} of the line's {} bytes were written",
            line.len()
        )));
    }
    Ok(())
}

/// Whether the file is empty or ends with a newline.
fn ends_a_line(file: &mut std::fs::File) -> std::io::Result<bool> {
    if file.metadata()?.len() == 0 {
        return Ok(true);
    }
    file.seek(SeekFrom::End(-1))?;
    let mut last = [0u8];
    file.read_exact(&mut last)?;
    Ok(last[0] == b'\n')
}

fn to_io(e: FileError) -> std::io::Error {
    match e {
        FileError::Io(e) => e,
        other => std::io::Error::other(other.to_string()),
    }
}

/// What a read kept, and what it skipped.
#[derive(Debug, Clone, PartialEq)]
pub struct Kept<T> {
    /// What the caller kept, oldest first, at most the number it asked for.
    pub kept: VecDeque<T>,
    /// One line per skipped line (the first few, then a count of the rest).
    pub warnings: Vec<String>,
    /// Entries read, kept or not.
    pub entries: usize,
}

/// Read the history at `path`, handing each entry with its line number to `keep`; the last
/// `last` values it returns are kept. Memory: one line and `last` values.
pub fn read_last<T>(
    path: &Path,
    last: usize,
    mut keep: impl FnMut(usize, Entry) -> Option<T>,
) -> Result<Kept<T>, FileError> {
    check_regular(path)?;
    let file = std::fs::File::open(path)?;
    let mut out = Kept {
        kept: VecDeque::new(),
        warnings: Vec::new(),
        entries: 0,
    };
    let mut number = 0usize;
    let mut skipped = 0usize;
    let shown = path.display().to_string();
    bounded_lines(std::io::BufReader::new(file), MAX_LINE_BYTES, |line| {
        number += 1;
        let why = match line {
            None => Some(format!("longer than {} MiB", MAX_LINE_BYTES >> 20)),
            Some(bytes) if bytes.iter().all(u8::is_ascii_whitespace) => return,
            Some(bytes) => match parse(bytes) {
                Ok(entry) => {
                    out.entries += 1;
                    if let Some(value) = keep(number, entry) {
                        if out.kept.len() == last {
                            out.kept.pop_front();
                        }
                        if last > 0 {
                            out.kept.push_back(value);
                        }
                    }
                    None
                }
                Err(why) => Some(why),
            },
        };
        if let Some(why) = why {
            skipped += 1;
            if skipped <= MAX_WARNINGS {
                out.warnings
                    .push(format!("warning: `{shown}` line {number} skipped: {why}"));
            }
        }
    })?;
    if skipped > MAX_WARNINGS {
        out.warnings.push(format!(
            "warning: `{shown}`: {} more damaged lines skipped",
            skipped - MAX_WARNINGS
        ));
    }
    Ok(out)
}

/// One line as an entry, or why it is not one.
fn parse(bytes: &[u8]) -> Result<Entry, String> {
    match serde_json::from_slice::<Entry>(bytes) {
        Ok(entry) if entry.schema == SCHEMA => Ok(entry),
        Ok(entry) => Err(format!("schema `{}`, not `{SCHEMA}`", entry.schema)),
        Err(e) => {
            // Another schema's line says so, even when its fields differ.
            #[derive(serde::Deserialize)]
            struct Schema {
                schema: String,
            }
            match serde_json::from_slice::<Schema>(bytes) {
                Ok(s) if s.schema != SCHEMA => {
                    Err(format!("schema `{}`, not `{SCHEMA}`", s.schema))
                }
                _ if e.is_eof() => Err("cut short (a sweep stopped while writing it?)".into()),
                _ => Err(format!("not a history entry: {e}")),
            }
        }
    }
}
