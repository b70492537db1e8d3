//! `tags.csv`: every rate by tag, one row per (tag, setting) (see [`crate::analysis::tags`]).
//!
//! The setting's dimension columns as summary.csv has them, then the tag, the counts and the
//! three rates with their 95% Wilson intervals. Settings in grid order, tags in name order; a
//! header alone when no question carries a tag.

use std::io::Write;

use anyhow::Result;

use super::csv::{neutralize, rate_cells, writer};
use super::{Exporter, Results};
use crate::analysis::insight::wilson::Interval;
use crate::analysis::tags::TagStats;

pub struct TagsCsv;

/// tags.csv's first columns after the setting's: the tag and its counts.
const TAG_COUNTS: &[&str] = &[
    "tag",
    "answerable",
    "unanswerable",
    "false_refusal",
    "unwanted_answer",
    "wrong_answer",
];

/// A tag's rate and its 95% Wilson interval.
type TagRate = fn(&TagStats) -> (Option<f64>, Option<Interval>);

/// tags.csv's rates, after the counts: each is three columns, the rate and its interval's
/// bounds (`_lo`, `_hi`), as [`rate_cells`] writes them.
const TAG_RATES: [(&str, TagRate); 3] = [
    ("false_refusal_rate", |t| {
        (t.false_refusal_rate, t.false_refusal_rate_ci)
    }),
    ("unwanted_answer_rate", |t| {
        (t.unwanted_answer_rate, t.unwanted_answer_rate_ci)
    }),
    ("wrong_answer_rate", |t| {
        (t.wrong_answer_rate, t.wrong_answer_rate_ci)
    }),
];

impl Exporter for TagsCsv {
    fn file_name(&self) -> &'static str {
        "tags.csv"
    }

    fn write(&self, r: &Results, out: &mut dyn Write) -> Result<()> {
        let mut w = writer(out);
        let rates = TAG_RATES
            .iter()
            .flat_map(|(name, _)| [name.to_string(), format!("{name}_lo"), format!("{name}_hi")]);
        let header: Vec<String> = r
            .recorded_names()
            .iter()
            .chain(TAG_COUNTS)
            .map(|c| c.to_string())
            .chain(rates)
            .collect();
        w.write_record(&header)?;
        for s in 0..r.settings.len() {
            for (tag, t) in r.by_tag(s) {
                let mut row = r.recorded_values(s).to_vec();
                row.extend([
                    // Tags come from question sets: inert in a spreadsheet.
                    neutralize(tag),
                    t.answerable.to_string(),
                    t.unanswerable.to_string(),
                    t.false_refusal.to_string(),
                    t.unwanted_answer.to_string(),
                    t.wrong_answer.to_string(),
                ]);
                for (_, rate) in TAG_RATES {
                    let (rate, ci) = rate(t);
                    row.extend(rate_cells(rate, ci));
                }
                w.write_record(&row)?;
            }
        }
        w.flush()?;
        Ok(())
    }
}

/// A row of [`table`]: a label and its four cells.
pub(super) type TableRow = (String, [String; 4]);

