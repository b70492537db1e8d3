//! Long sections -> parts that fit a token limit.
//!
//! A section is split at paragraph boundaries first (blank lines outside fenced code blocks).
//! A paragraph or code block still longer than the limit is split at line breaks, a line at
//! sentence ends, a sentence at spaces, and a word longer than the limit at characters. A
//! code block's parts each keep its fence: the opening line (with its language) before, the
//! closing line after. The estimate of [`estimate_tokens`] adds up over any cut next to a
//! character that is not a letter or digit, so each piece is estimated once and the splitting
//! stays linear in the section's length.

use super::{estimate_tokens, Chunk};

/// A section too long for `max_tokens` as parts that fit. Every part keeps the section's
/// heading and source; part `P` (from 1) of `file.md#N` is `file.md#N.P`, and a part split
/// again (a server refused it) names its parts `file.md#N.P.Q`. Only a heading that alone
/// leaves no room under the limit gives parts that do not fit.
pub fn split_section(chunk: Chunk, max_tokens: usize) -> Vec<Chunk> {
    let heading = estimate_tokens(&chunk.heading);
    let body = estimate_tokens(&chunk.text);
    if heading + body <= max_tokens {
        return vec![chunk];
    }
    // A heading that leaves (almost) nothing still gets a few tokens of text per part.
    let budget = max_tokens.saturating_sub(heading).max(MIN_BUDGET);
    let mut parts = Parts::new(budget);
    for block in paragraphs(&chunk.text) {
        let tokens = estimate_tokens(block);
        if tokens <= budget {
            parts.add(block, tokens, "\n\n");
        } else {
            parts.flush();
            split_block(block, budget, &mut parts);
            parts.flush();
        }
    }
    parts.flush();
    if parts.done.len() <= 1 {
        return vec![chunk];
    }
    parts
        .done
        .into_iter()
        .enumerate()
        .map(|(p, text)| Chunk {
            id: format!("{}.{}", chunk.id, p + 1),
            source: chunk.source.clone(),
            heading: chunk.heading.clone(),
            text,
        })
        .collect()
}

/// The fewest tokens of text a part is given, whatever its heading.
const MIN_BUDGET: usize = 8;

/// Parts being packed: pieces join the current part while it stays within the budget.
struct Parts {
    budget: usize,
    done: Vec<String>,
    current: String,
    tokens: usize,
}

impl Parts {
    fn new(budget: usize) -> Self {
        Parts {
            budget,
            done: Vec::new(),
            current: String::new(),
            tokens: 0,
        }
    }

    /// Add `piece` (estimated at `tokens`, joined by `sep`), first closing the current part when
    /// the piece would take it over the budget.
    fn add(&mut self, piece: &str, tokens: usize, sep: &str) {
        if !self.current.is_empty() && self.tokens + tokens > self.budget {
            self.flush();
        }
        if !self.current.is_empty() {
            self.current.push_str(sep);
        }
        self.current.push_str(piece);
        self.tokens += tokens;
    }

    fn flush(&mut self) {
        let text = self.current.trim();
        if !text.is_empty() {
            self.done.push(text.to_string());
        }
        self.current.clear();
        self.tokens = 0;
    }
}

/// A fenced code block being split: its opening line and the line that closes it.
struct Fence<'a> {
    open: &'a str,
    open_tokens: usize,
    close: &'a str,
    close_tokens: usize,
}

