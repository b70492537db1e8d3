//! One question of a set, checked field by field against the set's corpus, in the order the
//! file's messages come in.

use std::collections::HashMap;

use crate::adapters::corpus::Corpus;
use crate::adapters::prompt::{Message, Role};
use crate::base::yaml_loc::Seg;

use super::file::{yaml_kind, RawExpect, RawGenerated, RawItem, RawRole, RawTurn};
use super::{as_labelled, nearest_label, slug, Attack, Expect, Origin, Question, SetFile};

/// Where an item sits in the set: `answerable[3]`.
#[derive(Clone, Copy)]
pub(super) struct ItemAt {
    pub(super) list: &'static str,
    pub(super) i: usize,
}

impl ItemAt {
    /// The YAML path and the field name of one of the item's fields (`""`: the item itself).
    fn field(self, field: &'static str) -> (Vec<Seg<'static>>, String) {
        let mut segs = vec![Seg::Key(self.list), Seg::Index(self.i)];
        let mut name = format!("{}[{}]", self.list, self.i);
        if !field.is_empty() {
            segs.push(Seg::Key(field));
            name = format!("{name}.{field}");
        }
        (segs, name)
    }
}

/// Checks the items of one set against its corpus, one at a time, remembering their ids.
pub(super) struct ItemChecker<'a> {
    file: &'a SetFile<'a>,
    corpus: &'a Corpus,
    corpus_idx: usize,
    /// The store holds the passages: expected sources are not looked up in the corpus.
    foreign: bool,
    /// Each id seen so far, with the item that has it.
    ids: HashMap<String, String>,
}

impl<'a> ItemChecker<'a> {
    pub(super) fn new(
        file: &'a SetFile<'a>,
        corpus: &'a Corpus,
        corpus_idx: usize,
        foreign: bool,
    ) -> Self {
        ItemChecker {
            file,
            corpus,
            corpus_idx,
            foreign,
            ids: HashMap::new(),
        }
    }

    fn err(&self, at: ItemAt, field: &'static str, msg: impl Into<String>) -> anyhow::Error {
        let (segs, name) = at.field(field);
        self.file.err(&segs, name, msg.into())
    }

