//! Exact cosine search over an embedded corpus.
//!
//! Scoring every question against every chunk is the one heavy in-process step of a large
//! sweep, so it is a blocked matrix product over both cores: f32 vectors (half the memory
//! traffic of f64), each product widened to f64, where it is exact, and summed in f64, so that
//! scores equal in exact arithmetic (common with the `hash` embedder) stay equal and tie in
//! corpus order. The product is built from one dot-product kernel whose summation order depends
//! only on the vector length (never on how many queries are scored together, on the block sizes
//! or on the number of threads): a question scored alone by `ask` gets bit for bit the score it
//! gets inside a sweep.

use crate::adapters::corpus::Corpus;
use crate::adapters::embed::normalize;

/// A retrieved chunk: its position in the corpus and its similarity to the query.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    pub chunk: usize,
    pub score: f64,
}

/// Independent accumulators of the dot kernel. Element `i` always lands in lane `i % LANES`, and
/// the lanes are summed in a fixed tree at the end: that is the whole summation order.
const LANES: usize = 8;
/// Queries scored together against one chunk: each chunk row is loaded once per tile.
const TILE: usize = 4;
/// Chunk rows per block: a block of 1024-dimension rows (512 KB) stays in the L2 cache while
/// every query tile of a block passes over it.
const CHUNK_BLOCK: usize = 128;
/// Queries scored per block: their rows of scores (64 x chunks) are reused from block to block.
const QUERY_BLOCK: usize = 64;

/// The corpus with one unit vector per chunk, stored as one row-major f32 matrix whose rows are
/// zero-padded to a multiple of [`LANES`].
#[derive(Debug, Clone)]
pub struct Index {
    pub corpus: Corpus,
    /// Dimensions of the embedder's vectors.
    dim: usize,
    /// `dim` rounded up to a multiple of [`LANES`].
    stride: usize,
    matrix: Vec<f32>,
}

impl Index {
    /// Vectors are L2-normalised here, whatever the embedder returned, so that scores are
    /// cosines and equal inputs give bit-equal scores on every path (builtin or HTTP). All vectors
    /// must have the same length: [`check_dimensions`] says which one does not.
    pub fn new(corpus: Corpus, vectors: Vec<Vec<f32>>) -> Self {
        assert_eq!(corpus.chunks.len(), vectors.len(), "one vector per chunk");
        let dim = vectors.first().map_or(0, Vec::len);
        assert!(
            vectors.iter().all(|v| v.len() == dim),
            "vector lengths are checked before indexing"
        );
        let stride = dim.div_ceil(LANES) * LANES;
        let mut matrix = vec![0f32; stride * vectors.len()];
        for (row, mut v) in matrix.chunks_exact_mut(stride.max(1)).zip(vectors) {
            normalize(&mut v);
            row[..dim].copy_from_slice(&v);
        }
        Index {
            corpus,
            dim,
            stride,
            matrix,
        }
    }

    /// Dimensions of the indexed vectors.
    pub fn dimensions(&self) -> usize {
        self.dim
    }

    /// The `k` best chunks for `query`, best first. Equal scores keep corpus order, so the result
    /// never depends on sorting internals.
    pub fn search(&self, query: &[f32], k: usize) -> Vec<Hit> {
        self.search_many(&[query], k).pop().unwrap_or_default()
    }

    /// [`Index::search`] for every query at once: the same hits, bit for bit, computed as one
    /// blocked matrix product split across the machine's cores.
    pub fn search_many<Q: AsRef<[f32]> + Sync>(&self, queries: &[Q], k: usize) -> Vec<Vec<Hit>> {
        let n = self.corpus.chunks.len();
        if queries.is_empty() {
            return Vec::new();
        }
        if k == 0 || n == 0 || self.stride == 0 {
            return queries.iter().map(|_| Vec::new()).collect();
        }
        let padded = self.pad_queries(queries);
        let threads = std::thread::available_parallelism()
            .map_or(1, usize::from)
            .min(queries.len().div_ceil(TILE));
        // Contiguous ranges of whole tiles per thread: which thread scores a query does not
        // change its score, only who computes it.
        let per_thread = queries.len().div_ceil(TILE).div_ceil(threads) * TILE;
        let mut out: Vec<Vec<Hit>> = Vec::with_capacity(queries.len());
        std::thread::scope(|scope| {
            let workers: Vec<_> = padded
                .chunks(per_thread * self.stride)
                .map(|part| scope.spawn(move || self.rank_part(part, k)))
                .collect();
            for w in workers {
                out.extend(w.join().unwrap_or_else(|e| std::panic::resume_unwind(e)));
            }
        });
        out
    }

