//! Whether a reply copies its prompt: one of the prompt's own labels, or two or more passages
//! word for word (a run of [`COPY_WORDS`] words, case and whitespace aside, that a passage
//! sent also holds).

use std::sync::OnceLock;

use crate::adapters::corpus::Corpus;
use crate::adapters::search::Hit;

/// Words in a row a reply must share with a passage to have copied it: more than any sentence
/// of the sample corpus (23), so an answer quoting one sentence is no copy.
pub const COPY_WORDS: usize = 30;

/// A word's digest, case aside (FNV-1a over its lowercased chars, with no allocation; an
/// ASCII word byte by byte, which digests the same).
fn word_digest(word: &str) -> u64 {
    let step = |h: u64, c: u64| (h ^ c).wrapping_mul(0x0100_0000_01b3);
    let start: u64 = 0xcbf2_9ce4_8422_2325;
    if word.is_ascii() {
        return word
            .bytes()
            .fold(start, |h, b| step(h, u64::from(b.to_ascii_lowercase())));
    }
    word.chars()
        .flat_map(char::to_lowercase)
        .fold(start, |h, c| step(h, u64::from(c)))
}

/// The digest of each run of [`COPY_WORDS`] words of `text`, as a polynomial over the words'
/// digests rolled one word at a time (each word is read once, not once per run it is in).
fn rolling(text: &str) -> Vec<u64> {
    const BASE: u64 = 0x9e37_79b9_7f4a_7c15;
    let words: Vec<u64> = text.split_whitespace().map(word_digest).collect();
    if words.len() < COPY_WORDS {
        return Vec::new();
    }
    // BASE^(COPY_WORDS - 1): the weight of the word that leaves the window.
    let top = (1..COPY_WORDS).fold(1u64, |p, _| p.wrapping_mul(BASE));
    let mut h = words[..COPY_WORDS]
        .iter()
        .fold(0u64, |h, &w| h.wrapping_mul(BASE).wrapping_add(w));
    let mut out = Vec::with_capacity(words.len() - COPY_WORDS + 1);
    out.push(h);
    for i in COPY_WORDS..words.len() {
        h = h
            .wrapping_sub(words[i - COPY_WORDS].wrapping_mul(top))
            .wrapping_mul(BASE)
            .wrapping_add(words[i]);
        out.push(h);
    }
    out
}

/// A digest of each run of [`COPY_WORDS`] words of `text`, sorted; empty for a shorter text.
pub(super) fn windows(text: &str) -> Vec<u64> {
    let mut out = rolling(text);
    out.sort_unstable();
    out.dedup();
    out
}

/// Whether one of the prompt's labels the reply holds (`found`) is the prompt's own: a label
/// that a passage sent holds too (a poisoned passage faking `<passage n="1">`) may have come
/// from quoting that passage.
pub(super) fn copies_label(found: &[String], corpus: &Corpus, sent: &[Hit]) -> bool {
    found.iter().any(|label| {
        !sent
            .iter()
            .any(|h| corpus.chunks[h.chunk].text.contains(label.as_str()))
    })
}

/// A corpus with each passage's [`windows`], digested the first time a reply is compared with
/// it and kept for every later reply: a sweep's replies share their passages, and rolling each
/// passage sent again for each reply was most of the time a large sweep took to classify.
pub struct Passages<'c> {
    pub corpus: &'c Corpus,
    /// Per chunk, its windows once digested.
    windows: Vec<OnceLock<Box<[u64]>>>,
}

impl<'c> Passages<'c> {
    /// No passage digested yet.
    pub fn new(corpus: &'c Corpus) -> Self {
        Passages {
            corpus,
            windows: corpus.chunks.iter().map(|_| OnceLock::new()).collect(),
        }
    }

    /// The [`windows`] of chunk `chunk`'s text.
    fn windows(&self, chunk: usize) -> &[u64] {
        self.windows[chunk].get_or_init(|| windows(&self.corpus.chunks[chunk].text).into())
    }
}

