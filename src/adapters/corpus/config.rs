//! The `corpus` section of `rageval.yaml`, with its documented defaults.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How the builtin retriever cuts the corpus into chunks.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct CorpusConfig {
    /// A heading section estimated longer than this (heading and text) is split into parts that
    /// each keep the heading and fit: at paragraph boundaries, then a paragraph or code block
    /// still too long at line breaks, sentences and words (a code block's parts each keep its
    /// fence). Never more than nine tenths of `embedder.max_input_tokens`, when that is set;
    /// 0 keeps every section whole.
    pub max_chunk_tokens: usize,
}

/// Fits common embedding models: all-MiniLM-L6-v2 was trained on 256 word pieces and reads 512
/// at most; BGE and E5 read 512. The estimate leans high, so 256 is about 200 real tokens.
pub const DEFAULT_MAX_CHUNK_TOKENS: usize = 256;

impl Default for CorpusConfig {
    fn default() -> Self {
        CorpusConfig {
            max_chunk_tokens: DEFAULT_MAX_CHUNK_TOKENS,
        }
    }
}