    /// Normalised queries, each zero-padded (or cut) to the index's row length.
    fn pad_queries<Q: AsRef<[f32]>>(&self, queries: &[Q]) -> Vec<f32> {
        let mut padded = vec![0f32; self.stride * queries.len()];
        for (row, q) in padded.chunks_exact_mut(self.stride).zip(queries) {
            let q = q.as_ref();
            let len = q.len().min(self.dim);
            row[..len].copy_from_slice(&q[..len]);
            normalize(&mut row[..len]);
        }
        padded
    }

    /// Score and rank the padded queries of one thread, [`QUERY_BLOCK`] at a time.
    fn rank_part(&self, queries: &[f32], k: usize) -> Vec<Vec<Hit>> {
        let n = self.corpus.chunks.len();
        let mut out = Vec::with_capacity(queries.len() / self.stride);
        let mut scores = vec![0f64; QUERY_BLOCK.min(queries.len() / self.stride) * n];
        let mut ranking = Vec::with_capacity(n);
        for block in queries.chunks(QUERY_BLOCK * self.stride) {
            let rows: Vec<&[f32]> = block.chunks_exact(self.stride).collect();
            let (sparse, dense): (Vec<usize>, Vec<usize>) =
                (0..rows.len()).partition(|&q| is_sparse(rows[q]));
            self.score_dense(&rows, &dense, &mut scores);
            self.score_sparse(&rows, &sparse, &mut scores);
            out.extend(
                scores[..rows.len() * n]
                    .chunks_exact(n)
                    .map(|row| top_k(row, k, &mut ranking)),
            );
        }
        out
    }

    /// `scores[q * n + c] = dot(query q, chunk c)` for the queries `which`: a blocked matrix
    /// product, chunk block by chunk block, [`TILE`] queries per pass over a chunk row.
    fn score_dense(&self, rows: &[&[f32]], which: &[usize], scores: &mut [f64]) {
        let n = self.corpus.chunks.len();
        let s = self.stride;
        for c0 in (0..n).step_by(CHUNK_BLOCK) {
            let c1 = (c0 + CHUNK_BLOCK).min(n);
            let mut tiles = which.chunks_exact(TILE);
            for tile in &mut tiles {
                let queries: [&[f32]; TILE] = std::array::from_fn(|t| rows[tile[t]]);
                for c in c0..c1 {
                    let sums = dot_tile(&queries, &self.matrix[c * s..][..s]);
                    for (&q, sum) in tile.iter().zip(sums) {
                        scores[q * n + c] = sum;
                    }
                }
            }
            for &q in tiles.remainder() {
                for c in c0..c1 {
                    scores[q * n + c] = dot(rows[q], &self.matrix[c * s..][..s]);
                }
            }
        }
    }

    /// The same scores for queries that are mostly zeros (the `hash` embedder's: a few words
    /// of 1024 buckets): only their nonzero entries are multiplied, each into the lane and in
    /// the order [`dot`] uses. A skipped term would have added a zero, which leaves a lane as it
    /// was (a lane starts at +0 and a sum is never -0), so the bits are [`dot`]'s.
    fn score_sparse(&self, rows: &[&[f32]], which: &[usize], scores: &mut [f64]) {
        let n = self.corpus.chunks.len();
        let s = self.stride;
        let entries: Vec<Vec<(usize, f32)>> = which
            .iter()
            .map(|&q| {
                let row = rows[q];
                (0..s)
                    .filter(|&i| row[i] != 0.0)
                    .map(|i| (i, row[i]))
                    .collect()
            })
            .collect();
        // Chunk-major: each chunk row is read from memory once for the whole block.
        for c in 0..n {
            let chunk = &self.matrix[c * s..][..s];
            for (&q, entries) in which.iter().zip(&entries) {
                let mut acc = [0f64; LANES];
                for &(i, x) in entries {
                    acc[i % LANES] += f64::from(x) * f64::from(chunk[i]);
                }
                scores[q * n + c] = reduce(acc);
            }
        }
    }
}

/// Whether a padded query is better scored by [`Index::score_sparse`]: under a quarter nonzero.
fn is_sparse(row: &[f32]) -> bool {
    row.iter().filter(|&&x| x != 0.0).count() * 4 < row.len()
}

