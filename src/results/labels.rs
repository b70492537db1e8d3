//! Labels on results: which distinct model reply each run holds (its reply id), and the
//! results with a person's labels in place of the grader's reading, every count recomputed
//! (docs/labels.md).

use std::collections::HashMap;

use crate::adapters::classify::{relabel, reply_id, Label, Labelled};
use crate::sweep::Run;

use super::Results;

/// A label as read from a labels file: the person's grade and the reply's inclusion
/// probability.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Given {
    pub label: Label,
    pub inclusion: f64,
}

/// Labels by reply id; only replies with something given.
pub type LabelSet = HashMap<String, Given>;

/// A labels file's labels, checked against results by every run's reply id, and those ids,
/// worked out once for the check and for applying the labels.
pub struct Checked {
    pub labels: LabelSet,
    /// [`Results::reply_ids`] of the results checked.
    pub ids: Vec<Option<String>>,
}

impl Results {
    /// The reply id of a run whose model replied; `None` for an early refusal (exact, no
    /// reply) and a failed call.
    pub fn reply_id(&self, run: &Run) -> Option<String> {
        run.call?;
        if run.error.is_some() {
            return None;
        }
        let texts = self.chunk_texts.get(self.questions[run.question].corpus);
        let passages = run.passages.iter().map(|h| {
            texts
                .and_then(|t| t.get(h.chunk))
                .map_or("", String::as_str)
        });
        Some(reply_id(&run.asked, passages, &run.answer))
    }

    /// Every run's reply id, in run order: runs that share a call share a prompt and a reply,
    /// so each call's id is worked out once.
    pub fn reply_ids(&self) -> Vec<Option<String>> {
        self.reply_ids_of(|_| true)
    }

    /// [`Results::reply_ids`], `None` for the runs `keep` leaves out (whose ids are not
    /// worked out: a digest of the prompt and the reply is no small work per call).
    fn reply_ids_of(&self, keep: impl Fn(&Run) -> bool) -> Vec<Option<String>> {
        let mut by_call: HashMap<u32, Option<String>> = HashMap::new();
        self.runs
            .iter()
            .map(|run| match run.call.filter(|_| keep(run)) {
                Some(c) => by_call
                    .entry(c)
                    .or_insert_with(|| self.reply_id(run))
                    .clone(),
                None => None,
            })
            .collect()
    }

    /// The results with `labels` in place of the grader's reading in every run whose reply
    /// has one; a run labelled before and not now gets the grader's verdict back. The
    /// statistics and the insight are recomputed.
    pub fn with_labels(self, labels: &LabelSet) -> Results {
        let ids = self.reply_ids();
        self.with_labels_by(labels, ids)
    }

    /// [`Results::with_labels`] by reply ids already worked out (see
    /// [`Results::apply_labels`]).
    pub fn with_labels_by(mut self, labels: &LabelSet, ids: Vec<Option<String>>) -> Results {
        self.apply_labels(labels, ids);
        let policy = self.meta.policy.clone();
        self.with_insight(&policy)
    }

    /// [`Results::with_labels`] without the insight: the runs and the statistics. `ids` is
    /// every run's reply id ([`Results::reply_ids`]), which the caller has worked out to
    /// check the labels file against these results: digesting every prompt and reply again
    /// here would double that work.
    pub fn apply_labels(&mut self, labels: &LabelSet, ids: Vec<Option<String>>) {
        assert_eq!(ids.len(), self.runs.len(), "one reply id per run");
        for (run, id) in self.runs.iter_mut().zip(ids) {
            let graded = match run.labelled.take() {
                Some(l) => l.graded,
                None => run.verdict.clone(),
            };
            let given = id
                .and_then(|id| labels.get(&id))
                .filter(|g| g.label.is_given());
            match given {
                Some(g) => {
                    run.verdict = relabel(&graded, &g.label, &self.questions[run.question]);
                    run.labelled = Some(Labelled {
                        graded,
                        inclusion: g.inclusion,
                    });
                }
                None => run.verdict = graded,
            }
        }
        self.stats = crate::analysis::stats::per_setting(
            &self.runs,
            &self.questions,
            self.settings.len(),
            &self.meta.pricing,
        );
        // The rates by tag were worked out from the runs as they were.
        self.tag_stats = Default::default();
    }

    /// Runs whose verdict a person's label gave.
    pub fn labelled_runs(&self) -> usize {
        self.runs.iter().filter(|r| r.labelled.is_some()).count()
    }

    /// The reply ids of the labelled runs, in run order; `None` for every other run.
    pub(super) fn labelled_reply_ids(&self) -> Vec<Option<String>> {
        self.reply_ids_of(|run| run.labelled.is_some())
    }

    /// Distinct labelled replies: what a certificate with labels rests on.
    pub fn labelled_replies(&self) -> u64 {
        if self.labelled_runs() == 0 {
            return 0;
        }
        let ids = self.labelled_reply_ids();
        let labelled: std::collections::HashSet<&str> =
            ids.iter().filter_map(|id| id.as_deref()).collect();
        labelled.len() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapters::classify::Outcome;
    use crate::output::report::fixture;

    #[test]
    fn a_label_counts_in_every_run_sharing_the_reply_and_can_be_taken_back() {
        let r = fixture::results();
        let ids = r.reply_ids();
        // The fixture's first answered run: label it refused.
        let (i, id) = ids
            .iter()
            .enumerate()
            .find_map(|(i, id)| {
                let run = &r.runs[i];
                (run.verdict.outcome == Outcome::Answer).then(|| (i, id.clone().unwrap()))
            })
            .expect("an answered run");
        let sharing: Vec<usize> = (0..r.runs.len())
            .filter(|&j| ids[j].as_deref() == Some(id.as_str()))
            .collect();
        assert!(sharing.contains(&i));
        let before = r.stats.iter().map(|s| s.false_refusal).sum::<usize>();
        let graded = r.runs[i].verdict.clone();
        let mut labels = LabelSet::new();
        labels.insert(
            id.clone(),
            Given {
                label: Label {
                    refused: Some(true),
                    correct: None,
                },
                inclusion: 0.5,
            },
        );
        let r = r.with_labels(&labels);
        for &j in &sharing {
            assert_eq!(r.runs[j].verdict.outcome, Outcome::FalseRefusal);
            assert_eq!(r.runs[j].labelled.as_ref().unwrap().inclusion, 0.5);
        }
        assert_eq!(r.runs[i].labelled.as_ref().unwrap().graded, graded);
        let after = r.stats.iter().map(|s| s.false_refusal).sum::<usize>();
        assert_eq!(after, before + sharing.len());
        assert_eq!(r.labelled_runs(), sharing.len());
        // Labelling again starts from the grader's verdict; no label gives it back.
        let r = r.with_labels(&labels).with_labels(&LabelSet::new());
        assert_eq!(r.runs[i].verdict, graded);
        assert_eq!(r.labelled_runs(), 0);
        assert_eq!(
            r.stats.iter().map(|s| s.false_refusal).sum::<usize>(),
            before
        );
    }
}