/// One paragraph or code block longer than the budget, as parts: at line breaks first, and a
/// line longer than the budget at sentences, spaces, then characters. A code block that does
/// not fit whole is split at its lines, and each of its parts is fenced: the opening line (with
/// its language) first, the closing line last.
fn split_block(block: &str, budget: usize, parts: &mut Parts) {
    let lines: Vec<&str> = block.lines().collect();
    let mut fence: Option<Fence> = None;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let t = line.trim_start();
        let tokens = estimate_tokens(line);
        if let Some(f) = &fence {
            if is_fence(t) && t.starts_with(&f.close.trim_start()[..3]) {
                // The closing line: every part of the block kept room for it.
                if !parts.current.is_empty() {
                    parts.current.push('\n');
                    parts.current.push_str(line);
                    parts.tokens += tokens;
                }
                fence = None;
            } else {
                let room = budget.saturating_sub(f.open_tokens + f.close_tokens).max(1);
                let mut pieces = Vec::new();
                if tokens <= room {
                    pieces.push(line);
                } else {
                    cut(line, room, Level::Sentences, &mut pieces);
                }
                for piece in pieces {
                    let n = estimate_tokens(piece);
                    if parts.current.is_empty() {
                        parts.current.push_str(f.open);
                        parts.tokens = f.open_tokens;
                    } else if parts.tokens + n + f.close_tokens > budget {
                        // Blank lines at a part's end or start are left out.
                        let kept = parts.current.trim_end().len();
                        parts.current.truncate(kept);
                        parts.current.push('\n');
                        parts.current.push_str(f.close);
                        parts.flush();
                        parts.current.push_str(f.open);
                        parts.tokens = f.open_tokens;
                    }
                    if piece.trim().is_empty() && parts.current == f.open {
                        continue;
                    }
                    parts.current.push('\n');
                    parts.current.push_str(piece);
                    parts.tokens += n;
                }
            }
            i += 1;
            continue;
        }
        if is_fence(t) {
            let marker = &t[..3];
            let close = lines[i + 1..]
                .iter()
                .position(|l| l.trim_start().starts_with(marker))
                .map(|p| i + 1 + p);
            let end = close.map_or(lines.len(), |c| c + 1);
            let whole = lines[i..end].join("\n");
            let whole_tokens = estimate_tokens(&whole);
            if whole_tokens <= budget {
                parts.add(&whole, whole_tokens, "\n");
                i = end;
                continue;
            }
            // Too long whole: its lines go into parts of their own, each fenced.
            parts.flush();
            // A block the section leaves open is closed all the same.
            let close = close.map_or(marker, |c| lines[c]);
            fence = Some(Fence {
                open: line,
                open_tokens: tokens,
                close,
                close_tokens: estimate_tokens(close),
            });
            i += 1;
            continue;
        }
        if tokens <= budget {
            parts.add(line, tokens, "\n");
        } else {
            let mut pieces = Vec::new();
            cut(line, budget, Level::Sentences, &mut pieces);
            for (k, piece) in pieces.into_iter().enumerate() {
                parts.add(
                    piece,
                    estimate_tokens(piece),
                    if k == 0 { "\n" } else { " " },
                );
            }
        }
        i += 1;
    }
    if let Some(f) = fence {
        if !parts.current.is_empty() {
            parts.current.push('\n');
            parts.current.push_str(f.close);
        }
    }
}

/// Whether a line (its indentation trimmed) opens or closes a fenced code block.
fn is_fence(t: &str) -> bool {
    t.starts_with("```") || t.starts_with("~~~")
}

/// How finely [`cut`] splits.
#[derive(Clone, Copy)]
enum Level {
    Sentences,
    Words,
    Characters,
}

/// `text` (one line, estimated over `budget`) as pieces of at most `budget` tokens, appended to
/// `out` in order: whole sentences packed together, a sentence too long as words packed
/// together, a word too long as runs of characters.
fn cut<'a>(text: &'a str, budget: usize, level: Level, out: &mut Vec<&'a str>) {
    let bounds = match level {
        Level::Sentences => sentence_ends(text),
        Level::Words => word_starts(text),
        Level::Characters => return cut_characters(text, budget, out),
    };
    let finer = match level {
        Level::Sentences => Level::Words,
        _ => Level::Characters,
    };
    // Units are text[b[k]..b[k + 1]]; a cut at a space or after a mark keeps estimates additive.
    let mut start: Option<usize> = None;
    let mut end = 0;
    let mut tokens = 0;
    let emit = |s: usize, e: usize, out: &mut Vec<&'a str>| {
        let piece = text[s..e].trim();
        if !piece.is_empty() {
            out.push(piece);
        }
    };
    let mut at = 0;
    for b in bounds.into_iter().chain([text.len()]) {
        if b <= at {
            continue;
        }
        let unit = &text[at..b];
        let n = estimate_tokens(unit);
        if n > budget {
            if let Some(s) = start.take() {
                emit(s, end, out);
            }
            tokens = 0;
            cut(unit.trim(), budget, finer, out);
        } else {
            if start.is_some() && tokens + n > budget {
                emit(start.take().unwrap_or(at), end, out);
                tokens = 0;
            }
            start.get_or_insert(at);
            end = b;
            tokens += n;
        }
        at = b;
    }
    if let Some(s) = start {
        emit(s, end, out);
    }
}

