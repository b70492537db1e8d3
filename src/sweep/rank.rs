//! Retrieval for the sweep: embed the corpora into indexes, embed and search each distinct
//! question text once per retrieval variant (or ask a foreign retriever), and rerank.

use super::*;
use crate::adapters::corpus::{estimate_tokens, Chunk};
use crate::adapters::embed::TooLong;
use std::borrow::Cow;

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
    /// One line per chunk a server refused as too long and that was split further.
    pub notes: Vec<String>,
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
            vectors: std::sync::Mutex::new(None),
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
            let found = self
                .search_builtin(source, corpora, queries, &texts, &slots, k)
                .await?;
            return Ok(Ranking {
                corpora: found.corpora.unwrap_or_else(|| corpora.to_vec()),
                ranked: found.ranked,
                searched: found.searched,
                retrieval_best: vec![None; queries.len()],
                by_k: Vec::new(),
                rerank_calls: CallLog::new(),
                rerank_of: Vec::new(),
                notes: found.notes,
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
            notes: Vec::new(),
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

/// Embed every chunk of `corpus` into a search index (a chunk the embedder refuses as too long
/// split further: see [`fit_chunks`]).
pub async fn build_index(
    embedder: &dyn Embedder,
    corpus: crate::adapters::corpus::Corpus,
) -> Result<Index> {
    let mut fitted = fit_chunks(&[embedder], &corpus).await?;
    let vectors = fitted.vectors.pop().expect("one embedder");
    Ok(Index::new(fitted.corpus.unwrap_or(corpus), vectors))
}

/// A corpus's chunks as every embedder of a retrieval took them.
pub(crate) struct Fitted {
    /// The chunks, when a server refused one and it was split; `None`: the corpus as given.
    pub corpus: Option<Corpus>,
    /// Per embedder, one vector per chunk.
    pub vectors: Vec<Vec<Vec<f32>>>,
    /// Per chunk of the corpus as given, its chunks now (itself, or the parts it was split
    /// into); empty when nothing was split.
    pub parts: Vec<Vec<usize>>,
    /// One line per chunk split, for the command to print.
    pub notes: Vec<String>,
}

impl Fitted {
    /// `members` (indices into the corpus as given) as indices into the fitted chunks.
    pub fn remap(&self, members: &[usize]) -> Vec<usize> {
        if self.parts.is_empty() {
            return members.to_vec();
        }
        members
            .iter()
            .flat_map(|&i| self.parts[i].iter().copied())
            .collect()
    }
}

/// One checked vector per chunk of `corpus` from each of `embedders`. A chunk a server refuses
/// as too long (its estimate fit, the server's tokenizer counted more) is split further, to half
/// its estimate, and its parts embedded by every embedder alike, so that all of them search the
/// same chunks; the parts of a part are split again. The split depends only on the chunk, so a
/// rerun cuts the same parts and finds them in the response cache.
pub(crate) async fn fit_chunks(embedders: &[&dyn Embedder], corpus: &Corpus) -> Result<Fitted> {
    let mut fit = Fitting {
        corpus,
        chunks: Cow::Borrowed(corpus.chunks.as_slice()),
        origin: Vec::new(),
        vectors: embedders
            .iter()
            .map(|_| vec![None; corpus.chunks.len()])
            .collect(),
        notes: Vec::new(),
    };
    loop {
        let refused = fit.embed(embedders).await?;
        if refused.iter().all(Option::is_none) {
            break;
        }
        fit.split(&refused)?;
    }
    fit.finish()
}

/// A corpus's chunks while [`fit_chunks`] embeds and splits them.
struct Fitting<'a> {
    corpus: &'a Corpus,
    /// The chunks now: the corpus's until one is split.
    chunks: Cow<'a, [Chunk]>,
    /// Per chunk, the chunk of the corpus as given it comes from; empty until one is split.
    origin: Vec<usize>,
    /// Per embedder, per chunk, its vector once embedded.
    vectors: Vec<Vec<Option<Vec<f32>>>>,
    /// One line per chunk split.
    notes: Vec<String>,
}

impl Fitting<'_> {
    fn cannot(&self) -> String {
        format!("cannot embed corpus `{}`", self.corpus.root.display())
    }

    /// Embed each chunk not yet embedded by each embedder; per chunk, the first refusal of it
    /// as too long (a refused chunk is not sent to the embedders after).
    async fn embed(&mut self, embedders: &[&dyn Embedder]) -> Result<Vec<Option<String>>> {
        let chunks = &self.chunks;
        let mut refused: Vec<Option<String>> = vec![None; chunks.len()];
        for (e, embedder) in embedders.iter().enumerate() {
            let pending: Vec<usize> = (0..chunks.len())
                .filter(|&i| self.vectors[e][i].is_none() && refused[i].is_none())
                .collect();
            if pending.is_empty() {
                continue;
            }
            let texts: Vec<String> = pending.iter().map(|&i| chunks[i].embed_text()).collect();
            if let Some((k, tokens, limit)) = too_long(*embedder, &texts) {
                let c = &chunks[pending[k]];
                bail!(
                    "chunk `{}` (`{}`) of corpus `{}` is about {tokens} tokens, more than the embedder reads \
                     (`embedder.max_input_tokens`: {limit}); split its longest paragraph or code block, \
                     or lower `corpus.max_chunk_tokens`",
                    c.id,
                    c.label(),
                    self.corpus.describe()
                );
            }
            let answers = embedder
                .embed_each(&texts)
                .await
                .with_context(|| self.cannot())?;
            if answers.len() != texts.len() {
                bail!(
                    "{}: the embedder returned {} vectors for {} chunks",
                    self.cannot(),
                    answers.len(),
                    texts.len()
                );
            }
            for (&i, answer) in pending.iter().zip(answers) {
                match answer {
                    Ok(v) => self.vectors[e][i] = Some(v),
                    Err(TooLong(why)) => refused[i] = Some(why),
                }
            }
        }
        Ok(refused)
    }

    /// Split each refused chunk to half its estimate; the others keep their vectors.
    fn split(&mut self, refused: &[Option<String>]) -> Result<()> {
        if self.origin.is_empty() {
            self.origin = (0..self.chunks.len()).collect();
        }
        let mut next: Vec<Chunk> = Vec::with_capacity(self.chunks.len() + 1);
        let mut next_origin = Vec::with_capacity(self.origin.len() + 1);
        let mut next_vectors: Vec<Vec<Option<Vec<f32>>>> =
            self.vectors.iter().map(|_| Vec::new()).collect();
        for (i, chunk) in self.chunks.iter().enumerate() {
            let Some(why) = &refused[i] else {
                next.push(chunk.clone());
                next_origin.push(self.origin[i]);
                for (e, v) in next_vectors.iter_mut().enumerate() {
                    v.push(self.vectors[e][i].take());
                }
                continue;
            };
            let half = estimate_tokens(&chunk.embed_text()) / 2;
            let parts = crate::adapters::corpus::split_section(chunk.clone(), half);
            if parts.len() < 2 {
                bail!(
                    "{}: chunk `{}` (`{}`) was refused as too long and is too short to split further: {why}",
                    self.cannot(),
                    chunk.id,
                    chunk.label()
                );
            }
            self.notes.push(format!(
                "chunk `{}` (`{}`) is longer than the embedder reads, by its count ({why}): split into {} parts, `{}` to `{}`",
                chunk.id,
                chunk.label(),
                parts.len(),
                parts[0].id,
                parts[parts.len() - 1].id
            ));
            for part in parts {
                next.push(part);
                next_origin.push(self.origin[i]);
                for v in &mut next_vectors {
                    v.push(None);
                }
            }
        }
        self.chunks = Cow::Owned(next);
        self.origin = next_origin;
        self.vectors = next_vectors;
        Ok(())
    }

    /// The checked vectors, the chunks (when any was split) and where each came from.
    fn finish(self) -> Result<Fitted> {
        let cannot = self.cannot();
        let vectors: Vec<Vec<Vec<f32>>> = self
            .vectors
            .into_iter()
            .map(|v| v.into_iter().map(Option::unwrap_or_default).collect())
            .collect();
        for v in &vectors {
            check_dimensions(v, |i| format!("chunk `{}`", self.chunks[i].id))
                .map_err(|why| anyhow::anyhow!("{cannot}: {why}"))?;
        }
        let mut parts = Vec::new();
        if !self.origin.is_empty() {
            parts = vec![Vec::new(); self.corpus.chunks.len()];
            for (now, &was) in self.origin.iter().enumerate() {
                parts[was].push(now);
            }
        }
        let corpus = match self.chunks {
            Cow::Borrowed(_) => None,
            Cow::Owned(chunks) => Some(Corpus {
                chunks,
                ..self.corpus.clone()
            }),
        };
        Ok(Fitted {
            corpus,
            vectors,
            parts,
            notes: self.notes,
        })
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapters::embed::{EmbedError, Embedded, HashEmbedder};
    use crate::base::BoxFuture;

    /// An embedder whose server refuses any input over `chars` characters as too long, and
    /// records the texts it was asked for.
    struct Short {
        chars: usize,
        asked: std::sync::Mutex<Vec<String>>,
    }

    impl Embedder for Short {
        fn model(&self) -> String {
            "short".into()
        }

        fn embed_each<'a>(
            &'a self,
            texts: &'a [String],
        ) -> BoxFuture<'a, Result<Vec<Embedded>, EmbedError>> {
            Box::pin(async move {
                self.asked.lock().unwrap().extend(texts.iter().cloned());
                Ok(texts
                    .iter()
                    .map(|t| match t.len() > self.chars {
                        true => Err(TooLong(format!("input ({} chars) is too long", t.len()))),
                        false => Ok(HashEmbedder::new(8).vector(t)),
                    })
                    .collect())
            })
        }
    }

    fn corpus() -> Corpus {
        let long: Vec<String> = (0..12)
            .map(|n| format!("Sentence {n} of the long part."))
            .collect();
        Corpus {
            root: "docs".into(),
            roots: vec!["docs".into()],
            chunks: crate::adapters::corpus::chunk_markdown(
                "a.md",
                &format!(
                    "# Short\nA few words.\n# Long\n{}\n# Last\nEnd.\n",
                    long.join(" ")
                ),
            ),
        }
    }

    #[test]
    fn a_chunk_one_embedder_refuses_is_split_for_every_embedder_until_each_part_fits() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let short = Short {
            chars: 120,
            asked: Default::default(),
        };
        let hash = HashEmbedder::new(16);
        let corpus = corpus();
        let mut fit = rt.block_on(fit_chunks(&[&hash, &short], &corpus)).unwrap();
        let split = fit.corpus.take().expect("the long chunk was split");
        let ids: Vec<&str> = split.chunks.iter().map(|c| c.id.as_str()).collect();
        // Split to half its estimate, then the halves that were still refused again.
        assert!(ids.len() > 4, "{ids:?}");
        assert_eq!(ids[0], "a.md#0");
        assert_eq!(ids[ids.len() - 1], "a.md#2");
        assert!(ids[1..ids.len() - 1]
            .iter()
            .all(|id| id.starts_with("a.md#1.")));
        assert!(split.chunks.iter().all(|c| c.embed_text().len() <= 120));
        assert!(split.chunks[1..ids.len() - 1]
            .iter()
            .all(|c| c.matches("a.md#Long") && c.matches("a.md#1")));
        // Both embedders have a vector for every chunk, of their own dimensions.
        assert_eq!(fit.vectors.len(), 2);
        assert!(fit.vectors[0].iter().all(|v| v.len() == 16));
        assert!(fit.vectors[1].iter().all(|v| v.len() == 8));
        assert!(fit.vectors.iter().all(|v| v.len() == ids.len()));
        // Members of the corpus as given map to the parts, in order.
        let n = ids.len();
        assert_eq!(fit.remap(&[0, 2]), [0, n - 1]);
        assert_eq!(fit.remap(&[1]), (1..n - 1).collect::<Vec<_>>());
        assert!(!fit.notes.is_empty());
        assert!(fit.notes[0].starts_with("chunk `a.md#1` (`a.md#Long`) is longer than the embedder reads, by its count (input ("), "{}", fit.notes[0]);

        // The same corpus splits the same way, and the short chunks were asked once.
        let again = rt.block_on(fit_chunks(&[&hash, &short], &corpus)).unwrap();
        assert_eq!(again.corpus.unwrap().chunks, split.chunks);
        let asked = short.asked.lock().unwrap();
        assert_eq!(asked.iter().filter(|t| t.starts_with("Short\n")).count(), 2);

        // Nothing refused: the corpus as given, no parts.
        let fit = rt.block_on(fit_chunks(&[&hash], &corpus)).unwrap();
        assert!(fit.corpus.is_none() && fit.parts.is_empty() && fit.notes.is_empty());
        assert_eq!(fit.remap(&[2, 0]), [2, 0]);
    }
}
