//! Reading the files users hand us (config, question sets, corpus documents, results files)
//! without trusting them: only regular files are opened, every read stops at a documented size,
//! corpus files must lie inside their folder, YAML is refused before parsing when it is too
//! large or too deeply nested, and a leading byte-order mark is dropped everywhere alike.
//!
//! A FIFO is never opened (opening one blocks until a writer comes), and a link in a corpus that
//! points outside it (`ln -s /proc/self/environ docs/notes.md`) is refused, so a pull request
//! cannot turn the environment into a chunk that is sent to the model and written to reports.

use std::io::Read;
use std::path::{Path, PathBuf};

/// Largest YAML file read (config or question set): 16 MiB.
pub const MAX_YAML_BYTES: u64 = 16 * 1024 * 1024;
/// Deepest flow nesting (`[` and `{` open at once) in a YAML file. Parsing time grows with the
/// square of it; no hand-written file comes near.
pub const MAX_YAML_DEPTH: usize = 64;
/// Largest corpus document: 16 MiB.
pub const MAX_DOCUMENT_BYTES: u64 = 16 * 1024 * 1024;
/// Largest results file (results.json) that `merge` and `gate` read: 16 GiB, more than the
/// record of the largest sweep planned without `--max-runs` (10 million runs write about
/// 3.4 GB), so every record a default sweep writes can be gated. It is parsed as it is read
/// ([`open_limited`]), so memory holds the record, not the text, and a file of zeros or other
/// garbage fails at its first byte.
pub const MAX_RESULTS_BYTES: u64 = 16 * 1024 * 1024 * 1024;

/// Why a file is not read. The message names no file: the caller's error does.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// A folder, FIFO, socket or device, found without opening it.
    #[error("it is {0}, not a regular file")]
    NotRegular(&'static str),
    #[error("it is larger than the limit of {} MiB", .0 / (1024 * 1024))]
    TooLarge(u64),
    /// The position of the first byte that is not UTF-8, 1-based.
    #[error("not UTF-8 at line {line}, column {column}")]
    NotUtf8 { line: usize, column: usize },
    #[error(
        "line {0}: flow nesting (`[` and `{{`) is deeper than the limit of {MAX_YAML_DEPTH} levels"
    )]
    TooDeep(usize),
    /// A corpus file whose real path is outside its corpus folder.
    #[error("it links to `{}`, outside the corpus folder `{}`", .target.display(), .root.display())]
    OutsideCorpus { target: PathBuf, root: PathBuf },
}

/// What kind of file system entry `meta` describes, when it is not a plain file.
pub fn odd_kind(meta: &std::fs::Metadata) -> Option<&'static str> {
    let t = meta.file_type();
    if t.is_file() {
        return None;
    }
    if t.is_dir() {
        return Some("a folder");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return Some("a FIFO");
        }
        if t.is_socket() {
            return Some("a socket");
        }
        if t.is_block_device() || t.is_char_device() {
            return Some("a device");
        }
    }
    Some("an odd kind of file")
}

/// Refuse anything but a regular file (links are followed), without opening it.
/// `/dev/null` is the one device accepted: it reads as an empty file (`--config /dev/null`).
pub fn check_regular(path: &Path) -> Result<(), FileError> {
    let meta = std::fs::metadata(path)?;
    match odd_kind(&meta) {
        None => Ok(()),
        Some(_) if path == Path::new("/dev/null") => Ok(()),
        Some(kind) => Err(FileError::NotRegular(kind)),
    }
}

/// Read at most `limit` bytes of a regular file; more is refused.
pub fn read_limited(path: &Path, limit: u64) -> Result<Vec<u8>, FileError> {
    check_regular(path)?;
    let file = std::fs::File::open(path)?;
    let mut bytes = Vec::new();
    // The length is read through the handle too: a file that grows is still cut at the limit.
    file.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(FileError::TooLarge(limit));
    }
    Ok(bytes)
}

