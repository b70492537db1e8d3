//! Input errors: one message that names the file, the line and the field.

use std::fmt;
use std::path::{Path, PathBuf};

/// A problem in a file the user wrote (a question set, the config). Always exit status 2.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct InputError {
    pub file: PathBuf,
    pub line: Option<usize>,
    pub column: Option<usize>,
    /// The path of the offending field, such as `answerable[2].expect.sources[0]`.
    pub field: Option<String>,
    pub message: String,
}

impl InputError {
    pub fn new(file: &Path, message: impl Into<String>) -> Self {
        InputError {
            file: file.to_path_buf(),
            line: None,
            column: None,
            field: None,
            message: message.into(),
        }
    }

    pub fn at(mut self, line: Option<usize>) -> Self {
        self.line = line;
        self
    }

    pub fn field(mut self, field: impl Into<String>) -> Self {
        self.field = Some(field.into());
        self
    }

    /// From a serde_yaml error on `text`: a tab in an indentation is named as such, and type
    /// errors say the kind expected in words (see [`InputError::from_yaml`]).
    pub fn from_yaml_text(file: &Path, text: &str, err: &serde_yaml::Error) -> Self {
        let text_of_err = err.to_string();
        // libyaml words a tab in an indentation in several ways, none of which says "tab" plainly.
        let syntax =
            text_of_err.contains("cannot start any token") || text_of_err.contains("tab character");
        let tab = text.lines().enumerate().find(|(_, line)| {
            let indent = &line[..line.len() - line.trim_start().len()];
            indent.contains('\t')
        });
        match tab {
            Some((i, line)) if syntax => {
                let column = line.find('\t').map_or(1, |c| c + 1);
                let mut e = InputError::new(
                    file,
                    "tabs are not allowed in YAML indentation: indent with spaces",
                )
                .at(Some(i + 1));
                e.column = Some(column);
                e
            }
            _ => {
                let mut e = InputError::from_yaml(file, err);
                // A value left empty is marked where the next token starts, often on a later
                // line (past the end of the file for the last one): name its key's line.
                if e.message.ends_with("found null") || e.message.ends_with("found nothing (null)")
                {
                    let loc = crate::base::yaml_loc::Locator::new(text);
                    let path = e.field.as_deref().map(segments).unwrap_or_default();
                    if let Some(line) = loc.line(&path).filter(|_| !path.is_empty()) {
                        e.line = Some(line);
                        e.column = None;
                    }
                }
                e
            }
        }
    }

    /// A file that is not UTF-8, at the line and column of the first bad byte.
    pub fn not_utf8(file: &Path, line: usize, column: usize) -> Self {
        let mut e = InputError::new(file, "is not UTF-8 text: save it as UTF-8").at(Some(line));
        e.column = Some(column);
        e
    }

    /// What reading a YAML file found: a file that is not UTF-8 at its position, any other
    /// problem as `cannot read WHAT: ...`.
    pub fn reading(file: &Path, what: &str, err: crate::base::input::FileError) -> Self {
        match err {
            crate::base::input::FileError::NotUtf8 { line, column } => {
                InputError::not_utf8(file, line, column)
            }
            e => InputError::new(file, format!("cannot read {what}: {e}")),
        }
    }

    /// From a serde_yaml error: its position and its message without the trailing position.
    pub fn from_yaml(file: &Path, err: &serde_yaml::Error) -> Self {
        let mut message = err.to_string();
        let (mut line, mut column) = (None, None);
        if let Some(loc) = err.location() {
            line = Some(loc.line());
            column = Some(loc.column());
            // The position leads the message already; libyaml repeats it inside the text.
            let here = format!(" at line {} column {}", loc.line(), loc.column());
            message = message.replace(&here, "");
        }
        // serde_yaml puts the field path first (`answerable[0]: unknown field ...`).
        let mut field = None;
        if let Some((path, rest)) = message.split_once(": ") {
            if !path.contains(' ') && !path.is_empty() {
                field = Some(path.to_string());
                message = rest.to_string();
            }
        }
        InputError {
            file: file.to_path_buf(),
            line,
            column,
            field,
            message: in_words(&message),
        }
    }
}

/// The steps of a field path as serde_yaml writes it (`answerable[0].expect.sources[1]`).
fn segments(path: &str) -> Vec<crate::base::yaml_loc::Seg<'_>> {
    use crate::base::yaml_loc::Seg;
    let mut out = Vec::new();
    for part in path.split('.').filter(|p| !p.is_empty()) {
        let (key, mut rest) = part.split_at(part.find('[').unwrap_or(part.len()));
        if !key.is_empty() {
            out.push(Seg::Key(key));
        }
        while let Some(end) = rest.find(']') {
            if let Ok(i) = rest[1..end].parse() {
                out.push(Seg::Index(i));
            }
            rest = &rest[end + 1..];
        }
    }
    out
}

