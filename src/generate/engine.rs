//! `rageval generate`'s engine: sample passages spread over files and headings, ask the model
//! for candidates, check them, verify unanswerable ones against the retriever's passages, and
//! keep the ones that are not duplicates (docs/generate.md).
//!
//! Candidates are tried in rounds: each round asks for as many of each kind as are still
//! missing (within the budget), makes those calls concurrently, then decides every candidate
//! in a fixed order. What is kept depends on the seed and the replies only, never on timing,
//! so a rerun over the response cache writes the same file and makes no call.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use anyhow::{bail, Result};
use futures_util::stream::{self, StreamExt};

use super::{
    answer_in_passage, answer_too_long, copies_passage, echoes_prompt, is_placeholder,
    normal_question, parse_candidate, parse_premise_verdict, parse_verdict, placeholders, Kind,
    PremiseVerdict, Prompts, Reject, REJECTED_REPLY_CHARS,
};
use crate::adapters::chat::{CallError, ChatModel, ChatReply, ChatRequest};
use crate::adapters::corpus::Corpus;
use crate::adapters::embed::{cosine, normalize};
use crate::base::text::{content_words, excerpt};
use crate::sweep::{Engine, Query, Ranking};

/// A passage needs this many content words to be asked about.
pub const MIN_PASSAGE_WORDS: usize = 5;

/// What to generate.
pub struct Job<'a> {
    /// The corpus, chunked as the sweep chunks it.
    pub corpus: &'a Corpus,
    /// The questions already written (the existing sets', and `--append`'s file): a candidate
    /// too close to one is a duplicate.
    pub existing: &'a [String],
    /// How many of each kind, in the order of [`Kind::ALL`].
    pub wanted: [usize; 4],
    /// Candidates tried at most per kind.
    pub budget: [usize; 4],
    pub seed: u64,
    pub prompts: &'a Prompts,
    pub verify_k: usize,
    pub max_similarity: f64,
}

/// A kept question.
#[derive(Debug, Clone, PartialEq)]
pub struct Kept {
    pub kind: Kind,
    pub question: String,
    /// The answer span (answerable questions).
    pub answer: Option<String>,
    /// The premise taken for granted and the passage's truth (false-premise questions).
    pub premise: Option<(String, String)>,
    /// The chunk asked about: an index into the job's corpus.
    pub chunk: usize,
}

/// One kind's account: asked for, tried, kept, and why the others were rejected.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tally {
    pub wanted: usize,
    pub tried: usize,
    pub kept: usize,
    pub rejected: BTreeMap<Reject, usize>,
}

/// A candidate that was not kept, and why (`generate --rejected`).
#[derive(Debug, Clone, PartialEq)]
pub struct Rejected {
    pub kind: Kind,
    pub reason: Reject,
    /// The chunk asked about: an index into the job's corpus.
    pub chunk: usize,
    /// The question and answer read from the reply, when it parsed.
    pub question: Option<String>,
    pub answer: Option<String>,
    /// The reply that did not parse, or the failed call's message, cut to
    /// [`REJECTED_REPLY_CHARS`].
    pub reply: Option<String>,
}

/// Calls made, by purpose, and how many of them the response cache answered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Calls {
    pub generation: usize,
    pub verification: usize,
    pub cached: usize,
}

/// What a run of the generator produced.
#[derive(Debug, Clone, Default)]
pub struct Generated {
    /// Kept questions, kind by kind in the order of [`Kind::ALL`], each kind in the order its
    /// candidates were tried.
    pub kept: Vec<Kept>,
    /// Per kind, in the order of [`Kind::ALL`].
    pub tallies: [Tally; 4],
    /// Every candidate not kept, in the order decided.
    pub rejected: Vec<Rejected>,
    pub calls: Calls,
    /// The first failed call's message, for the summary.
    pub first_error: Option<String>,
    /// A call was kept for a batch (its error is [`crate::vocab::call::CallError::deferred`]):
    /// the rounds stopped after the one that asked it, since what follows depends on its reply.
    pub deferred: bool,
    /// Per kind, in the order of [`Kind::ALL`]: the pass over the passages (counted from 0)
    /// that repeated the one before it reply for reply, after which the kind asked no more (a
    /// server ignoring `seed`, as llama-server does at temperature 0, answers every pass alike).
    pub repeated: [Option<usize>; 4],
}

