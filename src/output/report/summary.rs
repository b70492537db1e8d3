//! The summary of a sweep for people, built once from the results: what the terminal prints
//! after its table, and what report.md and report.html say around theirs. Each renders these
//! parts in its own markup and order; none assembles them again from the results.

use super::Results;
use crate::analysis::insight::format::percent;
use crate::base::text::plural;
use crate::results::grader::{ErrorRate, GraderError};

/// The parts of a sweep's summary, each said once.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    pub questions: usize,
    pub settings: usize,
    pub runs: usize,
    /// `models: NAME = MODEL, ...` and `embedders: ...`, when profiles are swept.
    pub profiles: Vec<String>,
    /// The recommendation, its reason first, then what it needs, its stability and its
    /// cross-validation (each when there is one).
    pub recommendation: Vec<String>,
    pub separability: Separability,
    /// The judge's agreement with the string rules, when a judge graded the answers.
    pub judge: Option<String>,
    /// The reranker and its calls, when there is one.
    pub reranker: Option<String>,
    /// The passages flagged by the injection scan that reached a prompt.
    pub flagged: Option<String>,
    /// How often repeated answers flipped, with `--repeat`.
    pub repeats: Option<String>,
    /// With labels: the grader's error against them ([`Results::grader_error`]), its line,
    /// and a warning when it disagrees with them too often.
    pub grader: Option<crate::results::grader::GraderError>,
    pub labels: Option<String>,
    pub grader_warning: Option<String>,
    /// The grader's checks on its own grades, when one counted something.
    pub checks: Option<String>,
    /// The settings an adaptive sweep dropped, with the questions each ran.
    pub dropped: Option<String>,
}

/// How well the best retrieval score tells answerable from unanswerable questions.
#[derive(Debug, Clone, PartialEq)]
pub struct Separability {
    /// The whole grid's, of the score minScore filters (with a reranker, the rerank score).
    pub score: String,
    /// With a reranker, the retrieval score's before reranking.
    pub retrieval: Option<String>,
    /// With several retrieval variants, one row each ([`super::retrieval::rows`]): the
    /// whole-grid figures pool scores that do not compare, and these stand in for them.
    pub per_variant: Vec<Vec<String>>,
}

impl Summary {
    pub fn of(r: &Results) -> Summary {
        let ins = &r.insight;
        let grader = r.grader_error();
        Summary {
            questions: r.questions.len(),
            settings: r.settings.len(),
            runs: r.runs.len(),
            profiles: [r.meta.models_line(), r.meta.embedders_line()]
                .into_iter()
                .flatten()
                .collect(),
            recommendation: crate::output::explain::Explain::of(r).lines(),
            separability: Separability {
                score: ins.separability.summary(),
                retrieval: ins.retrieval_separability.as_ref().map(|s| s.summary()),
                per_variant: super::retrieval::rows(r),
            },
            judge: r.judge_summary(),
            reranker: r.rerank_summary(),
            flagged: r.flagged_summary(),
            repeats: crate::results::repeat_line(r),
            labels: grader.as_ref().map(labels_line),
            grader_warning: grader.as_ref().and_then(grader_warning),
            grader,
            checks: r.grader_checks().line(),
            dropped: dropped_line(r),
        }
    }
}

/// `dropped: min_score=0.1,k=8 after 40 questions (20 answerable, 20 unanswerable); ...` when
/// an adaptive sweep dropped settings.
fn dropped_line(r: &Results) -> Option<String> {
    let each: Vec<String> = (0..r.settings.len())
        .filter_map(|s| {
            let [a, u] = r.dropped_after(s)?;
            Some(format!(
                "{} after {} ({a} answerable, {u} unanswerable)",
                r.setting_id(s),
                plural(a + u, "question")
            ))
        })
        .collect();
    (!each.is_empty()).then(|| {
        format!(
            "dropped: {}; each was out (a rate's anytime-valid lower bound above its limit), so it got no further model calls, its rates stand over the questions it ran, and it is never recommended",
            each.join("; ")
        )
    })
}

/// `2/4 (50% [15%, 85%])`, or `-` when nothing was read.
pub fn error_rate(e: &ErrorRate) -> String {
    match (e.rate, e.ci) {
        (Some(rate), Some(ci)) => format!(
            "{}/{} ({} [{}, {}])",
            e.errors,
            e.of,
            percent(rate),
            percent(ci.lo),
            percent(ci.hi)
        ),
        _ => "-".into(),
    }
}

