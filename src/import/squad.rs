//! SQuAD 2.0 JSON in, a question set and its corpus out: `rageval import squad FILE --out DIR`.
//!
//! SQuAD's format (`data[].title`, `paragraphs[].context`, `qas[].question/id/is_impossible/
//! answers[].text/answer_start`, `plausible_answers` on impossible questions) is what public
//! sets, annotation tools and many internal datasets export. Each article becomes one markdown
//! file of `DIR/docs/`, one section per paragraph (`# Title, paragraph N`), and
//! `DIR/questions.yaml` a normal question set over it (docs/question-sets.md has the mapping).
//!
//! The file is read as a stream: one article at a time is parsed, checked, written and dropped,
//! so the 40 MB training set never sits in memory as a whole. Everything is written into a
//! temporary folder beside `DIR` and put in place at the end (`base::out_folder`): bad input
//! or Ctrl-C leaves nothing behind, and `--force` replaces a `DIR` only once the new one is
//! complete, and only a folder rageval wrote that does not hold the input.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::path::{Path, PathBuf};

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use crate::adapters::corpus::{chunk_markdown, plain_heading};
use crate::adapters::evalset::file::{OneOrMany, RawExpect, RawItem, RawSet};
use crate::base::error::InputError;
use crate::base::input::{MAX_DOCUMENT_BYTES, MAX_YAML_BYTES};
use crate::base::out_folder;
use crate::base::text::{normal_answer, plural};

/// The largest SQuAD file read (the training set is 40 MB).
pub const MAX_SQUAD_BYTES: u64 = 1024 * 1024 * 1024;

/// The tag of an impossible question that SQuAD gives plausible answers for.
pub const PLAUSIBLE_TAG: &str = "plausible-answer";

/// What an article's tag starts with (`article:Normans`), so that a title never merges with a
/// tag rageval gives itself (`plausible-answer`, `generated`, `reviewed`, ...).
pub const ARTICLE_TAG_PREFIX: &str = "article:";

/// The longest file name stem written, in bytes: a name with its `-N` and `.md` stays far
/// inside the 255 bytes file systems allow, whatever the title's letters.
pub const MAX_STEM_BYTES: usize = 120;

/// What an import wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Imported {
    pub articles: usize,
    pub paragraphs: usize,
    pub answerable: usize,
    pub unanswerable: usize,
    /// Of the unanswerable questions, those with plausible answers (tagged [`PLAUSIBLE_TAG`]).
    pub plausible: usize,
}

impl fmt::Display for Imported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({}): {} answerable and {} unanswerable questions ({} with plausible answers)",
            plural(self.articles, "article"),
            plural(self.paragraphs, "paragraph"),
            self.answerable,
            self.unanswerable,
            self.plausible
        )
    }
}