/// How many replies of a later pass, all equal to the pass before's for the same passages,
/// stop a kind (fewer when the kind has fewer passages).
pub const REPEATS_TO_STOP: usize = 3;

/// A line of progress: after each round, what was tried and kept so far.
pub type Progress<'a> = &'a (dyn Fn(&Generated, usize) + Sync);

/// The passages of `corpus` in the order kind `kind` asks about them: the files in a seeded
/// order, each file's passages shuffled, taken one file after another (round robin), so that
/// the first candidates spread over files and headings. Passages with fewer than
/// [`MIN_PASSAGE_WORDS`] content words are left out.
pub fn sampling_order(corpus: &Corpus, seed: u64, kind: Kind) -> Vec<usize> {
    let salt = 0x9e37_79b9_7f4a_7c15_u64.wrapping_mul(kind as u64 + 1);
    let mut rng = fastrand::Rng::with_seed(seed ^ salt);
    let mut by_file: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, c) in corpus.chunks.iter().enumerate() {
        if content_words(&c.text).count() >= MIN_PASSAGE_WORDS {
            by_file.entry(c.source.as_str()).or_default().push(i);
        }
    }
    let mut files: Vec<Vec<usize>> = by_file.into_values().collect();
    for f in &mut files {
        rng.shuffle(f);
    }
    rng.shuffle(&mut files);
    let longest = files.iter().map(Vec::len).max().unwrap_or(0);
    (0..longest)
        .flat_map(|i| files.iter().filter_map(move |f| f.get(i).copied()))
        .collect()
}

/// The `n`-th candidate of a kind: its chunk and the seed of its request (a second pass over
/// the passages asks again with seed 1, and so on).
fn candidate(order: &[usize], n: usize) -> (usize, Option<u32>) {
    let pass = n / order.len();
    (
        order[n % order.len()],
        (pass > 0).then(|| u32::try_from(pass).unwrap_or(u32::MAX)),
    )
}

/// The most generation calls of one round: a round's replies are held together until its
/// candidates are decided, so at most this many replies of at most
/// [`crate::adapters::chat::MAX_FORMATTED_REPLY_BYTES`] each (64 MiB). A round tries candidates
/// in their order and asks no more than are missing, so what is kept does not depend on it.
pub const MAX_ROUND_CALLS: usize = 1024;

/// The generation calls of the first round, for `--dry-run`: every call the run will make if
/// every candidate passes (verification calls come on top, one per unanswerable candidate).
pub fn first_round(job: &Job<'_>) -> Vec<ChatRequest> {
    let mut out = Vec::new();
    for (k, kind) in Kind::ALL.into_iter().enumerate() {
        let order = sampling_order(job.corpus, job.seed, kind);
        if order.is_empty() {
            continue;
        }
        let room = MAX_ROUND_CALLS - out.len();
        for n in 0..job.wanted[k].min(job.budget[k]).min(room) {
            let (chunk, seed) = candidate(&order, n);
            out.push(job.prompts.request(kind, &job.corpus.chunks[chunk], seed));
        }
    }
    out
}

/// One candidate on its way through the checks.
struct Trial {
    kind: Kind,
    chunk: usize,
    verdict: Result<Pending, Reject>,
    shown: Shown,
}

/// What a rejected candidate shows of itself: its question and answer, or its reply.
#[derive(Default)]
struct Shown {
    question: Option<String>,
    answer: Option<String>,
    reply: Option<String>,
}

struct Pending {
    question: String,
    answer: Option<String>,
    premise: Option<(String, String)>,
    vector: Vec<f32>,
    /// For an unanswerable candidate, the verifier's answer once asked.
    verified: Option<Result<bool, Reject>>,
}

