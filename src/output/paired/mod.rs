//! Two results compared question by question, one setting of each: the questions both ask
//! alike, the questions whose run came out differently, each rate before and after on the
//! shared questions with the exact McNemar test, and the tags whose rates moved. The gate's
//! baseline comparison and `rageval compare` both stand on it.

pub mod mcnemar;

use std::collections::{HashMap, HashSet};
use std::fmt;

use crate::adapters::classify::Outcome;
use crate::analysis::stats::{aggregate, SettingStats};
use crate::analysis::tags::{by_tag, ByTag, TAG_STATS};
use crate::output::report::Results;
use crate::sweep::Run;
use crate::vocab::limit::Stat;

/// The questions of two results, matched by id.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Shared {
    /// In the later results only.
    pub added: Vec<String>,
    /// In the earlier results only.
    pub removed: Vec<String>,
    /// In both, but moved between answerable and unanswerable: not compared.
    pub moved: Vec<String>,
    /// (question in the later results, question in the earlier ones) of the questions both
    /// ask alike, in the earlier results' order.
    pub common: Vec<(usize, usize)>,
}

/// Match the questions of `after` with those of `before` by id.
pub fn shared(after: &Results, before: &Results) -> Shared {
    let after_q: HashMap<&str, usize> = after
        .questions
        .iter()
        .enumerate()
        .map(|(i, q)| (q.id.as_str(), i))
        .collect();
    let before_ids: HashSet<&str> = before.questions.iter().map(|q| q.id.as_str()).collect();
    let mut s = Shared {
        added: after
            .questions
            .iter()
            .filter(|q| !before_ids.contains(q.id.as_str()))
            .map(|q| q.id.clone())
            .collect(),
        ..Shared::default()
    };
    for (b, bq) in before.questions.iter().enumerate() {
        match after_q.get(bq.id.as_str()) {
            None => s.removed.push(bq.id.clone()),
            Some(&a) if after.questions[a].answerable != bq.answerable => {
                s.moved.push(bq.id.clone())
            }
            Some(&a) => s.common.push((a, b)),
        }
    }
    s
}

/// How a run came out, as a list of changes shows it: its outcome, and for an answer whether
/// it counts as wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Graded {
    pub outcome: Outcome,
    /// An answer to an answerable question counted as wrong ([`crate::adapters::classify::Verdict::is_wrong_answer`]).
    pub wrong: bool,
}

impl Graded {
    pub fn of(run: &Run) -> Graded {
        Graded {
            outcome: run.verdict.outcome,
            wrong: run.verdict.is_wrong_answer(),
        }
    }

    /// Whether the run counts toward `stat`'s numerator (one of [`TAG_STATS`]).
    pub fn counts_for(self, stat: Stat) -> bool {
        match stat {
            Stat::UnwantedAnswerRate => self.outcome == Outcome::UnwantedAnswer,
            Stat::FalseRefusalRate => self.outcome == Outcome::FalseRefusal,
            Stat::WrongAnswerRate => self.wrong,
            _ => false,
        }
    }
}

impl fmt::Display for Graded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.wrong {
            write!(f, "{} (wrong)", self.outcome)
        } else {
            write!(f, "{}", self.outcome)
        }
    }
}

/// How good an outcome is: error < wrong < right. A change is for the worse when this falls.
fn rank(o: Outcome) -> u8 {
    match o {
        Outcome::Error => 0,
        Outcome::FalseRefusal | Outcome::UnwantedAnswer => 1,
        Outcome::Answer | Outcome::EarlyRefusal | Outcome::ModelRefusal => 2,
    }
}

/// A shared question whose run came out differently.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub id: String,
    pub before: Graded,
    pub after: Graded,
}

impl Change {
    /// Right -> wrong, or anything -> error (by outcome; a wrong answer is still an answer).
    pub fn is_worse(&self) -> bool {
        rank(self.after.outcome) < rank(self.before.outcome)
    }

    pub fn is_better(&self) -> bool {
        rank(self.after.outcome) > rank(self.before.outcome)
    }
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} -> {}", self.id, self.before, self.after)
    }
}

/// One rate before and after, on the shared questions, with the exact McNemar test of the
/// questions that moved in and out of it.
#[derive(Debug, Clone, PartialEq)]
pub struct RateChange {
    pub stat: Stat,
    pub before: Option<f64>,
    pub after: Option<f64>,
    /// Questions counted by the rate after but not before.
    pub up: u64,
    /// Counted before but not after.
    pub down: u64,
    /// Exact McNemar p-value of `up` against `down`.
    pub p_value: f64,
}

