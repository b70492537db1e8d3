//! `rageval sweep --until-certified`: the sweep as a loop around the one engine. Each round
//! adds `--step` questions of each class, in a seeded order, and sweeps the questions so far
//! (earlier rounds' calls come back from the response cache); the recommendation is worked out
//! again, and the loop stops when it is certified, when no setting can be, when the pool is
//! used up, or before a round would break the budget. The last round is reported as any sweep
//! is, plus `adaptive.json`: why it stopped, the rounds, and the calls it needed against the
//! full sweep's (from the dry-run planner). docs/adaptive.md.

use anyhow::{bail, Result};
use serde::Serialize;

use crate::adapters::evalset::Workspace;
use crate::analysis::insight::adaptive::{self, Futile, Pool, Stop};
use crate::analysis::insight::counts::RunTable;
use crate::analysis::insight::recommend;
use crate::app::options::{AdaptivePlan, Questions, SweepOptions};
use crate::sweep::{Coverage, DryRun, Engine, RetrievalVariant, Sweep};
use crate::vocab::limit::Limit;

use super::engine::{dry_engine, sweep_only, Retriever};

/// What `adaptive.json` records of an adaptive sweep, beside the reports of its last round.
#[derive(Debug, Clone, Serialize)]
pub struct AdaptiveReport {
    /// `certified`, `futile`, `exhausted` or `budget`.
    pub stop: Stop,
    pub seed: u64,
    /// Questions of each class added per round.
    pub step: usize,
    pub rounds: usize,
    /// Questions used, answerable and unanswerable.
    pub used: [usize; 2],
    /// Questions in the pool, answerable and unanswerable.
    pub pool: [usize; 2],
    /// Distinct model calls the questions used need (answers and rewrites, cached or not).
    pub calls: usize,
    /// Distinct model calls the full sweep of the pool needs: from the dry-run planner when
    /// planning the pool costs nothing, else estimated from the questions used
    /// (`full_calls_estimated`; docs/adaptive.md).
    pub full_calls: usize,
    /// `full_calls` is an estimate: the questions not used were never embedded, searched or
    /// reranked to count their prompts.
    pub full_calls_estimated: bool,
    /// Model calls this run made (the rest came from the response cache).
    pub calls_made: usize,
    /// With `futile`: the setting closest to being certified, the rate that keeps it out, and
    /// the questions of that rate's class it would need with no further failure (null: none
    /// would do).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub closest: Option<Closest>,
    /// Settings whose anytime-valid lower bound on a rate rose above its limit (at the
    /// family's level), in the order they were found, with the questions per class at which
    /// it first did. Such a setting can no longer be certified: it is dropped, and later
    /// rounds run it only on the questions it already had (docs/adaptive.md).
    pub out: Vec<Out>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Out {
    pub setting: String,
    pub limit: String,
    /// Questions used, answerable and unanswerable, when it was first out: the questions it
    /// ran, since it got no call after.
    pub after: [usize; 2],
    /// Its position in the grid.
    #[serde(skip)]
    index: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct Closest {
    pub setting: String,
    pub limit: String,
    pub questions_needed: Option<u64>,
    pub pool: u64,
}

impl AdaptiveReport {
    /// The line people read: `certified after 180 of 600 questions per class (3 rounds);
    /// 2,140 model calls of 9,800 (22%)`.
    pub fn line(&self) -> String {
        let used = if self.used[0] == self.used[1] && self.pool[0] == self.pool[1] {
            format!("{} of {} questions per class", self.used[0], self.pool[0])
        } else {
            format!(
                "{} of {} answerable and {} of {} unanswerable questions",
                self.used[0], self.pool[0], self.used[1], self.pool[1]
            )
        };
        let share = 100.0 * self.calls as f64 / self.full_calls.max(1) as f64;
        let rounds = crate::base::text::plural(self.rounds, "round");
        let about = if self.full_calls_estimated {
            "about "
        } else {
            ""
        };
        let mut line = format!(
            "{} after {used} ({rounds}); {} model calls of {about}{} ({share:.0}%)",
            self.stop.name(),
            thousands(self.calls),
            thousands(self.full_calls),
        );
        if let Some(c) = &self.closest {
            let needed = match c.questions_needed {
                Some(n) => format!(
                    "{} questions with no further failure",
                    thousands(n as usize)
                ),
                None => "more questions than any pool".to_string(),
            };
            line.push_str(&format!(
                "; no setting can be certified with this pool: the closest, {}, would need {needed} for `{}` (the pool has {})",
                c.setting, c.limit, c.pool
            ));
        }
        line
    }
}

/// Write `adaptive.json` into the reports folder, atomically; its path.
pub fn write(report: &AdaptiveReport, dir: &std::path::Path) -> Result<std::path::PathBuf> {
    let path = dir.join("adaptive.json");
    crate::output::report::write_atomic(&path, |w| {
        serde_json::to_writer_pretty(&mut *w, report)?;
        Ok(w.write_all(b"\n")?)
    })?;
    Ok(path)
}

/// `9800` as `9,800`.
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// One round's questions and sweep.
struct Round {
    questions: Questions,
    sweep: Sweep,
}

/// Run the rounds; the last round's questions and sweep, and what the loop did.
pub async fn run(
    s: &SweepOptions,
    plan: &AdaptivePlan,
    pool: Questions,
    retriever: Retriever,
    retrieval: Vec<RetrievalVariant>,
) -> Result<(Questions, Sweep, AdaptiveReport)> {
    let engines = Engines {
        dry: dry_engine(s, retriever.clone(), retrieval.clone()),
        retriever,
        retrieval,
    };
    let classes = seeded_order(&pool, plan.seed);
    let sizes = [classes[0].len(), classes[1].len()];
    let step = plan.step_for(sizes);
    let counted = count_pool(&pool);
    let mut spent = Spent::default();
    let mut last: Option<Round> = None;
    let mut report = AdaptiveReport {
        stop: Stop::Exhausted,
        seed: plan.seed,
        step,
        rounds: 0,
        used: [0, 0],
        pool: sizes,
        calls: 0,
        full_calls: 0,
        full_calls_estimated: false,
        calls_made: 0,
        closest: None,
        out: Vec::new(),
    };
    let settings = s.grid().settings();
    loop {
        let used = sizes.map(|n| ((report.rounds + 1) * step).min(n));
        let kept = keep(&classes, used, pool.ws.questions().count());
        let questions = pool.subset(&kept);
        let coverage = coverage(&report.out, &classes, &kept);
        let sweep = match round(s, plan, &engines, &questions, coverage, &mut spent).await? {
            Ok(sweep) => sweep,
            Err(Over { flag, what }) if last.is_none() => {
                bail!("invalid {flag}: the first round alone ({step} questions of each class) needs {what}; raise the budget or lower `--step`")
            }
            Err(_) => {
                report.stop = Stop::Budget;
                break;
            }
        };
        report.rounds += 1;
        report.used = used;
        report.calls = needed_by(&sweep);
        report.calls_made = spent.calls;
        let (stop, out) = decide(s, &questions, &sweep, counted, used == sizes);
        for (i, limit) in out.iter().enumerate() {
            let known = report.out.iter().any(|o| o.index == i);
            if let (Some(limit), false) = (limit, known) {
                report.out.push(Out {
                    setting: settings[i].id(),
                    limit: limit.key().to_string(),
                    after: used,
                    index: i,
                });
            }
        }
        last = Some(Round { questions, sweep });
        if let Some((stop, futile)) = stop {
            report.stop = stop;
            report.closest = futile.map(|f| closest(s, f));
            break;
        }
        if !s.quiet() {
            super::eprint_line(&format!(
                "round {}: {} and {} questions, not certified yet",
                report.rounds, used[0], used[1]
            ));
        }
    }
    let Round { questions, sweep } = last.expect("the first round ran or the loop bailed");
    let (full, estimated) = full_calls(s, &engines.dry, &pool, &report, &questions, &sweep).await?;
    (report.full_calls, report.full_calls_estimated) = (full, estimated);
    Ok((questions, sweep, report))
}

/// The engines a round runs: the dry run's (for the budget) and the live one's parts.
struct Engines {
    dry: Engine,
    retriever: Retriever,
    retrieval: Vec<RetrievalVariant>,
}

/// What the rounds so far made: model calls, and their estimated prompt cost.
#[derive(Default)]
struct Spent {
    calls: usize,
    cost: f64,
}

/// A round the budget has no room for: the flag it would break, and what the round needs.
struct Over {
    flag: &'static str,
    what: String,
}

/// One round over `questions`: with a budget, its calls counted by the dry-run planner first
/// (none made if the round would break the budget: [`Over`]); with a batch engine, its uncached
/// calls sent as one batch per section and imported into the response cache; then the sweep
/// (from the cache, for what the batches answered). What it made is added to `spent`.
async fn round(
    s: &SweepOptions,
    plan: &AdaptivePlan,
    engines: &Engines,
    questions: &Questions,
    coverage: Coverage,
    spent: &mut Spent,
) -> Result<Result<Sweep, Over>> {
    let (ws, retriever, retrieval) = (&questions.ws, &engines.retriever, &engines.retrieval);
    let batched = s.any_batched();
    let mut cost = 0.0;
    if plan.max_calls.is_some() || plan.max_cost.is_some() {
        if s.embeddings_batched() {
            // The prompts are known once the texts are embedded; the batch embeds them, so
            // the count below embeds nothing live.
            let only = super::batch::Sending::Embeddings;
            let all = Coverage::all();
            super::batch::run(s, ws, retriever.clone(), retrieval.clone(), only, all).await?;
        }
        // The planner counts what the round will make: nothing for a dropped setting's new
        // questions.
        let planner = Engine {
            coverage: coverage.clone(),
            ..engines.dry.clone()
        };
        let (making, priced) = price(s, &planner, ws).await?;
        let over_calls = plan
            .max_calls
            .is_some_and(|m| (spent.calls + making) as u64 > m);
        let over_cost = plan.max_cost.is_some_and(|m| spent.cost + priced > m);
        if over_calls {
            let what = format!("{making} model calls");
            return Ok(Err(Over {
                flag: "--max-calls",
                what,
            }));
        }
        if over_cost {
            let what = format!("{priced:.4} {}", s.pipeline().currency);
            return Ok(Err(Over {
                flag: "--max-cost",
                what,
            }));
        }
        cost = priced;
    }
    let mut made = 0;
    if batched {
        let all = super::batch::Sending::All;
        let kept = coverage.clone();
        made = super::batch::run(s, ws, retriever.clone(), retrieval.clone(), all, kept).await?;
    }
    let sweep = sweep_only(s, ws, retriever.clone(), retrieval.clone(), coverage).await?;
    // Called live: the calls the cache did not answer (a failed batch line, or no batch).
    made += needed_by(&sweep).saturating_sub(sweep.calls.cache_hits);
    spent.calls += made;
    spent.cost += cost;
    Ok(Ok(sweep))
}

/// The dry-run planner's count of the calls a sweep of `ws` would make (those the response
/// cache does not answer), and their estimated prompt cost, at the batch price for a chat
/// profile whose calls go through batches (as `--dry-run` prices them).
async fn price(s: &SweepOptions, dry: &Engine, ws: &Workspace) -> Result<(usize, f64)> {
    let mut rows = dry.dry_run(ws, s.grid(), &s.pipeline().pricing).await?;
    s.batch_priced(&mut rows);
    let calls = rows.iter().map(|r| r.calls).sum();
    let cost = rows.iter().map(|r| r.prompt_cost).sum();
    Ok((calls, cost))
}

/// The distinct model calls the full sweep of the pool needs, and whether that is an estimate.
/// Exact when the last round used the whole pool, or when planning the pool costs nothing
/// (every embedder the builtin `hash`, no HTTP retriever, no reranker: the dry-run planner
/// embeds, searches and reranks every question it plans). Otherwise estimated from the
/// questions used, which never pays a server for a question the sweep did not use
/// ([`estimate`]).
async fn full_calls(
    s: &SweepOptions,
    dry: &Engine,
    pool: &Questions,
    report: &AdaptiveReport,
    questions: &Questions,
    sweep: &Sweep,
) -> Result<(usize, bool)> {
    if report.used == report.pool && report.out.is_empty() {
        // Every question at every setting: the last round was the full sweep.
        return Ok((report.calls, false));
    }
    if plans_for_free(s) {
        let rows = dry
            .dry_run(&pool.ws, s.grid(), &s.pipeline().pricing)
            .await?;
        return Ok((needed(&rows), false));
    }
    Ok((estimate(questions, sweep, report.pool), true))
}

/// Whether the dry-run planner can plan any question without a server: every swept embedder
/// is the builtin `hash`, the retriever is not an HTTP endpoint, and there is no reranker.
fn plans_for_free(s: &SweepOptions) -> bool {
    use crate::adapters::embed::config::EmbedderKind;
    !s.retriever().kind.is_http()
        && s.pipeline().reranker.is_none()
        && s.grid()
            .embedders()
            .all(|p| s.embedder(p).is_some_and(|e| e.kind == EmbedderKind::Hash))
}

/// The full sweep's calls estimated from the last round: the questions used of each class are
/// a seeded random sample of it, so each class's answer calls per question used, times the
/// class's pool, scale the sample up to the pool; rewrites and repeats are scaled with the
/// answer calls. (A call two questions share is counted with the first.) Only the questions
/// every setting ran make the sample: a dropped setting's calls stop at its drop, and the full
/// sweep makes them for every question.
fn estimate(questions: &Questions, sweep: &Sweep, pool: [usize; 2]) -> usize {
    let answerable: Vec<bool> = questions.ws.questions().map(|q| q.answerable).collect();
    let settings = sweep.settings.len();
    let mut everywhere = vec![true; answerable.len()];
    for s in 0..settings {
        let runs = sweep.runs_of(s);
        for (q, all) in everywhere.iter_mut().enumerate() {
            *all &= runs.get(q).is_some();
        }
    }
    let mut sample = [0usize; 2];
    for (q, &all) in everywhere.iter().enumerate() {
        sample[usize::from(!answerable[q])] += usize::from(all);
    }
    let mut seen = std::collections::HashSet::new();
    let (mut per_class, mut answers) = ([0usize; 2], 0usize);
    for run in &sweep.runs {
        if let Some(call) = run.call {
            if seen.insert(call) {
                answers += 1;
                if everywhere[run.question] {
                    per_class[usize::from(!answerable[run.question])] += 1;
                }
            }
        }
    }
    // Rewrites and repeats per answer call, over the whole sweep.
    let per_answer = needed_by(sweep) as f64 / answers.max(1) as f64;
    let sampled: usize = sample.iter().sum();
    if per_class.iter().sum::<usize>() == 0 || sampled == 0 {
        let share = sampled.max(1) as f64 / pool.iter().sum::<usize>().max(1) as f64;
        return (needed_by(sweep) as f64 / share).round() as usize;
    }
    let scaled: f64 = (0..2)
        .filter(|&c| sample[c] > 0)
        .map(|c| per_class[c] as f64 * pool[c] as f64 / sample[c] as f64)
        .sum();
    (scaled * per_answer).round() as usize
}

/// Why to stop, if at all, with the closest setting when nothing can be certified.
type Stopping = Option<(Stop, Option<Futile>)>;

/// Why to stop after a round over `questions`, if at all: the recommendation certified, no
/// setting certifiable with the pool, or every question used; and per setting, the limit its
/// anytime-valid bound shows broken, if any.
fn decide(
    s: &SweepOptions,
    questions: &Questions,
    sweep: &Sweep,
    pool: Pool,
    exhausted: bool,
) -> (Stopping, Vec<Option<Limit>>) {
    let qs: Vec<_> = questions.ws.questions().cloned().collect();
    let table = RunTable::new((0..sweep.settings.len()).map(|i| sweep.runs_of(i)), &qs);
    let counts = table.all_counts(None);
    let out = adaptive::out(s.policy(), &counts);
    let (rec, _) = recommend::recommend(&sweep.settings, &table, s.policy());
    if rec.certified {
        return (Some((Stop::Certified, None)), out);
    }
    let dropped: Vec<bool> = out.iter().map(Option::is_some).collect();
    if let Some(f) = adaptive::futile(s.policy(), &counts, &dropped, pool) {
        return (Some((Stop::Futile, Some(f))), out);
    }
    (exhausted.then_some((Stop::Exhausted, None)), out)
}

fn closest(s: &SweepOptions, f: Futile) -> Closest {
    Closest {
        setting: s.grid().settings()[f.setting].id(),
        limit: f.limit.key().to_string(),
        questions_needed: f.needed,
        pool: f.pool,
    }
}

/// The distinct model calls a dry run's rows need, cached or not.
fn needed(rows: &[DryRun]) -> usize {
    rows.iter()
        .map(|r| r.distinct_prompts + r.rewrite_calls)
        .sum()
}

/// The distinct model calls a sweep needed (answers and rewrites), cached or not: what the
/// dry-run planner counts for it ([`needed`]).
fn needed_by(sweep: &Sweep) -> usize {
    sweep.calls.distinct_prompts + sweep.calls.rewrite_calls
}

/// Per class (answerable, unanswerable), the questions' positions in a seeded random order.
fn seeded_order(pool: &Questions, seed: u64) -> [Vec<usize>; 2] {
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut classes = pool.by_class();
    for class in &mut classes {
        rng.shuffle(class);
    }
    classes
}

/// The pairs a round over the pool's questions `kept` runs: a setting out after an earlier
/// round keeps the questions it had then (the first `after[c]` of each class's order, which
/// `kept` holds), the others every question `kept` holds; masks are over the round's
/// questions, which keep the pool's order.
fn coverage(out: &[Out], classes: &[Vec<usize>; 2], kept: &[bool]) -> Coverage {
    let mut coverage = Coverage::all();
    for o in out {
        let had = keep(classes, o.after, kept.len());
        let mask = kept
            .iter()
            .zip(&had)
            .filter(|(&k, _)| k)
            .map(|(_, &h)| h)
            .collect();
        coverage.restrict(o.index, mask);
    }
    coverage
}

/// Which of `total` questions the first `used[c]` of each class's order keep.
fn keep(classes: &[Vec<usize>; 2], used: [usize; 2], total: usize) -> Vec<bool> {
    let mut keep = vec![false; total];
    for (class, &n) in classes.iter().zip(&used) {
        for &q in &class[..n] {
            keep[q] = true;
        }
    }
    keep
}

/// The pool's questions per rate's class.
fn count_pool(pool: &Questions) -> Pool {
    let mut p = Pool::default();
    for q in pool.ws.questions() {
        if q.answerable {
            p.answerable += 1;
        } else {
            p.unanswerable += 1;
        }
        p.attacks += u64::from(q.attack.is_some());
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_says_how_far_and_how_cheap() {
        let r = AdaptiveReport {
            stop: Stop::Certified,
            seed: 0,
            step: 60,
            rounds: 3,
            used: [180, 180],
            pool: [600, 600],
            calls: 2140,
            full_calls: 9800,
            full_calls_estimated: false,
            calls_made: 2140,
            closest: None,
            out: Vec::new(),
        };
        assert_eq!(
            r.line(),
            "certified after 180 of 600 questions per class (3 rounds); 2,140 model calls of 9,800 (22%)"
        );
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(thousands(999), "999");
    }
}