/// The `k` best of one row of scores, best first, equal scores in corpus order. `hits` is
/// scratch space reused from row to row: the result holds only its `k` hits (a whole row
/// kept as capacity cost 32 KB per question over 2,000 chunks).
fn top_k(row: &[f64], k: usize, hits: &mut Vec<Hit>) -> Vec<Hit> {
    hits.clear();
    hits.extend(
        row.iter()
            .enumerate()
            .map(|(chunk, &score)| Hit { chunk, score }),
    );
    let by_rank = |a: &Hit, b: &Hit| b.score.total_cmp(&a.score).then(a.chunk.cmp(&b.chunk));
    if k < hits.len() {
        hits.select_nth_unstable_by(k - 1, by_rank);
        hits.truncate(k);
    }
    hits.sort_unstable_by(by_rank);
    hits.to_vec()
}

/// The dot product of two rows of equal, padded length, in the kernel's fixed order.
fn dot(a: &[f32], b: &[f32]) -> f64 {
    let mut acc = [0f64; LANES];
    for (x, y) in a.chunks_exact(LANES).zip(b.chunks_exact(LANES)) {
        for l in 0..LANES {
            acc[l] += f64::from(x[l]) * f64::from(y[l]);
        }
    }
    reduce(acc)
}

/// [`dot`] of [`TILE`] queries with one chunk row: the same per-pair arithmetic, in the same
/// order, with the chunk's values loaded once for all the queries.
fn dot_tile(queries: &[&[f32]; TILE], chunk: &[f32]) -> [f64; TILE] {
    let mut acc = [[0f64; LANES]; TILE];
    for (i, y) in chunk.chunks_exact(LANES).enumerate() {
        for (t, q) in queries.iter().enumerate() {
            let x = &q[i * LANES..][..LANES];
            for l in 0..LANES {
                acc[t][l] += f64::from(x[l]) * f64::from(y[l]);
            }
        }
    }
    acc.map(reduce)
}

/// The lanes summed as a fixed tree.
fn reduce(a: [f64; LANES]) -> f64 {
    ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]))
}