/// A rate of one tag that moved between the two results.
#[derive(Debug, Clone, PartialEq)]
pub struct TagChange {
    pub tag: String,
    /// The statistic, as `unwanted_answer_rate`.
    pub stat: &'static str,
    pub before: f64,
    pub after: f64,
}

impl fmt::Display for TagChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} {:.3} -> {:.3}",
            self.tag, self.stat, self.before, self.after
        )
    }
}

/// One setting of each results over their shared questions.
#[derive(Debug, Clone)]
pub struct Paired {
    /// The earlier setting's statistics over the shared questions.
    pub before: SettingStats,
    pub after: SettingStats,
    /// The shared questions whose run changed, in the earlier results' order.
    pub changes: Vec<Change>,
    pub before_tags: ByTag,
    pub after_tags: ByTag,
}

/// Setting `s` of `after` against setting `bs` of `before`, over `common` (see [`Shared`]).
pub fn pair(
    (after, s): (&Results, usize),
    (before, bs): (&Results, usize),
    common: &[(usize, usize)],
) -> Paired {
    let (runs, bruns) = (after.runs_of(s), before.runs_of(bs));
    // A setting an adaptive sweep dropped has no run of its later questions: the pair is over
    // the questions both ran.
    let both: Vec<(&Run, &Run)> = common
        .iter()
        .filter_map(|&(a, b)| Some((runs.get(a)?, bruns.get(b)?)))
        .collect();
    let now = || both.iter().map(|&(a, _)| a);
    let then = || both.iter().map(|&(_, b)| b);
    let changes = both
        .iter()
        .filter_map(|&(run, brun)| {
            let a = run.question;
            let (was, is) = (Graded::of(brun), Graded::of(run));
            (was != is).then(|| Change {
                id: after.questions[a].id.clone(),
                before: was,
                after: is,
            })
        })
        .collect();
    Paired {
        after: aggregate(now(), &after.questions, &after.meta.pricing),
        before: aggregate(then(), &before.questions, &before.meta.pricing),
        changes,
        after_tags: by_tag(now(), &after.questions),
        before_tags: by_tag(then(), &before.questions),
    }
}

impl Paired {
    /// The changes for the worse (see [`Change::is_worse`]).
    pub fn worse(&self) -> impl Iterator<Item = &Change> {
        self.changes.iter().filter(|c| c.is_worse())
    }

    pub fn better(&self) -> impl Iterator<Item = &Change> {
        self.changes.iter().filter(|c| c.is_better())
    }

    /// The exact McNemar p-value of the changes for the worse against those for the better.
    pub fn p_value(&self) -> f64 {
        mcnemar::p_value(self.worse().count() as u64, self.better().count() as u64)
    }

    /// Each rate a tag counts ([`TAG_STATS`]) before and after, with its McNemar test.
    pub fn rates(&self) -> Vec<RateChange> {
        TAG_STATS
            .iter()
            .map(|&stat| {
                let moved = |into: bool| {
                    self.changes
                        .iter()
                        .filter(|c| {
                            c.after.counts_for(stat) == into && c.before.counts_for(stat) != into
                        })
                        .count() as u64
                };
                let (up, down) = (moved(true), moved(false));
                RateChange {
                    stat,
                    before: self.before.stat(stat),
                    after: self.after.stat(stat),
                    up,
                    down,
                    p_value: mcnemar::p_value(up, down),
                }
            })
            .collect()
    }

    /// The rates of the tags both sides hold for which `keep(before, after)`, in tag order.
    pub fn tag_changes(&self, keep: impl Fn(f64, f64) -> bool) -> Vec<TagChange> {
        let mut out = Vec::new();
        for (tag, t) in &self.after_tags {
            let Some(b) = self.before_tags.get(tag) else {
                continue;
            };
            for stat in TAG_STATS {
                if let (Some(after), Some(before)) = (t.stat(stat), b.stat(stat)) {
                    if keep(before, after) {
                        out.push(TagChange {
                            tag: tag.clone(),
                            stat: stat.name(),
                            before,
                            after,
                        });
                    }
                }
            }
        }
        out
    }
}