/// Import the SQuAD file `file` into the folder `out` (`docs/` and `questions.yaml`). An `out`
/// that exists is refused unless `force`, and then replaced whole once the import succeeded,
/// and only if it is a folder rageval wrote that does not hold `file`
/// ([`crate::base::out_folder`]).
pub fn import(file: &Path, out: &Path, force: bool) -> Result<Imported, anyhow::Error> {
    let name = file.file_name().unwrap_or_default().to_string_lossy();
    let marker = format!(
        "Written by `rageval import squad` from {name}: `--force` replaces this folder only while this file is in it.\n"
    );
    // Removed on every early return (and on Ctrl-C): nothing half-written stays.
    let staging =
        out_folder::stage(out, force, &[file], &marker).map_err(|why| InputError::new(out, why))?;
    let docs = staging.path().join("docs");
    std::fs::create_dir(&docs)
        .map_err(|e| anyhow::anyhow!("cannot create `{}`: {e}", docs.display()))?;

    let reader = crate::base::input::open_limited(file, MAX_SQUAD_BYTES)
        .map_err(|e| InputError::new(file, format!("cannot read the SQuAD file: {e}")))?;
    let mut state = State {
        file: file.to_path_buf(),
        docs: docs.clone(),
        error: RefCell::new(None),
        reading: None,
        ids: HashMap::new(),
        names: HashSet::new(),
        set_bytes: 0,
        set: RawSet {
            corpus: Some(OneOrMany::One("docs".to_string())),
            description: None,
            answerable: Vec::new(),
            unanswerable: Vec::new(),
        },
        imported: Imported::default(),
    };
    let mut de = serde_json::Deserializer::from_reader(std::io::BufReader::new(reader));
    let parsed = FileSeed(&mut state)
        .deserialize(&mut de)
        .and_then(|()| de.end());
    if let Err(e) = parsed {
        return Err(match state.error.take() {
            Some(ours) => ours,
            None => match state.reading {
                Some(i) => json_error(file, &e, &format!("`data[{i}]`")),
                None => json_error(file, &e, "the file"),
            },
        }
        .into());
    }
    let State {
        mut set, imported, ..
    } = state;
    set.description = Some(format!(
        "Imported from {} by `rageval import squad`: one markdown file per article in docs/, one section per paragraph.",
        file.file_name().unwrap_or_default().to_string_lossy()
    ));
    if imported.answerable + imported.unanswerable == 0 {
        return Err(InputError::new(
            file,
            "holds no question (`data[].paragraphs[].qas` are all empty)",
        )
        .into());
    }
    let header = format!(
        "# Imported by `rageval import squad` from {}: {imported}.\n",
        file.file_name().unwrap_or_default().to_string_lossy()
    );
    let yaml = serde_yaml::to_string(&set)?;
    if (header.len() + yaml.len()) as u64 > MAX_YAML_BYTES {
        return Err(InputError::new(
            file,
            format!(
                "its {} questions make a question set of {:.1} MiB, more than the {} MiB rageval reads of one (nothing was written): split the file's `data` into parts and import each into its own folder",
                imported.answerable + imported.unanswerable,
                (header.len() + yaml.len()) as f64 / (1024.0 * 1024.0),
                MAX_YAML_BYTES / (1024 * 1024)
            ),
        )
        .into());
    }
    std::fs::write(
        staging.path().join("questions.yaml"),
        format!("{header}{yaml}"),
    )
    .map_err(|e| anyhow::anyhow!("cannot write `{}`: {e}", out.display()))?;
    staging.finish().map_err(|why| InputError::new(out, why))?;
    Ok(imported)
}

/// A serde_json error as an input error at its line and column, `at` the JSON path reached.
fn json_error(file: &Path, e: &serde_json::Error, at: &str) -> InputError {
    let mut message = e.to_string();
    // The position is the error's line and column: not repeated in the message.
    let here = format!(" at line {} column {}", e.line(), e.column());
    message = message.replace(&here, "");
    let mut err = if e.is_syntax() || e.is_eof() {
        InputError::new(file, format!("is not JSON: {message}"))
    } else {
        InputError::new(file, format!("{at}: {message}"))
    };
    // serde_json says column 0 when the error comes just after a newline (a file that stops
    // there, an article whose value ends its line): that place is the end of the line before,
    // named by its line alone, not `:0` on the next.
    match (e.line(), e.column()) {
        (0, _) => {}
        (line, 0) => err = err.at(Some(line.saturating_sub(1).max(1))),
        (line, column) => {
            err = err.at(Some(line));
            err.column = Some(column);
        }
    }
    err
}

/// About how many bytes `item` takes in the written YAML: its texts and each one's key or list
/// dash (quoting aside), without writing it. The set is checked exactly once written; this
/// stops an import that is far over as soon as it is.
fn yaml_bytes(item: &RawItem) -> u64 {
    let texts = |v: &[String]| v.iter().map(|t| t.len() + 6).sum::<usize>();
    let expect = item.expect.as_ref().map_or(0, |e| {
        30 + texts(e.sources.texts()) + texts(e.answer.texts())
    });
    let note = item.note.as_ref().map_or(0, |n| n.len() + 10);
    let id = item.id.as_ref().map_or(0, String::len);
    let question = item.question.as_str().map_or(0, str::len);
    (20 + id + question + texts(&item.tags) + expect + note) as u64
}

/// One article as SQuAD writes it; every field optional here so that a missing one is named by
/// its JSON path.
#[derive(Deserialize)]
struct Article {
    title: Option<String>,
    paragraphs: Option<Vec<Paragraph>>,
}

#[derive(Deserialize)]
struct Paragraph {
    context: Option<String>,
    qas: Option<Vec<Qa>>,
}

