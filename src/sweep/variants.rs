//! Retrieval variants: every (embedder profile, chunk size) of the grid retrieves on its own,
//! since thresholds do not carry across embedding models and chunk sizes.
//!
//! The corpora stay one per corpus slot: the chunks of every chunk size are joined into one
//! corpus (see [`chunk_union`]), and a variant names its chunks by index. Runs, reports and the
//! record therefore point into the same corpora as ever; a chunk that two sizes cut alike is one
//! chunk, and a part whose id another size gives to different text gets `@SIZE` after its id.

use std::collections::HashMap;
use std::sync::Arc;

use anyhow::{bail, Context, Result};

use super::{check_dimensions, fit_chunks, too_long, CallLog, Engine, Query, Ranking, View};
use crate::adapters::corpus::{Chunk, Corpus};
use crate::adapters::embed::Embedder;
use crate::adapters::evalset::Question;
use crate::adapters::retriever::Retriever;
use crate::adapters::search::{Hit, Index};
use crate::vocab::grid;

/// What the builtin search gave: per query its hits, the distinct texts embedded, the corpora
/// the hits point into when a chunk was split (`None`: the corpora as given), and a note per
/// chunk split.
pub(crate) struct Builtin {
    pub ranked: Vec<Vec<Hit>>,
    pub searched: usize,
    pub corpora: Option<Vec<Corpus>>,
    pub notes: Vec<String>,
}

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

/// What one retrieval searches with: an embedder, its foreign retriever (`None`: the builtin
/// index), and per variant its chunks (`None`: every chunk).
pub(crate) struct Source<'a> {
    pub embedder: &'a dyn Embedder,
    pub retriever: Option<&'a Arc<dyn Retriever>>,
    pub members: Vec<Option<&'a [Vec<usize>]>>,
    /// The builtin index's chunk vectors, per corpus, when they were embedded beforehand (with
    /// the other embedder profiles', over the chunks all of them take); taken by the search.
    /// `None`: the search embeds the chunks itself.
    pub vectors: std::sync::Mutex<Option<Vec<Vec<Vec<f32>>>>>,
}

/// What ranking every view gave besides the views' hits.
pub(crate) struct Ranked {
    /// The corpora runs point into (a foreign retriever's passages, else the workspace's).
    pub corpora: Vec<Corpus>,
    /// Distinct question texts embedded or searched.
    pub question_embeddings: usize,
    /// With a reranker, every distinct rerank call, by digest; empty without one.
    pub reranks: CallLog,
    /// Per view, its rerank call, an index into `reranks`.
    pub view_rerank: Vec<Option<u32>>,
    /// One line per chunk a server refused as too long and that was split further.
    pub notes: Vec<String>,
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

impl Engine {
    /// The retrieval variants: [`Engine::retrieval`], or the one of `embedder` and `retriever`.
    pub(crate) fn retrieval_variants(&self) -> Vec<RetrievalVariant> {
        if !self.retrieval.is_empty() {
            return self.retrieval.clone();
        }
        vec![RetrievalVariant {
            embedder_profile: grid::DEFAULT_PROFILE.to_string(),
            chunk_tokens: None,
            embedder: self.embedder.clone(),
            retriever: self.retriever.clone(),
            members: None,
        }]
    }

