//! The adapters: each part of the pipeline under test, behind its own types and its own config
//! section. Corpus and question sets, prompts and refusals, chat models, embedders, retrievers,
//! rerankers, the judge, the classifier, the response cache, and the mocks.

pub mod cache;
pub mod chat;
pub mod classify;
pub mod corpus;
pub mod embed;
pub mod evalset;
pub mod http;
pub mod judge;
pub mod mock;
pub mod prompt;
pub mod refusal;
pub mod rerank;
pub mod retriever;
pub mod rewrite;
pub mod scan;
pub mod search;
pub mod template;
