//! Retrieval variants: every (embedder profile, chunk size) of the grid retrieves on its own,
//! since thresholds do not carry across embedding models and chunk sizes.
//!
//! The corpora stay one per corpus slot: the chunks of every chunk size are joined into one
//! corpus (see [`chunk_union`]), and a variant names its chunks by index. Runs, reports and the
//! record therefore point into the same corpora as ever; a chunk that two sizes cut alike is one
//! chunk, and a part whose id another size gives to different text gets `@SIZE` after its id.

use std::collections::HashMap;
use std::sync::Arc;

use crate::corpus::{Chunk, Corpus};
use crate::embed::Embedder;
use crate::retriever::Retriever;

/// How one setting retrieves.
#[derive(Clone)]
pub struct RetrievalVariant {
    /// A key of `embedders:`, or `default` for the `embedder:` section.
    pub embedder_profile: String,
    /// The builtin chunker's size; `None`: `corpus.max_chunk_tokens`.
    pub chunk_tokens: Option<usize>,
    pub embedder: Arc<dyn Embedder>,
    /// A foreign retriever (`http`, `pgvector`) for this embedder; `None`: the builtin index.
    pub retriever: Option<Arc<dyn Retriever>>,
    /// Per corpus slot, this size's chunks (indices into the joined corpus); `None`: all.
    pub members: Option<Vec<Vec<usize>>>,
}

/// The corpora `raw` (not yet split) cut at `default` and at each of `sizes`, joined: the
/// joined corpora, and per size (in `sizes` order) per corpus the indices of its chunks.
/// `None` in `sizes` stands for `default`. The `default` cut comes first and keeps its ids, so a
/// sweep whose sizes are all `default` has the corpora of a sweep without the dimension.
pub fn chunk_union(
    raw: &[Corpus],
    default: usize,
    sizes: &[Option<usize>],
) -> (Vec<Corpus>, Vec<Vec<Vec<usize>>>) {
    let mut joined: Vec<Corpus> = Vec::with_capacity(raw.len());
    let mut members: Vec<Vec<Vec<usize>>> = sizes.iter().map(|_| Vec::new()).collect();
    for corpus in raw {
        let mut union = corpus.clone();
        union.split_long_sections(default);
        let mut by_id: HashMap<String, usize> = union
            .chunks
            .iter()
            .enumerate()
            .map(|(i, c)| (c.id.clone(), i))
            .collect();
        let whole: Vec<usize> = (0..union.chunks.len()).collect();
        let mut cuts: HashMap<usize, Vec<usize>> = HashMap::new();
        for (slot, size) in sizes.iter().enumerate() {
            let size = size.unwrap_or(default);
            if size == default {
                members[slot].push(whole.clone());
                continue;
            }
            if let Some(m) = cuts.get(&size) {
                members[slot].push(m.clone());
                continue;
            }
            let mut cut = corpus.clone();
            cut.split_long_sections(size);
            let mine: Vec<usize> = cut
                .chunks
                .into_iter()
                .map(|chunk| intern(&mut union.chunks, &mut by_id, chunk, size))
                .collect();
            cuts.insert(size, mine.clone());
            members[slot].push(mine);
        }
        joined.push(union);
    }
    (joined, members)
}

/// The index of `chunk` in `chunks`: an equal chunk of the same id, else a new one (under
/// `id@size` when another chunk holds its id).
fn intern(
    chunks: &mut Vec<Chunk>,
    by_id: &mut HashMap<String, usize>,
    mut chunk: Chunk,
    size: usize,
) -> usize {
    let same = |c: &Chunk, d: &Chunk| c.text == d.text && c.heading == d.heading;
    if let Some(&i) = by_id.get(&chunk.id) {
        if same(&chunks[i], &chunk) {
            return i;
        }
        chunk.id = format!("{}@{size}", chunk.id);
        if let Some(&j) = by_id.get(&chunk.id) {
            return j;
        }
    }
    by_id.insert(chunk.id.clone(), chunks.len());
    chunks.push(chunk);
    chunks.len() - 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn corpus(sections: &[(&str, &str)]) -> Corpus {
        Corpus {
            root: "docs".into(),
            roots: vec!["docs".into()],
            chunks: sections
                .iter()
                .enumerate()
                .map(|(i, (heading, text))| Chunk {
                    id: format!("a.md#{i}"),
                    source: "a.md".into(),
                    heading: heading.to_string(),
                    text: text.to_string(),
                })
                .collect(),
        }
    }

    #[test]
    fn sizes_share_equal_chunks_and_keep_the_default_ids() {
        let para = |w: &str| format!("{w} ").repeat(40);
        let long = format!("{}\n\n{}\n\n{}", para("one"), para("two"), para("three"));
        let raw = [corpus(&[("Short", "a few words"), ("Long", &long)])];
        let (joined, members) = chunk_union(&raw, 1000, &[None, Some(40), Some(1000)]);
        let ids: Vec<&str> = joined[0].chunks.iter().map(|c| c.id.as_str()).collect();
        // The default cut keeps both sections whole; at 40 tokens the long one is in parts.
        assert_eq!(
            ids,
            ["a.md#0", "a.md#1", "a.md#1.1", "a.md#1.2", "a.md#1.3"]
        );
        assert_eq!(members[0], [vec![0, 1]]);
        assert_eq!(members[1], [vec![0, 2, 3, 4]]);
        assert_eq!(members[2], members[0], "the default size named explicitly");

        // Two sizes that both split the section give their parts' ids to different text.
        let (joined, members) = chunk_union(&raw, 100, &[None, Some(40)]);
        let ids: Vec<&str> = joined[0].chunks.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "a.md#0",
                "a.md#1.1",
                "a.md#1.2",
                "a.md#1.1@40",
                "a.md#1.2@40",
                "a.md#1.3"
            ]
        );
        assert_eq!(members[1], [vec![0, 3, 4, 5]]);
        assert!(joined[0].chunks[3].matches("a.md#Long"));
    }
}
