//! The calls a batch engine answered and what they cost at its price: per setting (the
//! `batch_calls` and `batch_cost` columns of summary.csv) and for the whole sweep (its summary
//! line).

use std::collections::BTreeSet;

use super::Results;
use crate::vocab::call::CallRecord;

impl Results {
    /// The distinct calls a batch engine answered, of setting `setting`'s runs (every run's
    /// with `None`).
    fn batch_records(&self, setting: Option<usize>) -> Vec<&CallRecord> {
        let Some(s) = setting else {
            return self.call_log.values().filter(|c| c.batch).collect();
        };
        let mut calls = BTreeSet::new();
        for run in self.runs_of(s) {
            calls.extend(
                [run.call, run.rewrite_call, run.judge_call]
                    .into_iter()
                    .flatten(),
            );
            calls.extend(run.repeats.iter().filter_map(|r| r.call));
        }
        calls
            .into_iter()
            .filter_map(|c| self.call_log.get_index(c as usize).map(|(_, r)| r))
            .filter(|c| c.batch)
            .collect()
    }

    /// How many distinct calls a batch engine answered, of setting `setting` (of the sweep with
    /// `None`).
    pub fn batch_calls(&self, setting: Option<usize>) -> usize {
        self.batch_records(setting)
            .iter()
            .filter(|c| c.error.is_none())
            .count()
    }

    /// What those calls cost at the batch price (`pricing.batch_discount` off).
    pub fn batch_cost(&self, setting: Option<usize>) -> f64 {
        let p = &self.meta.pricing;
        self.batch_records(setting)
            .into_iter()
            .map(|c| p.batch_cost(c))
            // `sum` of no float is -0.0, which a report would print as `-0.000000`.
            .fold(0.0, |a, b| a + b)
    }
}
