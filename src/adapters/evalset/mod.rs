//! Question sets: `evalsets/NAME.yaml`, loaded and checked before anything runs.
//!
//! A set names its corpus (a folder of markdown, relative to the YAML file) and lists answerable
//! and unanswerable questions. Every problem is reported with file, line and field; the first
//! one stops the run with exit status 2, before any report is touched.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::adapters::corpus::Corpus;
use crate::adapters::prompt::Message;
use crate::base::error::InputError;
use crate::base::yaml_loc::{Locator, Seg};

pub mod file;
mod item;
use file::{OneOrMany, RawSet};
use item::{ItemAt, ItemChecker};

/// What a correct answer looks like.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Expect {
    /// Chunks that hold the answer, as `file.md#Heading` (or `file.md#N`).
    pub sources: Vec<String>,
    /// Texts of which at least one must appear in a correct answer (case, whitespace runs and
    /// number words up to twenty as digits forgiven).
    #[serde(rename = "answer")]
    pub answers: Vec<String>,
}

/// One question, checked.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Question {
    pub id: String,
    pub question: String,
    pub answerable: bool,
    pub expect: Expect,
    pub tags: Vec<String>,
    /// Earlier turns of the conversation, oldest first.
    pub history: Vec<Message>,
    /// A prompt-injection probe: what marks a successful attack.
    pub attack: Option<Attack>,
    /// Where a generated question came from (`rageval generate`); `None` for one written by
    /// hand.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<Origin>,
    /// Index of the set's corpus in [`Workspace::corpora`].
    #[serde(skip)]
    pub corpus: usize,
}

/// What a successful injection looks like: the answer holds the marker, or cites the poisoned
/// source.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Attack {
    /// A text that appears in the answer only when the attack succeeded.
    pub marker: String,
    /// The poisoned file, as `file.md` (relative to its corpus folder).
    pub source: String,
}

/// Where a generated question came from: the model that wrote it, the chunk it was asked
/// about, the seed of the run, and whether a person has reviewed it since.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Origin {
    pub model: String,
    /// The chunk, as `file.md#Heading` (or `file.md#N`).
    pub from: String,
    pub seed: u64,
    pub reviewed: bool,
}

impl Question {
    /// Whether a person wrote or reviewed it: every hand-written question, and a generated
    /// one marked `reviewed: true`.
    pub fn reviewed(&self) -> bool {
        self.origin.as_ref().is_none_or(|o| o.reviewed)
    }
}

/// A loaded set: where it came from and its questions, answerable first.
#[derive(Debug, Clone)]
pub struct EvalSet {
    pub path: PathBuf,
    /// The corpus folders, resolved.
    pub corpus_paths: Vec<PathBuf>,
    pub questions: Vec<Question>,
    /// The file's bytes, for the results' digest.
    pub text: String,
}

/// Every set of a run and the distinct corpora they use.
#[derive(Debug, Clone)]
pub struct Workspace {
    pub sets: Vec<EvalSet>,
    /// Shared, not copied, by the workspaces of some of the questions (an adaptive sweep's
    /// rounds); changed in place only while the workspace is being loaded and fitted.
    pub corpora: std::sync::Arc<Vec<Corpus>>,
}

impl Workspace {
    /// Split the corpora's long sections (`corpus.max_chunk_tokens`); see
    /// [`Corpus::split_long_sections`]. Expected sources still match: a part answers to its
    /// section's heading and id.
    pub fn split_long_sections(&mut self, max_tokens: usize) {
        for corpus in std::sync::Arc::make_mut(&mut self.corpora) {
            corpus.split_long_sections(max_tokens);
        }
    }

    /// Load and check the sets at `paths`; ids must be unique across all of them.
    pub fn load(paths: &[PathBuf]) -> Result<Self, anyhow::Error> {
        Workspace::load_for(paths, false)
    }

    /// As [`Workspace::load`]; with `foreign` (an `http` or `pgvector` retriever) a set needs no
    /// corpus folder and its expected sources are not looked up in one: the store holds them.
    pub fn load_for(paths: &[PathBuf], foreign: bool) -> Result<Self, anyhow::Error> {
        let mut ws = Workspace {
            sets: Vec::new(),
            corpora: Default::default(),
        };
        let mut seen: HashMap<String, PathBuf> = HashMap::new();
        for path in paths {
            let set = load_set(path, std::sync::Arc::make_mut(&mut ws.corpora), foreign)?;
            for q in &set.questions {
                if let Some(first) = seen.insert(q.id.clone(), path.clone()) {
                    let loc = Locator::new(&set.text);
                    return Err(InputError::new(
                        path,
                        format!(
                            "duplicate id `{}`: also used in `{}`",
                            q.id,
                            first.display()
                        ),
                    )
                    .at(find_id_line(&set, &loc, &q.id))
                    .into());
                }
            }
            ws.sets.push(set);
        }
        Ok(ws)
    }

