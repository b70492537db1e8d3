//! Markdown documents -> chunks, one per heading section.
//!
//! The unit of retrieval is a heading section: the text between one heading and the next (of any
//! level). A chunk is identified as `file.md#N`, where `N` counts the file's sections from 0 in
//! document order; sections without body text are skipped but still counted, so an id stays put
//! when an unrelated empty section elsewhere in the file is filled in. Text before the first
//! heading, when there is any, is section 0 and takes the file's stem as its heading.
//!
//! A section longer than the embedder reads is split into parts `file.md#N.P` that each keep
//! the heading (see [`split_section`]), cut to [`chunk_limit`].

pub mod config;
mod split;

pub use split::split_section;
// One passage, one line: the rule lives with the other text rules.
pub use crate::base::text::{squash, squash_into};

use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

/// One heading section of one markdown file.
#[derive(Debug, Clone, PartialEq)]
pub struct Chunk {
    /// `file.md#N`: stable within a corpus, N counts sections from 0.
    pub id: String,
    /// Path of the file relative to the corpus root, with `/` separators.
    pub source: String,
    /// The heading text, without `#` marks.
    pub heading: String,
    /// The section body as written (line breaks kept); see [`squash`] for the prompt form.
    pub text: String,
}

impl Chunk {
    /// `file.md#Heading`: how sources are named in prompts and question sets. A passage with no
    /// heading (a foreign retriever's, whose table or reply has none) is its file alone,
    /// `file.md`, not `file.md#`: the chapter's prompt names the source and, when there is one,
    /// its heading. Builtin chunks always have a heading (the file's stem before the first).
    pub fn label(&self) -> String {
        let mut label = String::with_capacity(self.source.len() + self.heading.len() + 1);
        self.push_label(&mut label);
        label
    }

    /// [`Chunk::label`] appended to `out`.
    pub fn push_label(&self, out: &mut String) {
        out.push_str(&self.source);
        if !self.heading.is_empty() {
            out.push('#');
            out.push_str(&self.heading);
        }
    }

    /// The text the embedder sees: heading and body, so a section is found by its title too.
    pub fn embed_text(&self) -> String {
        format!("{}\n{}", self.heading, self.text)
    }

    /// Whether `name` (`file.md#Heading` or `file.md#N`) designates this chunk. A part of a split
    /// section (`file.md#N.P`, or `file.md#N.P.Q` when a part was split again) answers to its
    /// section's heading and to the id of its section or of any part it was split from.
    pub fn matches(&self, name: &str) -> bool {
        // Compared in parts: this runs for every hit of every run, and `label` allocates.
        name == self.id
            || (self.heading.is_empty() && name == self.source)
            || name
                .strip_prefix(self.source.as_str())
                .and_then(|rest| rest.strip_prefix('#'))
                .is_some_and(|heading| heading == self.heading)
            || self
                .id
                .strip_prefix(name)
                .and_then(|rest| rest.strip_prefix('.'))
                .is_some_and(|part| {
                    part.split('.')
                        .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
                })
    }
}

impl fmt::Display for Chunk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} > {}", self.source, self.heading)
    }
}

/// A loaded corpus: chunks in a fixed order (files sorted by path, sections in document order).
/// That order is the tie-break of retrieval, so it must not depend on the file system.
#[derive(Debug, Clone)]
pub struct Corpus {
    /// The first folder (for messages).
    pub root: PathBuf,
    /// Every folder, in the order given: a corpus may join a clean folder and a poisoned one.
    pub roots: Vec<PathBuf>,
    pub chunks: Vec<Chunk>,
}

