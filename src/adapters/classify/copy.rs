//! Whether a reply copies its prompt: one of the prompt's own labels, or a passage word for
//! word (a run of [`COPY_WORDS`] words, case and whitespace aside, that a passage sent also
//! holds).

use std::hash::BuildHasher;

use foldhash::fast::FixedState;

use crate::adapters::corpus::Corpus;
use crate::adapters::search::Hit;

/// Words in a row a reply must share with a passage to have copied it: more than any sentence
/// of the sample corpus (23), so an answer quoting one sentence is no copy.
pub const COPY_WORDS: usize = 30;

/// The words of a text as copies are compared: split at whitespace, lowercased.
fn words(text: &str) -> Vec<String> {
    text.split_whitespace().map(str::to_lowercase).collect()
}

/// A digest of each run of [`COPY_WORDS`] words of `text`, sorted; empty for a shorter text.
pub(super) fn windows(text: &str) -> Vec<u64> {
    // Most replies are a sentence or two: nothing to hash, nothing to allocate.
    if text.split_whitespace().nth(COPY_WORDS - 1).is_none() {
        return Vec::new();
    }
    let words = words(text);
    let hasher = FixedState::default();
    let mut out: Vec<u64> = words
        .windows(COPY_WORDS)
        .map(|w| hasher.hash_one(w))
        .collect();
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

/// Whether a passage sent shares a run of [`COPY_WORDS`] words with the reply whose
/// [`windows`] are `reply`.
pub(super) fn copies_passage(reply: &[u64], corpus: &Corpus, sent: &[Hit]) -> bool {
    if reply.is_empty() {
        return false;
    }
    let hasher = FixedState::default();
    sent.iter().any(|h| {
        words(&corpus.chunks[h.chunk].text)
            .windows(COPY_WORDS)
            .any(|w| reply.binary_search(&hasher.hash_one(w)).is_ok())
    })
}
