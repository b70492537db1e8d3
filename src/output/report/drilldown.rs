//! The per-question drill-down of report.html: the outcome at every setting, and each distinct
//! reply with its citations shown as labelled sources (`[file.md > Heading]`).
//!
//! Questions, answers, headings and error messages are untrusted text: all of it is written
//! through [`escape`].

use std::fmt::Write as _;

use super::Results;
use crate::adapters::classify::Outcome;
use crate::adapters::prompt::citation_spans;
use crate::base::escape::html as escape;
use crate::sweep::Run;

/// A short cell text for an outcome.
fn short(o: Outcome) -> &'static str {
    match o {
        Outcome::Answer => "answer",
        Outcome::EarlyRefusal => "early",
        Outcome::ModelRefusal => "model",
        Outcome::FalseRefusal => "false",
        Outcome::UnwantedAnswer => "unwanted",
        Outcome::Error => "error",
    }
}

/// The outcome of a run with its refusal kind and stage, for a tooltip.
fn detail(run: &Run) -> String {
    let v = &run.verdict;
    let mut s = v.outcome.to_string();
    if let Some(r) = v.refusal {
        s.push_str(&format!(", refused {}", r.as_str()));
    }
    if let Some(st) = v.stage {
        s.push_str(&format!(", stage {}", st.as_str()));
    }
    s
}

/// Most questions the drill-down shows. Past a few thousand `<details>` a browser takes
/// seconds to open the page (W3's 10,000 questions x 100 settings made a 400 MB file); runs.csv
/// holds every run.
pub const MAX_QUESTIONS: usize = 1000;

/// Every question as a `<details>` element, or the first `cap` of them and a notice that says
/// so and links runs.csv.
pub fn questions(r: &Results, cap: usize, h: &mut String) {
    h.push_str("<section id=\"questions\">\n<h2>Questions</h2>\n<p class=\"small\">A cell per setting, in the table's order, coloured by outcome:");
    for o in Outcome::ALL {
        let _ = write!(h, " <span class=\"o {o}\">{o}</span>");
    }
    h.push_str(". Open a question for its answers with labelled sources.</p>\n");
    let total = r.questions.len();
    if total > cap {
        let _ = writeln!(
            h,
            "<p class=\"small\" id=\"drilldown-cap\">This sweep has {total} questions; to keep the page light, the drill-down shows the first {cap}. Every run of every question is in <a href=\"runs.csv\">runs.csv</a>.</p>"
        );
    }
    let layout = Layout::new(r);
    for qi in 0..total.min(cap) {
        question(r, &layout, qi, h);
    }
    h.push_str("</section>\n");
}

/// Where each setting sits in a question's outcome grid: the first dimension down, the others
/// across. The same for every question, so it is worked out once.
struct Layout {
    corner: &'static str,
    rows: Vec<String>,
    cols: Vec<String>,
    /// `cells[row][col]`: the setting shown there.
    cells: Vec<Vec<Option<usize>>>,
}

impl Layout {
    fn new(r: &Results) -> Self {
        let names = r.dim_names();
        let mut rows: Vec<String> = Vec::new();
        let mut cols: Vec<String> = Vec::new();
        let mut at: Vec<(usize, usize)> = Vec::with_capacity(r.settings.len());
        for s in 0..r.settings.len() {
            let v = r.dim_values(s);
            let across = names[1..]
                .iter()
                .zip(&v[1..])
                .map(|(c, x)| format!("{c}={x}"))
                .collect::<Vec<_>>()
                .join(", ");
            let row = rows.iter().position(|x| *x == v[0]).unwrap_or_else(|| {
                rows.push(v[0].to_string());
                rows.len() - 1
            });
            let col = cols.iter().position(|x| *x == across).unwrap_or_else(|| {
                cols.push(across);
                cols.len() - 1
            });
            at.push((row, col));
        }
        let mut cells = vec![vec![None; cols.len()]; rows.len()];
        for (i, &(row, col)) in at.iter().enumerate() {
            cells[row][col].get_or_insert(i);
        }
        Layout {
            corner: names[0],
            rows,
            cols,
            cells,
        }
    }
}

/// What a drill-down cell says of a pair never run.
const NOT_RUN: &str = "not run: the adaptive sweep had dropped this setting";

