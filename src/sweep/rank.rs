//! Retrieval for the sweep: embed the corpora into indexes, embed and search each distinct
//! question text once per retrieval variant (or ask a foreign retriever), and rerank.

use super::*;

/// One search: the corpus slot it belongs to, the text searched, and the question it is for
/// (named in errors).
pub struct Query<'a> {
    pub corpus: usize,
    /// Which retrieval variant of the call searches it (0 when there is one).
    pub variant: usize,
    pub text: &'a str,
    pub question: &'a str,
}

/// What retrieval gave: the passages per corpus slot, and per query its hits at the largest k.
pub struct Ranking {
    pub corpora: Vec<Corpus>,
    pub ranked: Vec<Vec<Hit>>,
    /// Distinct texts embedded or searched.
    pub searched: usize,
    /// With a reranker, per query the best retrieval score before reranking (`ranked` then
    /// holds rerank scores); `None` everywhere without one.
    pub retrieval_best: Vec<Option<f64>>,
    /// With `retriever.query_per_k`, per query the hits of each smaller k retrieved on its own
    /// (`ranked` holds the largest); empty otherwise.
    pub by_k: Vec<Vec<(usize, Vec<Hit>)>>,
    /// With a reranker, every distinct rerank call made, by digest, in the order of the
    /// queries that first asked it; empty without one.
    pub rerank_calls: CallLog,
    /// With a reranker, per query its rerank call, an index into `rerank_calls` (`None`: no
    /// passage to rerank); empty without one.
    pub rerank_of: Vec<Option<u32>>,
}

impl Engine {
    /// Embed each corpus (one request per corpus) into a search index.
    pub async fn index(&self, corpora: &[Corpus]) -> Result<Vec<Index>> {
        let mut indexes = Vec::with_capacity(corpora.len());
        for corpus in corpora {
            indexes.push(build_index(self.embedder.as_ref(), corpus.clone()).await?);
        }
        Ok(indexes)
    }

