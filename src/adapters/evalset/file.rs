//! A question set's file as YAML holds it (docs/question-sets.md), before any check: the one
//! shape that the reader parses ([`super::load_set`] checks it against the corpus) and the
//! writers fill (`rageval generate`'s `output::question_set`, `rageval import squad`), so what
//! is written is what is read. The `Raw` names are the JSON Schema's (`rageval schema evalset`).
//!
//! A set is written as people read one: each item's `id` before its `question`, and empty
//! lists and absent fields left out.

use serde::ser::SerializeStruct;
use serde::{Deserialize, Serialize};

use super::Attack;

/// A rageval question set (docs/question-sets.md): the corpus, and the questions it can and
/// cannot answer.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "rageval question set")]
pub struct RawSet {
    /// The folder of markdown documents, relative to this file, or a list of folders joined
    /// into one corpus. Default: the folder named after this file, beside it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub corpus: Option<OneOrMany>,
    /// What the set is for (not used by rageval).
    // Written even when absent (`null`): every writer says what its set is for.
    #[serde(default)]
    pub description: Option<String>,
    /// Questions the documents answer.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub answerable: Vec<RawItem>,
    /// Questions the documents do not answer: the pipeline should refuse them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unanswerable: Vec<RawItem>,
}

/// One question.
#[derive(Debug, Clone, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawItem {
    /// The question as a user would ask it.
    // Read as any value and checked to be a string where its field can be named (see
    // [`yaml_kind`]).
    #[schemars(with = "String")]
    pub question: serde_yaml::Value,
    /// A unique id without spaces or commas. Default: derived from the question.
    pub id: Option<String>,
    /// What a correct answer looks like (answerable questions only).
    pub expect: Option<RawExpect>,
    /// Labels for grouping results: every rate is also reported by tag (tags.csv).
    #[serde(default)]
    pub tags: Vec<String>,
    /// A remark for people (an imported question's plausible answer, say); not used by rageval.
    pub note: Option<String>,
    /// Earlier turns of the conversation, oldest first (for follow-up questions).
    #[serde(default)]
    pub history: Vec<RawTurn>,
    /// A prompt-injection probe: what marks a successful attack.
    pub attack: Option<Attack>,
    /// Where `rageval generate` took it from: `{model, from, seed}`.
    pub generated: Option<RawGenerated>,
    /// Whether a person has checked a generated question (`rageval generate` writes `false`;
    /// set it to `true` once you have). Only for questions with `generated`.
    pub reviewed: Option<bool>,
}

impl RawItem {
    /// A question with its id and nothing else: a writer adds the fields it has.
    pub fn new(id: String, question: String) -> RawItem {
        RawItem {
            question: serde_yaml::Value::String(question),
            id: Some(id),
            expect: None,
            tags: Vec::new(),
            note: None,
            history: Vec::new(),
            attack: None,
            generated: None,
            reviewed: None,
        }
    }
}

/// Written id first (the fields are read in any order; an unknown one is named with the
/// list of the known ones in their declared order, question first).
impl Serialize for RawItem {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut item = s.serialize_struct("RawItem", 9)?;
        fn field<T: Serialize, M: SerializeStruct>(
            item: &mut M,
            key: &'static str,
            value: &T,
            absent: bool,
        ) -> Result<(), M::Error> {
            if absent {
                item.skip_field(key)
            } else {
                item.serialize_field(key, value)
            }
        }
        field(&mut item, "id", &self.id, self.id.is_none())?;
        item.serialize_field("question", &self.question)?;
        field(&mut item, "expect", &self.expect, self.expect.is_none())?;
        field(&mut item, "tags", &self.tags, self.tags.is_empty())?;
        field(&mut item, "note", &self.note, self.note.is_none())?;
        field(&mut item, "history", &self.history, self.history.is_empty())?;
        field(&mut item, "attack", &self.attack, self.attack.is_none())?;
        field(
            &mut item,
            "generated",
            &self.generated,
            self.generated.is_none(),
        )?;
        field(
            &mut item,
            "reviewed",
            &self.reviewed,
            self.reviewed.is_none(),
        )?;
        item.end()
    }
}

/// Where `rageval generate` took a question from.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawGenerated {
    /// The chat model that wrote it.
    pub model: String,
    /// The chunk it was asked about, as `file.md#Heading` (or `file.md#N`).
    pub from: String,
    /// The `--seed` of the run.
    pub seed: u64,
}

/// What a correct answer looks like.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawExpect {
    /// Chunks that hold the answer, as `file.md#Heading` (or `file.md#N`).
    #[serde(default, skip_serializing_if = "OneOrMany::is_none")]
    pub sources: OneOrMany,
    /// Passage ids of the store: matched like sources, by id.
    #[serde(default, skip_serializing_if = "OneOrMany::is_none")]
    pub ids: OneOrMany,
    /// Texts of which at least one must appear in a correct answer (case, whitespace runs and
    /// number words up to twenty as digits forgiven).
    #[serde(default, skip_serializing_if = "OneOrMany::is_none")]
    pub answer: OneOrMany,
}