impl Corpus {
    /// Read every `*.md` file below `root` (recursively, hidden entries skipped).
    pub fn load(root: &Path) -> Result<Self> {
        let meta = std::fs::metadata(root)
            .with_context(|| format!("cannot read corpus folder `{}`", root.display()))?;
        if !meta.is_dir() {
            bail!("corpus `{}` is not a folder", root.display());
        }
        let real_root = crate::base::input::canonical_root(root)
            .map_err(|e| anyhow::anyhow!("cannot read corpus folder `{}`: {e}", root.display()))?;
        let mut files = Vec::new();
        collect_markdown(root, &mut files)?;
        files.sort();
        let mut chunks = Vec::new();
        for path in &files {
            let text = crate::base::input::read_document(&real_root, path)
                .map_err(|e| anyhow::anyhow!("corpus file `{}`: {e}", path.display()))?;
            let rel = path
                .strip_prefix(root)
                .unwrap_or(path)
                .to_string_lossy()
                .replace('\\', "/");
            chunks.extend(chunk_markdown(&rel, &text));
        }
        if chunks.is_empty() {
            bail!(
                "corpus `{}` holds no markdown sections (looked for `*.md` files with text)",
                root.display()
            );
        }
        Ok(Corpus {
            root: root.to_path_buf(),
            roots: vec![root.to_path_buf()],
            chunks,
        })
    }

    /// Several folders as one corpus, in the order given. File paths are relative to their own
    /// folder, so the same file name in two folders would give two chunks one id: refused.
    pub fn load_many(roots: &[PathBuf]) -> Result<Self> {
        let mut corpus = Corpus::load(&roots[0])?;
        // Which folder each file came from, to name both when a name repeats.
        let mut seen: std::collections::HashMap<String, &PathBuf> = corpus
            .chunks
            .iter()
            .map(|c| (c.source.clone(), &roots[0]))
            .collect();
        for root in &roots[1..] {
            let more = Corpus::load(root)?;
            for c in &more.chunks {
                if let Some(first) = seen.get(&c.source) {
                    bail!(
                        "`{}` is in both `{}` and `{}`: file names must differ across corpus folders",
                        c.source,
                        first.display(),
                        root.display()
                    );
                }
            }
            seen.extend(more.chunks.iter().map(|c| (c.source.clone(), root)));
            corpus.chunks.extend(more.chunks);
            corpus.roots.push(root.clone());
        }
        Ok(corpus)
    }

    /// The folders, joined for messages.
    pub fn describe(&self) -> String {
        self.roots
            .iter()
            .map(|r| r.display().to_string())
            .collect::<Vec<_>>()
            .join(" + ")
    }

    /// Split every section whose text (heading and body, as the embedder sees it) is estimated
    /// at more than `max_tokens` into parts that fit; 0 keeps every section whole. See
    /// [`split_section`] (in `split.rs`).
    pub fn split_long_sections(&mut self, max_tokens: usize) {
        if max_tokens == 0 {
            return;
        }
        let chunks = std::mem::take(&mut self.chunks);
        self.chunks = chunks
            .into_iter()
            .flat_map(|c| split_section(c, max_tokens))
            .collect();
    }

    /// The chunk that `name` (`file.md#Heading` or `file.md#N`) designates, if any.
    pub fn find(&self, name: &str) -> Option<&Chunk> {
        self.chunks.iter().find(|c| c.matches(name))
    }
}

fn collect_markdown(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let entries =
        std::fs::read_dir(dir).with_context(|| format!("cannot list `{}`", dir.display()))?;
    for entry in entries {
        let entry = entry.with_context(|| format!("cannot list `{}`", dir.display()))?;
        let name = entry.file_name();
        if name.to_string_lossy().starts_with('.') {
            continue;
        }
        let path = entry.path();
        let kind = entry.file_type()?;
        if kind.is_dir() {
            collect_markdown(&path, out)?;
        } else if path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("md"))
        {
            out.push(path);
        }
    }
    Ok(())
}