    /// Rank every view under its retrieval variant: one retrieval per embedder profile, whose
    /// question texts are embedded once for all its chunk sizes.
    pub(crate) async fn rank_views(
        &self,
        variants: &[RetrievalVariant],
        questions: &[Question],
        corpora: &[Corpus],
        views: &mut [View],
        ks: &[usize],
    ) -> Result<Ranked> {
        let mut profiles: Vec<&str> = Vec::new();
        for v in variants {
            if !profiles.contains(&v.embedder_profile.as_str()) {
                profiles.push(&v.embedder_profile);
            }
        }
        let lead_of = |profile: &str| variants.iter().position(|v| v.embedder_profile == profile);
        // The chunks of every profile that searches the builtin index are embedded first, all
        // together: a chunk one server refuses as too long is split for every profile, so that
        // all of them search the same chunks.
        let builtin: Vec<&str> = profiles
            .iter()
            .copied()
            .filter(|&p| lead_of(p).is_some_and(|v| variants[v].retriever.is_none()))
            .collect();
        let embedders: Vec<&dyn Embedder> = builtin
            .iter()
            .filter_map(|&p| lead_of(p).map(|v| variants[v].embedder.as_ref()))
            .collect();
        let mut fitting = if embedders.is_empty() {
            Fitting::default()
        } else {
            Fitting::of(&embedders, corpora).await?
        };
        // The variants' chunks, as indices into the split corpora.
        let remapped: Option<Vec<Option<Vec<Vec<usize>>>>> = fitting.corpora.as_ref().map(|_| {
            variants
                .iter()
                .map(|v| v.members.as_ref().map(|m| fitting.remap(m)))
                .collect()
        });
        let mut out = Ranked {
            corpora: Vec::new(),
            question_embeddings: 0,
            reranks: CallLog::new(),
            view_rerank: vec![None; views.len()],
            notes: std::mem::take(&mut fitting.notes),
        };
        let corpora: &[Corpus] = fitting.corpora.as_deref().unwrap_or(corpora);
        let mut tables = None;
        let mut ranked_corpora = None;
        for profile in profiles {
            let group: Vec<usize> = (0..variants.len())
                .filter(|&v| variants[v].embedder_profile == profile)
                .collect();
            let (mine, queries) = profile_queries(&group, questions, views);
            let members: Vec<Option<&[Vec<usize>]>> = group
                .iter()
                .map(|&g| match &remapped {
                    Some(r) => r[g].as_deref(),
                    None => variants[g].members.as_deref(),
                })
                .collect();
            let lead = &variants[group[0]];
            let vectors = builtin
                .iter()
                .position(|&p| p == profile)
                .map(|p| std::mem::take(&mut fitting.vectors[p]));
            let source = Source {
                embedder: lead.embedder.as_ref(),
                retriever: lead.retriever.as_ref(),
                members,
                vectors: std::sync::Mutex::new(vectors),
            };
            let ranking = self
                .rank_with(&source, corpora, &queries, ks, &mut tables)
                .await?;
            drop(queries);
            // A foreign retriever's tables grow with each source: the last holds them all.
            ranked_corpora = Some(out.take_ranking(ranking, &mine, views));
        }
        out.corpora = ranked_corpora.unwrap_or_else(|| corpora.to_vec());
        Ok(out)
    }