/// Byte offsets just after each sentence end (`.`, `!` or `?` before a space).
fn sentence_ends(text: &str) -> Vec<usize> {
    let bytes = text.as_bytes();
    (1..bytes.len())
        .filter(|&i| matches!(bytes[i - 1], b'.' | b'!' | b'?') && bytes[i].is_ascii_whitespace())
        .collect()
}

/// Byte offsets where each word after the first starts (after a run of whitespace).
fn word_starts(text: &str) -> Vec<usize> {
    let mut out = Vec::new();
    let mut after_space = false;
    for (i, c) in text.char_indices() {
        if c.is_whitespace() {
            after_space = true;
        } else if after_space {
            out.push(i);
            after_space = false;
        }
    }
    out
}

/// A word (no whitespace) over `budget` as runs of characters of at most `budget` tokens.
fn cut_characters<'a>(word: &'a str, budget: usize, out: &mut Vec<&'a str>) {
    let budget = budget.max(1);
    let mut start = 0;
    // The estimate of word[start..i], kept as it grows: finished tokens and the current run.
    let (mut done, mut run) = (0usize, 0usize);
    for (i, c) in word.char_indices() {
        let (d, r) = if c.is_alphanumeric() {
            (done, run + 1)
        } else {
            (done + run.div_ceil(4) + usize::from(!c.is_whitespace()), 0)
        };
        if d + r.div_ceil(4) > budget && i > start {
            out.push(&word[start..i]);
            start = i;
            (done, run) = if c.is_alphanumeric() {
                (0, 1)
            } else {
                (usize::from(!c.is_whitespace()), 0)
            };
        } else {
            (done, run) = (d, r);
        }
    }
    if start < word.len() {
        out.push(&word[start..]);
    }
}