/// ATX heading (`#` to `######`, then a space or end of line) -> its text.
fn heading_of(line: &str) -> Option<&str> {
    let trimmed = line.trim_start_matches(' ');
    if line.len() - trimmed.len() > 3 {
        return None;
    }
    let level = trimmed.bytes().take_while(|&b| b == b'#').count();
    if level == 0 || level > 6 {
        return None;
    }
    let rest = &trimmed[level..];
    if !rest.is_empty() && !rest.starts_with([' ', '\t']) {
        return None;
    }
    // A closing sequence of #s (after a space) is not part of the heading: `## C#` keeps its #.
    let mut text = rest.trim();
    let without = text.trim_end_matches('#');
    if without.is_empty() {
        text = "";
    } else if without.ends_with([' ', '\t']) {
        text = without.trim_end();
    }
    Some(text)
}

/// A setext underline (`===` for level 1, `---` for level 2, up to three spaces before it).
fn is_setext_underline(line: &str) -> bool {
    let trimmed = line.trim_start_matches(' ');
    if line.len() - trimmed.len() > 3 {
        return false;
    }
    let t = trimmed.trim_end();
    !t.is_empty() && (t.bytes().all(|b| b == b'=') || t.bytes().all(|b| b == b'-'))
}

/// Whether a paragraph starting with `line` can become a setext heading: a list item or a
/// quote cannot (its underline is a thematic break).
fn can_be_setext(line: &str) -> bool {
    let t = line.trim_start();
    let numbered = t.split_once(['.', ')']).is_some_and(|(n, rest)| {
        !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) && rest.starts_with(' ')
    });
    !(numbered
        || t.starts_with("- ")
        || t.starts_with("* ")
        || t.starts_with("+ ")
        || t.starts_with('>')
        || t.starts_with('|'))
}