#[derive(Deserialize)]
struct Qa {
    question: Option<String>,
    id: Option<String>,
    /// SQuAD 1.1 has no such field: every question is answerable.
    #[serde(default)]
    is_impossible: bool,
    answers: Option<Vec<Answer>>,
    plausible_answers: Option<Vec<Answer>>,
}

#[derive(Deserialize)]
struct Answer {
    text: Option<String>,
    answer_start: Option<u64>,
}

/// The import under way: what was seen and what is written.
struct State {
    file: PathBuf,
    docs: PathBuf,
    /// The first problem the checks found (serde only learns that one happened).
    error: RefCell<Option<InputError>>,
    /// The article being read, for a type error inside it.
    reading: Option<usize>,
    /// Question ids seen, with the JSON path of each.
    ids: HashMap<String, String>,
    /// File name stems given, lowercased (a file system may not tell case apart).
    names: HashSet<String>,
    /// About how many bytes the question set written so far takes as YAML.
    set_bytes: u64,
    set: RawSet,
    imported: Imported,
}

impl State {
    fn fail<E: de::Error>(&self, path: String, message: impl Into<String>) -> E {
        let err = InputError::new(&self.file, message).field(path);
        *self.error.borrow_mut() = Some(err);
        E::custom("stopped")
    }

    /// Check, write and record one article.
    fn article(&mut self, i: usize, a: Article) -> Result<(), InputError> {
        let at = format!("data[{i}]");
        let file = self.file.clone();
        let err = |path: String, msg: &str| InputError::new(&file, msg).field(path);
        let title = match a.title.as_deref().map(str::trim) {
            Some(t) if t.contains(char::is_control) => {
                return Err(err(
                    format!("{at}.title"),
                    "holds a line break or another control character: a title is one line (it heads each paragraph's section of the article's file)",
                ))
            }
            Some(t) if !t.is_empty() => t.to_string(),
            Some(_) => return Err(err(format!("{at}.title"), "is empty")),
            None => return Err(err(format!("{at}.title"), "is missing")),
        };
        let paragraphs = a
            .paragraphs
            .ok_or_else(|| err(format!("{at}.paragraphs"), "is missing"))?;
        let name = self.file_name(&title);
        let stem = name.trim_end_matches(".md").to_string();
        let shown = title.replace('_', " ");
        let mut markdown = String::new();
        // Per paragraph: its heading, and the answers that must be found in its section.
        let mut sections: Vec<(String, Vec<(String, String)>)> = Vec::new();
        for (p, para) in paragraphs.into_iter().enumerate() {
            let at = format!("{at}.paragraphs[{p}]");
            let context = para
                .context
                .ok_or_else(|| err(format!("{at}.context"), "is missing"))?;
            if context.trim().is_empty() {
                return Err(err(format!("{at}.context"), "is empty"));
            }
            let qas = para
                .qas
                .ok_or_else(|| err(format!("{at}.qas"), "is missing"))?;
            let heading = format!("{shown}, paragraph {}", p + 1);
            let source = format!("{name}#{}", plain_heading(&heading));
            markdown.push_str(&format!("# {heading}\n\n{}\n\n", as_paragraph(&context)));
            let mut expected = Vec::new();
            for (k, qa) in qas.into_iter().enumerate() {
                let at = format!("{at}.qas[{k}]");
                let item = self.question(&at, qa, &context, &source, &stem)?;
                self.set_bytes += yaml_bytes(&item);
                if self.set_bytes > MAX_YAML_BYTES {
                    return Err(err(
                        at.clone(),
                        &format!(
                            "the questions up to here make a question set of more than the {} MiB rageval reads of one (nothing was written): split the file's `data` into parts and import each into its own folder",
                            MAX_YAML_BYTES / (1024 * 1024)
                        ),
                    ));
                }
                if let Some(e) = &item.expect {
                    expected.extend(e.answer.texts().iter().map(|a| (at.clone(), a.clone())));
                    self.set.answerable.push(item);
                    self.imported.answerable += 1;
                } else {
                    self.imported.plausible += usize::from(item.note.is_some());
                    self.set.unanswerable.push(item);
                    self.imported.unanswerable += 1;
                }
            }
            sections.push((plain_heading(&heading), expected));
            self.imported.paragraphs += 1;
        }
        // Every answer is in its section as the corpus splits the file: the sources resolve.
        let chunks = chunk_markdown(&name, &markdown);
        for (heading, expected) in &sections {
            let section = chunks
                .iter()
                .find(|c| &c.heading == heading)
                .map(|c| normal_answer(&c.text));
            for (at, answer) in expected {
                if !section
                    .as_deref()
                    .is_some_and(|s| s.contains(&normal_answer(answer)))
                {
                    return Err(err(
                        format!("{at}.answers"),
                        &format!("`{answer}` is not in section `{name}#{heading}` as rageval splits the markdown written for it"),
                    ));
                }
            }
        }
        if markdown.len() as u64 > MAX_DOCUMENT_BYTES {
            return Err(err(
                at.clone(),
                &format!(
                    "article `{title}` makes a corpus file of {:.1} MiB, more than the {} MiB rageval reads of one document: split its paragraphs into several articles",
                    markdown.len() as f64 / (1024.0 * 1024.0),
                    MAX_DOCUMENT_BYTES / (1024 * 1024)
                ),
            ));
        }
        let path = self.docs.join(&name);
        // A new file, never over another article's: names are told apart case aside, and a
        // file system that folds case otherwise must make that an error, not a loss.
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .and_then(|mut f| std::io::Write::write_all(&mut f, markdown.as_bytes()))
            .map_err(|e| InputError::new(&path, format!("cannot write: {e}")))?;
        self.imported.articles += 1;
        Ok(())
    }

