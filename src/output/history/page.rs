//! `rageval history --html FILE`: one self-contained page (no script, nothing loaded from
//! anywhere, a Content-Security-Policy that forbids both) charting each rate of one setting
//! across the entries, with its 95% Wilson band, and marking on the axis each entry whose
//! config or question set differs from the entry before it. Every text from the file goes
//! through [`escape`].

use std::fmt::Write as _;

use super::view::{band_of, commit_text, rate_of, Row};
use super::Rate;
use crate::analysis::insight::format::percent;
use crate::base::escape::html as escape;

const WIDTH: f64 = 900.0;
const HEIGHT: f64 = 340.0;
const LEFT: f64 = 56.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 36.0;
const BOTTOM: f64 = 44.0;

/// Each rate's colour (the Okabe–Ito palette, told apart by people with colour blindness).
fn colour(rate: Rate) -> &'static str {
    match rate {
        Rate::UnwantedAnswerRate => "#d55e00",
        Rate::FalseRefusalRate => "#0072b2",
        Rate::WrongAnswerRate => "#009e73",
    }
}

/// The whole page.
pub fn page(file: &str, setting: &str, rows: &[Row]) -> String {
    let mut h = String::new();
    h.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    h.push_str("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n");
    h.push_str("<title>rageval history</title>\n<style>");
    h.push_str(concat!(
        "body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222}",
        "table{border-collapse:collapse}td,th{padding:2px 10px;text-align:left;border-bottom:1px solid #ddd}",
        "td{white-space:nowrap}td.n{text-align:right;font-variant-numeric:tabular-nums}.legend span{margin-right:18px}",
        "svg text{font:12px system-ui,sans-serif}"
    ));
    h.push_str("</style>\n</head>\n<body>\n");
    let _ = writeln!(
        h,
        "<h1>rageval history</h1>\n<p>{} entries of <code>{}</code> at <code>{}</code>. Each line is a rate, the band its 95% Wilson interval; a dashed line marks an entry whose config or question set differs from the entry before it.</p>",
        rows.len(),
        escape(file),
        escape(setting)
    );
    h.push_str(&chart(rows));
    h.push_str("<p class=\"legend\">");
    for rate in Rate::ALL {
        let _ = write!(
            h,
            "<span style=\"color:{}\">&#9632; {}</span>",
            colour(rate),
            rate.as_str()
        );
    }
    h.push_str("</p>\n");
    h.push_str(&table(rows));
    h.push_str("</body>\n</html>\n");
    h
}

/// Where entry `i` of `n` and rate `v` go on the chart, `top` the highest rate shown.
fn place(i: usize, n: usize, v: f64, top: f64) -> (f64, f64) {
    let span = WIDTH - LEFT - RIGHT;
    let x = if n <= 1 {
        LEFT + span / 2.0
    } else {
        LEFT + span * i as f64 / (n - 1) as f64
    };
    let y = TOP + (HEIGHT - TOP - BOTTOM) * (1.0 - v / top);
    (x, y)
}

/// The chart: axes, the bands, the lines and their points, the change marks.
fn chart(rows: &[Row]) -> String {
    let n = rows.len();
    let highest = rows
        .iter()
        .flat_map(|r| Rate::ALL.map(|rate| band_of(r, rate).map_or(0.0, |b| b.1)))
        .fold(0.0f64, f64::max);
    let top = ((highest * 10.0).ceil() / 10.0).clamp(0.1, 1.0);
    let mut s = format!(
        "<svg id=\"history-chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{HEIGHT}\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" role=\"img\" aria-label=\"rates across the history\">\n"
    );
    axes(&mut s, rows, top);
    for rate in Rate::ALL {
        series(&mut s, rows, rate, top);
    }
    for (i, r) in rows
        .iter()
        .enumerate()
        .filter(|(_, r)| !r.changed.is_empty())
    {
        let (x, _) = place(i, n, 0.0, top);
        let _ = writeln!(
            s,
            "<g class=\"change\" data-changed=\"{c}\"><line x1=\"{x:.1}\" y1=\"{TOP}\" x2=\"{x:.1}\" y2=\"{:.1}\" stroke=\"#888\" stroke-dasharray=\"4 3\"/><text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#555\">{c} changed</text></g>",
            HEIGHT - BOTTOM,
            TOP - 8.0,
            c = escape(&r.changed)
        );
    }
    s.push_str("</svg>\n");
    s
}