/// A heading as plain text: emphasis, code and link markup removed (`**Bold** [site](u)` ->
/// `Bold site`), so labels read as the rendered heading and quote cleanly in backticks.
pub fn plain_heading(text: &str) -> String {
    const MARKS: &[char] = &['*', '_', '~', '`'];
    let mut out = String::new();
    let mut rest = text;
    // Links and images keep their text: `[text](url)`, `![alt](url)`.
    while let Some(open) = rest.find('[') {
        let Some(close) = rest[open..].find("](").map(|c| open + c) else {
            break;
        };
        let Some(end) = rest[close..].find(')').map(|e| close + e) else {
            break;
        };
        out.push_str(rest[..open].strip_suffix('!').unwrap_or(&rest[..open]));
        out.push_str(&rest[open + 1..close]);
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    let words: Vec<String> = out
        .split_whitespace()
        .map(|word| {
            let word = word.trim_start_matches(MARKS);
            let body = word.trim_end_matches(['.', ',', ':', ';', '!', '?', ')']);
            let tail = &word[body.len()..];
            let body = body.trim_end_matches(MARKS).replace(['`'], "");
            format!("{body}{tail}")
        })
        .filter(|w| !w.is_empty())
        .collect();
    words.join(" ")
}

/// Split one markdown document into chunks. Fenced code blocks are body text, never headings;
/// ATX (`## Title`) and setext (`Title` over `===` or `---`) headings both start a section.
pub fn chunk_markdown(source: &str, text: &str) -> Vec<Chunk> {
    let stem = source
        .rsplit('/')
        .next()
        .unwrap_or(source)
        .trim_end_matches(".md");
    let mut sections: Vec<(String, String)> = vec![(stem.to_string(), String::new())];
    let mut in_fence: Option<&str> = None;
    // Where the current paragraph starts in the section's body: a setext underline turns it
    // into the next section's heading.
    let mut paragraph: Option<usize> = None;
    for line in text.lines() {
        let t = line.trim_start();
        let body = &mut sections.last_mut().expect("never empty").1;
        if let Some(fence) = in_fence {
            if t.starts_with(fence) {
                in_fence = None;
            }
        } else if t.starts_with("```") || t.starts_with("~~~") {
            in_fence = Some(&t[..3]);
            paragraph = None;
        } else if let Some(h) = heading_of(line) {
            sections.push((plain_heading(h), String::new()));
            paragraph = None;
            continue;
        } else if let (Some(start), true) = (paragraph, is_setext_underline(line)) {
            let heading = plain_heading(&body[start..]);
            body.truncate(start);
            sections.push((heading, String::new()));
            paragraph = None;
            continue;
        } else if t.is_empty() {
            paragraph = None;
        } else if paragraph.is_none() && can_be_setext(line) && !is_setext_underline(line) {
            paragraph = Some(body.len());
        }
        body.push_str(line);
        body.push('\n');
    }
    // The preamble only counts as a section when it has text.
    let preamble_empty = sections[0].1.trim().is_empty();
    let skip = usize::from(preamble_empty);
    sections
        .into_iter()
        .skip(skip)
        .enumerate()
        .filter(|(_, (_, body))| !body.trim().is_empty())
        .map(|(n, (heading, body))| Chunk {
            id: format!("{source}#{n}"),
            source: source.to_string(),
            heading,
            text: body.trim().to_string(),
        })
        .collect()
}

/// The limit sections are split to: `corpus.max_chunk_tokens`, and never more than nine
/// tenths of what the embedder reads (`embedder.max_input_tokens`, the smallest of all the
/// embedders a sweep uses). The estimate leans high, but a server's tokenizer may still count a
/// little more than it does (llama-server counted 516 tokens for a MiniLM chunk estimated under
/// 512); the tenth is that margin. A `max_chunk_tokens` of 0 keeps every section whole.
pub fn chunk_limit(max_chunk_tokens: usize, max_input_tokens: Option<usize>) -> usize {
    match max_input_tokens {
        Some(read) if max_chunk_tokens > 0 => max_chunk_tokens.min(within_margin(read)),
        _ => max_chunk_tokens,
    }
}

/// Nine tenths of `read` tokens (at least 1): what a chunk is cut to for an embedder that reads
/// `read`.
pub fn within_margin(read: usize) -> usize {
    (read - read / 10).max(1)
}

/// Estimated tokens of `text` for a subword (WordPiece or BPE) embedding model, leaning high so
/// that a text under a model's limit by this estimate is under it in fact: every punctuation
/// mark or symbol counts one, every word one per started four characters.
pub fn estimate_tokens(text: &str) -> usize {
    let mut tokens = 0;
    let mut word = 0usize;
    for c in text.chars() {
        if c.is_alphanumeric() {
            word += 1;
            continue;
        }
        tokens += word.div_ceil(4);
        word = 0;
        if !c.is_whitespace() {
            tokens += 1;
        }
    }
    tokens + word.div_ceil(4)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_are_numbered_from_zero_and_empty_ones_skipped() {
        let doc = "# Payment Update\n\n## How to pay\n\nSend the fee\nto the treasurer.\n\n## Empty\n\n## Last\nText.\n";
        let chunks = chunk_markdown("pay.md", doc);
        let ids: Vec<_> = chunks.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["pay.md#1", "pay.md#3"]);
        assert_eq!(chunks[0].heading, "How to pay");
        assert_eq!(chunks[0].text, "Send the fee\nto the treasurer.");
        assert_eq!(chunks[0].label(), "pay.md#How to pay");
        assert!(chunks[0].matches("pay.md#How to pay") && chunks[0].matches("pay.md#1"));
        assert!(!chunks[0].matches("pay.md#How to") && !chunks[0].matches("pay.mdHow to pay"));
    }

    #[test]
    fn preamble_becomes_section_zero_named_after_the_file() {
        let chunks = chunk_markdown("dir/notes.md", "Intro text.\n# Title\nBody.\n");
        assert_eq!(chunks[0].id, "dir/notes.md#0");
        assert_eq!(chunks[0].heading, "notes");
        assert_eq!(chunks[1].id, "dir/notes.md#1");
    }

    #[test]
    fn headings_inside_code_fences_and_hashtags_are_text() {
        let doc = "# A\n```\n# not a heading\n```\n#hashtag\n";
        let chunks = chunk_markdown("a.md", doc);
        assert_eq!(chunks.len(), 1);
        assert!(chunks[0].text.contains("# not a heading"));
        assert!(chunks[0].text.contains("#hashtag"));
    }

    #[test]
    fn setext_headings_start_sections_as_markdown_does() {
        let doc = "Fees\n====\n\nTen euros.\n\nHow to\npay\n---\nCash.\n\n- a list\n---\n\n---\nafter a rule\n";
        let chunks = chunk_markdown("f.md", doc);
        let got: Vec<(&str, &str, &str)> = chunks
            .iter()
            .map(|c| (c.id.as_str(), c.heading.as_str(), c.text.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("f.md#0", "Fees", "Ten euros."),
                (
                    "f.md#1",
                    "How to pay",
                    "Cash.\n\n- a list\n---\n\n---\nafter a rule"
                ),
            ]
        );
    }

    #[test]
    fn headings_lose_their_markup() {
        let doc = "# **Bold** and _em_ `code`\ntext\n## See [the site](https://x.org)!\ntext\n## C# and snake_case\ntext\n";
        let headings: Vec<String> = chunk_markdown("h.md", doc)
            .into_iter()
            .map(|c| c.heading)
            .collect();
        assert_eq!(
            headings,
            ["Bold and em code", "See the site!", "C# and snake_case"]
        );
    }

    #[test]
    fn closing_hashes_are_dropped() {
        assert_eq!(heading_of("## Title ##"), Some("Title"));
        assert_eq!(heading_of("## C#"), Some("C#"));
        assert_eq!(heading_of("    # code"), None);
    }

    #[test]
    fn a_file_name_in_two_folders_names_both() {
        let dir = tempfile::tempdir().unwrap();
        for (folder, file) in [("a", "x.md"), ("b", "y.md"), ("c", "y.md")] {
            std::fs::create_dir_all(dir.path().join(folder)).unwrap();
            std::fs::write(dir.path().join(folder).join(file), "# H\ntext\n").unwrap();
        }
        let roots: Vec<PathBuf> = ["a", "b", "c"].iter().map(|f| dir.path().join(f)).collect();
        let err = Corpus::load_many(&roots).unwrap_err().to_string();
        assert!(err.contains("`y.md` is in both"), "{err}");
        assert!(
            err.contains(&roots[1].display().to_string())
                && err.contains(&roots[2].display().to_string()),
            "{err}"
        );
        assert!(!err.contains(&format!("`{}`", roots[0].display())), "{err}");
        let ok = Corpus::load_many(&roots[..2]).unwrap();
        assert_eq!(ok.chunks.len(), 2);
        assert_eq!(
            ok.describe(),
            format!("{} + {}", roots[0].display(), roots[1].display())
        );
    }

    /// A section of `paragraphs` paragraphs of 10 estimated tokens each (`wordN` is 2 per word).
    fn long_section(paragraphs: usize) -> String {
        let body: Vec<String> = (0..paragraphs)
            .map(|p| format!("para{p} aaaa bbbb cccc dddd."))
            .collect();
        format!("# Intro\nshort\n# Long\n{}\n", body.join("\n\n"))
    }

    #[test]
    fn estimates_count_punctuation_and_started_four_letter_pieces() {
        assert_eq!(estimate_tokens(""), 0);
        // hello: 2, `,`: 1, world: 2, `!`: 1
        assert_eq!(estimate_tokens("Hello, world!"), 6);
        assert_eq!(estimate_tokens("a bb ccc dddd eeeee"), 6);
        assert_eq!(estimate_tokens("para0 aaaa bbbb cccc dddd."), 7);
    }

    #[test]
    fn a_long_section_splits_at_paragraphs_and_each_part_keeps_its_heading() {
        let mut corpus = Corpus {
            root: ".".into(),
            roots: vec![".".into()],
            chunks: chunk_markdown("g.md", &long_section(5)),
        };
        // "Long" is 1 token; each paragraph 7; joined paragraphs 14, 21: three fit in 22.
        corpus.split_long_sections(22);
        let ids: Vec<_> = corpus.chunks.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["g.md#0", "g.md#1.1", "g.md#1.2"]);
        assert_eq!(
            corpus.chunks[1].text,
            "para0 aaaa bbbb cccc dddd.\n\npara1 aaaa bbbb cccc dddd.\n\npara2 aaaa bbbb cccc dddd."
        );
        assert_eq!(
            corpus.chunks[2].text,
            "para3 aaaa bbbb cccc dddd.\n\npara4 aaaa bbbb cccc dddd."
        );
        for part in &corpus.chunks[1..] {
            assert_eq!(
                (part.heading.as_str(), part.source.as_str()),
                ("Long", "g.md")
            );
            assert!(estimate_tokens(&part.embed_text()) <= 22);
            assert!(part.matches("g.md#Long") && part.matches("g.md#1"));
            assert!(!part.matches("g.md#0") && !part.matches("g.md#1.") && !part.matches("g.md#"));
        }
        assert_eq!(
            corpus.find("g.md#Long").map(|c| c.id.as_str()),
            Some("g.md#1.1")
        );
        assert_eq!(
            corpus.find("g.md#1.2").map(|c| c.id.as_str()),
            Some("g.md#1.2")
        );
    }

    #[test]
    fn a_section_id_does_not_match_parts_of_a_longer_id() {
        let part = Chunk {
            id: "g.md#12.1".into(),
            source: "g.md".into(),
            heading: "H".into(),
            text: "t".into(),
        };
        assert!(part.matches("g.md#12"));
        assert!(!part.matches("g.md#1") && !part.matches("g.md#12.1x"));
        let again = Chunk {
            id: "g.md#12.1.3".into(),
            ..part
        };
        assert!(again.matches("g.md#12") && again.matches("g.md#12.1"));
        assert!(!again.matches("g.md#12.1.") && !again.matches("g.md#12.2"));
    }

    #[test]
    fn sections_within_the_limit_or_a_zero_limit_stay_whole() {
        let whole = chunk_markdown("g.md", &long_section(5));
        for limit in [0, 36, 1000] {
            let mut corpus = Corpus {
                root: ".".into(),
                roots: vec![".".into()],
                chunks: whole.clone(),
            };
            corpus.split_long_sections(limit);
            assert_eq!(corpus.chunks, whole, "limit {limit}");
        }
    }

    #[test]
    fn a_fenced_code_block_too_long_splits_at_lines_and_each_part_keeps_its_fence() {
        let code = "```sh\nrun one\n\nrun two\n\nrun three\n```";
        let doc = format!("# Setup\nFirst step.\n\n{code}\n\nLast step.\n");
        let chunk = chunk_markdown("s.md", &doc).remove(0);
        assert!(estimate_tokens(code) > 13 - estimate_tokens("Setup"));
        let parts = split_section(chunk, 13);
        let texts: Vec<_> = parts.iter().map(|c| c.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "First step.",
                "```sh\nrun one\n\nrun two\n```",
                "```sh\nrun three\n```",
                "Last step."
            ]
        );
        let ids: Vec<_> = parts.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["s.md#0.1", "s.md#0.2", "s.md#0.3", "s.md#0.4"]);
    }

    #[test]
    fn a_limit_that_leaves_no_room_beside_the_heading_keeps_a_short_section_whole() {
        let chunk = chunk_markdown("p.md", "# P\none two three four five six\n").remove(0);
        assert_eq!(split_section(chunk.clone(), 3), vec![chunk]);
    }
}