/// The table by tag that report.md and report.html show: the recommended setting's id, and
/// its rows (`all questions` first, then the tags furthest above the setting's rates first),
/// each a label and its cells: questions (answerable / unanswerable), false refusals, unwanted
/// answers and wrong answers as `rate [interval] (count)`. `None` without a recommended
/// setting or without tags.
pub(super) fn table(r: &Results) -> Option<(&str, Vec<TableRow>)> {
    use crate::analysis::insight::format::rate_with_interval;
    let s = r.insight.recommendation.index?;
    let by_tag = r.by_tag(s);
    if by_tag.is_empty() {
        return None;
    }
    let overall = &r.stats[s];
    let cells = |answerable: usize,
                 unanswerable: usize,
                 rates: [(
        Option<f64>,
        Option<crate::analysis::insight::wilson::Interval>,
        usize,
    ); 3]| {
        let [a, b, c] =
            rates.map(|(rate, ci, n)| format!("{} ({n})", rate_with_interval(rate, ci)));
        [format!("{answerable} / {unanswerable}"), a, b, c]
    };
    let mut rows = vec![(
        "all questions".to_string(),
        cells(
            overall.answerable,
            overall.unanswerable,
            [
                (
                    overall.false_refusal_rate,
                    overall.false_refusal_rate_ci,
                    overall.false_refusal,
                ),
                (
                    overall.unwanted_answer_rate,
                    overall.unwanted_answer_rate_ci,
                    overall.unwanted_answer,
                ),
                (
                    overall.wrong_answer_rate,
                    overall.wrong_answer_rate_ci,
                    overall.wrong_answer,
                ),
            ],
        ),
    )];
    for (tag, t) in crate::analysis::tags::furthest_above(by_tag, overall) {
        rows.push((
            tag.to_string(),
            cells(
                t.answerable,
                t.unanswerable,
                [
                    (
                        t.false_refusal_rate,
                        t.false_refusal_rate_ci,
                        t.false_refusal,
                    ),
                    (
                        t.unwanted_answer_rate,
                        t.unwanted_answer_rate_ci,
                        t.unwanted_answer,
                    ),
                    (t.wrong_answer_rate, t.wrong_answer_rate_ci, t.wrong_answer),
                ],
            ),
        ));
    }
    Some((r.setting_id(s), rows))
}

/// The headers of [`table`]'s rows.
pub(super) const TABLE_HEADERS: [&str; 5] = [
    "tag",
    "questions (ans / unans)",
    "false refusals",
    "unwanted answers",
    "wrong answers",
];

/// What [`table`] shows, in a sentence under it.
pub(super) const TABLE_NOTE: &str = "A question counts under each of its tags; with generated questions, generated and reviewed (hand-written or checked) are tags too. Tags whose rate is furthest above the setting's come first. Every setting's rows are in tags.csv.";

#[cfg(test)]
mod tests {
    use super::*;

    fn render(r: &Results) -> String {
        let mut buf = Vec::new();
        TagsCsv.write(r, &mut buf).unwrap();
        String::from_utf8(buf).unwrap()
    }

    /// A setting's rates by tag are worked out once and kept: every reader gets the same
    /// value, equal to counting its runs afresh.
    #[test]
    fn rates_by_tag_are_worked_out_once_per_setting() {
        let r = super::super::fixture::results();
        for s in 0..r.settings.len() {
            let first = r.by_tag(s);
            assert!(std::ptr::eq(first, r.by_tag(s)), "kept, not recomputed");
            let afresh = crate::analysis::tags::by_tag(r.runs_of(s), &r.questions);
            assert_eq!(format!("{first:?}"), format!("{afresh:?}"));
        }
    }

    #[test]
    fn one_row_per_tag_and_setting_counted_by_hand() {
        let mut r = super::super::fixture::results();
        // The fixture's questions: 0 and 1 answerable, 2 unanswerable.
        r.questions[0].tags = vec!["fees".into(), "=cmd".into()];
        r.questions[2].tags = vec!["fees".into()];
        let csv = render(&r);
        insta::assert_snapshot!(csv);
        // By hand, at min_score=0.2,k=1 (the first setting): question 0 is answered (with the
        // expected text), question 2 answered though unanswerable.
        let row = csv
            .lines()
            .find(|l| l.starts_with("0.2,1,score,numbered,none,fees,"))
            .unwrap();
        assert_eq!(
            row,
            "0.2,1,score,numbered,none,fees,1,1,0,1,0,0.0000,0.0000,0.7935,1.0000,0.2065,1.0000,0.0000,0.0000,0.7935"
        );
    }

    #[test]
    fn a_set_without_tags_writes_the_header_alone() {
        let r = super::super::fixture::results();
        assert_eq!(render(&r).lines().count(), 1);
    }
}
