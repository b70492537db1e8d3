//! The questions a sweep's plan runs: the question sets loaded, filtered by `--only`, chunked
//! to fit, checked against `--folds`, sharded and held to `--max-runs`. Everything that can be
//! wrong with them is found here, before any model call or file.

use anyhow::Result;

use super::SweepOptions;
use crate::adapters::evalset::Workspace;
use crate::output::labels::LabelsFile;
use crate::results::build::{set_meta, shard_workspace, Shape};
use crate::results::{Results, SetMeta};
use crate::sweep::Sweep;
use crate::vocab::dim::Dim;

/// The questions to sweep, ready: loaded, chunked to fit, sharded, within budget.
pub struct Questions {
    pub ws: Workspace,
    /// `--chunk-tokens`: each size's members of the joined corpora.
    pub chunk_members: Option<Vec<Vec<Vec<usize>>>>,
    /// Each question set's counts, before sharding.
    pub evalsets: Vec<SetMeta>,
    /// Where this shard's questions sit among all of them.
    pub shape: Shape,
}

impl SweepOptions {
    /// The finished sweep of `questions` as the one value every report reads: the facts of
    /// this run ([`SweepOptions::meta`]), the rest from the sweep.
    /// The results of the sweep, with the labels of `labels` (read before the sweep) checked
    /// against its replies and applied.
    pub fn results(
        &self,
        questions: Questions,
        sweep: Sweep,
        labels: Option<&LabelsFile>,
    ) -> Result<Results> {
        let meta = self.meta(questions.evalsets);
        let (ws, shape) = (&questions.ws, questions.shape);
        let path = self.labels();
        Results::build(meta, ws, sweep, shape, self.shard(), &self.scanner(), |r| {
            let (Some(file), Some(path)) = (labels, path) else {
                return Ok(None);
            };
            Ok(Some(file.checked(path, r)?))
        })
    }

    /// The questions of the plan's question sets, ready to sweep.
    pub fn questions(&self) -> Result<Questions> {
        let foreign = !self.retriever().kind.chunks_itself();
        let mut ws = Workspace::load_for(self.evalsets(), foreign)?;
        if let Some(only) = self.only() {
            keep_only(&mut ws, only)?;
        }
        let chunk_members = fit_chunks(self, &mut ws);
        if let (Some(k), from) = self.folds() {
            if k >= 2 {
                check_folds(k, from, &ws)?;
            }
        }
        let evalsets = set_meta(&ws);
        let (ws, positions, sets) = shard_workspace(ws, self.shard());
        check_budget(self, ws.questions().count() as u64)?;
        Ok(Questions {
            ws,
            chunk_members,
            evalsets,
            shape: Shape { positions, sets },
        })
    }
}

impl Questions {
    /// Per class (answerable, unanswerable), the questions' positions in sweep order.
    pub fn by_class(&self) -> [Vec<usize>; 2] {
        let mut classes = [Vec::new(), Vec::new()];
        for (i, q) in self.ws.questions().enumerate() {
            classes[usize::from(!q.answerable)].push(i);
        }
        classes
    }

    /// These questions with only those at the positions `keep` holds (in sweep order), laid
    /// out as a sweep of the kept questions alone would be: how an adaptive sweep's round
    /// runs a part of the pool through the same engine. The corpora are shared, not copied.
    pub fn subset(&self, keep: &[bool]) -> Questions {
        let mut ws = Workspace {
            sets: self.ws.sets.clone(),
            corpora: self.ws.corpora.clone(),
        };
        let (mut positions, mut sets) = (Vec::new(), Vec::new());
        let mut i = 0;
        for set in &mut ws.sets {
            set.questions.retain(|_| {
                let kept = keep.get(i).copied().unwrap_or(false);
                if kept {
                    positions.push(self.shape.positions[i]);
                    sets.push(self.shape.sets[i]);
                }
                i += 1;
                kept
            });
        }
        Questions {
            ws,
            chunk_members: self.chunk_members.clone(),
            evalsets: self.evalsets.clone(),
            shape: Shape { positions, sets },
        }
    }
}

