//! Prompt templates: text with `{name}` placeholders, parsed once at load so that an unknown
//! placeholder is an input error before the sweep, and rendered in one pass so that a value
//! holding `{question}` is never expanded again.
//!
//! `{{` and `}}` write a literal brace. A `{` that does not start `{name}` (JSON in a system
//! prompt, say) is kept as written.

use std::fmt;

/// A value a template can ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Slot {
    /// The `Context:` block: every passage, rendered by the passage template.
    Context,
    /// The question as asked (trimmed).
    Question,
    /// The refusal sentence.
    Refusal,
    /// A passage's number, from 1.
    N,
    /// A passage's file, `file.md`.
    Source,
    /// A passage's heading.
    Heading,
    /// A passage's text, whitespace squashed.
    Text,
    /// The passage a question is generated from (`rageval generate`).
    Passage,
    /// The numbered passages a verifier reads (`rageval generate`).
    Passages,
    /// The most words a generated answer may have, as a word (`ten`): what the generator's
    /// check holds answers to (`rageval generate`).
    MaxAnswerWords,
    /// The claim a false-premise question takes for granted (`rageval generate`).
    Premise,
}

impl Slot {
    pub fn name(self) -> &'static str {
        match self {
            Slot::Context => "context",
            Slot::Question => "question",
            Slot::Refusal => "refusal",
            Slot::N => "n",
            Slot::Source => "source",
            Slot::Heading => "heading",
            Slot::Text => "text",
            Slot::Passage => "passage",
            Slot::Passages => "passages",
            Slot::MaxAnswerWords => "max_answer_words",
            Slot::Premise => "premise",
        }
    }

    const ALL: [Slot; 11] = [
        Slot::Context,
        Slot::Question,
        Slot::Refusal,
        Slot::N,
        Slot::Source,
        Slot::Heading,
        Slot::Text,
        Slot::Passage,
        Slot::Passages,
        Slot::MaxAnswerWords,
        Slot::Premise,
    ];
}

/// The placeholders of the system and user messages.
pub const MESSAGE_SLOTS: &[Slot] = &[Slot::Context, Slot::Question, Slot::Refusal];
/// The placeholders of one passage.
pub const PASSAGE_SLOTS: &[Slot] = &[Slot::N, Slot::Source, Slot::Heading, Slot::Text];
/// The placeholders of a question generator's prompt.
pub const GENERATE_SLOTS: &[Slot] = &[Slot::Passage, Slot::Source, Slot::MaxAnswerWords];
/// The placeholders of the verifier's prompt.
pub const VERIFY_SLOTS: &[Slot] = &[Slot::Question, Slot::Passages];
/// The placeholders of the premise verifier's prompt.
pub const PREMISE_SLOTS: &[Slot] = &[Slot::Question, Slot::Premise, Slot::Passages];

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Part {
    Text(String),
    Slot(Slot),
}

/// A parsed template.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Template {
    parts: Vec<Part>,
}

/// Why a template was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    #[error("unknown placeholder `{{{name}}}`; this template takes {allowed} (write `{{{{` and `}}}}` for literal braces)")]
    Unknown { name: String, allowed: String },
}

impl Template {
    /// Parse `text`, allowing only the placeholders in `allowed`.
    pub fn parse(text: &str, allowed: &[Slot]) -> Result<Template, TemplateError> {
        let mut parts = Vec::new();
        let mut literal = String::new();
        let mut rest = text;
        while let Some(c) = rest.chars().next() {
            if let Some(after) = rest.strip_prefix("{{") {
                literal.push('{');
                rest = after;
                continue;
            }
            if let Some(after) = rest.strip_prefix("}}") {
                literal.push('}');
                rest = after;
                continue;
            }
            if c == '{' {
                let name_len = rest[1..]
                    .find(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_'))
                    .unwrap_or(rest.len() - 1);
                let name = &rest[1..1 + name_len];
                if name_len > 0 && rest[1 + name_len..].starts_with('}') {
                    let slot = Slot::ALL
                        .into_iter()
                        .find(|s| s.name() == name && allowed.contains(s))
                        .ok_or_else(|| TemplateError::Unknown {
                            name: name.to_string(),
                            allowed: allowed
                                .iter()
                                .map(|s| format!("`{{{}}}`", s.name()))
                                .collect::<Vec<_>>()
                                .join(", "),
                        })?;
                    if !literal.is_empty() {
                        parts.push(Part::Text(std::mem::take(&mut literal)));
                    }
                    parts.push(Part::Slot(slot));
                    rest = &rest[name_len + 2..];
                    continue;
                }
            }
            literal.push(c);
            rest = &rest[c.len_utf8()..];
        }
        if !literal.is_empty() {
            parts.push(Part::Text(literal));
        }
        Ok(Template { parts })
    }

    /// Whether the template asks for `slot`.
    pub fn uses(&self, slot: Slot) -> bool {
        self.parts.contains(&Part::Slot(slot))
    }

    /// The template's own text between its placeholders, in order.
    pub fn literals(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|p| match p {
            Part::Text(t) => Some(t.as_str()),
            Part::Slot(_) => None,
        })
    }

    /// The text with every placeholder replaced by `value(slot)`.
    pub fn render<'a>(&self, value: impl Fn(Slot) -> &'a str) -> String {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Text(t) => out.push_str(t),
                Part::Slot(s) => out.push_str(value(*s)),
            }
        }
        out
    }
}

impl fmt::Display for Template {
    /// The template as it would be written (braces doubled), for messages and digests.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for part in &self.parts {
            match part {
                Part::Text(t) => f.write_str(&t.replace('{', "{{").replace('}', "}}"))?,
                Part::Slot(s) => write!(f, "{{{}}}", s.name())?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fill(t: &Template) -> String {
        t.render(|s| match s {
            Slot::Question => "Q {context}?",
            Slot::Context => "C",
            _ => "x",
        })
    }

    #[test]
    fn placeholders_are_replaced_once_and_braces_escape() {
        let t = Template::parse(
            "{{q}} {question} | {context} {\"json\": 1} {",
            MESSAGE_SLOTS,
        )
        .unwrap();
        assert_eq!(fill(&t), "{q} Q {context}? | C {\"json\": 1} {");
        assert_eq!(
            t.to_string(),
            "{{q}} {question} | {context} {{\"json\": 1}} {{"
        );
        assert_eq!(fill(&Template::parse("", MESSAGE_SLOTS).unwrap()), "");
        assert_eq!(
            fill(&Template::parse("é{question}é", MESSAGE_SLOTS).unwrap()),
            "éQ {context}?é"
        );
    }

    #[test]
    fn an_unknown_or_misplaced_placeholder_is_named() {
        let err = Template::parse("Q: {qestion}", MESSAGE_SLOTS).unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown placeholder `{qestion}`; this template takes `{context}`, `{question}`, `{refusal}` (write `{{` and `}}` for literal braces)"
        );
        let err = Template::parse("[{n}] {question}", PASSAGE_SLOTS).unwrap_err();
        assert_eq!(
            err,
            TemplateError::Unknown {
                name: "question".into(),
                allowed: "`{n}`, `{source}`, `{heading}`, `{text}`".into()
            }
        );
    }
}
