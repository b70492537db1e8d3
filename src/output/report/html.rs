//! `report.html`: the whole sweep on one self-contained page that opens from disk.
//!
//! No script, font or style sheet is loaded from anywhere; the charts are inline SVG and the
//! page carries a Content-Security-Policy that forbids scripts altogether. Text that comes from
//! documents, questions and answers is untrusted: every piece of it goes through [`escape`].
//! The numbers behind the charts are embedded as `<script type="application/json"
//! id="chart-data">` (data, never run) so that they can be checked against results.json.

use std::fmt::Write as _;
use std::io::Write;

use anyhow::Result;

use super::chart::{self, ChartData};
use super::{drilldown, Exporter, Results, Summary};
use crate::analysis::insight::format::{percent, rate_with_interval};
use crate::base::escape::html as escape;
use crate::base::text::plural;
use crate::output::explain::{self, limits_text, Explain};

pub struct HtmlReport;

/// JSON that is safe inside a `<script>` element: `<`, `>` and `&` become `\u` escapes, so
/// that no string in it can close the element (`</script>`) or open a comment.
pub fn script_json<T: serde::Serialize>(value: &T) -> Result<String> {
    let json = serde_json::to_string(value)?
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026");
    // Bidi controls (raw in JSON strings) become the visible text `\u{202e}`.
    if !json.chars().any(crate::base::safe_text::is_bidi_control) {
        return Ok(json);
    }
    Ok(json
        .chars()
        .map(|c| {
            if crate::base::safe_text::is_bidi_control(c) {
                format!("\\\\u{{{:x}}}", c as u32)
            } else {
                c.to_string()
            }
        })
        .collect())
}