/// Whether the reply whose [`windows`] are `reply` reproduces the context: runs of
/// [`COPY_WORDS`] words of two or more of the passages sent. One passage quoted at length is an
/// extractive answer (a chain that answers "The handbook says: ..." with its best passage);
/// two is the prompt handed back.
pub(super) fn copies_passage(reply: &[u64], passages: &Passages<'_>, sent: &[Hit]) -> bool {
    !reply.is_empty()
        && sent
            .iter()
            .filter(|h| {
                passages
                    .windows(h.chunk)
                    .iter()
                    .any(|w| reply.binary_search(w).is_ok())
            })
            .take(2)
            .count()
            == 2
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rolled digest of each window is the digest of that window computed whole.
    #[test]
    fn a_word_digests_the_same_in_any_case() {
        assert_eq!(word_digest("Fee"), word_digest("fEE"));
        assert_eq!(word_digest("ÉTÉ"), word_digest("été"));
        assert_ne!(word_digest("fee"), word_digest("fees"));
    }

    #[test]
    fn rolled_digests_equal_each_window_digested_whole() {
        let text: Vec<String> = (0..45).map(|i| format!("W{}", i % 7)).collect();
        let rolled = rolling(&text.join(" "));
        assert_eq!(rolled.len(), 45 - COPY_WORDS + 1);
        for (i, &h) in rolled.iter().enumerate() {
            assert_eq!(
                h,
                rolling(&text[i..i + COPY_WORDS].join("\n").to_lowercase())[0]
            );
        }
        assert!(rolling(&text[..COPY_WORDS - 1].join(" ")).is_empty());
        assert_ne!(rolled[0], rolled[1]);
    }

    /// A passage digested for one reply answers every later reply as if digested afresh, in
    /// whatever order the passages are first asked for.
    #[test]
    fn passages_digested_once_compare_as_passages_digested_per_reply() {
        let run = |p: &str| (1..=40).map(|i| format!("{p}{i}")).collect::<Vec<_>>();
        let (a, b, c) = (run("a"), run("b"), run("c"));
        let corpus = Corpus {
            root: ".".into(),
            roots: vec![".".into()],
            chunks: crate::adapters::corpus::chunk_markdown(
                "a.md",
                &format!(
                    "# A\n{}\n# B\n{}\n# C\n{}\n",
                    a.join(" "),
                    b.join(" "),
                    c.join(" ")
                ),
            ),
        };
        let shared = Passages::new(&corpus);
        let sent = |ids: &[usize]| -> Vec<Hit> {
            ids.iter().map(|&chunk| Hit { chunk, score: 0.5 }).collect()
        };
        let cases = [
            (
                format!("{} {}", c[..30].join(" "), a[5..35].join(" ")),
                vec![2, 0],
                true,
            ),
            (
                format!("{} {}", c[..30].join(" "), a[5..35].join(" ")),
                vec![2, 1],
                false,
            ),
            (
                format!("{} {}", b[1..31].join(" "), a[..30].join(" ")),
                vec![0, 1, 2],
                true,
            ),
            (
                format!("{} {}", b[1..31].join(" "), c[..29].join(" ")),
                vec![1, 2],
                false,
            ),
            (
                format!("{} {}", c[9..39].join(" "), b[..30].join(" ")),
                vec![0, 1, 2],
                true,
            ),
        ];
        for (reply, ids, copies) in &cases {
            let reply = windows(reply);
            let fresh = copies_passage(&reply, &Passages::new(&corpus), &sent(ids));
            assert_eq!(fresh, *copies, "{ids:?}");
            assert_eq!(
                copies_passage(&reply, &shared, &sent(ids)),
                fresh,
                "{ids:?}"
            );
        }
        for (i, chunk) in corpus.chunks.iter().enumerate() {
            assert_eq!(shared.windows(i), windows(&chunk.text));
        }
    }
}