/// serde's `invalid type: string "8", expected usize` (or `invalid value: integer `-1`, ...`) as
/// `expected a whole number (0 or more), found the string "8"`: the kinds in words, not Rust's
/// type names.
fn in_words(message: &str) -> String {
    let Some(rest) = message
        .strip_prefix("invalid type: ")
        .or_else(|| message.strip_prefix("invalid value: "))
    else {
        return message.to_string();
    };
    let Some((found, expected)) = rest.rsplit_once(", expected ") else {
        return message.to_string();
    };
    let expected = match expected {
        "usize" | "u64" | "u32" | "u16" | "u8" => "a whole number (0 or more)",
        "isize" | "i64" | "i32" | "i16" | "i8" => "a whole number",
        "f64" | "f32" => "a number",
        "a boolean" => "true or false",
        "a sequence" => "a list",
        "a map" => "a mapping of `name: value`",
        other => other,
    };
    let found = if let Some(s) = found.strip_prefix("string ") {
        format!("the string {s}")
    } else if let Some(n) = found
        .strip_prefix("integer ")
        .or_else(|| found.strip_prefix("floating point "))
    {
        // `18446744073709551616` as u128: the number alone, not the type serde read it as.
        let n = n
            .strip_prefix('`')
            .map_or(n, |n| n.split('`').next().unwrap_or(n));
        format!("the number {n}")
    } else if let Some(b) = found.strip_prefix("boolean ") {
        b.trim_matches('`').to_string()
    } else {
        match found {
            "sequence" => "a list".into(),
            "map" => "a mapping".into(),
            "unit value" => "nothing (null)".into(),
            other => other.to_string(),
        }
    };
    format!("expected {expected}, found {found}")
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // One line, whatever the file's name, field or quoted values hold.
        use crate::base::safe_text::one_line;
        write!(f, "{}", one_line(&self.file.display().to_string()))?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
            if let Some(col) = self.column {
                write!(f, ":{col}")?;
            }
        }
        write!(f, ": ")?;
        if let Some(field) = &self.field {
            write!(f, "`{}`: ", one_line(field))?;
        }
        write!(f, "{}", one_line(&self.message))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_file_line_field_message() {
        let e = InputError::new(Path::new("sets/a.yaml"), "duplicate id `x`")
            .at(Some(7))
            .field("answerable[1].id");
        assert_eq!(
            e.to_string(),
            "sets/a.yaml:7: `answerable[1].id`: duplicate id `x`"
        );
    }

    #[test]
    fn type_errors_name_kinds_in_words() {
        assert_eq!(
            in_words("invalid type: string \"8\", expected usize"),
            "expected a whole number (0 or more), found the string \"8\""
        );
        assert_eq!(
            in_words("invalid type: integer `6`, expected a string or a list of strings"),
            "expected a string or a list of strings, found the number 6"
        );
        assert_eq!(
            in_words("invalid type: sequence, expected f64"),
            "expected a number, found a list"
        );
        assert_eq!(
            in_words("invalid value: integer `-1`, expected usize"),
            "expected a whole number (0 or more), found the number -1"
        );
        assert_eq!(in_words("unknown field `x`"), "unknown field `x`");
        // A number past u64 is read as u128: no stray backtick, no type name.
        assert_eq!(
            in_words("invalid type: integer `18446744073709551616` as u128, expected u64"),
            "expected a whole number (0 or more), found the number 18446744073709551616"
        );
    }

    #[test]
    fn not_utf8_names_line_and_column() {
        let e = InputError::reading(
            Path::new("x.yaml"),
            "config",
            crate::base::input::FileError::NotUtf8 { line: 2, column: 5 },
        );
        assert_eq!(
            e.to_string(),
            "x.yaml:2:5: is not UTF-8 text: save it as UTF-8"
        );
    }

    #[test]
    fn takes_position_and_path_from_serde_yaml() {
        #[derive(Debug, serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        #[allow(dead_code)]
        struct Item {
            question: String,
        }
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct Doc {
            items: Vec<Item>,
        }
        let err = serde_yaml::from_str::<Doc>("items:\n  - questoin: x\n").unwrap_err();
        let e = InputError::from_yaml(Path::new("a.yaml"), &err);
        assert_eq!(e.line, Some(2));
        assert_eq!(e.field.as_deref(), Some("items[0]"));
        assert!(
            e.message.starts_with("unknown field `questoin`"),
            "{}",
            e.message
        );
        assert!(!e.message.contains("at line"));
    }
}