/// The axes, the rate ticks and one tick per entry (its line in the file).
fn axes(s: &mut String, rows: &[Row], top: f64) {
    let n = rows.len();
    let base = HEIGHT - BOTTOM;
    let _ = writeln!(
        s,
        "<line x1=\"{LEFT}\" y1=\"{base}\" x2=\"{:.1}\" y2=\"{base}\" stroke=\"#222\"/><line x1=\"{LEFT}\" y1=\"{TOP}\" x2=\"{LEFT}\" y2=\"{base}\" stroke=\"#222\"/>",
        WIDTH - RIGHT
    );
    for k in 0..=5 {
        let v = top * f64::from(k) / 5.0;
        let (_, y) = place(0, n, v, top);
        let _ = writeln!(
            s,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text><line x1=\"{LEFT}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"#eee\"/>",
            LEFT - 6.0,
            y + 4.0,
            percent(v),
            WIDTH - RIGHT
        );
    }
    // At most about 20 labels, so that they do not overlap.
    let every = n.div_ceil(20).max(1);
    for (i, r) in rows.iter().enumerate().filter(|(i, _)| i % every == 0) {
        let (x, _) = place(i, n, 0.0, top);
        let _ = writeln!(
            s,
            "<text class=\"entry\" x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            base + 16.0,
            r.line
        );
    }
    let _ = writeln!(
        s,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">line of the history file</text>",
        LEFT + (WIDTH - LEFT - RIGHT) / 2.0,
        base + 36.0
    );
}

/// One rate: its band and line over each stretch of entries that have it, and a point per
/// entry with its figures as a tooltip.
fn series(s: &mut String, rows: &[Row], rate: Rate, top: f64) {
    let n = rows.len();
    let c = colour(rate);
    let _ = writeln!(s, "<g class=\"rate\" data-rate=\"{}\">", rate.as_str());
    let mut stretch: Vec<(usize, f64, (f64, f64))> = Vec::new();
    let flush = |s: &mut String, stretch: &mut Vec<(usize, f64, (f64, f64))>| {
        if stretch.is_empty() {
            return;
        }
        let upper = stretch.iter().map(|&(i, _, b)| place(i, n, b.1, top));
        let lower = stretch.iter().rev().map(|&(i, _, b)| place(i, n, b.0, top));
        let band: Vec<String> = upper
            .chain(lower)
            .map(|(x, y)| format!("{x:.1},{y:.1}"))
            .collect();
        let line: Vec<String> = stretch
            .iter()
            .map(|&(i, v, _)| {
                let (x, y) = place(i, n, v, top);
                format!("{x:.1},{y:.1}")
            })
            .collect();
        let _ = writeln!(
            s,
            "<polygon class=\"band\" points=\"{}\" fill=\"{c}\" fill-opacity=\"0.15\" stroke=\"none\"/><polyline points=\"{}\" fill=\"none\" stroke=\"{c}\" stroke-width=\"2\"/>",
            band.join(" "),
            line.join(" ")
        );
        stretch.clear();
    };
    for (i, r) in rows.iter().enumerate() {
        match (rate_of(r, rate), band_of(r, rate)) {
            (Some(v), Some(b)) => stretch.push((i, v, b)),
            _ => flush(s, &mut stretch),
        }
    }
    flush(s, &mut stretch);
    for (i, r) in rows.iter().enumerate() {
        if let (Some(v), Some((lo, hi))) = (rate_of(r, rate), band_of(r, rate)) {
            let (x, y) = place(i, n, v, top);
            let _ = writeln!(
                s,
                "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"3.5\" fill=\"{c}\"><title>line {}: {} {} (95% {} to {})</title></circle>",
                r.line,
                rate.as_str(),
                percent(v),
                percent(lo),
                percent(hi)
            );
        }
    }
    s.push_str("</g>\n");
}

/// The entries as a table, newest last.
fn table(rows: &[Row]) -> String {
    let mut h = String::from(
        "<table>\n<tr><th>line</th><th>time</th><th>commit</th><th>changed</th><th>recommended</th><th>unwanted</th><th>false refusals</th><th>wrong answers</th><th>results</th></tr>\n",
    );
    let rate = |v: Option<f64>| v.map_or_else(|| "-".to_string(), percent);
    for r in rows {
        let _ = writeln!(
            h,
            "<tr><td class=\"n\">{}</td><td>{}</td><td><code>{}</code></td><td>{}</td><td>{}{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td><code>{}</code></td></tr>",
            r.line,
            escape(&r.time),
            escape(&commit_text(r)),
            escape(&r.changed),
            escape(r.recommended.as_deref().unwrap_or("none")),
            if r.certified { " (certified)" } else { "" },
            rate(r.unwanted_answer_rate),
            rate(r.false_refusal_rate),
            rate(r.wrong_answer_rate),
            escape(&r.results)
        );
    }
    h.push_str("</table>\n");
    h
}