    /// One question: checked, with its answers found at their offsets.
    fn question(
        &mut self,
        at: &str,
        qa: Qa,
        context: &str,
        source: &str,
        article: &str,
    ) -> Result<RawItem, InputError> {
        let file = self.file.clone();
        let err = |path: String, msg: String| InputError::new(&file, msg).field(path);
        let question = match qa.question.as_deref().map(str::trim) {
            Some(q) if !q.is_empty() => q.to_string(),
            Some(_) => return Err(err(format!("{at}.question"), "is empty".into())),
            None => return Err(err(format!("{at}.question"), "is missing".into())),
        };
        let id = qa
            .id
            .map(|id| id.trim().to_string())
            .ok_or_else(|| err(format!("{at}.id"), "is missing".into()))?;
        if id.is_empty() || id.contains(char::is_whitespace) || id.contains(',') {
            return Err(err(
                format!("{at}.id"),
                format!("`{id}` is not a valid id: it must be non-empty, without spaces or commas"),
            ));
        }
        if let Some(first) = self.ids.insert(id.clone(), at.to_string()) {
            return Err(err(
                format!("{at}.id"),
                format!("duplicate id `{id}` (also `{first}`)"),
            ));
        }
        let answers = qa.answers.unwrap_or_default();
        let texts = |list: &[Answer],
                     key: &str,
                     offsets: bool|
         -> Result<Vec<String>, InputError> {
            let mut out: Vec<String> = Vec::new();
            for (j, a) in list.iter().enumerate() {
                let at = format!("{at}.{key}[{j}]");
                let text = a
                    .text
                    .as_deref()
                    .ok_or_else(|| err(format!("{at}.text"), "is missing".into()))?;
                if text.trim().is_empty() {
                    return Err(err(format!("{at}.text"), "is empty".into()));
                }
                if offsets {
                    let start = a
                        .answer_start
                        .ok_or_else(|| err(format!("{at}.answer_start"), "is missing".into()))?;
                    if !at_offset(context, start, text) {
                        return Err(err(
                            format!("{at}.answer_start"),
                            format!(
                                "the context does not hold `{text}` at character {start} (it holds `{}`)",
                                context.chars().skip(start as usize).take(text.chars().count()).collect::<String>()
                            ),
                        ));
                    }
                }
                let text = text.trim().to_string();
                if !out.contains(&text) {
                    out.push(text);
                }
            }
            Ok(out)
        };
        let mut tags = vec![format!("{ARTICLE_TAG_PREFIX}{article}")];
        if qa.is_impossible {
            if !answers.is_empty() {
                return Err(err(
                    format!("{at}.answers"),
                    "an impossible question (`is_impossible: true`) has answers: move them to `plausible_answers`".into(),
                ));
            }
            let plausible = texts(
                qa.plausible_answers.as_deref().unwrap_or_default(),
                "plausible_answers",
                false,
            )?;
            let note = (!plausible.is_empty()).then(|| {
                tags.push(PLAUSIBLE_TAG.to_string());
                format!(
                    "plausible answer (SQuAD, not the answer): {}",
                    plausible.join("; ")
                )
            });
            return Ok(RawItem {
                tags,
                note,
                ..RawItem::new(id, question)
            });
        }
        if answers.is_empty() {
            return Err(err(
                format!("{at}.answers"),
                "is empty: an answerable question (`is_impossible` false or absent) needs an answer".into(),
            ));
        }
        let answer = texts(&answers, "answers", true)?;
        Ok(RawItem {
            expect: Some(RawExpect::new(vec![source.to_string()], answer)),
            tags,
            ..RawItem::new(id, question)
        })
    }