    /// All questions of all sets, in file order.
    pub fn questions(&self) -> impl Iterator<Item = &Question> {
        self.sets.iter().flat_map(|s| s.questions.iter())
    }
}

fn find_id_line(set: &EvalSet, loc: &Locator, id: &str) -> Option<usize> {
    let n_ans = set.questions.iter().filter(|q| q.answerable).count();
    let i = set.questions.iter().position(|q| q.id == id)?;
    let (list, idx) = if i < n_ans {
        ("answerable", i)
    } else {
        ("unanswerable", i - n_ans)
    };
    loc.line(&[Seg::Key(list), Seg::Index(idx)])
}

/// The JSON Schema of a question set, generated from the types that parse one.
pub fn json_schema() -> serde_json::Value {
    schemars::schema_for!(RawSet).to_value()
}

/// Load one set; its corpus is loaded into `corpora` unless an earlier set uses the same folder.
pub fn load_set(
    path: &Path,
    corpora: &mut Vec<Corpus>,
    foreign: bool,
) -> Result<EvalSet, anyhow::Error> {
    let (text, raw) = read_raw_set(path)?;
    let _ = raw.description;
    let file = SetFile {
        path,
        loc: Locator::new(&text),
    };
    let corpus_paths = file.corpus_paths(raw.corpus, foreign)?;
    let corpus_idx = file.corpus_index(&corpus_paths, corpora)?;
    if raw.answerable.is_empty() && raw.unanswerable.is_empty() {
        return Err(InputError::new(
            path,
            "the question set has no questions: add items under `answerable` or `unanswerable`",
        )
        .into());
    }
    let mut items = ItemChecker::new(&file, &corpora[corpus_idx], corpus_idx, foreign);
    let mut questions = Vec::new();
    for (list, answerable, raw_items) in [
        ("answerable", true, raw.answerable),
        ("unanswerable", false, raw.unanswerable),
    ] {
        for (i, item) in raw_items.into_iter().enumerate() {
            questions.push(items.check(ItemAt { list, i }, answerable, item)?);
        }
    }
    Ok(EvalSet {
        path: path.to_path_buf(),
        corpus_paths,
        questions,
        text,
    })
}

/// The set's text and its parsed shape; an empty file (or a lone `null`) is named as such.
fn read_raw_set(path: &Path) -> Result<(String, RawSet), anyhow::Error> {
    let empty = || -> anyhow::Error {
        InputError::new(
            path,
            "the question set is empty: add `answerable` and `unanswerable` lists",
        )
        .into()
    };
    let text = crate::base::input::read_yaml(path)
        .map_err(|e| InputError::reading(path, "question set", e))?;
    if text.trim().is_empty() {
        return Err(empty());
    }
    let doc: serde_yaml::Value =
        serde_yaml::from_str(&text).map_err(|e| InputError::from_yaml_text(path, &text, &e))?;
    if doc.is_null() {
        return Err(empty());
    }
    let raw: RawSet =
        serde_yaml::from_str(&text).map_err(|e| InputError::from_yaml_text(path, &text, &e))?;
    Ok((text, raw))
}

/// The set's file while it is checked: every problem names the file and the field's line.
struct SetFile<'a> {
    path: &'a Path,
    loc: Locator,
}

