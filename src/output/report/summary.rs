//! The summary of a sweep for people, built once from the results: what the terminal prints
//! after its table, and what report.md and report.html say around theirs. Each renders these
//! parts in its own markup and order; none assembles them again from the results.

use super::Results;

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
    /// The grader's checks on its own grades, when one counted something.
    pub checks: Option<String>,
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
            checks: r.grader_checks().line(),
        }
    }
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
}
