//! The retrieval boundary: the user's own search service or vector store, behind one trait.
//!
//! The builtin retriever (markdown chunks, the configured embedder, exact cosine) stays inside
//! the sweep, where it scores every question at once; a foreign retriever returns passages that
//! [`PassageTable`] interns into a synthetic corpus keyed by passage id, so prompts,
//! classification and reports read them exactly as they read builtin chunks.

pub mod config;

pub mod http;
pub mod pgvector;
pub mod tls;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

use crate::adapters::embed::Embedder;
use crate::adapters::http::{Endpoint, RetryPolicy};
use config::{RetrieverConfig, RetrieverKind};

use crate::adapters::corpus::{Chunk, Corpus};
use crate::adapters::search::Hit;
use crate::base::BoxFuture;

/// One ranked passage as a retriever returns it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Passage {
    /// The store's own id: how reports and `expect.ids` name the passage.
    pub id: String,
    pub source: String,
    #[serde(default)]
    pub heading: Option<String>,
    pub text: String,
    pub score: f64,
}

/// Why retrieval for one question failed: setup errors abort the sweep (exit status 2).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct RetrieveError(pub String);

/// A search over the user's passages.
pub trait Retriever: Send + Sync {
    /// What is searched, for messages and reports (credentials redacted).
    fn describe(&self) -> String;

    /// For each query, at most `k` passages, best first; one result per query, in order.
    fn retrieve<'a>(
        &'a self,
        queries: &'a [String],
        k: usize,
    ) -> BoxFuture<'a, Vec<Result<Vec<Passage>, RetrieveError>>>;

    /// Whether the sweep retrieves once per distinct k (`retriever.query_per_k`) rather than
    /// taking every k's hits as a prefix of the largest k's.
    fn query_per_k(&self) -> bool {
        false
    }
}

/// `retriever.query_per_k: true`: the configured retriever, asked once per distinct k.
struct PerK(Arc<dyn Retriever>);

impl Retriever for PerK {
    fn describe(&self) -> String {
        self.0.describe()
    }

    fn retrieve<'a>(
        &'a self,
        queries: &'a [String],
        k: usize,
    ) -> BoxFuture<'a, Vec<Result<Vec<Passage>, RetrieveError>>> {
        self.0.retrieve(queries, k)
    }

    fn query_per_k(&self) -> bool {
        true
    }
}

/// The configured foreign retriever, connected and checked; `None` for `builtin`.
pub async fn open(
    c: &RetrieverConfig,
    embedder: Arc<dyn Embedder>,
) -> anyhow::Result<Option<Arc<dyn Retriever>>> {
    let r = open_kind(c, embedder).await?;
    Ok(match r {
        Some(r) if c.query_per_k => Some(Arc::new(PerK(r))),
        r => r,
    })
}

async fn open_kind(
    c: &RetrieverConfig,
    embedder: Arc<dyn Embedder>,
) -> anyhow::Result<Option<Arc<dyn Retriever>>> {
    match c.kind {
        RetrieverKind::Builtin => Ok(None),
        RetrieverKind::Http => {
            let Some(url) = &c.url else {
                anyhow::bail!("retriever.kind is `http` but no `retriever.url` is given");
            };
            let headers: Vec<(String, String)> = c
                .headers
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            let endpoint = Endpoint::new(
                url,
                &c.api_key_env,
                &headers,
                Duration::from_secs_f64(c.timeout_s),
                RetryPolicy {
                    max_attempts: c.max_retries + 1,
                    base_delay: Duration::from_millis(c.backoff_ms),
                    ..RetryPolicy::default()
                },
            )
            .map_err(|e| anyhow::anyhow!("retriever: {e}"))?;
            let r = http::HttpRetriever::new(endpoint).map_err(|e| anyhow::anyhow!(e))?;
            Ok(Some(Arc::new(r)))
        }
        RetrieverKind::Pgvector => {
            let table = pgvector::PgTable::from_env(
                &c.dsn_env,
                &c.table,
                c.columns.clone(),
                c.distance,
                c.ef_search,
            )?;
            Ok(Some(Arc::new(
                pgvector::PgRetriever::open(table, embedder).await?,
            )))
        }
    }
}

/// Check a retriever's answer against the contract: at most `k` passages, finite scores, no
/// empty id. Passages come back best first; equal scores keep the order given.
pub fn checked(mut passages: Vec<Passage>, k: usize) -> Result<Vec<Passage>, RetrieveError> {
    if passages.len() > k {
        return Err(RetrieveError(format!(
            "{} hits for k = {k}: a retriever must return at most k",
            passages.len()
        )));
    }
    if let Some((i, p)) = passages
        .iter()
        .enumerate()
        .find(|(_, p)| !p.score.is_finite())
    {
        return Err(RetrieveError(format!(
            "hit {i} (`{}`) has a score that is not a finite number",
            p.id
        )));
    }
    if let Some(i) = passages.iter().position(|p| p.id.is_empty()) {
        return Err(RetrieveError(format!("hit {i} has an empty `id`")));
    }
    let mut seen: HashMap<&str, usize> = HashMap::with_capacity(passages.len());
    for (j, p) in passages.iter().enumerate() {
        if let Some(i) = seen.insert(&p.id, j) {
            return Err(RetrieveError(format!(
                "hits {i} and {j} share the id `{}`: an id must name one passage",
                p.id
            )));
        }
    }
    // A stable sort: ties stay in the order the retriever gave.
    passages.sort_by(|a, b| b.score.total_cmp(&a.score));
    Ok(passages)
}