/// A regular file opened for reading at most `limit` bytes: the reader fails with an error
/// that [`Limited::exceeded`] recognizes at the first byte past the limit, so a parser that
/// reads from it stops there instead of reading a file that grows (or a huge one) to its end.
/// A file whose size is already past the limit is refused before it is opened.
pub fn open_limited(path: &Path, limit: u64) -> Result<Limited<std::fs::File>, FileError> {
    check_regular(path)?;
    if std::fs::metadata(path)?.len() > limit {
        return Err(FileError::TooLarge(limit));
    }
    Ok(Limited::new(std::fs::File::open(path)?, limit))
}

/// A reader that refuses to read past `limit` bytes (see [`open_limited`]).
pub struct Limited<R> {
    inner: std::io::Take<R>,
    limit: u64,
    exceeded: bool,
}

impl<R: Read> Limited<R> {
    pub fn new(inner: R, limit: u64) -> Self {
        Limited {
            inner: inner.take(limit + 1),
            limit,
            exceeded: false,
        }
    }

    /// Whether a read went past the limit (the reader then failed).
    pub fn exceeded(&self) -> bool {
        self.exceeded
    }

    /// The limit, in bytes.
    pub fn limit(&self) -> u64 {
        self.limit
    }
}

impl<R: Read> Read for Limited<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.exceeded {
            return Err(std::io::Error::other(FileError::TooLarge(self.limit)));
        }
        let n = self.inner.read(buf)?;
        // `take(limit + 1)`: a byte read beyond `limit` means the file is larger.
        let read = (self.limit + 1) - self.inner.limit();
        if read > self.limit {
            self.exceeded = true;
            return Err(std::io::Error::other(FileError::TooLarge(self.limit)));
        }
        Ok(n)
    }
}

/// Hand `each` every line of `reader` without its `\n`, or `None` for a line longer than
/// `max` bytes: such a line is read past in pieces, never held whole (a cache file of one
/// 1.5 GB line costs `max` bytes of memory, not 1.5 GB). A last line without `\n` counts.
pub fn bounded_lines<R: std::io::BufRead>(
    mut reader: R,
    max: usize,
    mut each: impl FnMut(Option<&[u8]>),
) -> std::io::Result<()> {
    let mut line = Vec::new();
    let mut too_long = false;
    loop {
        let chunk = match reader.fill_buf() {
            Ok(chunk) => chunk,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            if too_long {
                each(None);
            } else if !line.is_empty() {
                each(Some(&line));
            }
            return Ok(());
        }
        let newline = chunk.iter().position(|&b| b == b'\n');
        let part = &chunk[..newline.unwrap_or(chunk.len())];
        if !too_long {
            if line.len() + part.len() > max {
                too_long = true;
                line = Vec::new();
            } else {
                line.extend_from_slice(part);
            }
        }
        let used = newline.map_or(chunk.len(), |i| i + 1);
        reader.consume(used);
        if newline.is_some() {
            each(if too_long { None } else { Some(&line) });
            line.clear();
            too_long = false;
        }
    }
}

/// Where the bytes stop being UTF-8: the line and column (in characters) of byte `valid`.
fn not_utf8(bytes: &[u8], valid: usize) -> FileError {
    let good = &bytes[..valid];
    let line = good.iter().filter(|&&b| b == b'\n').count() + 1;
    let start = good.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let column = String::from_utf8_lossy(&good[start..]).chars().count() + 1;
    FileError::NotUtf8 { line, column }
}

/// Drop one leading UTF-8 byte-order mark.
pub fn strip_bom(text: &str) -> &str {
    text.strip_prefix('\u{feff}').unwrap_or(text)
}

