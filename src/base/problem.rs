//! What a config section's check finds wrong: the field, as a YAML path relative to the
//! section, and why. A section's `check()` knows only its own fields; the config file's check
//! puts each section's path in front ([`Problem::under`]) and turns the problem into an
//! [`InputError`](crate::base::error::InputError) that names file, line and field.

use crate::base::yaml_loc::Seg;

/// One step of a YAML path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    Key(String),
    Index(usize),
}

/// A field that is wrong and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The field the message names (`base_url[1]`, `headers.Authorization`).
    pub field: Vec<Step>,
    /// Where the line shown is looked up, when not at `field`: a missing field is shown at
    /// its section, or at the key that asks for it.
    pub shown_at: Option<Vec<Step>>,
    pub message: String,
}

/// A section's check: the first problem, if any.
pub type Checked = Result<(), Problem>;

fn keys(path: &[&str]) -> Vec<Step> {
    path.iter().map(|k| Step::Key((*k).to_string())).collect()
}

impl Problem {
    /// `field` (one key of the section) is wrong: `message`.
    pub fn new(field: &str, message: impl Into<String>) -> Self {
        Problem::at(&[field], message)
    }

    /// The field at `path` in the section is wrong; `[]` is the section itself.
    pub fn at(path: &[&str], message: impl Into<String>) -> Self {
        Problem {
            field: keys(path),
            shown_at: None,
            message: message.into(),
        }
    }

    /// The field goes on into item `i` of a list.
    pub fn index(mut self, i: usize) -> Self {
        self.field.push(Step::Index(i));
        self
    }

    /// The field goes on into key `key`.
    pub fn key(mut self, key: &str) -> Self {
        self.field.push(Step::Key(key.to_string()));
        self
    }

    /// Show the line of `path` (relative to the section; `[]`: the section's own line).
    pub fn shown_at(mut self, path: &[&str]) -> Self {
        self.shown_at = Some(keys(path));
        self
    }

    /// The same problem seen from the section's parent, whose key (or keys) is `prefix`.
    pub fn under(mut self, prefix: &[&str]) -> Self {
        let prepend = |path: &mut Vec<Step>| {
            let mut full = keys(prefix);
            full.append(path);
            *path = full;
        };
        prepend(&mut self.field);
        if let Some(at) = self.shown_at.as_mut() {
            prepend(at);
        }
        self
    }

    /// The field as messages write it: `models.fast.base_url[1]`.
    pub fn field_name(&self) -> String {
        let mut out = String::new();
        for step in &self.field {
            match step {
                Step::Key(k) if out.is_empty() => out.push_str(k),
                Step::Key(k) => {
                    out.push('.');
                    out.push_str(k);
                }
                Step::Index(i) => out.push_str(&format!("[{i}]")),
            }
        }
        out
    }

    /// The path whose line is shown, for [`Locator::line`](crate::base::yaml_loc::Locator::line).
    pub(crate) fn line_path(&self) -> Vec<Seg<'_>> {
        self.shown_at
            .as_ref()
            .unwrap_or(&self.field)
            .iter()
            .map(|s| match s {
                Step::Key(k) => Seg::Key(k),
                Step::Index(i) => Seg::Index(*i),
            })
            .collect()
    }
}

/// Put `prefix` in front of a section's problem.
pub trait Under {
    fn under(self, prefix: &[&str]) -> Self;
}

impl Under for Checked {
    fn under(self, prefix: &[&str]) -> Self {
        self.map_err(|p| p.under(prefix))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_problem_names_its_field_from_the_top_and_shows_its_own_line() {
        let p = Problem::new("base_url", "no")
            .index(1)
            .under(&["models", "a.b"]);
        assert_eq!(p.field_name(), "models.a.b.base_url[1]");
        assert_eq!(
            p.line_path(),
            [
                Seg::Key("models"),
                Seg::Key("a.b"),
                Seg::Key("base_url"),
                Seg::Index(1)
            ]
        );
        let missing = Problem::new("url", "is missing")
            .shown_at(&["kind"])
            .under(&["retriever"]);
        assert_eq!(missing.field_name(), "retriever.url");
        assert_eq!(
            missing.line_path(),
            [Seg::Key("retriever"), Seg::Key("kind")]
        );
        assert_eq!(
            Problem::at(&[], "x").under(&["models", "m"]).field_name(),
            "models.m"
        );
    }
}
