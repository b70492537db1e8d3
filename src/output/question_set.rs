//! The question set `rageval generate` writes (docs/generate.md): its header with the
//! account of what was tried and rejected, one item per kept question with its provenance, a
//! new file or the questions appended to an existing one, checked to load before it is
//! written; and the `--rejected` file.

use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::Serialize;

use crate::adapters::corpus::Corpus;
use crate::adapters::evalset::file::{OneOrMany, RawExpect, RawGenerated, RawItem, RawSet};
use crate::adapters::evalset::{load_set, slug};
use crate::generate::engine::{Generated, Kept};
use crate::generate::{Kind, Reject};
use crate::output::report::{write_to, Existing};

/// Who wrote the questions and how: the header's and every item's provenance.
pub struct Provenance {
    /// The generator's model.
    pub model: String,
    pub seed: u64,
    /// `--off-topic` and `--false-premise`: the shares of the unanswerable questions.
    pub off_topic: f64,
    pub false_premise: f64,
    /// The offline mock model wrote them: placeholders.
    pub mock: bool,
}

/// The header comments of the file: who wrote it, the account, and that a person reviews.
pub fn header(p: &Provenance, account: &[String]) -> String {
    let mut out = format!(
        "# Written by `rageval generate` with {}, seed {}, off-topic share {}",
        p.model, p.seed, p.off_topic
    );
    if p.false_premise > 0.0 {
        out.push_str(&format!(", false-premise share {}", p.false_premise));
    }
    out.push_str(".\n");
    for line in account {
        out.push_str(&format!("# {line}\n"));
    }
    if p.mock {
        out.push_str("# Placeholders: the offline mock model wrote them; point `chat:` at a real model for real questions.\n");
    }
    out.push_str(
        "# Generated questions carry `reviewed: false` until a person has checked them.\n",
    );
    out
}

/// The kept questions as items, answerable first: each with an id new among `ids`, its
/// expected source and answer (answerable), its kind as a tag (unanswerable), and where it
/// came from.
pub fn items(
    corpus: &Corpus,
    kept: &[Kept],
    ids: &mut HashSet<String>,
    p: &Provenance,
) -> (Vec<RawItem>, Vec<RawItem>) {
    let mut items = (Vec::new(), Vec::new());
    for k in kept {
        let chunk = &corpus.chunks[k.chunk];
        let from = source_name(corpus, chunk);
        let item = RawItem {
            expect: k
                .answer
                .as_ref()
                .map(|a| RawExpect::new(vec![from.clone()], vec![a.clone()])),
            tags: match k.kind {
                Kind::Answerable => Vec::new(),
                kind => vec![kind.name().to_string()],
            },
            note: k.premise.as_ref().map(|(premise, truth)| {
                format!("false premise: {premise}; the passage says: {truth}")
            }),
            generated: Some(RawGenerated {
                model: p.model.clone(),
                from,
                seed: p.seed,
            }),
            reviewed: Some(false),
            ..RawItem::new(fresh_id(ids, &k.question), k.question.clone())
        };
        if k.kind == Kind::Answerable {
            items.0.push(item);
        } else {
            items.1.push(item);
        }
    }
    items
}

/// The text of the set at `out` about the corpus folders `roots`: with `appending`, the file's
/// own questions and the new ones; else a new set (its folder created). It loads as a question
/// set, or this is an error, before anything is written.
pub fn text(
    out: &Path,
    roots: &[PathBuf],
    appending: bool,
    header: &str,
    items: (Vec<RawItem>, Vec<RawItem>),
    p: &Provenance,
) -> Result<String> {
    let text = if appending {
        append(out, roots, header, items)?
    } else {
        let dir = parent(out);
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create folder `{}`", dir.display()))?;
        let set = RawSet {
            corpus: Some(corpus_field(&dir, roots)),
            description: Some(format!(
                "Questions written by `rageval generate` from this corpus with {} (seed {}). Review each one, then set `reviewed: true`.",
                p.model, p.seed
            )),
            answerable: items.0,
            unanswerable: items.1,
        };
        format!("{header}{}", serde_yaml::to_string(&set)?)
    };
    check_written(out, &text)?;
    Ok(text)
}

/// One line per kind: asked, tried, kept, and each reason of rejection with its count.
pub fn account(g: &Generated) -> Vec<String> {
    Kind::ALL
        .iter()
        .zip(&g.tallies)
        .filter(|(_, t)| t.wanted > 0)
        .map(|(kind, t)| {
            let rejected: Vec<String> = Reject::ALL
                .iter()
                .filter_map(|r| t.rejected.get(r).map(|n| format!("{n} {}", r.label())))
                .collect();
            let mut line = format!(
                "{}: {} asked, {} tried, {} kept",
                kind.name(),
                t.wanted,
                t.tried,
                t.kept
            );
            if !rejected.is_empty() {
                line.push_str(&format!("; rejected: {}", rejected.join(", ")));
            }
            line
        })
        .collect()
}

