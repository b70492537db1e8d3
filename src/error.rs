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
            message,
        }
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
            if let Some(col) = self.column {
                write!(f, ":{col}")?;
            }
        }
        write!(f, ": ")?;
        if let Some(field) = &self.field {
            write!(f, "`{field}`: ")?;
        }
        write!(f, "{}", self.message)
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
