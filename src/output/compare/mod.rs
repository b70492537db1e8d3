//! `rageval compare A B`: what changed between two runs, question by question, at every setting
//! both ran: each rate before and after on the questions both ask alike with the exact McNemar
//! test, the questions whose run came out differently, the tags whose rates moved, and what
//! the question sets gained and lost. Built on [`crate::output::paired`], as the gate's
//! baseline comparison is.

mod render;

use anyhow::{bail, Result};

pub use render::{human, markdown};

use crate::output::gate::policy::listed;
use crate::output::paired::{self, Change, RateChange, TagChange};
use crate::output::report::Results;

/// Rates within this distance are equal (they are ratios of small counts).
const EPS: f64 = 1e-9;

/// One of the two results, as the comparison names it.
#[derive(Debug, Clone, PartialEq)]
pub struct Side {
    pub path: String,
    pub questions: usize,
}

/// What changed from `before` to `after`.
#[derive(Debug, Clone, PartialEq)]
pub struct Diff {
    pub before: Side,
    pub after: Side,
    /// Questions both ask alike: the ones compared.
    pub common: usize,
    /// In `after` only.
    pub added: Vec<String>,
    /// In `before` only.
    pub removed: Vec<String>,
    /// In both but moved between answerable and unanswerable: not compared.
    pub moved: Vec<String>,
    /// Setting ids in one results only.
    pub only_before: Vec<String>,
    pub only_after: Vec<String>,
    /// The two were made with different configurations (`config_digest` differs).
    pub config_changed: bool,
    /// Every setting both ran, in `before`'s order.
    pub settings: Vec<SettingDiff>,
}

/// One setting both results ran.
#[derive(Debug, Clone, PartialEq)]
pub struct SettingDiff {
    pub setting: String,
    /// Each rate before and after, with its McNemar test.
    pub rates: Vec<RateChange>,
    /// The shared questions whose run came out differently, in `before`'s order.
    pub changes: Vec<Change>,
    /// Of `changes`, those for the worse and for the better (see [`Change::is_worse`]).
    pub worse: usize,
    pub better: usize,
    /// Exact McNemar p-value of `worse` against `better`, as the gate computes it.
    pub p_value: f64,
    /// Tag rates that moved.
    pub tags: Vec<TagChange>,
}

/// Compare `after` with `before` at every setting both hold.
pub fn diff(
    (before, before_path): (&Results, &str),
    (after, after_path): (&Results, &str),
) -> Result<Diff> {
    let shared = paired::shared(after, before);
    if shared.common.is_empty() {
        bail!(
            "`{before_path}` and `{after_path}` share no question to compare (by id, answerable or not alike): `{before_path}` has {}, `{after_path}` has {}",
            listed(before.questions.iter().map(|q| q.id.as_str()), 5),
            listed(after.questions.iter().map(|q| q.id.as_str()), 5),
        );
    }
    let after_ids: Vec<String> = after.settings.iter().map(|s| s.id()).collect();
    let before_ids: Vec<String> = before.settings.iter().map(|s| s.id()).collect();
    let mut settings = Vec::new();
    for (bs, id) in before_ids.iter().enumerate() {
        let Some(s) = after_ids.iter().position(|a| a == id) else {
            continue;
        };
        let p = paired::pair((after, s), (before, bs), &shared.common);
        settings.push(SettingDiff {
            setting: id.clone(),
            rates: p.rates(),
            worse: p.worse().count(),
            better: p.better().count(),
            p_value: p.p_value(),
            tags: p.tag_changes(|b, a| (a - b).abs() > EPS),
            changes: p.changes,
        });
    }
    if settings.is_empty() {
        bail!(
            "`{before_path}` and `{after_path}` share no setting to compare: `{before_path}` ran {}, `{after_path}` ran {}",
            listed(before_ids.iter().map(String::as_str), 5),
            listed(after_ids.iter().map(String::as_str), 5),
        );
    }
    let only = |ids: &[String], other: &[String]| -> Vec<String> {
        ids.iter().filter(|i| !other.contains(i)).cloned().collect()
    };
    Ok(Diff {
        before: Side {
            path: before_path.to_string(),
            questions: before.questions.len(),
        },
        after: Side {
            path: after_path.to_string(),
            questions: after.questions.len(),
        },
        common: shared.common.len(),
        added: shared.added,
        removed: shared.removed,
        moved: shared.moved,
        only_before: only(&before_ids, &after_ids),
        only_after: only(&after_ids, &before_ids),
        config_changed: before.meta.identity.digest != after.meta.identity.digest,
        settings,
    })
}

#[cfg(test)]
mod tests;