    /// The builtin search of `source` for every variant of its `members` (a query's `variant`
    /// indexes them; `None`: every chunk of the corpus): the chunks (unless `source` holds their
    /// vectors) and the distinct question `texts` (`slots[q]` is query q's) are embedded once
    /// for all variants. Per query its hits at `k`, the texts embedded, and, when a chunk the
    /// embedder refused as too long was split, the corpora the hits point into and a note per
    /// chunk split.
    pub(crate) async fn search_builtin(
        &self,
        source: &Source<'_>,
        corpora: &[Corpus],
        queries: &[Query<'_>],
        texts: &[String],
        slots: &[usize],
        k: usize,
    ) -> Result<Builtin> {
        let embedder = source.embedder;
        let given = source.vectors.lock().map(|mut v| v.take()).unwrap_or(None);
        // Every chunk of the joined corpora once; each variant indexes its own.
        let (mut vectors, fitting) = match given {
            Some(vectors) => (vectors, Fitting::default()),
            None => {
                let mut fitting = Fitting::of(&[embedder], corpora).await?;
                let vectors = fitting.vectors.pop().expect("one embedder");
                (vectors, fitting)
            }
        };
        let remapped: Option<Vec<Option<Vec<Vec<usize>>>>> = fitting.corpora.as_ref().map(|_| {
            source
                .members
                .iter()
                .map(|m| m.map(|m| fitting.remap(m)))
                .collect()
        });
        let members: Vec<Option<&[Vec<usize>]>> = match &remapped {
            Some(r) => r.iter().map(|m| m.as_deref()).collect(),
            None => source.members.clone(),
        };
        let corpora: &[Corpus] = fitting.corpora.as_deref().unwrap_or(corpora);
        let search = QuerySearch {
            queries,
            slots,
            vectors: embed_questions(embedder, queries, texts, slots).await?,
            k,
        };
        let mut ranked: Vec<Vec<Hit>> = queries.iter().map(|_| Vec::new()).collect();
        for (v, member) in members.iter().enumerate() {
            for (c, corpus) in corpora.iter().enumerate() {
                let mine: Vec<usize> = (0..queries.len())
                    .filter(|&q| queries[q].corpus == c && queries[q].variant == v)
                    .collect();
                if mine.is_empty() {
                    continue;
                }
                let index = match member {
                    // One variant of all chunks: the vectors are its alone.
                    None => Index::new(corpus.clone(), std::mem::take(&mut vectors[c])),
                    Some(m) => Index::new(
                        Corpus {
                            chunks: m[c].iter().map(|&i| corpus.chunks[i].clone()).collect(),
                            ..corpus.clone()
                        },
                        m[c].iter().map(|&i| vectors[c][i].clone()).collect(),
                    ),
                };
                let member = member.map(|m| m[c].as_slice());
                search.search(&index, &mine, member, &mut ranked)?;
            }
        }
        Ok(Builtin {
            ranked,
            searched: texts.len(),
            corpora: fitting.corpora,
            notes: fitting.notes,
        })
    }
}

impl Ranked {
    /// Add one profile's ranking: its views' hits and rerank calls (`mine`: the views it
    /// ranked, in its queries' order), its notes and count; the corpora its hits point into.
    fn take_ranking(
        &mut self,
        ranking: Ranking,
        mine: &[usize],
        views: &mut [View],
    ) -> Vec<Corpus> {
        self.question_embeddings += ranking.searched;
        self.notes.extend(ranking.notes);
        let calls = super::log_reranks(&mut self.reranks, ranking.rerank_calls, &ranking.rerank_of);
        for (&i, call) in mine.iter().zip(calls) {
            self.view_rerank[i] = call;
        }
        let by_k = ranking
            .by_k
            .into_iter()
            .map(Some)
            .chain(std::iter::repeat_with(|| None));
        for (((&i, hits), best), by_k) in mine
            .iter()
            .zip(ranking.ranked)
            .zip(ranking.retrieval_best)
            .zip(by_k)
        {
            views[i].ranked = hits;
            views[i].best_retrieval_score = best;
            views[i].by_k = by_k.unwrap_or_default();
        }
        ranking.corpora
    }
}

/// The views of the variants in `group` (one embedder profile), and a query for each.
fn profile_queries<'a>(
    group: &[usize],
    questions: &'a [Question],
    views: &'a [View],
) -> (Vec<usize>, Vec<Query<'a>>) {
    let mine: Vec<usize> = (0..views.len())
        .filter(|&i| group.contains(&views[i].variant))
        .collect();
    let queries = mine
        .iter()
        .map(|&i| Query {
            corpus: questions[views[i].question].corpus,
            variant: group
                .iter()
                .position(|&g| g == views[i].variant)
                .unwrap_or(0),
            text: &views[i].text,
            question: &questions[views[i].question].id,
        })
        .collect();
    (mine, queries)
}

/// The corpora with every chunk embedded by each embedder of a search, a chunk one of them
/// refuses as too long split for all.
#[derive(Default)]
struct Fitting {
    /// Per embedder, per corpus, the chunk vectors.
    vectors: Vec<Vec<Vec<Vec<f32>>>>,
    /// One line per chunk split.
    notes: Vec<String>,
    /// The corpora with their chunks split, when any was; `None`: the corpora as given.
    corpora: Option<Vec<Corpus>>,
    /// Per corpus, how its chunks were fitted.
    fits: Vec<super::Fitted>,
}

impl Fitting {
    async fn of(embedders: &[&dyn Embedder], corpora: &[Corpus]) -> Result<Fitting> {
        let mut out = Fitting {
            vectors: embedders.iter().map(|_| Vec::new()).collect(),
            ..Fitting::default()
        };
        for (c, corpus) in corpora.iter().enumerate() {
            let mut fit = fit_chunks(embedders, corpus).await?;
            for (p, v) in std::mem::take(&mut fit.vectors).into_iter().enumerate() {
                out.vectors[p].push(v);
            }
            out.notes.append(&mut fit.notes);
            if let Some(split) = fit.corpus.take() {
                out.corpora.get_or_insert_with(|| corpora.to_vec())[c] = split;
            }
            out.fits.push(fit);
        }
        Ok(out)
    }

