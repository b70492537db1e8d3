//! Every rate by tag: the outcome counts and the three rates of one setting, over the questions
//! that carry each tag, so that a team sees which kind of question leaks.
//!
//! A question counts under each of its tags. When the sweep holds generated questions, the
//! generated/reviewed split counts as two more tags: `generated` (written by `rageval
//! generate`) and `reviewed` (written or checked by a person: every hand-written question, and
//! a generated one marked `reviewed: true`), the split `sweep --only` makes. The generator's
//! kinds (`near-miss`, `off-topic`, `false-premise`) are tags it writes. The rates are counted
//! exactly as [`crate::analysis::stats::aggregate`] counts them, so a tag that every question
//! carries has its setting's rates.

use indexmap::IndexMap;
use serde::Serialize;

use crate::adapters::classify::Outcome;
use crate::adapters::evalset::Question;
use crate::analysis::insight::wilson::Interval;
use crate::analysis::stats::SettingStats;
use crate::sweep::Run;
use crate::vocab::limit::Stat;

/// The tag of generated questions.
pub const GENERATED: &str = "generated";
/// The tag of questions a person wrote or reviewed, when the sweep holds generated ones.
pub const REVIEWED: &str = "reviewed";

/// The rates by tag of one setting, tags in name order.
pub type ByTag = IndexMap<String, TagStats>;

/// One tag's counts and rates at one setting.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct TagStats {
    /// Answerable questions with the tag.
    pub answerable: usize,
    /// Unanswerable questions with the tag.
    pub unanswerable: usize,
    /// Of the answerable ones, refused (early or by the model).
    pub false_refusal: usize,
    /// Of the unanswerable ones, answered.
    pub unwanted_answer: usize,
    /// Of the answerable ones, answered wrongly (see `SettingStats::wrong_answer`).
    pub wrong_answer: usize,
    /// false_refusal / answerable (null with no answerable question).
    pub false_refusal_rate: Option<f64>,
    pub false_refusal_rate_ci: Option<Interval>,
    /// unwanted_answer / unanswerable (null with no unanswerable question).
    pub unwanted_answer_rate: Option<f64>,
    pub unwanted_answer_rate_ci: Option<Interval>,
    /// wrong_answer / answerable (null with no answerable question).
    pub wrong_answer_rate: Option<f64>,
    pub wrong_answer_rate_ci: Option<Interval>,
}

/// The statistics a tag is held to: the three rates it counts.
pub const TAG_STATS: [Stat; 3] = [
    Stat::UnwantedAnswerRate,
    Stat::FalseRefusalRate,
    Stat::WrongAnswerRate,
];

impl TagStats {
    /// The value of one of [`TAG_STATS`]; `None` when it is undefined or not counted by tag.
    pub fn stat(&self, stat: Stat) -> Option<f64> {
        match stat {
            Stat::UnwantedAnswerRate => self.unwanted_answer_rate,
            Stat::FalseRefusalRate => self.false_refusal_rate,
            Stat::WrongAnswerRate => self.wrong_answer_rate,
            _ => None,
        }
    }

    fn add(&mut self, q: &Question, run: &Run) {
        if q.answerable {
            self.answerable += 1;
        } else {
            self.unanswerable += 1;
        }
        match run.verdict.outcome {
            Outcome::FalseRefusal => self.false_refusal += 1,
            Outcome::UnwantedAnswer => self.unwanted_answer += 1,
            _ => {}
        }
        self.wrong_answer += usize::from(run.verdict.is_wrong_answer());
    }

    fn finish(&mut self) {
        use crate::analysis::stats::rate;
        (self.false_refusal_rate, self.false_refusal_rate_ci) =
            rate(self.false_refusal, self.answerable);
        (self.unwanted_answer_rate, self.unwanted_answer_rate_ci) =
            rate(self.unwanted_answer, self.unanswerable);
        (self.wrong_answer_rate, self.wrong_answer_rate_ci) =
            rate(self.wrong_answer, self.answerable);
    }

    /// How far the tag's worst rate is above the setting's: the largest of (tag rate - overall
    /// rate) over the three rates both define; `None` when they define none.
    pub fn excess(&self, overall: &SettingStats) -> Option<f64> {
        TAG_STATS
            .iter()
            .filter_map(|&stat| Some(self.stat(stat)? - overall.stat(stat)?))
            .max_by(f64::total_cmp)
    }
}

/// The tags `q` counts under: its own, then `generated` or `reviewed` (both for a reviewed
/// generated question) when `split` (the sweep holds generated questions), each once.
pub fn question_tags(q: &Question, split: bool) -> Vec<&str> {
    let mut tags: Vec<&str> = Vec::with_capacity(q.tags.len() + 2);
    let extra = [
        (split && q.origin.is_some()).then_some(GENERATED),
        (split && q.reviewed()).then_some(REVIEWED),
    ];
    for tag in q
        .tags
        .iter()
        .map(String::as_str)
        .chain(extra.into_iter().flatten())
    {
        if !tags.contains(&tag) {
            tags.push(tag);
        }
    }
    tags
}

/// Whether the questions hold generated ones, so that the generated/reviewed split is counted.
pub fn has_split(questions: &[Question]) -> bool {
    questions.iter().any(|q| q.origin.is_some())
}