/// One line: how many replies were labelled, the grader's four error rates against them, and
/// each other grader's errors.
fn labels_line(g: &GraderError) -> String {
    let mut line = format!(
        "labels: {} ({}); the grader against them:",
        plural(g.replies, "labelled reply").replace("replys", "replies"),
        plural(g.runs, "run")
    );
    let mut graders = g.graders.iter();
    if let Some(all) = graders.next() {
        let rates: Vec<String> = all
            .rates()
            .iter()
            .map(|(name, e)| format!("{name} {}", error_rate(e)))
            .collect();
        line.push(' ');
        line.push_str(&rates.join(", "));
    }
    for c in graders {
        let (errors, of) = c
            .rates()
            .iter()
            .fold((0, 0), |(e, o), (_, r)| (e + r.errors, o + r.of));
        line.push_str(&format!("; {} {errors}/{of} wrong", c.grader));
    }
    line
}

/// The warning when the grader disagrees with the labels on more than the set share.
pub fn grader_warning(g: &GraderError) -> Option<String> {
    g.warns().then(|| {
        format!(
            "warning: the grader disagrees with the labels on {} of {} labelled replies ({}, more than {}): rates without labels would mislead; the counts use the labels, and report.md shows where the grader errs",
            g.disagreements,
            g.replies,
            percent(g.disagreement),
            percent(crate::results::grader::WARN_DISAGREEMENT)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::report::{fixture, terminal, Exporter, HtmlReport, MarkdownReport};

    /// Each report for people shows what the summary says, not its own reading of the
    /// results: a summary changed after it was built reaches all three.
    #[test]
    fn the_terminal_markdown_and_html_render_the_one_summary() {
        let r = fixture::results();
        let mut s = Summary::of(&r);
        assert_eq!(
            (s.questions, s.settings),
            (r.questions.len(), r.settings.len())
        );
        s.separability.score = "SEPARABILITY-MARK".into();
        s.flagged = Some("FLAGGED-MARK".into());
        s.profiles = vec!["PROFILES-MARK".into()];
        let render = |e: &dyn Exporter| {
            let mut buf = Vec::new();
            e.write_with(&r, &s, &mut buf).unwrap();
            String::from_utf8(buf).unwrap()
        };
        let md = render(&MarkdownReport);
        let html = render(&HtmlReport);
        let term = terminal::table_text(&r, &s, &[], true);
        for (name, text) in [("report.md", &md), ("terminal", &term)] {
            for mark in ["SEPARABILITY-MARK", "FLAGGED-MARK", "PROFILES-MARK"] {
                assert!(text.contains(mark), "{name} lacks {mark}:\n{text}");
            }
        }
        for mark in ["SEPARABILITY-MARK", "FLAGGED-MARK"] {
            assert!(html.contains(mark), "report.html lacks {mark}");
        }
    }

    /// A setting an adaptive sweep dropped is marked in every report for people: `dropped
    /// after N` in the pick column, a line naming its questions per class, and its unrun cells
    /// in the drill-down; a plain sweep's reports say none of it.
    #[test]
    fn a_dropped_setting_is_marked_in_every_report() {
        let render = |e: &dyn Exporter, r: &Results| {
            let mut buf = Vec::new();
            e.write(r, &mut buf).unwrap();
            String::from_utf8(buf).unwrap()
        };
        let line = "dropped: min_score=0.2,k=2 after 2 questions (1 answerable, 1 unanswerable); each was out";
        let r = fixture::dropped();
        let s = Summary::of(&r);
        assert!(s.dropped.as_deref().unwrap().starts_with(line));
        let term = terminal::table_text(&r, &s, &[], true);
        let md = render(&MarkdownReport, &r);
        let html = render(&HtmlReport, &r);
        for (name, text) in [
            ("terminal", &term),
            ("report.md", &md),
            ("report.html", &html),
        ] {
            assert_eq!(
                text.matches("dropped after 2").count(),
                1,
                "{name}:\n{text}"
            );
            assert!(text.contains(line), "{name}:\n{text}");
        }
        assert!(html.contains(
            "title=\"min_score=0.2,k=2: not run: the adaptive sweep had dropped this setting\""
        ));
        let plain = fixture::results();
        assert_eq!(Summary::of(&plain).dropped, None);
        for e in [&MarkdownReport as &dyn Exporter, &HtmlReport] {
            assert!(!render(e, &plain).contains("dropped"));
        }
    }
}
