//! End-to-end tests through the real `rageval` binary (one test binary, as ripgrep and just do).

mod harness;
mod support;

mod batch;
mod bridge;
mod browser;
mod certify;
mod chat_http;
mod chunks;
mod commands;
mod dry_run;
mod errors;
mod first_hour;
mod fleet;
mod gate;
mod gate_errors;
mod gate_output;
mod generate;
mod grading;
mod hardening;
mod http;
mod insight;
mod models;
mod pg_tls;
mod prompt_cache;
mod quirks;
mod repeat;
mod rerank;
mod retriever_http;
mod retrievers;
mod scale;
mod scenarios;
mod schema;
mod secrets;
mod shards;
mod sweep;