/// Run the generator.
pub async fn generate(
    engine: &Engine,
    model: &Arc<dyn ChatModel>,
    job: &Job<'_>,
    progress: Option<Progress<'_>>,
) -> Result<Generated> {
    let orders: Vec<Vec<usize>> = Kind::ALL
        .iter()
        .map(|&k| sampling_order(job.corpus, job.seed, k))
        .collect();
    if orders.iter().all(Vec::is_empty) {
        bail!(
            "corpus `{}` has no passage of at least {MIN_PASSAGE_WORDS} content words to ask about",
            job.corpus.describe()
        );
    }
    let mut g = Generator::new(engine, model, job, orders).await?;
    let mut round = 0;
    loop {
        let asked = g.next_round();
        if asked.is_empty() {
            break;
        }
        round += 1;
        let Some(mut trials) = g.ask(asked).await? else {
            return Ok(g.out);
        };
        g.embed_passed(&mut trials).await?;
        g.verify_unanswerable(&mut trials).await?;
        if g.out.deferred {
            return Ok(g.out);
        }
        g.decide(trials);
        if let Some(p) = progress {
            p(&g.out, round);
        }
    }
    // A kind that stopped on repeats but had nothing left to ask is not said to have stopped.
    for (k, repeated) in g.out.repeated.iter_mut().enumerate() {
        let t = &g.out.tallies[k];
        if t.kept >= t.wanted || t.tried >= job.budget[k] {
            *repeated = None;
        }
    }
    g.out.kept.sort_by_key(|k| k.kind);
    Ok(g.out)
}

/// The generator's state between rounds: what it has decided so far and every question it
/// must not repeat.
struct Generator<'a> {
    engine: &'a Engine,
    model: &'a Arc<dyn ChatModel>,
    job: &'a Job<'a>,
    /// Per kind, the passages in the order it asks about them.
    orders: Vec<Vec<usize>>,
    /// Per kind, its prompt's instructions ([`Prompts::instructions`]).
    instructions: Vec<String>,
    /// The most words of an answer.
    limit: Option<usize>,
    out: Generated,
    /// Every question already written, and every kept one: texts and unit vectors.
    seen_text: HashSet<String>,
    seen_vectors: Vec<Vec<f32>>,
    /// Whether any generation call has succeeded: a server that fails every call of the first
    /// round is down or refuses the requests, and trying the rest of the budget would not help.
    answered: bool,
    /// Per kind, its prompt's placeholders ([`placeholders`]).
    placeholders: Vec<Vec<String>>,
    /// Per kind, per passage: the pass that last asked about it and a digest of the reply.
    last_reply: Vec<HashMap<usize, (usize, u64)>>,
    /// Per kind, the pass under way: its number, its replies so far, and how many of them
    /// repeated the pass before.
    passes: Vec<(usize, usize, usize)>,
}