    /// A file name for the article `title`, unique among the articles whatever their case
    /// (`A.md`, `A-2.md`, and `A-2-2.md` for a title `A-2` after them), from [`stem`].
    fn file_name(&mut self, title: &str) -> String {
        let stem = stem(title);
        let mut name = stem.clone();
        let mut n = 1;
        while self.names.contains(&name.to_lowercase()) {
            n += 1;
            name = format!("{stem}-{n}");
        }
        self.names.insert(name.to_lowercase());
        format!("{name}.md")
    }
}

/// Names Windows keeps for devices, whatever the extension (`CON.md` opens the console).
const DEVICE_NAMES: [&str; 22] = [
    "CON", "PRN", "AUX", "NUL", "COM1", "COM2", "COM3", "COM4", "COM5", "COM6", "COM7", "COM8",
    "COM9", "LPT1", "LPT2", "LPT3", "LPT4", "LPT5", "LPT6", "LPT7", "LPT8", "LPT9",
];

/// The file name stem of the article `title`: its letters, digits, `-` and `_`, other
/// characters (`/`, `.`, NUL, ...) as one `_`, at most [`MAX_STEM_BYTES`] bytes; never led by
/// `-` (a command would read the name as a flag) or `_`, never a device name, never empty.
fn stem(title: &str) -> String {
    let mut stem = String::new();
    for c in title.chars() {
        let c = if c.is_alphanumeric() || c == '-' || c == '_' {
            c
        } else {
            '_'
        };
        if stem.len() + c.len_utf8() > MAX_STEM_BYTES {
            break;
        }
        if !(c == '_' && stem.ends_with('_')) {
            stem.push(c);
        }
    }
    let stem = stem.trim_start_matches(['_', '-']).trim_end_matches('_');
    if stem.is_empty() {
        "article".to_string()
    } else if DEVICE_NAMES.iter().any(|d| d.eq_ignore_ascii_case(stem)) {
        format!("{stem}_")
    } else {
        stem.to_string()
    }
}

/// A context as one markdown paragraph: on one line (line breaks as spaces), and a line that
/// the splitter would read as a heading or a code fence led by a zero-width space, which the
/// answer match and the prompt ignore.
fn as_paragraph(context: &str) -> String {
    let line: String = context
        .trim()
        .chars()
        .map(|c| if c == '\n' || c == '\r' { ' ' } else { c })
        .collect();
    if line.starts_with('#') || line.starts_with("```") || line.starts_with("~~~") {
        format!("\u{200B}{line}")
    } else {
        line
    }
}

/// Whether `context` holds `text` at character (not byte) `start`, as SQuAD counts.
fn at_offset(context: &str, start: u64, text: &str) -> bool {
    let Ok(start) = usize::try_from(start) else {
        return false;
    };
    match context.char_indices().nth(start) {
        Some((byte, _)) => context[byte..].starts_with(text),
        None => false,
    }
}

/// The whole file: `{"version": ..., "data": [articles]}`.
struct FileSeed<'a>(&'a mut State);