/// The paragraphs of a section body: runs of lines between blank lines, where a fenced code
/// block (blank lines and all) belongs to the paragraph it starts in.
pub(super) fn paragraphs(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    let mut end = 0;
    let mut in_fence: Option<&str> = None;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let at = offset;
        offset += line.len();
        let t = line.trim();
        if let Some(fence) = in_fence {
            if t.starts_with(fence) {
                in_fence = None;
            }
        } else if t.is_empty() {
            if let Some(s) = start.take() {
                out.push(text[s..end].trim_end());
            }
            continue;
        } else if t.starts_with("```") || t.starts_with("~~~") {
            in_fence = Some(&t[..3]);
        }
        start.get_or_insert(at);
        end = offset;
    }
    if let Some(s) = start {
        out.push(text[s..end].trim_end());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapters::corpus::chunk_markdown;

    /// The one section of `body` under `# Heading` in `g.md`, split at `limit`.
    fn split(body: &str, limit: usize) -> Vec<Chunk> {
        let chunk = chunk_markdown("g.md", &format!("# Release notes\n{body}\n")).remove(0);
        split_section(chunk, limit)
    }

    /// A changelog's release notes: one numbered list of about 2,000 characters, no blank line.
    fn numbered_list() -> String {
        (1..=40)
            .map(|n| format!("{n}. Fixed the parser for input {n} when a flag is repeated."))
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn code_block() -> String {
        let lines: Vec<String> = (0..80)
            .map(|n| format!("    let value_{n} = compute(&input[{n}..], options.clone())?;"))
            .collect();
        format!("```rust\nfn main() {{\n{}\n}}\n```", lines.join("\n"))
    }

    fn long_sentence() -> String {
        let words: Vec<String> = (0..300).map(|n| format!("word{n}")).collect();
        format!("A sentence that never ends {}.", words.join(" "))
    }

    /// Every part fits, keeps the heading, is named `g.md#0.P` and answers to the section.
    fn check_parts(parts: &[Chunk], limit: usize) {
        assert!(parts.len() > 1, "split at {limit}");
        for (p, part) in parts.iter().enumerate() {
            let tokens = estimate_tokens(&part.embed_text());
            assert!(
                tokens <= limit,
                "part {p} is {tokens} > {limit}: {:?}",
                part.text
            );
            assert_eq!(part.id, format!("g.md#0.{}", p + 1));
            assert_eq!(part.heading, "Release notes");
            assert!(part.matches("g.md#Release notes") && part.matches("g.md#0"));
        }
    }

    /// The words of `text`, fence lines left out.
    fn words(text: &str) -> Vec<&str> {
        text.lines()
            .filter(|l| !is_fence(l.trim_start()))
            .flat_map(str::split_whitespace)
            .collect()
    }

    #[test]
    fn a_long_numbered_list_splits_at_its_items() {
        let list = numbered_list();
        assert!(list.len() > 2000 && !list.contains("\n\n"));
        for limit in [512, 128, 64] {
            let parts = split(&list, limit);
            check_parts(&parts, limit);
            for part in &parts {
                let first = part.text.split('.').next().unwrap();
                assert!(
                    first.parse::<u32>().is_ok(),
                    "a part starts with an item: {part:?}"
                );
            }
            let all: Vec<&str> = parts.iter().flat_map(|p| words(&p.text)).collect();
            assert_eq!(all, words(&list), "nothing lost or repeated at {limit}");
        }
    }

    #[test]
    fn a_long_code_block_splits_at_lines_and_each_part_keeps_the_fence() {
        let code = code_block();
        for limit in [512, 128, 64] {
            let parts = split(&format!("Build it:\n\n{code}\n\nThen run it."), limit);
            check_parts(&parts, limit);
            let fenced: Vec<&Chunk> = parts.iter().filter(|p| p.text.contains("```")).collect();
            assert!(fenced.len() > 1, "{limit}");
            for part in &fenced {
                assert!(part.text.starts_with("```rust\n"), "{:?}", part.text);
                assert!(part.text.ends_with("\n```"), "{:?}", part.text);
            }
            let inner: Vec<&str> = fenced
                .iter()
                .flat_map(|p| p.text.lines().filter(|l| !is_fence(l)))
                .collect();
            let want: Vec<&str> = code.lines().filter(|l| !is_fence(l)).collect();
            assert_eq!(inner, want, "every line once, indentation kept, at {limit}");
            assert_eq!(parts.first().unwrap().text, "Build it:");
            assert_eq!(parts.last().unwrap().text, "Then run it.");
        }
    }

    #[test]
    fn a_long_sentence_splits_at_spaces_and_a_long_word_at_characters() {
        let sentence = long_sentence();
        let url = format!("https://example.org/{}", "a1b2c3d4".repeat(300));
        for limit in [512, 128, 64] {
            let parts = split(&sentence, limit);
            check_parts(&parts, limit);
            let all: Vec<&str> = parts.iter().flat_map(|p| words(&p.text)).collect();
            assert_eq!(all, words(&sentence));

            let parts = split(&format!("See {url} for the list."), limit);
            check_parts(&parts, limit);
            let joined: String = parts.iter().map(|p| p.text.as_str()).collect();
            assert_eq!(joined.replace(' ', ""), format!("See{url}forthelist."));
        }
    }

    #[test]
    fn sentences_are_kept_whole_when_they_fit() {
        let text = "First sentence is here. Second one follows it! Third asks why? Fourth ends.";
        let chunk = chunk_markdown("g.md", &format!("# H\n{text}\n")).remove(0);
        let parts: Vec<String> = split_section(chunk, 12)
            .into_iter()
            .map(|c| c.text)
            .collect();
        assert_eq!(
            parts,
            [
                "First sentence is here.",
                "Second one follows it!",
                "Third asks why? Fourth ends."
            ]
        );
    }

    #[test]
    fn splitting_is_deterministic_and_linear() {
        let huge = numbered_list().repeat(200);
        let start = std::time::Instant::now();
        let a = split(&huge, 64);
        assert!(start.elapsed() < std::time::Duration::from_secs(5));
        assert_eq!(a, split(&huge, 64));
    }
}