/// The largest `--rejected` file that `--append` adds to.
pub const MAX_REJECTED_BYTES: u64 = 1024 * 1024 * 1024;

/// `--rejected`: one JSON object per rejected candidate, in the order decided: its kind, the
/// reason, the passage asked about, and its question and answer (or the reply that did not
/// parse, or the failed call's message). With `append`, after the lines a file there holds.
pub fn write_rejected(path: &Path, corpus: &Corpus, g: &Generated, append: bool) -> Result<()> {
    #[derive(Serialize)]
    struct Line<'a> {
        kind: &'static str,
        reason: &'static str,
        from: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        question: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        answer: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        reply: Option<&'a str>,
    }
    let mut text = String::new();
    if append && std::fs::symlink_metadata(path).is_ok() {
        let old = crate::base::input::read_limited(path, MAX_REJECTED_BYTES).map_err(|e| {
            anyhow::anyhow!("cannot read `{}` to append to it: {e}", path.display())
        })?;
        text = String::from_utf8_lossy(&old).into_owned();
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
    }
    for r in &g.rejected {
        let line = Line {
            kind: r.kind.name(),
            reason: r.reason.label(),
            from: corpus.chunks[r.chunk].label(),
            question: r.question.as_deref(),
            answer: r.answer.as_deref(),
            reply: r.reply.as_deref(),
        };
        text.push_str(&serde_json::to_string(&line)?);
        text.push('\n');
    }
    let dir = parent(path);
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("cannot create folder `{}`", dir.display()))?;
    write_to(path, Existing::Replace, |w| {
        Ok(w.write_all(text.as_bytes())?)
    })
    .with_context(|| format!("cannot write `{}`", path.display()))
}

/// Whether two lists of folders name the same folders, in order.
pub fn same_roots(a: &[PathBuf], b: &[PathBuf]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| crate::base::input::same_file(x, y))
}