impl<'de> DeserializeSeed<'de> for FileSeed<'_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for FileSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a SQuAD object `{\"version\": ..., \"data\": [...]}`")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut data = false;
        while let Some(key) = map.next_key::<String>()? {
            if key == "data" {
                map.next_value_seed(Articles(&mut *self.0))?;
                data = true;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        if !data {
            return Err(self.0.fail(
                "data".into(),
                "is missing: a SQuAD file is `{\"version\": \"v2.0\", \"data\": [articles]}`",
            ));
        }
        Ok(())
    }
}

/// `data`: articles, each parsed, checked and written before the next is read.
struct Articles<'a>(&'a mut State);

impl<'de> DeserializeSeed<'de> for Articles<'_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Articles<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of articles")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let state = self.0;
        let mut i = 0;
        loop {
            // A type error inside the article is named by its path, at serde's position.
            state.reading = Some(i);
            let Some(article) = seq.next_element::<Article>()? else {
                state.reading = None;
                return Ok(());
            };
            if let Err(e) = state.article(i, article) {
                *state.error.borrow_mut() = Some(e);
                return Err(de::Error::custom("stopped"));
            }
            i += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The set an import writes is read back as it was written: the file's items are the ones
    /// built from the SQuAD questions, and the reader's checks take them.
    #[test]
    fn an_imported_set_reads_back_as_written() {
        let tmp = tempfile::tempdir().unwrap();
        let squad = tmp.path().join("squad.json");
        std::fs::write(
            &squad,
            serde_json::json!({"data": [{"title": "Club", "paragraphs": [{
            "context": "Membership costs 10 dollars per term.",
            "qas": [
                {"id": "q1", "question": "What does membership cost?",
                 "answers": [{"text": "10 dollars", "answer_start": 17}]},
                {"id": "q2", "question": "What do guests cost?", "is_impossible": true,
                 "answers": [], "plausible_answers": [{"text": "10 dollars", "answer_start": 17}]}
            ]}]}]})
            .to_string(),
        )
        .unwrap();
        let out = tmp.path().join("club");
        import(&squad, &out, false).unwrap();
        let text = std::fs::read_to_string(out.join("questions.yaml")).unwrap();
        let read: RawSet = serde_yaml::from_str(&text).unwrap();
        let tags = vec!["article:Club".to_string()];
        let answerable = RawItem {
            expect: Some(RawExpect::new(
                vec!["Club.md#Club, paragraph 1".into()],
                vec!["10 dollars".into()],
            )),
            tags: tags.clone(),
            ..RawItem::new("q1".into(), "What does membership cost?".into())
        };
        let unanswerable = RawItem {
            tags: [tags, vec![PLAUSIBLE_TAG.into()]].concat(),
            note: Some("plausible answer (SQuAD, not the answer): 10 dollars".into()),
            ..RawItem::new("q2".into(), "What do guests cost?".into())
        };
        assert_eq!(read.corpus, Some(OneOrMany::One("docs".into())));
        assert_eq!(
            (read.answerable, read.unanswerable),
            (vec![answerable], vec![unanswerable])
        );
        let set =
            crate::adapters::evalset::load_set(&out.join("questions.yaml"), &mut Vec::new(), false)
                .unwrap();
        let ids: Vec<(&str, bool)> = set
            .questions
            .iter()
            .map(|q| (q.id.as_str(), q.answerable))
            .collect();
        assert_eq!(ids, [("q1", true), ("q2", false)]);
    }

    #[test]
    fn a_title_reaches_the_file_system_as_one_plain_name() {
        for (title, want) in [
            ("../../etc/passwd", "etc_passwd"),
            ("a/b\\c", "a_b_c"),
            ("nul\0byte", "nul_byte"),
            (".hidden", "hidden"),
            ("..", "article"),
            ("-rf", "rf"),
            ("--_-x", "x"),
            ("con", "con_"),
            ("LPT9", "LPT9_"),
            ("COM10", "COM10"),
            ("Port Ellery?", "Port_Ellery"),
        ] {
            assert_eq!(stem(title), want, "{title:?}");
        }
        // The final name, with the longest `-N` a pool can need and `.md`, fits in 255 bytes.
        let long = stem(&"𝒜".repeat(200));
        assert!(long.len() <= MAX_STEM_BYTES, "{}", long.len());
        assert!(format!("{long}-{}.md", u64::MAX).len() <= 255);
    }
}
