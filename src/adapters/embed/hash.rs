//! The builtin `hash` embedder: a deterministic bag of words.
//!
//! Each content word (see [`crate::base::text`]) is hashed with 64-bit FNV-1a into one of `dimensions`
//! buckets; a bucket holds the number of occurrences; the vector is L2-normalised. Two texts are
//! similar when they share words, which is all the reference pipeline's toy embeddings do.

use super::{normalize, EmbedError, Embedded, Embedder};
use crate::base::text::content_words;
use crate::base::BoxFuture;

/// Default number of buckets: large enough that collisions are rare in a small corpus.
pub const DEFAULT_DIMENSIONS: usize = 1024;

#[derive(Debug, Clone)]
pub struct HashEmbedder {
    dimensions: usize,
}

impl HashEmbedder {
    pub fn new(dimensions: usize) -> Self {
        assert!(
            dimensions > 0,
            "dimensions are validated by the config loader"
        );
        HashEmbedder { dimensions }
    }

    /// The vector of one text; the HTTP mock server serves exactly this.
    pub fn vector(&self, text: &str) -> Vec<f32> {
        let mut v = vec![0f32; self.dimensions];
        for word in content_words(text) {
            let bucket = fnv1a(word.as_bytes()) % self.dimensions as u64;
            v[bucket as usize] += 1.0;
        }
        normalize(&mut v);
        v
    }
}

impl Default for HashEmbedder {
    fn default() -> Self {
        HashEmbedder::new(DEFAULT_DIMENSIONS)
    }
}

impl Embedder for HashEmbedder {
    fn model(&self) -> String {
        format!("hash-{}", self.dimensions)
    }

    fn embed_each<'a>(
        &'a self,
        texts: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<Embedded>, EmbedError>> {
        Box::pin(async move { Ok(texts.iter().map(|t| Ok(self.vector(t))).collect()) })
    }
}

fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapters::embed::cosine;

    #[test]
    fn vectors_are_unit_length_and_deterministic() {
        let e = HashEmbedder::default();
        let v = e.vector("Membership costs 10 US dollars per term.");
        let norm: f64 = v.iter().map(|&x| f64::from(x).powi(2)).sum();
        assert!((norm - 1.0).abs() < 1e-6);
        assert_eq!(v, e.vector("membership COSTS 10 us dollars, per term"));
    }

    #[test]
    fn shared_words_raise_similarity() {
        let e = HashEmbedder::default();
        let q = e.vector("How much does membership cost per term?");
        let near = e.vector("Membership costs 10 US dollars per term.");
        let far = e.vector("Each team has 7 minutes to present.");
        assert!(cosine(&q, &near) > cosine(&q, &far));
        assert!(cosine(&q, &far).abs() < 1e-9);
    }

    #[test]
    fn text_of_stopwords_only_is_the_zero_vector() {
        let v = HashEmbedder::default().vector("how is it");
        assert!(v.iter().all(|&x| x == 0.0));
    }

    #[test]
    fn fnv_matches_reference_values() {
        assert_eq!(fnv1a(b""), 0xcbf29ce484222325);
        assert_eq!(fnv1a(b"a"), 0xaf63dc4c8601ec8c);
    }
}