    /// A variant's chunks (per corpus, indices into the corpus as given) as indices into the
    /// fitted chunks.
    fn remap(&self, members: &[Vec<usize>]) -> Vec<Vec<usize>> {
        members
            .iter()
            .enumerate()
            .map(|(c, list)| self.fits[c].remap(list))
            .collect()
    }
}

/// The distinct question texts, embedded once in one request; a text too long for the
/// embedder, or a vector of the wrong size, names the query that first asks it.
async fn embed_questions(
    embedder: &dyn Embedder,
    queries: &[Query<'_>],
    texts: &[String],
    slots: &[usize],
) -> Result<Vec<Vec<f32>>> {
    let asker = |slot: usize| {
        let q = slots.iter().position(|&s| s == slot).unwrap_or_default();
        queries[q].question
    };
    if let Some((i, tokens, limit)) = too_long(embedder, texts) {
        bail!(
            "question `{}` is about {tokens} tokens as asked, more than the embedder reads \
             (`embedder.max_input_tokens`: {limit})",
            asker(i)
        );
    }
    let qvectors = embedder
        .embed(texts)
        .await
        .context("cannot embed the questions")?;
    check_dimensions(&qvectors, |i| format!("question `{}`", asker(i)))
        .map_err(|why| anyhow::anyhow!("cannot embed the questions: {why}"))?;
    Ok(qvectors)
}

/// The queries of a builtin search with their texts' vectors (`slots[q]` is query q's).
struct QuerySearch<'a> {
    queries: &'a [Query<'a>],
    slots: &'a [usize],
    vectors: Vec<Vec<f32>>,
    k: usize,
}

impl QuerySearch<'_> {
    /// Search `index` for the queries `mine`, all in one matrix product, into `ranked`; with
    /// `member` (the index's chunks as indices into the corpus) hits name the corpus's chunks.
    fn search(
        &self,
        index: &Index,
        mine: &[usize],
        member: Option<&[usize]>,
        ranked: &mut [Vec<Hit>],
    ) -> Result<()> {
        let vector = |q: usize| &self.vectors[self.slots[q]];
        if let Some(&q) = mine
            .iter()
            .find(|&&q| vector(q).len() != index.dimensions())
        {
            bail!(
                "the embedder returned {} dimensions for question `{}` but {} for the chunks of corpus `{}`",
                vector(q).len(),
                self.queries[q].question,
                index.dimensions(),
                index.corpus.describe()
            );
        }
        let vs: Vec<&[f32]> = mine.iter().map(|&q| vector(q).as_slice()).collect();
        for (&q, mut hits) in mine.iter().zip(index.search_many(&vs, self.k)) {
            if let Some(m) = member {
                for h in &mut hits {
                    h.chunk = m[h.chunk];
                }
            }
            ranked[q] = hits;
        }
        Ok(())
    }
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
        // Paragraphs of 35 tokens: each a part of its own at 40, two to a part at 100.
        let para = |w: &str| format!("{w} ").repeat(35);
        let long = format!("{}\n\n{}\n\n{}", para("one"), para("two"), para("six"));
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