impl<'a> Generator<'a> {
    async fn new(
        engine: &'a Engine,
        model: &'a Arc<dyn ChatModel>,
        job: &'a Job<'a>,
        orders: Vec<Vec<usize>>,
    ) -> Result<Generator<'a>> {
        let mut out = Generated::default();
        for (k, t) in out.tallies.iter_mut().enumerate() {
            t.wanted = job.wanted[k];
        }
        Ok(Generator {
            engine,
            model,
            job,
            orders,
            instructions: Kind::ALL
                .iter()
                .map(|&k| job.prompts.instructions(k))
                .collect(),
            placeholders: Kind::ALL
                .iter()
                .map(|&k| placeholders(&job.prompts.instructions(k)))
                .collect(),
            last_reply: vec![HashMap::new(); Kind::ALL.len()],
            passes: vec![(0, 0, 0); Kind::ALL.len()],
            limit: job.prompts.answer_limit(),
            out,
            seen_text: job.existing.iter().map(|q| normal_question(q)).collect(),
            seen_vectors: embed(engine, job.existing).await?,
            answered: false,
        })
    }

    /// The next round's generation requests: per kind, as many candidates as it still misses,
    /// within its budget and the round's size; none when every kind is done.
    fn next_round(&self) -> Vec<(Kind, usize, ChatRequest)> {
        let mut asked: Vec<(Kind, usize, ChatRequest)> = Vec::new();
        for (k, kind) in Kind::ALL.into_iter().enumerate() {
            let t = &self.out.tallies[k];
            if self.orders[k].is_empty() || self.out.repeated[k].is_some() {
                continue;
            }
            let missing = t.wanted - t.kept;
            let left = self.job.budget[k] - t.tried;
            let room = MAX_ROUND_CALLS - asked.len();
            for n in t.tried..t.tried + missing.min(left).min(room) {
                let (chunk, seed) = candidate(&self.orders[k], n);
                asked.push((
                    kind,
                    chunk,
                    self.job
                        .prompts
                        .request(kind, &self.job.corpus.chunks[chunk], seed),
                ));
            }
        }
        asked
    }

    /// Make the round's calls and check each reply; a first round whose calls all failed
    /// stops the run. `None` when a call was kept for a batch ([`Generated::deferred`]).
    async fn ask(&mut self, asked: Vec<(Kind, usize, ChatRequest)>) -> Result<Option<Vec<Trial>>> {
        let replies = call_all(
            self.model,
            self.engine.concurrency,
            asked.iter().map(|a| &a.2),
        )
        .await;
        if replies
            .iter()
            .any(|r| r.as_ref().is_err_and(|e| e.deferred))
        {
            self.out.deferred = true;
            return Ok(None);
        }
        self.out.calls.generation += replies.len();
        let mut failed = 0;
        let mut trials: Vec<Trial> = Vec::new();
        for ((kind, chunk, request), reply) in asked.into_iter().zip(replies) {
            let pass = request.seed.map_or(0, |p| p as usize);
            self.note_pass(
                kind,
                chunk,
                pass,
                reply.as_ref().ok().map(|r| r.text.as_str()),
            );
            let (verdict, shown) = match reply {
                Err(e) => {
                    failed += 1;
                    let shown = Shown {
                        reply: Some(excerpt(&e.message, REJECTED_REPLY_CHARS)),
                        ..Shown::default()
                    };
                    self.out.first_error.get_or_insert(e.message);
                    (Err(Reject::CallFailed), shown)
                }
                Ok(r) => {
                    self.out.calls.cached += usize::from(r.cached);
                    let passage = &self.job.corpus.chunks[chunk].text;
                    let prompt = Prompt {
                        instructions: &self.instructions[kind as usize],
                        placeholders: &self.placeholders[kind as usize],
                        limit: self.limit,
                    };
                    check(kind, &r.text, passage, prompt)
                }
            };
            self.out.tallies[kind as usize].tried += 1;
            trials.push(Trial {
                kind,
                chunk,
                verdict,
                shown,
            });
        }
        self.answered |= failed < trials.len();
        if !self.answered {
            bail!(
                "every generation call of the first round failed; the first: {}",
                self.out.first_error.as_deref().unwrap_or("")
            );
        }
        Ok(Some(trials))
    }

    /// Count the reply of pass `pass` about passage `chunk` (`None`: the call failed) and stop
    /// the kind once [`REPEATS_TO_STOP`] replies of a later pass, all of its replies so far,
    /// equal the pass before's about the same passages.
    fn note_pass(&mut self, kind: Kind, chunk: usize, pass: usize, reply: Option<&str>) {
        use std::hash::{Hash, Hasher};
        let k = kind as usize;
        let digest = reply.map(|text| {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            text.hash(&mut h);
            h.finish()
        });
        let before = match digest {
            Some(d) => self.last_reply[k].insert(chunk, (pass, d)),
            None => self.last_reply[k].remove(&chunk),
        };
        let repeated = pass > 0 && before.is_some_and(|b| Some(b) == digest.map(|d| (pass - 1, d)));
        let p = &mut self.passes[k];
        if p.0 != pass {
            *p = (pass, 0, 0);
        }
        p.1 += 1;
        p.2 += usize::from(repeated);
        let enough = REPEATS_TO_STOP.min(self.orders[k].len()).max(1);
        if pass > 0 && p.1 == p.2 && p.2 >= enough {
            self.out.repeated[k].get_or_insert(pass);
        }
    }

    /// Embed the questions that passed, one batch.
    async fn embed_passed(&self, trials: &mut [Trial]) -> Result<()> {
        let texts: Vec<String> = trials
            .iter()
            .filter_map(|t| t.verdict.as_ref().ok().map(|p| p.question.clone()))
            .collect();
        let mut vectors = embed(self.engine, &texts).await?.into_iter();
        for t in trials {
            if let Ok(p) = &mut t.verdict {
                p.vector = vectors.next().unwrap_or_default();
            }
        }
        Ok(())
    }

    fn duplicate(&self, p: &Pending) -> bool {
        duplicate(
            p,
            &self.seen_text,
            &self.seen_vectors,
            self.job.max_similarity,
        )
    }

    /// Verify the unanswerable candidates that are not already duplicates of what was kept
    /// before this round (a duplicate within the round is found by [`Generator::decide`]).
    async fn verify_unanswerable(&mut self, trials: &mut [Trial]) -> Result<()> {
        let to_verify: Vec<usize> = trials
            .iter()
            .enumerate()
            .filter(|(_, t)| t.kind != Kind::Answerable)
            .filter(|(_, t)| t.verdict.as_ref().is_ok_and(|p| !self.duplicate(p)))
            .map(|(i, _)| i)
            .collect();
        if to_verify.is_empty() {
            return Ok(());
        }
        let verdicts = verify(
            self.engine,
            self.model,
            self.job,
            trials,
            &to_verify,
            &mut self.out,
        )
        .await?;
        for (i, v) in to_verify.into_iter().zip(verdicts) {
            if let Ok(p) = &mut trials[i].verdict {
                p.verified = Some(v);
            }
        }
        Ok(())
    }

    /// Keep or reject each candidate, in order, so that a duplicate within the round is
    /// found against the ones kept before it.
    fn decide(&mut self, trials: Vec<Trial>) {
        for t in trials {
            let decided = t.verdict.and_then(|p| {
                if self.duplicate(&p) {
                    return Err(Reject::Duplicate);
                }
                match p.verified {
                    Some(Err(r)) => Err(r),
                    Some(Ok(true)) => Err(Reject::VerifierSaidAnswerable),
                    _ => Ok(p),
                }
            });
            let tally = &mut self.out.tallies[t.kind as usize];
            match decided {
                Ok(p) => {
                    tally.kept += 1;
                    self.seen_text.insert(normal_question(&p.question));
                    self.seen_vectors.push(p.vector);
                    self.out.kept.push(Kept {
                        kind: t.kind,
                        question: p.question,
                        answer: p.answer,
                        premise: p.premise,
                        chunk: t.chunk,
                    });
                }
                Err(r) => {
                    *tally.rejected.entry(r).or_default() += 1;
                    self.out.rejected.push(Rejected {
                        kind: t.kind,
                        reason: r,
                        chunk: t.chunk,
                        question: t.shown.question,
                        answer: t.shown.answer,
                        reply: t.shown.reply,
                    });
                }
            }
        }
    }
}