const STYLE: &str = r#"
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1f2328;background:#f6f8fa}
main{max-width:1320px;margin:0 auto;padding:16px 20px 40px}
h1{font-size:22px;margin:4px 0}
h2{font-size:17px;margin:22px 0 8px}
.meta{color:#57606a;margin:0 0 8px;overflow-wrap:anywhere}
.callout{background:#fff;border:1px solid #d0d7de;border-left:5px solid #2da44e;border-radius:6px;padding:10px 14px;margin:10px 0}
.callout.warn{border-left-color:#bf8700}
.callout.info{border-left-color:#0969da}
.callout p{margin:4px 0}
.small{font-size:12px;color:#57606a}
.charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(440px,1fr));gap:12px}
figure{margin:0;background:#fff;border:1px solid #d0d7de;border-radius:6px;padding:8px}
figure svg{display:block;width:100%;height:auto}
figcaption{font-weight:600;margin:0 0 4px}
.legend{margin:2px 0 0;font-size:12.5px;display:flex;flex-wrap:wrap;gap:4px 14px}
.legend i{display:inline-block;width:18px;height:4px;vertical-align:3px;margin-right:5px}
.scroll{overflow-x:auto}
table{border-collapse:collapse;background:#fff;font-size:12.5px;font-variant-numeric:tabular-nums}
th,td{border:1px solid #d8dee4;padding:3px 6px;text-align:right;white-space:nowrap}
th{background:#eef1f4;font-weight:600;vertical-align:bottom;white-space:normal}
td.l,th.l{text-align:left}
tr.pareto td:first-child{box-shadow:inset 4px 0 #0969da}
tr.rec{background:#dafbe1;font-weight:600}
tr.rec td:first-child{box-shadow:inset 4px 0 #1a7f37}
.key{display:inline-block;width:12px;height:12px;vertical-align:-1px;margin:0 3px 0 10px}
.o{display:inline-block;padding:0 5px;border-radius:3px;font-size:12px;color:#fff}
.answer{background:#009e73;color:#000}.early_refusal{background:#0072b2}.model_refusal{background:#56b4e9;color:#000}
.false_refusal{background:#e69f00;color:#000}.unwanted_answer{background:#d55e00}.error{background:#6e7781}
details.q{background:#fff;border:1px solid #d0d7de;border-radius:6px;margin:4px 0}
details.q>summary{cursor:pointer;padding:5px 10px;list-style-position:inside}
details.q[open]>summary{border-bottom:1px solid #d8dee4}
.cells{display:inline-flex;gap:1px;vertical-align:-1px;margin-right:8px}
.cells i{display:inline-block;width:9px;height:12px}
.qbody{padding:8px 14px}
.qbody p{margin:4px 0}
.group{border-top:1px dashed #d8dee4;padding:6px 0}
blockquote{margin:4px 0;padding:4px 10px;background:#f6f8fa;border-left:3px solid #d0d7de;overflow-wrap:anywhere;white-space:pre-wrap}
.src{color:#0550ae;font-weight:600}
ol.sources{margin:2px 0;padding-left:22px;font-size:12.5px}
.cited{font-weight:600}
.bad{color:#cf222e;font-weight:600}
"#;

impl Exporter for HtmlReport {
    fn file_name(&self) -> &'static str {
        "report.html"
    }

    fn write(&self, r: &Results, out: &mut dyn Write) -> Result<()> {
        self.write_with(r, &Summary::of(r), out)
    }

    fn write_with(&self, r: &Results, summary: &Summary, out: &mut dyn Write) -> Result<()> {
        let data = ChartData::new(r);
        let mut h = String::with_capacity(64 * 1024);
        h.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
        h.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
        h.push_str("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">\n");
        h.push_str("<title>rageval report</title>\n<style>");
        h.push_str(STYLE);
        h.push_str("</style>\n</head>\n<body>\n<main>\n");
        header(r, summary, &mut h);
        recommendation(r, &mut h);
        separability(r, summary, &mut h);
        charts(&data, &mut h)?;
        settings_table(r, summary, &mut h);
        tags_table(r, &mut h);
        drilldown::questions(r, drilldown::MAX_QUESTIONS, &mut h);
        writeln!(
            h,
            "<script type=\"application/json\" id=\"chart-data\">{}</script>",
            script_json(&data)?
        )?;
        h.push_str("</main>\n</body>\n</html>\n");
        out.write_all(h.as_bytes())?;
        Ok(())
    }
}

fn header(r: &Results, summary: &Summary, h: &mut String) {
    let m = &r.meta;
    let sets: Vec<String> = m
        .evalsets
        .iter()
        .map(|s| {
            format!(
                "{} ({} answerable, {} unanswerable)",
                escape(&s.path),
                s.answerable,
                s.unanswerable
            )
        })
        .collect();
    let _ = write!(
        h,
        "<header>\n<h1>rageval report</h1>\n<p class=\"meta\">{} &times; {} = {}; {} sent. Question sets: {}. {}, {}, rageval {}, config <code>{}</code>.</p>\n",
        plural(summary.questions, "question"),
        plural(summary.settings, "setting"),
        plural(summary.runs, "run"),
        plural(r.calls.distinct_prompts, "distinct prompt"),
        sets.join(", "),
        named_models("Embedder", "Embedders", &m.embedder, &m.embedders),
        named_models("model", "models", &m.model, &m.models),
        escape(&m.identity.tool_version),
        escape(m.identity.digest.get(..19).unwrap_or(&m.identity.digest)),
    );
    if let Some(line) = &summary.reranker {
        let _ = writeln!(h, "<p class=\"meta\">{}.</p>", escape(line));
    }
    h.push_str("</header>\n");
}

/// `model <code>m</code>`, or with profiles swept `models <code>a</code> = <code>m</code>, ...`.
fn named_models(
    one: &str,
    many: &str,
    model: &str,
    profiles: &indexmap::IndexMap<String, String>,
) -> String {
    if profiles.is_empty() {
        return format!("{one} <code>{}</code>", escape(model));
    }
    let each: Vec<String> = profiles
        .iter()
        .map(|(name, model)| {
            format!(
                "<code>{}</code> = <code>{}</code>",
                escape(name),
                escape(model)
            )
        })
        .collect();
    format!("{many} {}", each.join(", "))
}

fn recommendation(r: &Results, h: &mut String) {
    let rec = &r.insight.recommendation;
    let p = &r.insight.policy;
    let class = if rec.setting.is_none() || (rec.certification.is_on() && !rec.certified) {
        " warn"
    } else {
        ""
    };
    let explained = Explain::of(r);
    let needed = explained
        .needed()
        .map(|n| format!("<p>{}</p>\n", escape(&n)))
        .unwrap_or_default();
    let _ = write!(
        h,
        "<section id=\"recommendation\" class=\"callout{class}\">\n<h2>Recommendation</h2>\n<p>{}</p>\n{needed}<p class=\"small\">Policy (rageval.yaml <code>recommend:</code>): limits {}; cost = {} &times; false-refusal rate + {} &times; unwanted-answer rate + {} &times; wrong-answer rate + {} &times; prompt tokens per question; equal costs go to fewer prompt tokens, then the higher minScore, then the smaller k.</p>\n</section>\n",
        escape(&explained.reason()),
        escape(&limits_text(p)),
        p.weights.false_refusal_rate,
        p.weights.unwanted_answer_rate,
        p.weights.wrong_answer_rate,
        p.weights.prompt_tokens_per_question,
    );
    certification(&explained, h);
    if let Some(line) = explained.stability() {
        let _ = write!(
            h,
            "<section id=\"stability\" class=\"callout info\">\n<h2>Stability of the choice</h2>\n<p>{}</p>\n<p class=\"small\">The questions resampled with replacement within each class (seeded), and the choice made again on each resample from the runs already made: how much the recommendation owes to the particular questions.</p>\n</section>\n",
            escape(&line)
        );
    }
    if let Some(line) = explained.cross_validation() {
        let _ = write!(
            h,
            "<section id=\"cross-validation\" class=\"callout info\">\n<h2>Cross-validation</h2>\n<p>{}</p>\n<p class=\"small\">The questions dealt into folds within each class (seeded); each fold's setting is chosen on the other folds and measured on it, and the held-out runs are pooled: what the whole choice achieves on questions it did not see. Rates are percent [95% Wilson interval].</p>\n</section>\n",
            escape(&line)
        );
    }
}

/// The chosen setting's rate limits under certification: one row per limit.
fn certification(explained: &Explain<'_>, h: &mut String) {
    let rec = explained.rec;
    if rec.bounds.is_empty() {
        return;
    }
    let _ = write!(
        h,
        "<section id=\"certification\" class=\"callout info\">\n<h2>Certification {}</h2>\n<p class=\"small\">{}. The promise is about sweeps, for the whole grid at once: {}. A failed call counts as a failure.</p>\n<table class=\"bounds\"><thead><tr><th>limit</th><th>failures</th><th>upper bound</th><th>max</th><th>certified</th><th>questions for a chance of {} at this rate</th><th>with none failing</th></tr></thead><tbody>\n",
        escape(&explain::by(rec.certification)),
        escape(&explained.method()),
        escape(&explain::promise(rec.certification)),
        escape(&percent(rec.power)),
    );
    let count = |n: Option<u64>, certified: bool| match (n, certified) {
        (_, true) => "-".to_string(),
        (Some(n), false) => n.to_string(),
        (None, false) => "none suffices".to_string(),
    };
    for b in &rec.bounds {
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{} of {}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(b.limit.key()),
            b.failures,
            b.questions,
            percent(b.upper_bound),
            percent(b.max),
            if b.certified { "yes" } else { "no" },
            count(b.questions_needed, b.certified),
            count(b.questions_needed_with_none, b.certified),
        );
    }
    h.push_str("</tbody></table>\n</section>\n");
}

fn separability(r: &Results, summary: &Summary, h: &mut String) {
    let s = &summary.separability;
    // With a reranker, one line per score: the rerank score's (which minScore filters) first.
    let scores = match &s.retrieval {
        None => escape(&s.score),
        Some(retrieval) => format!(
            "Rerank score: {}</p>\n<p>Retrieval score: {}",
            escape(&s.score),
            escape(retrieval)
        ),
    };
    let _ = write!(
        h,
        "<section id=\"separability\" class=\"callout info\">\n<h2>Separability</h2>\n<p>{}</p>\n<p class=\"small\">AUC is the chance that a random answerable question has a higher best score than a random unanswerable one (1 separates perfectly, 0.5 is a coin toss). A minScore above an unanswerable question's best score refuses it before the model; a minScore above an answerable question's <em>max minScore</em> (in the question list below) keeps its expected source out of the prompt.</p>\n</section>\n",
        scores
    );
    let per = explain::retrieval_lines(r);
    if !per.is_empty() {
        h.push_str("<section id=\"by-retrieval\" class=\"callout info\">\n<h2>Per retrieval</h2>\n<p class=\"small\">Thresholds do not carry across embedders or chunk sizes: each one's separability, and the recommendation among its settings.</p>\n<ul>\n");
        for line in per {
            let _ = writeln!(h, "<li>{}</li>", escape(&line));
        }
        h.push_str("</ul>\n</section>\n");
    }
}

fn charts(data: &ChartData, h: &mut String) -> Result<()> {
    h.push_str("<section id=\"charts\">\n<h2>Trade-offs</h2>\n<div class=\"charts\">\n");
    for c in &data.lines {
        let _ = write!(
            h,
            "<figure id=\"chart-{}\" data-chart=\"{}\">\n<figcaption>{}</figcaption>\n",
            escape(&c.id),
            escape(&c.id),
            escape(&c.title)
        );
        h.push_str(&chart::line_svg(c)?);
        h.push_str("<p class=\"legend\">");
        for (i, series) in c.series.iter().enumerate() {
            let _ = write!(
                h,
                "<span><b style=\"color:{}\">{}</b> {}</span>",
                chart::css(chart::series_color(i)),
                chart::series_marker(i),
                escape(&series.label)
            );
        }
        for group in chart::coinciding(c) {
            let _ = write!(
                h,
                "<span class=\"small coincide\">coincide (one line, the first drawn widest): {}</span>",
                escape(&group)
            );
        }
        h.push_str("</p>\n</figure>\n");
    }
    let s = &data.strips;
    let _ = write!(
        h,
        "<figure id=\"chart-{}\" data-chart=\"{}\">\n<figcaption>{}{}</figcaption>\n",
        escape(&s.id),
        escape(&s.id),
        escape(&s.title),
        match s.threshold {
            Some(t) => format!(" (dashed: the recommended minScore {t})"),
            None => " (no recommended minScore)".into(),
        }
    );
    h.push_str(&chart::strips_svg(s)?);
    h.push_str("</figure>\n</div>\n</section>\n");
    Ok(())
}

fn settings_table(r: &Results, summary: &Summary, h: &mut String) {
    h.push_str(
        "<section id=\"settings\">\n<h2>Settings</h2>\n<div class=\"scroll\"><table>\n<thead><tr>",
    );
    for c in r.dim_names() {
        let _ = write!(h, "<th>{}</th>", escape(c));
    }
    for (name, title) in [
        ("answered", "answerable questions answered"),
        ("false refusals", "answerable questions refused: count, rate [95% CI]"),
        ("by stage: thr / retr / gen", "false refusals blamed on the threshold, retrieval, generation"),
        ("unwanted answers", "unanswerable questions answered: count, rate [95% CI]"),
        ("refused: early / model", "unanswerable questions refused before the model, by the model"),
        ("errors", "failed model calls"),
        ("prompt tok / q", "prompt tokens per question"),
        ("coverage", "share of all questions answered [95% CI]"),
        ("risk", "share of answers that are unwanted or miss the expected text [95% CI]"),
        ("hit rate", "answerable questions with an expected source in the prompt [95% CI]"),
        ("recall / MRR", "mean share of expected sources in the prompt / mean reciprocal rank of the first"),
        ("answers: miss / other src / invalid", "answers without the expected text / citing no expected source / citing a passage not sent"),
    ] {
        let _ = write!(h, "<th title=\"{}\">{}</th>", escape(title), escape(name));
    }
    let scenarios = r.scenario_columns();
    for (name, _) in &scenarios {
        let _ = write!(h, "<th>{}</th>", escape(name));
    }
    let _ = write!(h, "<th title=\"recommended, or Pareto-optimal\">pick</th>");
    h.push_str("</tr></thead>\n<tbody>\n");
    let num = |v: Option<f64>| v.map(|v| format!("{v:.2}")).unwrap_or_else(|| "-".into());
    for (i, s) in r.stats.iter().enumerate() {
        let class = if r.insight.is_recommended(i) {
            "rec"
        } else if r.insight.is_pareto(i) {
            "pareto"
        } else {
            ""
        };
        let _ = write!(
            h,
            "<tr class=\"{class}\" data-setting=\"{}\">",
            escape(r.setting_id(i))
        );
        for v in r.dim_values(i) {
            let _ = write!(h, "<td>{}</td>", escape(v));
        }
        let cells = [
            s.answer.to_string(),
            format!(
                "{} &middot; {}",
                s.false_refusal,
                rate_with_interval(s.false_refusal_rate, s.false_refusal_rate_ci)
            ),
            format!(
                "{} / {} / {}",
                s.stage_threshold, s.stage_retrieval, s.stage_generation
            ),
            format!(
                "{} &middot; {}",
                s.unwanted_answer,
                rate_with_interval(s.unwanted_answer_rate, s.unwanted_answer_rate_ci)
            ),
            format!("{} / {}", s.early_refusal, s.model_refusal),
            s.error.to_string(),
            format!("{:.1}", s.prompt_tokens_per_question),
            rate_with_interval(s.coverage, s.coverage_ci),
            rate_with_interval(s.risk, s.risk_ci),
            rate_with_interval(s.hit_rate, s.hit_rate_ci),
            format!("{} / {}", num(s.recall), num(s.mrr)),
            format!(
                "{} / {} / {}",
                s.answer_miss, s.answer_wrong_source, s.invalid_citation_runs
            ),
        ];
        for c in cells {
            // Cells hold numbers and fixed words only; the entities above are intended.
            let _ = write!(h, "<td>{c}</td>");
        }
        for (_, cells) in &scenarios {
            let _ = write!(h, "<td>{}</td>", escape(&cells[i]));
        }
        let _ = write!(h, "<td>{}</td>", super::table::pick(r, i));
        h.push_str("</tr>\n");
    }
    h.push_str("</tbody>\n</table></div>\n<p class=\"small\"><span class=\"key\" style=\"background:#dafbe1;box-shadow:inset 4px 0 #1a7f37\"></span>recommended <span class=\"key\" style=\"box-shadow:inset 4px 0 #0969da;background:#fff\"></span>Pareto-optimal: no other setting has fewer false refusals, unwanted answers and prompt tokens at once. Rates are percent [95% Wilson interval]; hit rate, recall and MRR count early-refused answerable questions as misses.</p>\n");
    if let Some(line) = &summary.flagged {
        let _ = writeln!(h, "<p class=\"small\" id=\"flagged\">{}</p>", escape(line));
    }
    if let Some(line) = &summary.checks {
        let _ = writeln!(
            h,
            "<p class=\"small\" id=\"grader-checks\">{}</p>",
            escape(line)
        );
    }
    if let Some(line) = &summary.dropped {
        let _ = writeln!(h, "<p class=\"small\" id=\"dropped\">{}</p>", escape(line));
    }
    h.push_str("</section>\n");
    grader(summary, h);
}

/// With labels: the grader's confusion matrices against them, and the warning.
fn grader(summary: &Summary, h: &mut String) {
    let Some(g) = &summary.grader else {
        return;
    };
    let _ = writeln!(
        h,
        "<section id=\"grader\"><h2>The grader against the labels</h2>\n<p class=\"small\">{} labelled replies ({} runs). Errors of each kind over the labelled replies a grader read, percent [95% Wilson interval]; a tier's missed refusals are over the refusals no earlier tier caught.</p>",
        g.replies, g.runs
    );
    h.push_str("<div class=\"scroll\"><table><thead><tr><th>grader</th><th>refusals read as answers</th><th>answers read as refusals</th><th>wrong read as right</th><th>right read as wrong</th></tr></thead><tbody>\n");
    for c in &g.graders {
        let _ = write!(h, "<tr><td>{}</td>", escape(&c.grader));
        for (_, e) in c.rates() {
            let _ = write!(h, "<td>{}</td>", escape(&super::summary::error_rate(e)));
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</tbody></table></div>\n");
    if let Some(w) = &summary.grader_warning {
        let _ = writeln!(
            h,
            "<p class=\"bad\" id=\"grader-warning\">{}</p>",
            escape(w)
        );
    }
    h.push_str("</section>\n");
}

/// The recommended setting's rates by tag, when questions carry tags.
fn tags_table(r: &Results, h: &mut String) {
    let Some((setting, rows)) = super::tags::table(r) else {
        return;
    };
    let _ = write!(
        h,
        "<section id=\"tags\">\n<h2>By tag at {}</h2>\n<div class=\"scroll\"><table>\n<thead><tr>",
        escape(setting)
    );
    for name in super::tags::TABLE_HEADERS {
        let _ = write!(h, "<th>{}</th>", escape(name));
    }
    h.push_str("</tr></thead>\n<tbody>\n");
    for (tag, cells) in rows {
        let _ = write!(h, "<tr><td>{}</td>", escape(&tag));
        for c in cells {
            let _ = write!(h, "<td>{}</td>", escape(&c));
        }
        h.push_str("</tr>\n");
    }
    let _ = writeln!(
        h,
        "</tbody>\n</table></div>\n<p class=\"small\">{}</p>\n</section>",
        escape(super::tags::TABLE_NOTE)
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::report::fixture;

    fn render(r: &Results) -> String {
        let mut buf = Vec::new();
        HtmlReport.write(r, &mut buf).unwrap();
        String::from_utf8(buf).unwrap()
    }

    /// The text of the element that starts with `open`.
    fn between<'a>(html: &'a str, open: &str, close: &str) -> &'a str {
        let start = html.find(open).expect(open) + open.len();
        let len = html[start..].find(close).expect(close);
        &html[start..start + len]
    }

    #[test]
    fn page_is_self_contained_and_scripts_are_forbidden() {
        let html = render(&fixture::results());
        assert!(html.contains("Content-Security-Policy\" content=\"default-src 'none'"));
        for external in ["http://", "https://", "<link", "src=\"", "@import", "url("] {
            let hits: Vec<_> = html
                .match_indices(external)
                .map(|(i, _)| &html[i.saturating_sub(40)..i + 40])
                .collect();
            // The SVG namespace is an identifier, not a fetch.
            assert!(
                hits.iter().all(|h| h.contains("xmlns")),
                "{external}: {hits:?}"
            );
        }
        assert_eq!(html.matches("<script").count(), 1, "only the chart data");
        assert!(html.contains("<script type=\"application/json\" id=\"chart-data\">"));
    }

    #[test]
    fn embedded_chart_data_is_what_was_drawn() {
        let r = fixture::results();
        let html = render(&r);
        let json = between(&html, "id=\"chart-data\">", "</script>");
        let data: serde_json::Value = serde_json::from_str(json).unwrap();
        assert_eq!(data, serde_json::to_value(ChartData::new(&r)).unwrap());
        for id in [
            "false_refusal_rate",
            "unwanted_answer_rate",
            "prompt_tokens_per_question",
            "best_scores",
        ] {
            let figure = between(&html, &format!("<figure id=\"chart-{id}\""), "</figure>");
            assert!(
                figure.contains("<svg") && figure.contains("<circle"),
                "{id}"
            );
        }
        // One line per k, a point per minScore; the strips hold every question.
        let fr = &data["lines"][0];
        assert_eq!(fr["series"].as_array().unwrap().len(), 2);
        assert_eq!(fr["series"][0]["label"], "k=1");
        assert_eq!(fr["series"][0]["points"][1]["setting"], "min_score=0.4,k=1");
        assert_eq!(data["strips"]["answerable"].as_array().unwrap().len(), 2);
        assert_eq!(data["strips"]["threshold"], 0.4);
    }

    #[test]
    fn untrusted_text_is_escaped_and_citations_are_labelled() {
        let html = render(&fixture::results());
        // `<b>` comes from a document and from an answer.
        assert!(!html.contains("<b>meets"), "raw markup from the corpus");
        assert!(html.contains("The club &lt;b&gt;meets&lt;/b&gt; on Saturdays."));
        assert!(html.contains("<span class=\"src\">[a.md &gt; Fee]</span>"));
        assert!(html.contains("[3]?</span>"), "invalid citation flagged");
        assert!(html.contains("<tr class=\"rec\" data-setting=\"min_score=0.4,k=1\">"));
        assert!(html.contains("<tr class=\"pareto\" data-setting=\"min_score=0.2,k=2\">"));
        assert!(html.contains("<tr class=\"\" data-setting=\"min_score=0.2,k=1\">"));
    }

    #[test]
    fn script_json_cannot_close_its_element() {
        let j = script_json(&serde_json::json!({"a": "</script><!-- & x"})).unwrap();
        assert!(!j.contains("</"), "{j}");
        assert!(!j.contains("<!--"), "{j}");
        let back: serde_json::Value = serde_json::from_str(&j).unwrap();
        assert_eq!(back["a"], "</script><!-- & x");
    }
}