/// Why vectors cannot form one index: an embedder that returned no numbers, vectors of
/// different lengths or a number that is not finite (an HTTP server misbehaving). `what(i)` names
/// the text behind vector `i`.
pub fn check_dimensions(
    vectors: &[Vec<f32>],
    what: impl Fn(usize) -> String,
) -> Result<(), String> {
    let Some(first) = vectors.first() else {
        return Ok(());
    };
    if first.is_empty() {
        return Err(format!(
            "the embedder returned an empty vector for {}",
            what(0)
        ));
    }
    if let Some(i) = vectors
        .iter()
        .position(|v| v.iter().any(|x| !x.is_finite()))
    {
        return Err(format!(
            "the embedder returned a number that is not finite for {}",
            what(i)
        ));
    }
    match vectors.iter().position(|v| v.len() != first.len()) {
        None => Ok(()),
        Some(i) => Err(format!(
            "the embedder returned {} dimensions for {} but {} for {}",
            vectors[i].len(),
            what(i),
            first.len(),
            what(0)
        )),
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
    use crate::adapters::corpus::chunk_markdown;

    #[test]
    fn top_k_keeps_only_its_hits_and_ranks_ties_in_corpus_order() {
        let row = [0.5, 0.9, 0.5, 0.1, 0.9, 0.5];
        let mut scratch = Vec::new();
        let hits = top_k(&row, 3, &mut scratch);
        let ranked: Vec<(usize, f64)> = hits.iter().map(|h| (h.chunk, h.score)).collect();
        assert_eq!(ranked, [(1, 0.9), (4, 0.9), (0, 0.5)]);
        // The scratch row is not carried along as capacity by every question's hits.
        assert_eq!(hits.capacity(), 3);
        // Reused for the next row, with nothing left of the first.
        let again = top_k(&[0.2, 0.3], 5, &mut scratch);
        let ranked: Vec<(usize, f64)> = again.iter().map(|h| (h.chunk, h.score)).collect();
        assert_eq!(ranked, [(1, 0.3), (0, 0.2)]);
    }

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

    /// Deterministic pseudo-random vectors (xorshift), a third of the entries zero.
    fn vectors(n: usize, dim: usize, seed: u64) -> Vec<Vec<f32>> {
        sparse_vectors(n, dim, seed, 3)
    }

    /// Vectors whose entries are zero but for one in `one_in` (about), signs mixed.
    fn sparse_vectors(n: usize, dim: usize, seed: u64, one_in: u64) -> Vec<Vec<f32>> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                (0..dim)
                    .map(|_| {
                        s ^= s << 13;
                        s ^= s >> 7;
                        s ^= s << 17;
                        if (one_in == 3) == (s % one_in == 0) {
                            0.0
                        } else {
                            (s % 2001) as f32 / 1000.0 - 1.0
                        }
                    })
                    .collect()
            })
            .collect()
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
        assert_eq!(hits[0].score, 1.0);
        assert_eq!(hits[1].score, hits[2].score);
        assert_eq!(idx.search(&[1.0, 0.0], 0), []);
        assert_eq!(idx.search(&[1.0, 0.0], 10).len(), 4);
    }

    #[test]
    fn a_query_scores_the_same_alone_as_in_any_batch() {
        // 301 chunks cross a chunk block; 70 queries cross a query block and leave a partial
        // tile; 45 dimensions pad; sparse and dense queries mix.
        let idx = index(vectors(301, 45, 7));
        let mut queries = vectors(50, 45, 99);
        queries.extend(sparse_vectors(20, 45, 5, 9));
        assert_eq!(
            queries
                .iter()
                .filter(|q| q.iter().filter(|&&x| x != 0.0).count() * 4 < 48)
                .count(),
            20
        );
        let batch = idx.search_many(&queries, 301);
        assert_eq!(batch.len(), 70);
        for (i, q) in queries.iter().enumerate() {
            let alone = idx.search(q, 301);
            let bits = |h: &[Hit]| {
                h.iter()
                    .map(|h| (h.chunk, h.score.to_bits()))
                    .collect::<Vec<_>>()
            };
            assert_eq!(bits(&alone), bits(&batch[i]), "query {i}");
            let tail = idx.search_many(&queries[i..], 301);
            assert_eq!(
                bits(&tail[0]),
                bits(&batch[i]),
                "query {i} at the head of a batch"
            );
        }
    }

    #[test]
    fn the_sparse_kernel_gives_the_dense_kernels_bits() {
        let chunks = vectors(40, 200, 11);
        let idx = index(chunks);
        for q in sparse_vectors(30, 200, 17, 12) {
            let padded = idx.pad_queries(&[&q]);
            assert!(is_sparse(&padded));
            for hit in idx.search(&q, 40) {
                let row = &idx.matrix[hit.chunk * idx.stride..][..idx.stride];
                assert_eq!(hit.score.to_bits(), dot(&padded, row).to_bits());
            }
        }
    }

    #[test]
    fn scores_are_cosines_of_the_f32_vectors() {
        let idx = index(vectors(50, 33, 3));
        let q = &vectors(1, 33, 5)[0];
        let norm = |v: &[f32]| v.iter().map(|&x| f64::from(x).powi(2)).sum::<f64>().sqrt();
        for hit in idx.search(q, 50) {
            let c = &vectors(50, 33, 3)[hit.chunk];
            let exact = q
                .iter()
                .zip(c)
                .map(|(&a, &b)| f64::from(a) * f64::from(b))
                .sum::<f64>()
                / (norm(q) * norm(c));
            assert!((hit.score - exact).abs() < 1e-6, "{} vs {exact}", hit.score);
        }
    }

    #[test]
    fn a_query_of_another_length_is_cut_or_padded() {
        let idx = index(vec![vec![1.0, 0.0, 0.0], vec![0.0, 1.0, 0.0]]);
        assert_eq!(idx.search(&[0.0, 1.0], 1)[0].chunk, 1);
        assert_eq!(idx.search(&[0.0, 0.0, 0.0, 5.0], 1)[0].score, 0.0);
        assert_eq!(idx.dimensions(), 3);
    }

    #[test]
    fn dimensions_are_checked_before_indexing() {
        let name = |i: usize| format!("chunk {i}");
        assert_eq!(check_dimensions(&[vec![1.0], vec![2.0]], name), Ok(()));
        assert_eq!(
            check_dimensions(&[vec![1.0, 0.0], vec![2.0, 1.0], vec![1.0]], name),
            Err("the embedder returned 1 dimensions for chunk 2 but 2 for chunk 0".into())
        );
        assert_eq!(
            check_dimensions(&[vec![]], name),
            Err("the embedder returned an empty vector for chunk 0".into())
        );
        assert_eq!(
            check_dimensions(&[vec![1.0], vec![f32::NAN]], name),
            Err("the embedder returned a number that is not finite for chunk 1".into())
        );
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