/// A YAML file as text: a regular file, at most [`MAX_YAML_BYTES`], UTF-8, flow nesting at
/// most [`MAX_YAML_DEPTH`], without a byte-order mark.
pub fn read_yaml(path: &Path) -> Result<String, FileError> {
    let bytes = read_limited(path, MAX_YAML_BYTES)?;
    let mut text = String::from_utf8(bytes)
        .map_err(|e| not_utf8(e.as_bytes(), e.utf8_error().valid_up_to()))?;
    if text.starts_with('\u{feff}') {
        text.drain(..'\u{feff}'.len_utf8());
    }
    if let Some(line) = too_deep(&text, MAX_YAML_DEPTH) {
        return Err(FileError::TooDeep(line));
    }
    Ok(text)
}

/// The line where flow nesting first exceeds `max`, counting `[` and `{` outside quotes and
/// comments. A cheap scan, so that a hostile file costs milliseconds, not the parser's minutes.
pub fn too_deep(text: &str, max: usize) -> Option<usize> {
    #[derive(PartialEq)]
    enum State {
        Plain,
        Single,
        Double,
        Comment,
    }
    let mut state = State::Plain;
    let (mut depth, mut line) = (0usize, 1usize);
    // Whether the previous character separates tokens (a `#` after one starts a comment).
    let mut after_space = true;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\n' {
            line += 1;
            if state == State::Comment {
                state = State::Plain;
            }
        }
        match state {
            State::Comment => {}
            State::Single => {
                if c == '\'' {
                    if chars.peek() == Some(&'\'') {
                        chars.next();
                    } else {
                        state = State::Plain;
                    }
                }
            }
            State::Double => match c {
                '\\' => {
                    chars.next();
                }
                '"' => state = State::Plain,
                _ => {}
            },
            State::Plain => match c {
                '#' if after_space => state = State::Comment,
                '\'' if after_space || depth > 0 => state = State::Single,
                '"' if after_space || depth > 0 => state = State::Double,
                '[' | '{' => {
                    depth += 1;
                    if depth > max {
                        return Some(line);
                    }
                }
                ']' | '}' => depth = depth.saturating_sub(1),
                _ => {}
            },
        }
        after_space = c.is_whitespace() || matches!(c, '[' | '{' | ',' | ':');
    }
    None
}

/// A corpus document, `path` found under the corpus folder whose canonical path is `root`:
/// its real path must lie inside `root` (a link inside the corpus is fine), and it must be a
/// regular file. Returns the text without a byte-order mark.
pub fn read_document(root: &Path, path: &Path) -> Result<String, FileError> {
    let real = path.canonicalize()?;
    if !real.starts_with(root) {
        return Err(FileError::OutsideCorpus {
            target: real,
            root: root.to_path_buf(),
        });
    }
    let bytes = read_limited(&real, MAX_DOCUMENT_BYTES)?;
    let text = String::from_utf8(bytes)
        .map_err(|e| not_utf8(e.as_bytes(), e.utf8_error().valid_up_to()))?;
    Ok(strip_bom(&text).to_string())
}

/// The canonical form of a corpus folder (links resolved), for [`read_document`].
pub fn canonical_root(root: &Path) -> std::io::Result<PathBuf> {
    root.canonicalize()
}

/// Most calls in flight at once (`--concurrency`, `sweep.concurrency`,
/// `embedder.concurrency`): far above what one server serves, and low enough that the slots
/// kept per call in flight stay small (2^32 of them asked for 137 GB, 2^64 - 1 overflowed).
pub const MAX_CONCURRENCY: usize = 1024;

/// Why `n` cannot be a concurrency, as the rest of a message after the field's name.
pub fn concurrency_problem(n: usize) -> Option<String> {
    (!(1..=MAX_CONCURRENCY).contains(&n))
        .then(|| format!("must be from 1 to {MAX_CONCURRENCY} calls in flight, got {n}"))
}