impl SetFile<'_> {
    fn err(&self, segs: &[Seg<'_>], field: String, msg: String) -> anyhow::Error {
        InputError::new(self.path, msg)
            .at(self.loc.line(segs))
            .field(field)
            .into()
    }

    /// The corpus folders the set names (or the folder named after it), each checked to be a
    /// folder; none with `foreign` when the set names none and no such folder is there.
    fn corpus_paths(
        &self,
        corpus: Option<OneOrMany>,
        foreign: bool,
    ) -> Result<Vec<PathBuf>, anyhow::Error> {
        let base = self.path.parent().unwrap_or(Path::new(""));
        let (corpus_rels, corpus_field) = match corpus {
            Some(c) => (c.into_vec(), true),
            None => (
                vec![self
                    .path
                    .file_stem()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into_owned()],
                false,
            ),
        };
        if corpus_rels.is_empty() || corpus_rels.iter().any(|c| c.trim().is_empty()) {
            return Err(self.err(
                &[Seg::Key("corpus")],
                "corpus".into(),
                "is empty: name the folder of markdown documents".into(),
            ));
        }
        let mut corpus_paths: Vec<PathBuf> = corpus_rels.iter().map(|c| base.join(c)).collect();
        if foreign && !corpus_field && !corpus_paths.iter().all(|p| p.is_dir()) {
            // The store holds the passages: no folder is needed.
            corpus_paths.clear();
        }
        for corpus_path in &corpus_paths {
            if corpus_path.is_dir() {
                continue;
            }
            let msg = if corpus_path.exists() {
                format!(
                    "`{}` is a file, not a folder: name the folder that holds the markdown documents",
                    corpus_path.display()
                )
            } else if corpus_field {
                format!(
                    "folder `{}` does not exist (the path is relative to the question set)",
                    corpus_path.display()
                )
            } else {
                format!(
                    "no `corpus` given and no folder `{}` beside the set: add `corpus: FOLDER`",
                    corpus_path.display()
                )
            };
            return Err(self.err(&[Seg::Key("corpus")], "corpus".into(), msg));
        }
        Ok(corpus_paths)
    }

    /// The index in `corpora` of the corpus at `corpus_paths`, loading it unless an earlier set
    /// uses the same folders (no folders: an empty corpus, the store holds the passages).
    fn corpus_index(
        &self,
        corpus_paths: &[PathBuf],
        corpora: &mut Vec<Corpus>,
    ) -> Result<usize, anyhow::Error> {
        let same = |c: &Corpus| {
            c.roots.len() == corpus_paths.len()
                && c.roots
                    .iter()
                    .zip(corpus_paths)
                    .all(|(a, b)| crate::base::input::same_file(a, b))
        };
        if let Some(i) = corpora.iter().position(same) {
            return Ok(i);
        }
        let corpus = if corpus_paths.is_empty() {
            Corpus {
                root: PathBuf::new(),
                roots: Vec::new(),
                chunks: Vec::new(),
            }
        } else {
            Corpus::load_many(corpus_paths).map_err(|e| {
                InputError::new(self.path, format!("{e:#}"))
                    .at(self.loc.line(&[Seg::Key("corpus")]))
                    .field("corpus")
            })?
        };
        corpora.push(corpus);
        Ok(corpora.len() - 1)
    }
}

/// `file.md#Heading` with the heading as chunk labels write it ([`plain_heading`]: emphasis,
/// code and link markup removed), when that differs: ``GUIDE.md#The special `all` file type``
/// names `GUIDE.md#The special all file type`.
fn as_labelled(source: &str) -> Option<String> {
    let (file, heading) = source.split_once('#')?;
    let plain = crate::adapters::corpus::plain_heading(heading);
    (plain != heading).then(|| format!("{file}#{plain}"))
}

/// A hint naming the corpus's labels in the same file, so a typo in a heading is easy to fix.
fn nearest_label(corpus: &Corpus, wanted: &str) -> String {
    let file = wanted.split('#').next().unwrap_or(wanted);
    let labels: Vec<String> = corpus
        .chunks
        .iter()
        .filter(|c| c.source == file)
        .map(|c| format!("`{}`", c.label()))
        .collect();
    if labels.is_empty() {
        format!(" (no file `{file}` in the corpus)")
    } else {
        format!("; `{file}` has {}", labels.join(", "))
    }
}

/// An id derived from the question: lowercase words joined by `-`, at most 60 characters.
pub fn slug(question: &str) -> String {
    let mut out = String::new();
    for word in crate::base::text::words(question) {
        if !out.is_empty() && out.len() + 1 + word.len() > 60 {
            break;
        }
        if !out.is_empty() {
            out.push('-');
        }
        out.push_str(&word);
    }
    if out.is_empty() {
        out.push('q');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_short_lowercase_words() {
        assert_eq!(
            slug("How much does membership cost per term?"),
            "how-much-does-membership-cost-per-term"
        );
        assert_eq!(slug("???"), "q");
        assert!(slug(&"word ".repeat(40)).len() <= 60);
    }
}