    /// Retrieve every query at `k`, each distinct text once, and rerank the passages when a
    /// reranker is configured: the one retrieval the sweep, `ask` and `prompt` share.
    pub async fn rank(
        &self,
        corpora: &[Corpus],
        queries: &[Query<'_>],
        k: usize,
    ) -> Result<Ranking> {
        self.rank_at(corpora, queries, &[k]).await
    }

    /// [`Engine::rank_with`] with the engine's own embedder and retriever over every chunk.
    pub(crate) async fn rank_at(
        &self,
        corpora: &[Corpus],
        queries: &[Query<'_>],
        ks: &[usize],
    ) -> Result<Ranking> {
        let source = Source {
            embedder: self.embedder.as_ref(),
            retriever: self.retriever.as_ref(),
            members: vec![None],
        };
        self.rank_with(&source, corpora, queries, ks, &mut None)
            .await
    }

    /// [`Engine::rank`] from `source` for every k of `ks` (ascending, the largest last): one
    /// retrieval at the largest k, or one per k when the retriever asks for it
    /// (`retriever.query_per_k`; the config refuses it together with a reranker). A foreign
    /// retriever's passages are interned in `tables`, which calls for several sources share.
    pub(crate) async fn rank_with(
        &self,
        source: &Source<'_>,
        corpora: &[Corpus],
        queries: &[Query<'_>],
        ks: &[usize],
        tables: &mut Option<Vec<PassageTable>>,
    ) -> Result<Ranking> {
        let k = ks.last().copied().unwrap_or_default();
        let Some(reranker) = &self.reranker else {
            return self.retrieve(source, corpora, queries, ks, tables).await;
        };
        let candidates = reranker.candidates().unwrap_or(k);
        let mut ranking = self
            .retrieve(source, corpora, queries, &[candidates], tables)
            .await?;
        let top_n = reranker.top_n().unwrap_or(k);
        // One call per distinct text and corpus: its candidates are the same.
        let mut jobs: Vec<(String, Vec<String>)> = Vec::new();
        let mut job_of: HashMap<(usize, &str), usize> = HashMap::new();
        let slots: Vec<usize> = queries
            .iter()
            .enumerate()
            .map(|(q, query)| {
                *job_of.entry((query.corpus, query.text)).or_insert_with(|| {
                    let corpus = &ranking.corpora[query.corpus];
                    let documents = ranking.ranked[q]
                        .iter()
                        .map(|h| corpus.chunks[h.chunk].text.clone())
                        .collect();
                    jobs.push((query.text.to_string(), documents));
                    jobs.len() - 1
                })
            })
            .collect();
        let results = crate::adapters::rerank::rerank_all(reranker.as_ref(), &jobs, top_n).await;
        // Each job with passages is one call (a question without any makes none).
        let model = reranker.model();
        let call_of: Vec<Option<u32>> = jobs
            .iter()
            .zip(&results)
            .map(|((text, documents), reply)| {
                if documents.is_empty() {
                    return None;
                }
                let digest = crate::adapters::rerank::rerank_digest(&model, text, documents, top_n);
                let record = rerank_record(reply);
                Some(ranking.rerank_calls.insert_full(digest, record).0 as u32)
            })
            .collect();
        ranking.rerank_of = slots.iter().map(|&j| call_of[j]).collect();
        for (q, query) in queries.iter().enumerate() {
            let scored = &results[slots[q]]
                .as_ref()
                .map_err(|e| {
                    anyhow::anyhow!("reranking for question `{}` failed: {e}", query.question)
                })?
                .scored;
            let hits = std::mem::take(&mut ranking.ranked[q]);
            ranking.retrieval_best[q] = hits.first().map(|h| h.score);
            // Replies are checked against the documents sent; a cache file edited by hand is
            // not trusted to be.
            ranking.ranked[q] = scored
                .iter()
                .map(|s| {
                    hits.get(s.index)
                        .map(|h| Hit {
                            chunk: h.chunk,
                            score: s.score,
                        })
                        .ok_or_else(|| {
                            anyhow::anyhow!(
                                "reranking for question `{}` failed: the cached reply names passage {} of {}",
                                query.question,
                                s.index,
                                hits.len()
                            )
                        })
                })
                .collect::<Result<_>>()?;
        }
        Ok(ranking)
    }

    /// Retrieve every query at the largest of `ks` from `source`, each distinct text once; with
    /// `retriever.query_per_k`, at each of the smaller ones too.
    pub(crate) async fn retrieve(
        &self,
        source: &Source<'_>,
        corpora: &[Corpus],
        queries: &[Query<'_>],
        ks: &[usize],
        tables: &mut Option<Vec<PassageTable>>,
    ) -> Result<Ranking> {
        let k = ks.last().copied().unwrap_or_default();
        let mut texts: Vec<String> = Vec::new();
        let mut text_of: HashMap<&str, usize> = HashMap::new();
        let slots: Vec<usize> = queries
            .iter()
            .map(|q| {
                *text_of.entry(q.text).or_insert_with(|| {
                    texts.push(q.text.to_string());
                    texts.len() - 1
                })
            })
            .collect();
        let Some(retriever) = source.retriever else {
            let (ranked, searched) = self
                .search_builtin(source, corpora, queries, &texts, &slots, k)
                .await?;
            return Ok(Ranking {
                corpora: corpora.to_vec(),
                ranked,
                searched,
                retrieval_best: vec![None; queries.len()],
                by_k: Vec::new(),
                rerank_calls: CallLog::new(),
                rerank_of: Vec::new(),
            });
        };
        // One table per corpus slot for every k, so a passage has one index whatever k found it.
        let tables = tables.get_or_insert_with(|| {
            corpora
                .iter()
                .map(|_| PassageTable::new(&retriever.describe()))
                .collect()
        });
        let ranked = search(retriever.as_ref(), tables, queries, &texts, &slots, k).await?;
        let mut by_k: Vec<Vec<(usize, Vec<Hit>)>> = Vec::new();
        if retriever.query_per_k() {
            by_k = queries.iter().map(|_| Vec::new()).collect();
            for &small in ks.iter().filter(|&&small| small < k) {
                let hits =
                    search(retriever.as_ref(), tables, queries, &texts, &slots, small).await?;
                for (q, hits) in hits.into_iter().enumerate() {
                    by_k[q].push((small, hits));
                }
            }
        }
        Ok(Ranking {
            corpora: tables.iter().map(|t| t.corpus.clone()).collect(),
            ranked,
            searched: texts.len(),
            retrieval_best: vec![None; queries.len()],
            by_k,
            rerank_calls: CallLog::new(),
            rerank_of: Vec::new(),
        })
    }
}

/// A foreign retriever's passages in id order, the runs' hits pointing into the new order.
/// Interned, they are in the order questions first retrieved them, which a shard (some of the
/// questions) cannot reproduce: in id order, the passages of a whole sweep are those of its
/// merged shards, in the same order (`rageval merge` joins them the same way).
pub(crate) fn passages_by_id(corpora: &mut [Corpus], questions: &[Question], runs: &mut [Run]) {
    let new_index: Vec<Vec<usize>> = corpora
        .iter_mut()
        .map(|corpus| {
            let mut order: Vec<usize> = (0..corpus.chunks.len()).collect();
            order.sort_by(|&a, &b| corpus.chunks[a].id.cmp(&corpus.chunks[b].id));
            let mut new_index = vec![0; order.len()];
            for (new, &old) in order.iter().enumerate() {
                new_index[old] = new;
            }
            let mut old: Vec<Option<crate::adapters::corpus::Chunk>> =
                std::mem::take(&mut corpus.chunks)
                    .into_iter()
                    .map(Some)
                    .collect();
            corpus.chunks = order
                .iter()
                .map(|&i| old[i].take().expect("a permutation takes each chunk once"))
                .collect();
            new_index
        })
        .collect();
    for run in runs {
        let map = &new_index[questions[run.question].corpus];
        for hit in &mut run.passages {
            hit.chunk = map[hit.chunk];
        }
    }
}

/// The grid's distinct k values, ascending.
pub(crate) fn distinct_ks(grid: &Grid) -> Vec<usize> {
    let mut ks: Vec<usize> = grid.ks().collect();
    ks.sort_unstable();
    ks.dedup();
    ks
}

/// Search every distinct text of `texts` at `k` with a foreign retriever; per query its hits,
/// interned into its corpus slot's table.
pub(crate) async fn search(
    retriever: &dyn Retriever,
    tables: &mut [PassageTable],
    queries: &[Query<'_>],
    texts: &[String],
    slots: &[usize],
    k: usize,
) -> Result<Vec<Vec<Hit>>> {
    let results = retriever.retrieve(texts, k).await;
    let mut ranked = Vec::with_capacity(queries.len());
    for (q, &slot) in queries.iter().zip(slots) {
        let passages = results[slot]
            .as_ref()
            .map_err(|e| anyhow::anyhow!("retrieval for question `{}` failed: {e}", q.question))?;
        let table = &mut tables[q.corpus];
        let hits = passages
            .iter()
            .map(|p| table.intern(p.clone(), q.question))
            .collect::<Result<Vec<Hit>, _>>()
            .map_err(|e| anyhow::anyhow!("retrieval for question `{}` failed: {e}", q.question))?;
        ranked.push(hits);
    }
    Ok(ranked)
}

/// Embed every chunk of `corpus` into a search index.
pub async fn build_index(
    embedder: &dyn Embedder,
    corpus: crate::adapters::corpus::Corpus,
) -> Result<Index> {
    let vectors = embed_chunks(embedder, &corpus).await?;
    Ok(Index::new(corpus, vectors))
}

/// One checked vector per chunk of `corpus`.
pub(crate) async fn embed_chunks(
    embedder: &dyn Embedder,
    corpus: &Corpus,
) -> Result<Vec<Vec<f32>>> {
    let texts: Vec<String> = corpus.chunks.iter().map(|c| c.embed_text()).collect();
    if let Some((i, tokens, limit)) = too_long(embedder, &texts) {
        let c = &corpus.chunks[i];
        bail!(
            "chunk `{}` (`{}`) of corpus `{}` is about {tokens} tokens, more than the embedder reads \
             (`embedder.max_input_tokens`: {limit}); split its longest paragraph or code block, \
             or lower `corpus.max_chunk_tokens`",
            c.id,
            c.label(),
            corpus.describe()
        );
    }
    let vectors = embedder
        .embed(&texts)
        .await
        .with_context(|| format!("cannot embed corpus `{}`", corpus.root.display()))?;
    if vectors.len() != texts.len() {
        bail!(
            "cannot embed corpus `{}`: the embedder returned {} vectors for {} chunks",
            corpus.root.display(),
            vectors.len(),
            texts.len()
        );
    }
    check_dimensions(&vectors, |i| format!("chunk `{}`", corpus.chunks[i].id))
        .map_err(|why| anyhow::anyhow!("cannot embed corpus `{}`: {why}", corpus.root.display()))?;
    Ok(vectors)
}

/// The first text estimated longer than the embedder reads: (its index, its estimate, the limit).
/// Servers answer such an input with an error (llama-server: HTTP 500), not a truncation, so it
/// is named before any request instead of being retried as a server fault.
pub(crate) fn too_long(embedder: &dyn Embedder, texts: &[String]) -> Option<(usize, usize, usize)> {
    let limit = embedder.max_input_tokens()?;
    texts
        .iter()
        .map(|t| crate::adapters::corpus::estimate_tokens(t))
        .enumerate()
        .find(|&(_, tokens)| tokens > limit)
        .map(|(i, tokens)| (i, tokens, limit))
}