/// What a reply is checked against of its prompt.
#[derive(Clone, Copy)]
struct Prompt<'a> {
    /// Its instructions ([`Prompts::instructions`]).
    instructions: &'a str,
    /// Its placeholders ([`placeholders`]).
    placeholders: &'a [String],
    /// The most words of an answer.
    limit: Option<usize>,
}

/// A generation reply's checks, up to (not including) duplicates and verification, and what
/// the candidate shows of itself should it be rejected.
fn check(
    kind: Kind,
    reply: &str,
    passage: &str,
    prompt: Prompt<'_>,
) -> (Result<Pending, Reject>, Shown) {
    let Prompt {
        instructions,
        placeholders,
        limit,
    } = prompt;
    let c = match parse_candidate(kind, reply) {
        Ok(c) => c,
        Err(_) => {
            let shown = Shown {
                reply: Some(excerpt(reply, REJECTED_REPLY_CHARS)),
                ..Shown::default()
            };
            return (Err(Reject::Malformed), shown);
        }
    };
    let shown = Shown {
        question: Some(c.question.clone()),
        answer: c.answer.clone(),
        reply: None,
    };
    let texts = [
        Some(&c.question),
        c.answer.as_ref(),
        c.premise.as_ref().map(|p| &p.0),
        c.premise.as_ref().map(|p| &p.1),
    ];
    let rejected = if texts
        .into_iter()
        .flatten()
        .any(|t| is_placeholder(t, placeholders))
    {
        Some(Reject::Placeholder)
    } else if echoes_prompt(&c.question, instructions, passage) {
        Some(Reject::EchoesPrompt)
    } else if let Some(answer) = &c.answer {
        if answer_too_long(answer, limit) {
            Some(Reject::AnswerTooLong)
        } else if !answer_in_passage(answer, passage) {
            Some(Reject::AnswerNotInPassage)
        } else if copies_passage(&c.question, passage) {
            Some(Reject::CopiesPassage)
        } else {
            None
        }
    } else if let Some((_, truth)) = &c.premise {
        (!answer_in_passage(truth, passage)).then_some(Reject::TruthNotInPassage)
    } else {
        None
    };
    let verdict = match rejected {
        Some(r) => Err(r),
        None => Ok(Pending {
            question: c.question,
            answer: c.answer,
            premise: c.premise,
            vector: Vec::new(),
            verified: None,
        }),
    };
    (verdict, shown)
}