/// `--only`: drop the questions the flag leaves out; none left is an input error.
fn keep_only(ws: &mut Workspace, only: crate::app::cli::Only) -> Result<()> {
    use crate::app::cli::Only;
    let keep = |q: &crate::adapters::evalset::Question| match only {
        Only::Generated => q.origin.is_some(),
        Only::Reviewed => q.reviewed(),
    };
    for set in &mut ws.sets {
        set.questions.retain(keep);
    }
    // A set left with no question is not swept (and not reported as one).
    ws.sets.retain(|set| !set.questions.is_empty());
    if ws.sets.is_empty() {
        let which = match only {
            Only::Generated => "generated (`rageval generate` writes them)",
            Only::Reviewed => "written or reviewed by a person",
        };
        anyhow::bail!("invalid --only: no question of the question sets is {which}");
    }
    Ok(())
}

/// Sections are cut to fit the embedder that reads the least, with a margin; with
/// `--chunk-tokens`, every size's chunks are joined into one corpus per slot (their members).
fn fit_chunks(s: &SweepOptions, ws: &mut Workspace) -> Option<Vec<Vec<Vec<usize>>>> {
    let grid = s.grid();
    let read = grid
        .embedders()
        .filter_map(|p| s.pipeline().embedder_of(p).max_input_tokens())
        .min();
    let fit = |tokens: usize| crate::adapters::corpus::chunk_limit(tokens, read);
    let max_chunk_tokens = fit(s.max_chunk_tokens());
    if grid.at_default(Dim::ChunkTokens) {
        ws.split_long_sections(max_chunk_tokens);
        return None;
    }
    let sizes: Vec<Option<usize>> = grid.chunk_tokens().map(|t| t.map(fit)).collect();
    let (joined, members) = crate::sweep::chunk_union(&ws.corpora, max_chunk_tokens, &sizes);
    ws.corpora = joined.into();
    Some(members)
}

/// `--max-runs`: the sweep may not plan more runs (questions x settings x repeats).
fn check_budget(s: &SweepOptions, questions: u64) -> Result<()> {
    let settings = s.grid().len() as u64;
    let runs = questions
        .saturating_mul(settings)
        .saturating_mul(u64::from(s.repeat()));
    if runs > s.max_runs() {
        let repeats = if s.repeat() > 1 {
            format!(" x {} repeats", s.repeat())
        } else {
            String::new()
        };
        anyhow::bail!(
            "the sweep plans {runs} runs ({questions} questions x {settings} settings{repeats}), more than the limit of {}: narrow the grid, or raise the limit with `--max-runs`",
            s.max_runs()
        );
    }
    Ok(())
}

/// Folds of the cross-validation hold out questions of each class, so a class may not have
/// fewer questions than there are folds.
fn check_folds(k: usize, from: &str, ws: &Workspace) -> Result<()> {
    let answerable = ws.questions().filter(|q| q.answerable).count();
    let unanswerable = ws.questions().count() - answerable;
    for (n, class) in [(answerable, "answerable"), (unanswerable, "unanswerable")] {
        if n > 0 && n < k {
            anyhow::bail!(
                "invalid {from} {k}: more folds than the {n} {class} questions of the sets (every fold holds out questions of each class); use at most {n} folds, or 0 for none"
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A round of an adaptive sweep keeps the questions asked for, in sweep order, with their
    /// places among all, and shares the pool's corpora instead of copying them.
    #[test]
    fn a_subset_keeps_its_questions_and_shares_the_corpora() {
        let sample = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("evalsets/club.yaml");
        let ws = Workspace::load(&[sample]).unwrap();
        let evalsets = set_meta(&ws);
        let (ws, positions, sets) = shard_workspace(ws, None);
        let pool = Questions {
            ws,
            chunk_members: None,
            evalsets,
            shape: Shape { positions, sets },
        };
        let n = pool.ws.questions().count();
        let keep: Vec<bool> = (0..n).map(|i| i % 3 == 1).collect();
        let round = pool.subset(&keep);
        assert!(std::sync::Arc::ptr_eq(&pool.ws.corpora, &round.ws.corpora));
        let ids = |q: &Questions| q.ws.questions().map(|q| q.id.clone()).collect::<Vec<_>>();
        let want: Vec<String> = ids(&pool)
            .into_iter()
            .enumerate()
            .filter(|(i, _)| keep[*i])
            .map(|(_, id)| id)
            .collect();
        assert_eq!(ids(&round), want);
        let places: Vec<usize> = (0..n)
            .filter(|&i| keep[i])
            .map(|i| pool.shape.positions[i])
            .collect();
        assert_eq!(round.shape.positions, places);
    }
}