/// The folder of `path` (`.` for a bare file name).
pub fn parent(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// The `corpus:` of a set written in `dir`: each folder relative to it (absolute when no
/// relative path leads there).
fn corpus_field(dir: &Path, roots: &[PathBuf]) -> OneOrMany {
    let rel: Vec<String> = roots.iter().map(|r| relative(dir, r)).collect();
    match rel.as_slice() {
        [one] => OneOrMany::One(one.clone()),
        _ => OneOrMany::Many(rel),
    }
}

/// `to` as a path relative to the folder `from`, with `/` separators.
fn relative(from: &Path, to: &Path) -> String {
    let (Ok(from), Ok(to)) = (from.canonicalize(), to.canonicalize()) else {
        return to.display().to_string();
    };
    let a: Vec<_> = from.components().collect();
    let b: Vec<_> = to.components().collect();
    let common = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    if common == 0 {
        return to.display().to_string();
    }
    let mut parts: Vec<String> = vec!["..".into(); a.len() - common];
    parts.extend(
        b[common..]
            .iter()
            .map(|c| c.as_os_str().to_string_lossy().into_owned()),
    );
    if parts.is_empty() {
        ".".into()
    } else {
        parts.join("/")
    }
}

/// How an expected source names `chunk`: `file.md#Heading` when that names it alone (or only
/// the parts of its split section), else its id.
fn source_name(corpus: &Corpus, chunk: &crate::adapters::corpus::Chunk) -> String {
    let label = chunk.label();
    let section = |id: &str| id.split('.').next().unwrap_or(id).to_string();
    let own = section(&chunk.id);
    if corpus
        .chunks
        .iter()
        .filter(|c| c.matches(&label))
        .all(|c| section(&c.id) == own)
    {
        label
    } else {
        chunk.id.clone()
    }
}

/// `gen-` and the question's slug, made unique among `ids` with `-2`, `-3`, ...
fn fresh_id(ids: &mut HashSet<String>, question: &str) -> String {
    let base = format!("gen-{}", slug(question));
    let mut id = base.clone();
    let mut n = 2;
    while ids.contains(&id) {
        id = format!("{base}-{n}");
        n += 1;
    }
    ids.insert(id.clone());
    id
}

/// `--append`: the file's own header comments, this run's header, and its questions followed
/// by the new ones. Comments inside the file are not kept (it is rewritten from its values).
fn append(
    path: &Path,
    roots: &[PathBuf],
    header: &str,
    items: (Vec<RawItem>, Vec<RawItem>),
) -> Result<String> {
    let text = crate::base::input::read_yaml(path)
        .map_err(|e| crate::base::error::InputError::reading(path, "question set", e))?;
    let kept_header: String = text
        .lines()
        .take_while(|l| l.starts_with('#'))
        .map(|l| format!("{l}\n"))
        .collect();
    let mut doc: serde_yaml::Value = serde_yaml::from_str(&text)?;
    // The file was loaded as a set already: its corpus is the one asked about, or it is named.
    let loaded = load_set(path, &mut Vec::new(), false)?;
    if !same_roots(&loaded.corpus_paths, roots) {
        bail!(
            "`{}` asks about another corpus ({}): --append adds only questions about its own",
            path.display(),
            loaded
                .corpus_paths
                .iter()
                .map(|p| format!("`{}`", p.display()))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let map = doc
        .as_mapping_mut()
        .context("a question set is a mapping")?;
    for (key, new) in [("answerable", items.0), ("unanswerable", items.1)] {
        if new.is_empty() {
            continue;
        }
        let list = map
            .entry(serde_yaml::Value::from(key))
            .or_insert_with(|| serde_yaml::Value::Sequence(Vec::new()));
        let Some(seq) = list.as_sequence_mut() else {
            bail!("`{}`: `{key}` is not a list", path.display());
        };
        for item in new {
            seq.push(serde_yaml::to_value(item)?);
        }
    }
    Ok(format!(
        "{kept_header}{header}{}",
        serde_yaml::to_string(&doc)?
    ))
}

/// The text about to be written loads as a question set (in the same folder, so that its
/// corpus resolves): a bug here is found before the file is touched.
fn check_written(out: &Path, text: &str) -> Result<()> {
    let dir = parent(out);
    let mut tmp = tempfile::Builder::new()
        .prefix(".rageval-generate-")
        .suffix(".yaml")
        .tempfile_in(&dir)
        .with_context(|| format!("cannot write in `{}`", dir.display()))?;
    tmp.write_all(text.as_bytes())?;
    load_set(tmp.path(), &mut Vec::new(), false)
        .map(|_| ())
        .context("the generated question set does not load (a rageval bug: please report it)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_corpus_is_named_relative_to_the_set() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        std::fs::create_dir_all(root.join("evalsets")).unwrap();
        std::fs::create_dir_all(root.join("docs/guide")).unwrap();
        assert_eq!(
            relative(&root.join("evalsets"), &root.join("docs/guide")),
            "../docs/guide"
        );
        assert_eq!(relative(root, &root.join("docs")), "docs");
        assert_eq!(relative(&root.join("docs"), &root.join("docs")), ".");
    }

    /// What the generator writes is read back as it was written: the file's items are the
    /// items made, and the checked questions carry their answers, kinds and provenance.
    #[test]
    fn a_written_set_reads_back_as_written() {
        let tmp = tempfile::tempdir().unwrap();
        let docs = tmp.path().join("docs");
        std::fs::create_dir_all(&docs).unwrap();
        std::fs::write(
            docs.join("club.md"),
            "# Fees\nMembership costs 10 dollars per term.\n# Guests\nMembers may bring two guests.\n",
        )
        .unwrap();
        let corpus = Corpus::load_many(std::slice::from_ref(&docs)).unwrap();
        let kept = [
            Kept {
                kind: Kind::Answerable,
                question: "What does membership cost?".into(),
                answer: Some("10 dollars".into()),
                premise: None,
                chunk: 0,
            },
            Kept {
                kind: Kind::FalsePremise,
                question: "Why may members bring five guests?".into(),
                answer: None,
                premise: Some(("members may bring five guests".into(), "two guests".into())),
                chunk: 1,
            },
        ];
        let p = Provenance {
            model: "mock".into(),
            seed: 3,
            off_topic: 0.0,
            false_premise: 1.0,
            mock: true,
        };
        let made = items(&corpus, &kept, &mut HashSet::new(), &p);
        let out = tmp.path().join("evalsets/club.yaml");
        let text = text(
            &out,
            std::slice::from_ref(&docs),
            false,
            "# header\n",
            made.clone(),
            &p,
        )
        .unwrap();
        let read: RawSet = serde_yaml::from_str(&text).unwrap();
        assert_eq!(read.corpus, Some(OneOrMany::One("../docs".into())));
        assert_eq!((read.answerable, read.unanswerable), made);
        std::fs::write(&out, &text).unwrap();
        let set = load_set(&out, &mut Vec::new(), false).unwrap();
        let [fee, guests] = &set.questions[..] else {
            panic!("{:?}", set.questions)
        };
        assert_eq!(fee.id, "gen-what-does-membership-cost");
        assert_eq!(fee.expect.sources, ["club.md#Fees"]);
        assert_eq!(fee.expect.answers, ["10 dollars"]);
        assert!(guests.tags == ["false-premise"] && !guests.answerable);
        let origin = guests.origin.as_ref().unwrap();
        assert_eq!((origin.from.as_str(), origin.seed), ("club.md#Guests", 3));
        assert!(!origin.reviewed);
    }

    #[test]
    fn ids_are_unique() {
        let mut ids: HashSet<String> = ["gen-how-much".to_string()].into();
        assert_eq!(fresh_id(&mut ids, "How much?"), "gen-how-much-2");
        assert_eq!(fresh_id(&mut ids, "How much?"), "gen-how-much-3");
        assert_eq!(fresh_id(&mut ids, "When?"), "gen-when");
    }
}