fn duplicate(p: &Pending, texts: &HashSet<String>, vectors: &[Vec<f32>], max: f64) -> bool {
    texts.contains(&normal_question(&p.question))
        || vectors.iter().any(|v| cosine(v, &p.vector) >= max)
}

/// Unit vectors of `texts` from the engine's embedder.
async fn embed(engine: &Engine, texts: &[String]) -> Result<Vec<Vec<f32>>> {
    if texts.is_empty() {
        return Ok(Vec::new());
    }
    let mut vectors = engine
        .embedder
        .embed(texts)
        .await
        .map_err(|e| anyhow::anyhow!("embedding the questions failed: {}", e.0))?;
    for v in &mut vectors {
        normalize(v);
    }
    Ok(vectors)
}

/// Retrieve each candidate's top passages and ask the verifier about them: per candidate, its
/// verdict (whether the passages answer it, or for a false-premise one whether they support
/// its premise), or why there is none.
async fn verify(
    engine: &Engine,
    model: &Arc<dyn ChatModel>,
    job: &Job<'_>,
    trials: &[Trial],
    which: &[usize],
    out: &mut Generated,
) -> Result<Vec<Result<bool, Reject>>> {
    let questions: Vec<&str> = which
        .iter()
        .map(|&i| {
            trials[i]
                .verdict
                .as_ref()
                .map_or("", |p| p.question.as_str())
        })
        .collect();
    let queries: Vec<Query<'_>> = questions
        .iter()
        .map(|q| Query {
            corpus: 0,
            variant: 0,
            text: q,
            question: q,
        })
        .collect();
    let Ranking {
        corpora, ranked, ..
    } = engine
        .rank(std::slice::from_ref(job.corpus), &queries, job.verify_k)
        .await?;
    let premises: Vec<Option<&str>> = which
        .iter()
        .map(|&i| {
            let p = trials[i].verdict.as_ref().ok()?;
            p.premise.as_ref().map(|(claim, _)| claim.as_str())
        })
        .collect();
    let requests: Vec<ChatRequest> = questions
        .iter()
        .zip(&ranked)
        .zip(&premises)
        .map(|((q, hits), premise)| {
            let passages: Vec<_> = hits
                .iter()
                .take(job.verify_k)
                .map(|h| &corpora[0].chunks[h.chunk])
                .collect();
            match premise {
                Some(claim) => job.prompts.verify_premise(q, claim, &passages),
                None => job.prompts.verify(q, &passages),
            }
        })
        .collect();
    let replies = call_all(model, engine.concurrency, requests.iter()).await;
    out.calls.verification += replies.len();
    Ok(replies
        .into_iter()
        .zip(&premises)
        .map(|(r, premise)| match r {
            Err(e) => {
                out.deferred |= e.deferred;
                out.first_error.get_or_insert(e.message);
                Err(Reject::CallFailed)
            }
            Ok(r) => {
                out.calls.cached += usize::from(r.cached);
                if premise.is_none() {
                    return parse_verdict(&r.text).map_err(|_| Reject::Malformed);
                }
                // A premise the passages support makes the question answerable as asked.
                match parse_premise_verdict(&r.text) {
                    Ok(PremiseVerdict::Supported) => Err(Reject::PremiseSupported),
                    Ok(PremiseVerdict::False | PremiseVerdict::Unsupported) => Ok(false),
                    Err(_) => Err(Reject::Malformed),
                }
            }
        })
        .collect())
}

