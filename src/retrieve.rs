//! Exact cosine search over an embedded corpus.

use crate::corpus::Corpus;
use crate::embed::{cosine, normalize};

/// A retrieved chunk: its position in the corpus and its similarity to the query.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    pub chunk: usize,
    pub score: f64,
}

/// The corpus with one vector per chunk.
#[derive(Debug, Clone)]
pub struct Index {
    pub corpus: Corpus,
    vectors: Vec<Vec<f32>>,
}

impl Index {
    /// Vectors are L2-normalised here, whatever the embedder returned, so that scores are
    /// cosines and equal inputs give bit-equal scores on every path (builtin or HTTP).
    pub fn new(corpus: Corpus, mut vectors: Vec<Vec<f32>>) -> Self {
        assert_eq!(corpus.chunks.len(), vectors.len(), "one vector per chunk");
        for v in &mut vectors {
            normalize(v);
        }
        Index { corpus, vectors }
    }

    /// The `k` best chunks for `query`, best first. Equal scores keep corpus order, so the result
    /// never depends on sorting internals.
    pub fn search(&self, query: &[f32], k: usize) -> Vec<Hit> {
        let mut q = query.to_vec();
        normalize(&mut q);
        let query = &q[..];
        let mut hits: Vec<Hit> = self
            .vectors
            .iter()
            .enumerate()
            .map(|(chunk, v)| Hit {
                chunk,
                score: cosine(query, v),
            })
            .collect();
        let by_rank = |a: &Hit, b: &Hit| b.score.total_cmp(&a.score).then(a.chunk.cmp(&b.chunk));
        if k < hits.len() {
            if k == 0 {
                return Vec::new();
            }
            hits.select_nth_unstable_by(k - 1, by_rank);
            hits.truncate(k);
        }
        hits.sort_unstable_by(by_rank);
        hits
    }
}

/// The hits a setting keeps: the first `k` of a best-first list whose score is at least
/// `min_score`. Because the list is sorted, filtering the top `k` of a longer list gives the
/// same result as searching with `k` directly: the planner relies on that.
pub fn passing(ranked: &[Hit], k: usize, min_score: f64) -> &[Hit] {
    let top = &ranked[..k.min(ranked.len())];
    let n = top.iter().take_while(|h| h.score >= min_score).count();
    &top[..n]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corpus::chunk_markdown;

    fn index(vectors: Vec<Vec<f32>>) -> Index {
        let doc: String = (0..vectors.len())
            .map(|i| format!("# H{i}\nt{i}\n"))
            .collect();
        let corpus = Corpus {
            root: ".".into(),
            roots: vec![".".into()],
            chunks: chunk_markdown("a.md", &doc),
        };
        Index::new(corpus, vectors)
    }

    #[test]
    fn best_first_with_ties_in_corpus_order() {
        let idx = index(vec![
            vec![0.6, 0.8],
            vec![2.0, 0.0],
            vec![0.6, 0.8],
            vec![0.0, 1.0],
        ]);
        let hits = idx.search(&[1.0, 0.0], 3);
        let order: Vec<_> = hits.iter().map(|h| h.chunk).collect();
        assert_eq!(order, [1, 0, 2]);
        assert_eq!(idx.search(&[1.0, 0.0], 0), []);
        assert_eq!(idx.search(&[1.0, 0.0], 10).len(), 4);
    }

    #[test]
    fn passing_truncates_then_filters() {
        let ranked = [
            Hit {
                chunk: 0,
                score: 0.5,
            },
            Hit {
                chunk: 1,
                score: 0.3,
            },
            Hit {
                chunk: 2,
                score: 0.2,
            },
        ];
        assert_eq!(passing(&ranked, 2, 0.25).len(), 2);
        assert_eq!(
            passing(&ranked, 2, 0.3).len(),
            2,
            "a score equal to minScore passes"
        );
        assert_eq!(passing(&ranked, 5, 0.25).len(), 2);
        assert_eq!(passing(&ranked, 1, 0.6).len(), 0);
    }
}