    /// A sub-field of `field`: `answerable[3].expect.sources[1]`.
    fn err_in(
        &self,
        at: ItemAt,
        field: &'static str,
        sub: &[Seg<'_>],
        sub_name: &str,
        msg: impl Into<String>,
    ) -> anyhow::Error {
        let (mut segs, name) = at.field(field);
        segs.extend_from_slice(sub);
        self.file
            .err(&segs, format!("{name}.{sub_name}"), msg.into())
    }

    /// One item checked, field by field in the order of the file's messages.
    pub(super) fn check(
        &mut self,
        at: ItemAt,
        answerable: bool,
        item: RawItem,
    ) -> Result<Question, anyhow::Error> {
        let question = self.question_text(at, &item.question)?;
        let id = self.id(at, item.id, &question)?;
        let expect = self.expect(at, answerable, item.expect)?;
        self.check_attack(at, item.attack.as_ref())?;
        if let Some(j) = expect.answers.iter().position(|a| a.trim().is_empty()) {
            let sub = [Seg::Key("answer")];
            return Err(self.err_in(at, "expect", &sub, &format!("answer[{j}]"), "is empty"));
        }
        let _ = item.note;
        let origin = self.origin(at, item.generated, item.reviewed)?;
        Ok(Question {
            id,
            question,
            answerable,
            expect,
            tags: item.tags,
            history: history(item.history),
            attack: item.attack,
            origin,
            corpus: self.corpus_idx,
        })
    }

    fn question_text(
        &self,
        at: ItemAt,
        question: &serde_yaml::Value,
    ) -> Result<String, anyhow::Error> {
        let question = match question {
            serde_yaml::Value::String(q) => q.trim().to_string(),
            other => {
                let msg = format!("expected a string, found {}", yaml_kind(other));
                return Err(self.err(at, "question", msg));
            }
        };
        if question.is_empty() {
            return Err(self.err(at, "question", "is empty"));
        }
        Ok(question)
    }

    /// The item's id (or its question's slug), valid and not used by an earlier item.
    fn id(
        &mut self,
        at: ItemAt,
        id: Option<String>,
        question: &str,
    ) -> Result<String, anyhow::Error> {
        let id = match id {
            Some(id) => {
                let id = id.trim().to_string();
                if id.is_empty() || id.contains(char::is_whitespace) || id.contains(',') {
                    return Err(self.err(at, "id", format!("`{id}` is not a valid id: it must be non-empty, without spaces or commas")));
                }
                id
            }
            None => slug(question),
        };
        if let Some(first) = self
            .ids
            .insert(id.clone(), format!("{}[{}]", at.list, at.i))
        {
            return Err(self.err(
                at,
                "id",
                format!("duplicate id `{id}` (also `{first}`); give one of them an explicit `id`"),
            ));
        }
        Ok(id)
    }

    /// What the item expects, its sources checked against the corpus.
    fn expect(
        &self,
        at: ItemAt,
        answerable: bool,
        expect: Option<RawExpect>,
    ) -> Result<Expect, anyhow::Error> {
        // Sources come first, then ids: the place of entry j in the file.
        let named_sources = expect.as_ref().map_or(0, |e| e.sources.texts().len());
        let mut expect = expect
            .map(|e| Expect {
                sources: e
                    .sources
                    .into_vec()
                    .into_iter()
                    .chain(e.ids.into_vec())
                    .collect(),
                answers: e.answer.into_vec(),
            })
            .unwrap_or_default();
        if !answerable && (!expect.sources.is_empty() || !expect.answers.is_empty()) {
            return Err(self.err(at, "expect", "an unanswerable question cannot expect sources or answers; move it to `answerable`"));
        }
        for j in 0..expect.sources.len() {
            if let Some(plain) = self.source(at, j, named_sources, &expect.sources[j])? {
                expect.sources[j] = plain;
            }
        }
        Ok(expect)
    }

    /// Check expected source `j`; `Some` names the chunk as its label has it when the source
    /// wrote its heading with markup.
    fn source(
        &self,
        at: ItemAt,
        j: usize,
        named_sources: usize,
        source: &str,
    ) -> Result<Option<String>, anyhow::Error> {
        if source.trim().is_empty() {
            let (key, n) = if j < named_sources {
                ("sources", j)
            } else {
                ("ids", j - named_sources)
            };
            return Err(self.err_in(
                at,
                "expect",
                &[Seg::Key(key), Seg::Index(n)],
                &format!("{key}[{n}]"),
                "is empty: name a passage by `source#heading` or by its id",
            ));
        }
        if self.foreign || self.corpus.find(source).is_some() {
            return Ok(None);
        }
        // A heading as written in the markdown names the chunk as its label has it.
        if let Some(plain) = as_labelled(source).filter(|p| self.corpus.find(p).is_some()) {
            return Ok(Some(plain));
        }
        let hint = nearest_label(self.corpus, source);
        Err(self.err_in(
            at,
            "expect",
            &[Seg::Key("sources"), Seg::Index(j)],
            &format!("sources[{j}]"),
            format!(
                "`{source}` names no chunk of corpus `{}`{hint}",
                self.corpus.describe()
            ),
        ))
    }

    /// An attack's marker is not empty and its source is a file of the corpus.
    fn check_attack(&self, at: ItemAt, attack: Option<&Attack>) -> Result<(), anyhow::Error> {
        let Some(attack) = attack else {
            return Ok(());
        };
        if attack.marker.trim().is_empty() {
            return Err(self.err_in(at, "attack", &[Seg::Key("marker")], "marker", "is empty"));
        }
        if !self.foreign && !self.corpus.chunks.iter().any(|c| c.source == attack.source) {
            return Err(self.err_in(
                at,
                "attack",
                &[Seg::Key("source")],
                "source",
                format!(
                    "`{}` is no file of corpus `{}`",
                    attack.source,
                    self.corpus.describe()
                ),
            ));
        }
        Ok(())
    }

    /// Where a generated question came from; `reviewed` without `generated` is refused.
    fn origin(
        &self,
        at: ItemAt,
        generated: Option<RawGenerated>,
        reviewed: Option<bool>,
    ) -> Result<Option<Origin>, anyhow::Error> {
        match (generated, reviewed) {
            (Some(g), reviewed) => Ok(Some(Origin {
                model: g.model,
                from: g.from,
                seed: g.seed,
                reviewed: reviewed.unwrap_or(false),
            })),
            (None, Some(_)) => Err(self.err(
                at,
                "reviewed",
                "marks a generated question, and this one has no `generated`: remove it",
            )),
            (None, None) => Ok(None),
        }
    }
}

/// The earlier turns as messages.
fn history(turns: Vec<RawTurn>) -> Vec<Message> {
    turns
        .into_iter()
        .map(|t| Message {
            role: match t.role {
                RawRole::User => Role::User,
                RawRole::Assistant => Role::Assistant,
            },
            content: t.content,
        })
        .collect()
}