/// Make `requests` with at most `concurrency` in flight; the replies in request order.
async fn call_all<'a>(
    model: &Arc<dyn ChatModel>,
    concurrency: usize,
    requests: impl Iterator<Item = &'a ChatRequest>,
) -> Vec<Result<ChatReply, CallError>> {
    stream::iter(requests.map(|r| model.complete(r)))
        .buffered(concurrency.max(1))
        .collect()
        .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapters::corpus::chunk_markdown;

    fn corpus(files: &[(&str, &str)]) -> Corpus {
        Corpus {
            root: ".".into(),
            roots: Vec::new(),
            chunks: files
                .iter()
                .flat_map(|(name, text)| chunk_markdown(name, text))
                .collect(),
        }
    }

    #[test]
    fn passages_are_sampled_across_files_before_a_file_is_revisited() {
        let long = "one two three four five six seven words here.";
        let a = format!("# A1\n{long}\n# A2\n{long}\n# A3\n{long}\n# Tiny\nYes.\n");
        let b = format!("# B1\n{long}\n");
        let c = corpus(&[("a.md", &a), ("b.md", &b)]);
        let order = sampling_order(&c, 7, Kind::Answerable);
        // The heading-only passage is left out; the first two are from two files.
        assert_eq!(order.len(), 4);
        assert!(!order.contains(&3));
        let first: HashSet<&str> = order[..2]
            .iter()
            .map(|&i| c.chunks[i].source.as_str())
            .collect();
        assert_eq!(first.len(), 2);
        // Seeded: the same seed, the same order; the kinds draw their own.
        assert_eq!(order, sampling_order(&c, 7, Kind::Answerable));
        let seeds: HashSet<Vec<usize>> = (0..20)
            .map(|s| sampling_order(&c, s, Kind::NearMiss))
            .collect();
        assert!(seeds.len() > 1, "the seed changes the order");
        // A second pass asks again with a seed.
        assert_eq!(candidate(&order, 1), (order[1], None));
        assert_eq!(candidate(&order, 5), (order[1], Some(1)));
    }

    /// A round's replies are held together: 10,000 questions of each kind (40,000 candidates
    /// each allowed) ask at most [`MAX_ROUND_CALLS`] at once, the answerable ones first.
    #[test]
    fn a_round_asks_at_most_its_cap() {
        let long = "one two three four five six seven words here.";
        let c = corpus(&[("a.md", &format!("# A\n{long}\n# B\n{long}\n"))]);
        let prompts = crate::generate::config::GenerateConfig::default()
            .prompts()
            .unwrap();
        let job = |n: usize| Job {
            corpus: &c,
            existing: &[],
            wanted: [n; 4],
            budget: [4 * n; 4],
            seed: 0,
            prompts: &prompts,
            verify_k: 3,
            max_similarity: 0.9,
        };
        let first = first_round(&job(10_000));
        assert_eq!(first.len(), MAX_ROUND_CALLS);
        let answerable = Kind::Answerable.format();
        assert!(first.iter().all(|r| r.format == Some(answerable)));
        // A small job is one round of every kind, as before.
        assert_eq!(first_round(&job(5)).len(), 20);
    }
}