/// The rates by tag of the runs of one setting (one run per question), tags in name order.
pub fn by_tag<'a>(runs: impl IntoIterator<Item = &'a Run>, questions: &[Question]) -> ByTag {
    let split = has_split(questions);
    let mut out = ByTag::new();
    for run in runs {
        let q = &questions[run.question];
        for tag in question_tags(q, split) {
            match out.get_mut(tag) {
                Some(stats) => stats.add(q, run),
                None => {
                    let mut stats = TagStats::default();
                    stats.add(q, run);
                    out.insert(tag.to_string(), stats);
                }
            }
        }
    }
    out.sort_keys();
    out.values_mut().for_each(TagStats::finish);
    out
}

/// The tags of `by_tag` with the one furthest above `overall` first (see [`TagStats::excess`]):
/// tags with no comparable rate last, ties by name.
pub fn furthest_above<'a>(
    by_tag: &'a ByTag,
    overall: &SettingStats,
) -> Vec<(&'a str, &'a TagStats)> {
    let mut tags: Vec<(&str, &TagStats)> = by_tag.iter().map(|(t, s)| (t.as_str(), s)).collect();
    tags.sort_by(|a, b| {
        let (x, y) = (a.1.excess(overall), b.1.excess(overall));
        match (x, y) {
            (Some(x), Some(y)) => y.total_cmp(&x),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => std::cmp::Ordering::Equal,
        }
        .then(a.0.cmp(b.0))
    });
    tags
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::stats::{aggregate, Pricing};

    /// The fixture's questions, tagged: the answerable ones `billing` and `all`, the others
    /// `all` (and one `billing` too).
    fn tagged() -> crate::results::Results {
        let mut r = crate::output::report::fixture::results();
        for q in &mut r.questions {
            q.tags = if q.answerable {
                vec!["billing".into(), "all".into(), "billing".into()]
            } else {
                vec!["all".into()]
            };
        }
        let first_unanswerable = r.questions.iter().position(|q| !q.answerable).unwrap();
        r.questions[first_unanswerable].tags.push("billing".into());
        r
    }

    #[test]
    fn a_tag_every_question_carries_has_its_settings_rates() {
        let r = tagged();
        for s in 0..r.settings.len() {
            let by = by_tag(r.runs_of(s), &r.questions);
            let all = &by["all"];
            let st = aggregate(r.runs_of(s), &r.questions, &Pricing::default());
            assert_eq!(
                (all.answerable, all.unanswerable, all.false_refusal),
                (st.answerable, st.unanswerable, st.false_refusal)
            );
            assert_eq!(
                (all.unwanted_answer, all.wrong_answer),
                (st.unwanted_answer, st.wrong_answer)
            );
            assert_eq!(all.unwanted_answer_rate_ci, st.unwanted_answer_rate_ci);
            assert_eq!(all.wrong_answer_rate, st.wrong_answer_rate);
            assert_eq!(all.excess(&st), Some(0.0));
        }
    }

    #[test]
    fn a_question_counts_once_under_each_of_its_tags() {
        let r = tagged();
        let by = by_tag(r.runs_of(0), &r.questions);
        assert_eq!(by.keys().collect::<Vec<_>>(), ["all", "billing"]);
        let answerable = r.questions.iter().filter(|q| q.answerable).count();
        // The repeated `billing` of the answerable questions counts once.
        assert_eq!(
            (by["billing"].answerable, by["billing"].unanswerable),
            (answerable, 1)
        );
        // A hand-written set has no generated/reviewed split.
        assert!(!by.contains_key(REVIEWED));
    }

    #[test]
    fn generated_questions_split_the_set_into_generated_and_reviewed() {
        let mut r = tagged();
        let origin = |reviewed| crate::adapters::evalset::Origin {
            model: "mock".into(),
            from: "a.md#A".into(),
            seed: 0,
            reviewed,
        };
        r.questions[0].origin = Some(origin(false));
        r.questions[1].origin = Some(origin(true));
        let by = by_tag(r.runs_of(0), &r.questions);
        let n = r.questions.len();
        let generated = &by[GENERATED];
        assert_eq!(generated.answerable + generated.unanswerable, 2);
        let reviewed = &by[REVIEWED];
        assert_eq!(reviewed.answerable + reviewed.unanswerable, n - 1);
        assert_eq!(
            question_tags(&r.questions[1], true),
            ["billing", "all", GENERATED, REVIEWED]
        );
    }

    #[test]
    fn tags_furthest_above_the_overall_rate_come_first() {
        let worse = TagStats {
            unanswerable: 2,
            unwanted_answer: 2,
            unwanted_answer_rate: Some(1.0),
            ..TagStats::default()
        };
        let same = TagStats {
            answerable: 2,
            false_refusal_rate: Some(0.5),
            ..TagStats::default()
        };
        let overall = SettingStats {
            unwanted_answer_rate: Some(0.25),
            false_refusal_rate: Some(0.5),
            ..SettingStats::default()
        };
        let by: ByTag = [("a", same), ("b", worse), ("c", TagStats::default())]
            .into_iter()
            .map(|(t, s)| (t.to_string(), s))
            .collect();
        let order: Vec<&str> = furthest_above(&by, &overall).iter().map(|t| t.0).collect();
        assert_eq!(order, ["b", "a", "c"]);
    }
}
