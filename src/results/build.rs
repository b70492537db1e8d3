//! The one results value built from a finished sweep: statistics per setting, the corpora's
//! chunk ids, labels and flagged chunks, then the insight. Library work: the commands and the
//! tests build results only through here.

use crate::adapters::evalset::Workspace;
use crate::adapters::scan::Scanner;
use crate::analysis::stats::per_setting;
use crate::sweep::{Shard, Sweep};

use super::{Meta, Results, SetMeta};

/// Where a sweep's questions come from: per question, its position in the whole sweep and its
/// question set (see [`set_meta`] for the sets themselves).
pub struct Shape {
    pub positions: Vec<usize>,
    pub sets: Vec<usize>,
}

/// What results record of each question set: path, corpus, counts and digests, of the whole
/// set (a shard runs only some of its questions).
pub fn set_meta(ws: &Workspace) -> Vec<SetMeta> {
    ws.sets
        .iter()
        .map(|set| {
            let corpus = &ws.corpora[set.questions[0].corpus];
            let parts: Vec<&[u8]> = corpus
                .chunks
                .iter()
                .flat_map(|c| [c.id.as_bytes(), c.heading.as_bytes(), c.text.as_bytes()])
                .collect();
            let answerable = set.questions.iter().filter(|q| q.answerable).count();
            SetMeta {
                path: set.path.display().to_string(),
                corpus: corpus.describe(),
                answerable,
                unanswerable: set.questions.len() - answerable,
                digest: crate::base::digest::digest(&[set.text.as_bytes()]),
                corpus_digest: crate::base::digest::digest(&parts),
            }
        })
        .collect()
}

/// The workspace with only the questions of `shard`, the position of each kept question in the
/// whole sweep's order, and its question set.
pub fn shard_workspace(
    mut ws: Workspace,
    shard: Option<Shard>,
) -> (Workspace, Vec<usize>, Vec<usize>) {
    let (mut positions, mut sets) = (Vec::new(), Vec::new());
    let mut position = 0;
    for (i, set) in ws.sets.iter_mut().enumerate() {
        set.questions.retain(|q| {
            position += 1;
            let keep = shard.is_none_or(|sh| sh.contains(&q.id));
            if keep {
                positions.push(position - 1);
                sets.push(i);
            }
            keep
        });
    }
    (ws, positions, sets)
}

impl Results {
    /// The results of `sweep` over `ws` (the questions of `shard`, laid out by `shape`), with
    /// `meta` and the insight its policy asks for; with `labels`, a person's grades in place
    /// of the grader's where given (see [`Results::apply_labels`]), checked against the
    /// results by the reply ids they are applied by.
    pub fn build(
        meta: Meta,
        ws: &Workspace,
        sweep: Sweep,
        shape: Shape,
        shard: Option<Shard>,
        scanner: &Scanner,
        labels: impl FnOnce(&Results) -> anyhow::Result<Option<super::labels::Checked>>,
    ) -> anyhow::Result<Results> {
        let questions: Vec<_> = ws.questions().cloned().collect();
        let stats = per_setting(&sweep.runs, &questions, sweep.settings.len(), &meta.pricing);
        let policy = meta.policy.clone();
        let mut results = Results {
            meta,
            shard,
            positions: shape.positions,
            question_set: shape.sets,
            corpora: sweep.corpora.iter().map(|c| c.describe()).collect(),
            call_log: sweep.call_log,
            chunk_ids: sweep
                .corpora
                .iter()
                .map(|c| c.chunks.iter().map(|ch| ch.id.clone()).collect())
                .collect(),
            flagged: sweep.corpora.iter().map(|c| scanner.flag(c)).collect(),
            chunk_texts: sweep
                .corpora
                .iter()
                .map(|c| {
                    c.chunks
                        .iter()
                        .map(|ch| crate::adapters::corpus::squash(&ch.text))
                        .collect()
                })
                .collect(),
            chunk_labels: sweep
                .corpora
                .iter()
                .map(|c| c.chunks.iter().map(ToString::to_string).collect())
                .collect(),
            expected_scores: sweep.expected_scores,
            expected_by_retrieval: sweep.expected_by_retrieval,
            questions,
            settings: sweep.settings,
            stats,
            runs: sweep.runs,
            calls: sweep.calls,
            insight: Default::default(),
            setting_text: Default::default(),
            tag_stats: Default::default(),
        };
        if let Some(checked) = labels(&results)? {
            results.apply_labels(&checked.labels, checked.ids);
        }
        Ok(results.with_insight(&policy))
    }
}