/// Whether two paths name one file, whether or not it exists yet: their real paths (a file
/// not yet written by its real folder), else the paths as written.
pub fn same_file(a: &Path, b: &Path) -> bool {
    let real = |p: &Path| {
        p.canonicalize().ok().or_else(|| {
            let dir = match p.parent() {
                Some(d) if !d.as_os_str().is_empty() => d,
                _ => Path::new("."),
            };
            Some(dir.canonicalize().ok()?.join(p.file_name()?))
        })
    };
    match (real(a), real(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two spellings of one file are the same file, whether it exists yet or not; two files
    /// are not.
    #[test]
    fn same_file_sees_through_spellings_of_existing_and_new_files() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir(d.join("sub")).unwrap();
        std::fs::write(d.join("a.txt"), "a").unwrap();
        assert!(same_file(&d.join("a.txt"), &d.join("sub/../a.txt")));
        assert!(
            same_file(&d.join("new.txt"), &d.join("sub/../new.txt")),
            "not written yet"
        );
        assert!(!same_file(&d.join("a.txt"), &d.join("new.txt")));
        assert!(
            same_file(Path::new("nowhere/x"), Path::new("nowhere/x")),
            "as written"
        );
    }

    #[test]
    fn depth_counts_flow_brackets_outside_quotes_and_comments() {
        assert_eq!(too_deep("a: [[[1]]]\n", 3), None);
        assert_eq!(too_deep("a: [[[[1]]]]\n", 3), Some(1));
        assert_eq!(too_deep("a: '[[[['\nb: \"{{{{\"\n# [[[[\n", 3), None);
        assert_eq!(too_deep("a: 1\nb: {c: {d: {e: {f: 1}}}}\n", 3), Some(2));
        // Closed brackets do not add up.
        assert_eq!(too_deep(&"[1] ".repeat(1000), 3), None);
        assert_eq!(too_deep("a: ['it''s [[[[', \"q \\\" [[[[\"]\n", 3), None);
    }

    #[test]
    fn messages_name_what_is_wrong() {
        assert_eq!(
            FileError::NotRegular("a FIFO").to_string(),
            "it is a FIFO, not a regular file"
        );
        assert_eq!(
            FileError::TooLarge(MAX_YAML_BYTES).to_string(),
            "it is larger than the limit of 16 MiB"
        );
        assert_eq!(
            FileError::TooDeep(3).to_string(),
            "line 3: flow nesting (`[` and `{`) is deeper than the limit of 64 levels"
        );
    }

    #[test]
    fn a_limited_reader_fails_at_the_first_byte_past_the_limit() {
        let mut at = Limited::new(&[1u8; 8][..], 8);
        let mut bytes = Vec::new();
        at.read_to_end(&mut bytes).unwrap();
        assert_eq!((bytes.len(), at.exceeded()), (8, false));
        let mut past = Limited::new(&[1u8; 9][..], 8);
        let err = past.read_to_end(&mut Vec::new()).unwrap_err();
        assert!(past.exceeded());
        assert_eq!(err.to_string(), "it is larger than the limit of 0 MiB");
    }

    #[test]
    fn long_lines_are_skipped_without_being_held() {
        let text = format!("ok\n{}\nlast\n{}\nend", "x".repeat(100), "y".repeat(11));
        let mut lines = Vec::new();
        // A small buffer: lines arrive in pieces.
        let reader = std::io::BufReader::with_capacity(4, text.as_bytes());
        bounded_lines(reader, 10, |l| {
            lines.push(l.map(|l| String::from_utf8(l.to_vec()).unwrap()))
        })
        .unwrap();
        let want = [Some("ok"), None, Some("last"), None, Some("end")];
        assert_eq!(lines, want.map(|l| l.map(String::from)));
        let mut n = 0;
        bounded_lines(&b"a\n\nbb\n"[..], 2, |_| n += 1).unwrap();
        assert_eq!(n, 3, "an empty line is a line");
    }

    #[test]
    fn a_bom_is_dropped_once() {
        assert_eq!(strip_bom("\u{feff}# a"), "# a");
        assert_eq!(strip_bom("# a"), "# a");
    }
}