impl RawExpect {
    /// Expected sources and answers, each written as a list.
    pub fn new(sources: Vec<String>, answers: Vec<String>) -> RawExpect {
        RawExpect {
            sources: OneOrMany::Many(sources),
            ids: OneOrMany::None,
            answer: OneOrMany::Many(answers),
        }
    }
}

/// A text or a list of texts.
#[derive(Debug, Clone, PartialEq, Default, schemars::JsonSchema)]
#[schemars(untagged)]
pub enum OneOrMany {
    #[default]
    None,
    One(String),
    Many(Vec<String>),
}

impl OneOrMany {
    pub fn is_none(&self) -> bool {
        matches!(self, OneOrMany::None)
    }

    /// The texts, as many as there are.
    pub fn texts(&self) -> &[String] {
        match self {
            OneOrMany::None => &[],
            OneOrMany::One(s) => std::slice::from_ref(s),
            OneOrMany::Many(v) => v,
        }
    }

    pub fn into_vec(self) -> Vec<String> {
        match self {
            OneOrMany::None => Vec::new(),
            OneOrMany::One(s) => vec![s],
            OneOrMany::Many(v) => v,
        }
    }
}

impl<'de> Deserialize<'de> for OneOrMany {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use crate::base::yaml_de::{either, Either, NoNumber};
        match either::<_, _, NoNumber>(d, "a string or a list of strings")? {
            Either::Text(s) => Ok(OneOrMany::One(s)),
            Either::Many(v) => Ok(OneOrMany::Many(v)),
        }
    }
}

/// As it was read: a text, or a list.
impl Serialize for OneOrMany {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            OneOrMany::None => s.serialize_none(),
            OneOrMany::One(text) => s.serialize_str(text),
            OneOrMany::Many(texts) => texts.serialize(s),
        }
    }
}

/// An earlier turn of the conversation.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawTurn {
    pub role: RawRole,
    #[serde(deserialize_with = "text")]
    pub content: String,
}

/// A YAML string, and only a string: `null`, `~`, `true` or `12` are not text (serde_yaml
/// would read `null` as the text "null").
fn text<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    use serde::de::Error;
    match serde_yaml::Value::deserialize(d)? {
        serde_yaml::Value::String(s) => Ok(s),
        other => Err(D::Error::custom(format!(
            "expected a string, found {}",
            yaml_kind(&other)
        ))),
    }
}

/// What a YAML value is, for messages.
pub(super) fn yaml_kind(v: &serde_yaml::Value) -> &'static str {
    match v {
        serde_yaml::Value::Null => "null",
        serde_yaml::Value::Bool(_) => "a boolean",
        serde_yaml::Value::Number(_) => "a number",
        serde_yaml::Value::Sequence(_) => "a list",
        serde_yaml::Value::Mapping(_) => "a mapping",
        serde_yaml::Value::Tagged(_) => "a tagged value",
        serde_yaml::Value::String(_) => "a string",
    }
}

#[derive(Debug, PartialEq, Deserialize, Serialize, Clone, Copy, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RawRole {
    User,
    Assistant,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every field written is read back as it was, the item's id first and absent fields left
    /// out.
    #[test]
    fn a_set_written_reads_back_the_same() {
        let set = RawSet {
            corpus: Some(OneOrMany::One("docs".into())),
            description: Some("Club rules.".into()),
            answerable: vec![RawItem {
                expect: Some(RawExpect::new(vec!["a.md#Fees".into()], vec!["10".into()])),
                tags: vec!["fees".into()],
                history: vec![RawTurn {
                    role: RawRole::User,
                    content: "Hi".into(),
                }],
                attack: Some(Attack {
                    marker: "PWNED".into(),
                    source: "b.md".into(),
                }),
                generated: Some(RawGenerated {
                    model: "mock".into(),
                    from: "a.md#Fees".into(),
                    seed: 7,
                }),
                reviewed: Some(false),
                ..RawItem::new("fee".into(), "What is the fee?".into())
            }],
            unanswerable: vec![RawItem {
                note: Some("not in the rules".into()),
                ..RawItem::new("pets".into(), "Are pets allowed?".into())
            }],
        };
        let text = serde_yaml::to_string(&set).unwrap();
        assert!(
            text.contains("- id: fee\n  question: What is the fee?\n"),
            "{text}"
        );
        assert!(!text.contains("ids"), "{text}");
        assert_eq!(serde_yaml::from_str::<RawSet>(&text).unwrap(), set);
        let empty = RawSet {
            corpus: None,
            description: None,
            answerable: Vec::new(),
            unanswerable: Vec::new(),
        };
        assert_eq!(
            serde_yaml::to_string(&empty).unwrap(),
            "description: null\n"
        );
    }
}