/// The longest text of one passage: 1 MiB. A passage is quoted whole in a prompt; one longer
/// than this is far past any model's context, and is refused rather than cut (a cut passage
/// would be graded as if the store held it).
pub const MAX_PASSAGE_BYTES: usize = 1024 * 1024;

/// Passages interned by id into a corpus, so downstream code points into it like into builtin
/// chunks. An id names one text: the same id with another text is a contract error.
#[derive(Debug, Clone)]
pub struct PassageTable {
    pub corpus: Corpus,
    by_id: HashMap<String, usize>,
    /// Per chunk, the question whose retrieval first returned it (named in errors).
    first_asked_by: Vec<String>,
}

impl PassageTable {
    pub fn new(describe: &str) -> Self {
        PassageTable {
            corpus: Corpus {
                root: describe.into(),
                roots: vec![describe.into()],
                chunks: Vec::new(),
            },
            by_id: HashMap::new(),
            first_asked_by: Vec::new(),
        }
    }

    /// The hit for `passage`, retrieved for `question`, adding it to the table when its id is
    /// new. An id already seen with another text is refused, naming both questions: its
    /// prompts would silently carry the first text.
    pub fn intern(&mut self, passage: Passage, question: &str) -> Result<Hit, RetrieveError> {
        if passage.text.len() > MAX_PASSAGE_BYTES {
            return Err(RetrieveError(format!(
                "passage `{}` has {} bytes of text, more than the limit of {} MiB for one passage",
                passage.id,
                passage.text.len(),
                MAX_PASSAGE_BYTES >> 20
            )));
        }
        let score = passage.score;
        if let Some(&chunk) = self.by_id.get(&passage.id) {
            let known = &self.corpus.chunks[chunk];
            if known.text != passage.text {
                return Err(RetrieveError(format!(
                    "passage `{}` came back with another text than for question `{}`: an id must name one text",
                    passage.id, self.first_asked_by[chunk]
                )));
            }
            return Ok(Hit { chunk, score });
        }
        let chunk = self.corpus.chunks.len();
        self.by_id.insert(passage.id.clone(), chunk);
        self.first_asked_by.push(question.to_string());
        self.corpus.chunks.push(Chunk {
            id: passage.id,
            source: passage.source,
            heading: passage.heading.unwrap_or_default(),
            text: passage.text,
        });
        Ok(Hit { chunk, score })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(id: &str, score: f64) -> Passage {
        Passage {
            id: id.into(),
            source: "a.md".into(),
            heading: Some("H".into()),
            text: format!("text of {id}"),
            score,
        }
    }

    #[test]
    fn checked_sorts_best_first_keeping_ties_in_given_order() {
        let got = checked(vec![p("x", 0.2), p("y", 0.5), p("z", 0.2)], 3).unwrap();
        let ids: Vec<_> = got.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(ids, ["y", "x", "z"]);
    }

    #[test]
    fn checked_refuses_too_many_hits_and_non_finite_scores() {
        assert_eq!(
            checked(vec![p("x", 0.2), p("y", 0.1)], 1),
            Err(RetrieveError(
                "2 hits for k = 1: a retriever must return at most k".into()
            ))
        );
        assert_eq!(
            checked(vec![p("x", 0.2), p("y", f64::NAN)], 2),
            Err(RetrieveError(
                "hit 1 (`y`) has a score that is not a finite number".into()
            ))
        );
        assert_eq!(
            checked(vec![p("", 0.2)], 2),
            Err(RetrieveError("hit 0 has an empty `id`".into()))
        );
        assert_eq!(
            checked(vec![p("x", 0.3), p("y", 0.2), p("x", 0.1)], 3),
            Err(RetrieveError(
                "hits 0 and 2 share the id `x`: an id must name one passage".into()
            ))
        );
    }

    #[test]
    fn an_id_seen_again_with_another_text_names_the_first_question() {
        let mut t = PassageTable::new("http://search");
        t.intern(p("x", 0.5), "fee").unwrap();
        let mut other = p("x", 0.4);
        other.text = "a text that depends on the query".into();
        assert_eq!(
            t.intern(other, "parking"),
            Err(RetrieveError(
                "passage `x` came back with another text than for question `fee`: an id must name one text".into()
            ))
        );
        assert_eq!(t.corpus.chunks.len(), 1);
        assert_eq!(t.corpus.chunks[0].text, "text of x");
    }

    #[test]
    fn a_passage_longer_than_the_limit_is_refused_by_id() {
        let mut t = PassageTable::new("http://search");
        let mut long = p("x", 0.5);
        long.text = "a".repeat(MAX_PASSAGE_BYTES + 1);
        assert_eq!(
            t.intern(long, "fee"),
            Err(RetrieveError(
                "passage `x` has 1048577 bytes of text, more than the limit of 1 MiB for one passage".into()
            ))
        );
        let mut at = p("y", 0.5);
        at.text = "a".repeat(MAX_PASSAGE_BYTES);
        assert!(t.intern(at, "fee").is_ok());
    }

    #[test]
    fn interning_names_each_id_once() {
        let mut t = PassageTable::new("http://search");
        assert_eq!(
            t.intern(p("x", 0.5), "q1").unwrap(),
            Hit {
                chunk: 0,
                score: 0.5
            }
        );
        assert_eq!(
            t.intern(p("y", 0.4), "q1").unwrap(),
            Hit {
                chunk: 1,
                score: 0.4
            }
        );
        assert_eq!(
            t.intern(p("x", 0.3), "q2").unwrap(),
            Hit {
                chunk: 0,
                score: 0.3
            }
        );
        assert_eq!(t.corpus.chunks.len(), 2);
        assert_eq!(t.corpus.chunks[1].label(), "a.md#H");
    }
}