fn question(r: &Results, layout: &Layout, qi: usize, h: &mut String) {
    let q = &r.questions[qi];
    // `None`: a setting an adaptive sweep dropped before this question.
    let runs: Vec<Option<&Run>> = (0..r.settings.len())
        .map(|s| r.runs_of(s).get(qi))
        .collect();
    let _ = write!(
        h,
        "<details class=\"q\" id=\"q-{}\"><summary><span class=\"cells\">",
        escape(&q.id)
    );
    for (s, run) in runs.iter().enumerate() {
        let Some(run) = run else {
            let _ = write!(
                h,
                "<i class=\"unrun\" title=\"{}: {}\"></i>",
                escape(r.setting_id(s)),
                NOT_RUN
            );
            continue;
        };
        let _ = write!(
            h,
            "<i class=\"{}\" title=\"{}: {}\"></i>",
            run.verdict.outcome,
            escape(r.setting_id(s)),
            escape(&detail(run))
        );
    }
    let best = r
        .best_score(qi)
        .map(|b| format!("{b:.3}"))
        .unwrap_or_else(|| "-".into());
    let _ = write!(
        h,
        "</span><b>{}</b> &middot; {} &middot; best score {best}",
        escape(&q.id),
        if q.answerable {
            "answerable"
        } else {
            "unanswerable"
        },
    );
    if q.answerable {
        let max = r
            .insight
            .separability
            .questions
            .get(qi)
            .and_then(|s| s.max_min_score);
        let text = match (max, q.expect.sources.is_empty()) {
            (Some(m), _) => format!("{m:.3}"),
            (None, true) => "unknown (no expected source)".into(),
            (None, false) => "none (expected source not in the top k)".into(),
        };
        let _ = write!(h, " &middot; max minScore {text}");
    }
    h.push_str("</summary>\n<div class=\"qbody\">\n");
    for m in &q.history {
        let _ = writeln!(
            h,
            "<p class=\"small\">earlier, {}: {}</p>",
            escape(m.role.as_str()),
            escape(&m.content)
        );
    }
    let _ = writeln!(h, "<p><b>{}</b></p>", escape(&q.question));
    if !q.expect.sources.is_empty() || !q.expect.answers.is_empty() {
        let list = |v: &[String]| {
            v.iter()
                .map(|s| format!("<code>{}</code>", escape(s)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let _ = writeln!(
            h,
            "<p class=\"small\">expected sources: {}; expected answer text: {}</p>",
            list(&q.expect.sources),
            list(&q.expect.answers)
        );
    }
    grid(layout, &runs, h);
    replies(r, qi, &runs, h);
    h.push_str("</div></details>\n");
}

/// Outcomes as a grid: the first dimension down, the others across.
fn grid(layout: &Layout, runs: &[Option<&Run>], h: &mut String) {
    let _ = write!(
        h,
        "<table class=\"grid\"><tr><th class=\"l\">{}</th>",
        escape(layout.corner)
    );
    for c in &layout.cols {
        let _ = write!(h, "<th>{}</th>", escape(c));
    }
    h.push_str("</tr>\n");
    for (row, cells) in layout.rows.iter().zip(&layout.cells) {
        let _ = write!(h, "<tr><td class=\"l\">{}</td>", escape(row));
        for cell in cells {
            match cell.map(|i| runs[i]) {
                Some(Some(run)) => {
                    let _ = write!(
                        h,
                        "<td><span class=\"o {}\" title=\"{}\">{}</span></td>",
                        run.verdict.outcome,
                        escape(&detail(run)),
                        short(run.verdict.outcome)
                    );
                }
                Some(None) => {
                    let _ = write!(h, "<td><span class=\"o\" style=\"color:#6e7781\" title=\"{NOT_RUN}\">-</span></td>");
                }
                None => h.push_str("<td></td>"),
            }
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table>\n");
}

/// Each distinct reply once, with the settings that got it.
fn replies(r: &Results, qi: usize, runs: &[Option<&Run>], h: &mut String) {
    let mut groups: Vec<(&Run, Vec<usize>)> = Vec::new();
    for (s, run) in runs.iter().enumerate() {
        let Some(run) = run else { continue };
        let same = |g: &&Run| {
            g.verdict.outcome == run.verdict.outcome
                && g.answer == run.answer
                && g.passages
                    .iter()
                    .map(|p| p.chunk)
                    .eq(run.passages.iter().map(|p| p.chunk))
        };
        match groups.iter_mut().find(|(g, _)| same(g)) {
            Some((_, settings)) => settings.push(s),
            None => groups.push((run, vec![s])),
        }
    }
    for (run, settings) in groups {
        let at: Vec<String> = settings
            .iter()
            .map(|&s| format!("({})", r.dim_values(s).join(", ")))
            .collect();
        let _ = writeln!(
            h,
            "<div class=\"group\"><p><span class=\"o {}\">{}</span> <span class=\"small\">at ({}) = {}</span></p>",
            run.verdict.outcome,
            escape(&detail(run)),
            escape(&r.dim_names().join(", ")),
            escape(&at.join(" "))
        );
        if let Some(e) = &run.error {
            let _ = writeln!(
                h,
                "<p class=\"bad\">{}: {}</p>",
                escape(e.kind.as_str()),
                escape(&e.message)
            );
        } else if run.passages.is_empty() {
            h.push_str("<p class=\"small\">No passage reached minScore: refused before the model, at no cost.</p>\n");
        } else {
            let _ = writeln!(h, "<blockquote>{}</blockquote>", labelled(r, qi, run));
            h.push_str("<ol class=\"sources\">");
            for p in &run.passages {
                let id = r.chunk_id(qi, p.chunk);
                let cited = run.verdict.cited.iter().any(|c| c == id);
                let _ = write!(
                    h,
                    "<li{}>{} <span class=\"small\">{} &middot; score {:.3}{}</span></li>",
                    if cited { " class=\"cited\"" } else { "" },
                    escape(r.chunk_label(qi, p.chunk)),
                    escape(id),
                    p.score,
                    if cited { " &middot; cited" } else { "" }
                );
            }
            h.push_str("</ol>\n");
        }
        h.push_str("</div>\n");
    }
}

/// The answer with each valid `[n]` replaced by its source's label; an invalid one is flagged.
fn labelled(r: &Results, qi: usize, run: &Run) -> String {
    let text = &run.answer;
    let mut out = String::new();
    let mut at = 0;
    for (span, n) in citation_spans(text) {
        out.push_str(&escape(&text[at..span.start]));
        match run.passages.get((n as usize).wrapping_sub(1)) {
            Some(p) => {
                let _ = write!(
                    out,
                    "<span class=\"src\">[{}]</span>",
                    escape(r.chunk_label(qi, p.chunk))
                );
            }
            None => {
                let _ = write!(
                    out,
                    "<span class=\"bad\" title=\"no passage {n} was sent\">[{n}]?</span>"
                );
            }
        }
        at = span.end;
    }
    out.push_str(&escape(&text[at..]));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::report::fixture;

    fn drilldown(r: &Results, cap: usize) -> String {
        let mut h = String::new();
        questions(r, cap, &mut h);
        h
    }

    #[test]
    fn a_sweep_above_the_cap_shows_exactly_the_cap_and_says_so() {
        let r = fixture::results();
        let total = r.questions.len();
        assert!(total >= 2, "the fixture needs two questions");
        let html = drilldown(&r, total - 1);
        assert_eq!(html.matches("<details class=\"q\"").count(), total - 1);
        let ids: Vec<_> = r.questions[..total - 1]
            .iter()
            .map(|q| format!("<details class=\"q\" id=\"q-{}\">", escape(&q.id)))
            .collect();
        assert!(ids.iter().all(|id| html.contains(id.as_str())));
        let notice = format!(
            "<p class=\"small\" id=\"drilldown-cap\">This sweep has {total} questions; to keep the page light, the drill-down shows the first {}. Every run of every question is in <a href=\"runs.csv\">runs.csv</a>.</p>\n",
            total - 1
        );
        assert_eq!(html.matches(notice.as_str()).count(), 1, "{html}");
    }

    #[test]
    fn a_sweep_at_the_cap_shows_every_question_and_no_notice() {
        let r = fixture::results();
        let total = r.questions.len();
        let html = drilldown(&r, total);
        assert_eq!(html.matches("<details class=\"q\"").count(), total);
        assert!(!html.contains("drilldown-cap"));
        assert_eq!(html, drilldown(&r, MAX_QUESTIONS));
    }
}
