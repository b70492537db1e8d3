//! The charts of report.html: inline SVG drawn with plotters, and the numbers behind them.
//!
//! Every chart is drawn from a [`ChartData`] value that report.html also embeds as JSON, so a
//! reader (and a test) can check each plotted point against results.json. Dimensions are data:
//! a line chart has one dimension on the x axis and one line per combination of the others.
//!
//! Text inside the SVG (axis labels, legends) is escaped by plotters' SVG backend; it only ever
//! receives dimension names and values, numbers and fixed words from here.

use std::collections::BTreeMap;

use anyhow::{anyhow, Result};
use plotters::prelude::*;
use serde::Serialize;

use super::Results;
use crate::analysis::insight::separability::CleanRange;
use crate::analysis::stats::SettingStats;

/// Size of one chart in SVG units; the page scales it to its column.
const SIZE: (u32, u32) = (560, 300);

/// Okabe and Ito's palette: told apart by colour-blind readers too.
const PALETTE: [RGBColor; 7] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
    RGBColor(0, 0, 0),
];
const ANSWERABLE: RGBColor = RGBColor(0, 114, 178);
const UNANSWERABLE: RGBColor = RGBColor(213, 94, 0);
const THRESHOLD: RGBColor = RGBColor(40, 40, 40);

/// The colour of the `i`-th series of a line chart.
pub fn series_color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// A colour as CSS: `#0072b2`.
pub fn css(c: RGBColor) -> String {
    format!("#{:02x}{:02x}{:02x}", c.0, c.1, c.2)
}

/// The numbers behind every chart.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChartData {
    pub lines: Vec<LineChart>,
    pub strips: StripChart,
}

/// A metric of the settings against one dimension, one line per combination of the others.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LineChart {
    /// The chart's id in the page (`chart-<id>`).
    pub id: String,
    pub title: String,
    /// The dimension on the x axis (a [`Dim`](crate::vocab::dim::Dim) name).
    pub x: String,
    /// The metric on the y axis: a field of the settings in results.json.
    pub y: String,
    /// Whether y is a rate from 0 to 1.
    pub rate: bool,
    pub series: Vec<Series>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Series {
    /// The other dimensions' values, `k=4`.
    pub label: String,
    pub points: Vec<Point>,
    /// Labels of the earlier series with exactly these points: drawn on top of each other,
    /// so the legend names them together.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub same_as: Vec<String>,
}

/// The marker of the `i`-th series, in the chart and in its legend: a shape as well as a
/// colour, so that series are told apart without colour vision and where lines coincide.
pub fn series_marker(i: usize) -> &'static str {
    MARKERS[i % MARKERS.len()]
}

const MARKERS: [&str; 4] = ["●", "■", "▲", "◆"];

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Point {
    /// The setting id, as in results.json.
    pub setting: String,
    pub x: f64,
    pub y: f64,
}

/// Best scores of the two groups as strips, with the recommended threshold.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StripChart {
    pub id: String,
    pub title: String,
    pub answerable: Vec<Dot>,
    pub unanswerable: Vec<Dot>,
    /// The recommended setting's minScore, when there is one.
    pub threshold: Option<f64>,
    /// The interval that separates the groups cleanly, when there is one.
    pub clean: Option<CleanRange>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Dot {
    /// The question id, as in results.json.
    pub question: String,
    pub score: f64,
}

/// A metric of a setting that a line chart can show.
type Metric = fn(&SettingStats) -> Option<f64>;

impl ChartData {
    /// Collect the chart data of a sweep.
    pub fn new(r: &Results) -> Self {
        let fr: Metric = |s| s.false_refusal_rate;
        let ua: Metric = |s| s.unwanted_answer_rate;
        let tok: Metric = |s| Some(s.prompt_tokens_per_question);
        let lines = [
            (
                "false_refusal_rate",
                "False-refusal rate against minScore",
                "min_score",
                fr,
                true,
            ),
            (
                "unwanted_answer_rate",
                "Unwanted-answer rate against minScore",
                "min_score",
                ua,
                true,
            ),
            (
                "prompt_tokens_per_question",
                "Prompt tokens per question against k",
                "k",
                tok,
                false,
            ),
        ]
        .into_iter()
        .filter_map(|(y, title, x, metric, rate)| line_chart(r, y, title, x, metric, rate))
        .collect();
        let dots = |answerable: bool| -> Vec<Dot> {
            r.questions
                .iter()
                .enumerate()
                .filter(|(_, q)| q.answerable == answerable)
                .filter_map(|(i, q)| {
                    r.best_score(i).map(|score| Dot {
                        question: q.id.clone(),
                        score,
                    })
                })
                .collect()
        };
        let threshold = r
            .insight
            .recommendation
            .index
            .and_then(|i| r.settings.get(i))
            .map(|s| s.min_score.to_f64());
        ChartData {
            lines,
            strips: StripChart {
                id: "best_scores".into(),
                title: "Best retrieval score of each question".into(),
                answerable: dots(true),
                unanswerable: dots(false),
                threshold,
                clean: r.insight.separability.clean,
            },
        }
    }
}

/// `y` against dimension `x`, one series per combination of the other dimensions; `None` when
/// the grid has no dimension `x`.
fn line_chart(
    r: &Results,
    y: &str,
    title: &str,
    x: &str,
    metric: Metric,
    rate: bool,
) -> Option<LineChart> {
    let xd = crate::vocab::dim::Dim::from_name(x)?;
    let mut order: Vec<String> = Vec::new();
    let mut series: BTreeMap<String, Vec<Point>> = BTreeMap::new();
    let shown = r.dims();
    for (si, stats) in r.stats.iter().enumerate() {
        let values = r.setting_values(si);
        let Some(xv) = values[xd as usize].parse::<f64>().ok() else {
            continue;
        };
        let Some(yv) = metric(stats) else {
            continue;
        };
        let label = shown
            .iter()
            .filter(|&&d| d != xd)
            .map(|&d| format!("{d}={}", values[d as usize]))
            .collect::<Vec<_>>()
            .join(", ");
        if !series.contains_key(&label) {
            order.push(label.clone());
        }
        series.entry(label).or_default().push(Point {
            setting: r.setting_id(si).to_string(),
            x: xv,
            y: yv,
        });
    }
    let series = order
        .into_iter()
        .map(|label| {
            let mut points = series.remove(&label).unwrap_or_default();
            points.sort_by(|a, b| a.x.total_cmp(&b.x));
            Series {
                label,
                points,
                same_as: Vec::new(),
            }
        })
        .collect::<Vec<_>>();
    let mut series = series;
    for i in 1..series.len() {
        let same: Vec<String> = series[..i]
            .iter()
            .filter(|earlier| earlier.points_equal(&series[i]))
            .map(|earlier| earlier.label.clone())
            .collect();
        series[i].same_as = same;
    }
    Some(LineChart {
        id: y.to_string(),
        title: title.to_string(),
        x: x.to_string(),
        y: y.to_string(),
        rate,
        series,
    })
}

impl Series {
    /// The same (x, y) points: the two lines are drawn on top of each other.
    fn points_equal(&self, other: &Series) -> bool {
        self.points.len() == other.points.len()
            && self
                .points
                .iter()
                .zip(&other.points)
                .all(|(a, b)| a.x == b.x && (a.y - b.y).abs() < 1e-12)
    }
}

/// Coinciding series as the legend names them: `k=1 = k=2 = k=4`, one entry per group of two
/// or more, in series order.
pub fn coinciding(c: &LineChart) -> Vec<String> {
    c.series
        .iter()
        .enumerate()
        .filter(|(_, s)| s.same_as.is_empty())
        .filter_map(|(i, first)| {
            let group: Vec<&str> = std::iter::once(first.label.as_str())
                .chain(
                    c.series[i + 1..]
                        .iter()
                        .filter(|s| s.same_as.first() == Some(&first.label))
                        .map(|s| s.label.as_str()),
                )
                .collect();
            (group.len() > 1).then(|| group.join(" = "))
        })
        .collect()
}

/// A drawing error as an anyhow error (plotters' errors borrow nothing we keep).
fn drawing<E: std::fmt::Debug>(e: E) -> anyhow::Error {
    anyhow!("cannot draw a chart: {e:?}")
}

/// An axis range around `values`, padded so that end points are not on the frame.
fn padded(values: impl Iterator<Item = f64>, pad: f64) -> std::ops::Range<f64> {
    let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    if !lo.is_finite() || !hi.is_finite() {
        return 0.0..1.0;
    }
    let span = hi - lo;
    let pad = if span > 0.0 { span * 0.06 } else { pad };
    (lo - pad)..(hi + pad)
}

/// `range` widened down to a round value below `lowest`, so that the axis has a tick (and a
/// label) to the left of the lowest point.
fn with_tick_below(range: std::ops::Range<f64>, lowest: f64) -> std::ops::Range<f64> {
    if !lowest.is_finite() {
        return range;
    }
    let step = if range.end - range.start > 0.4 {
        0.1
    } else {
        0.05
    };
    let mut start = (lowest / step).floor() * step;
    if lowest - start < step * 0.3 {
        start -= step;
    }
    // Rounded to the step's digits, so the tick's label reads `0.10`, not `0.09999`.
    let start = (start / step).round() * step;
    range.start.min(start)..range.end
}

fn label_font() -> TextStyle<'static> {
    ("sans-serif", 15).into_font().color(&RGBColor(60, 60, 60))
}

/// The fonts and grid lines every chart shares.
fn house_style<'m, 'a, 'b, X: Ranged, Y: Ranged, DB: DrawingBackend>(
    mesh: &'m mut plotters::chart::MeshStyle<'a, 'b, X, Y, DB>,
) -> &'m mut plotters::chart::MeshStyle<'a, 'b, X, Y, DB> {
    mesh.label_style(label_font())
        .axis_desc_style(label_font())
        .light_line_style(RGBColor(238, 238, 238))
        .bold_line_style(RGBColor(220, 220, 220))
}

/// Whether the dimension `x` takes whole numbers only.
fn whole_numbers(x: &str) -> bool {
    x == crate::vocab::dim::Dim::K.name()
}

/// An f64 axis whose ticks are the values in `at` when given, else the ones plotters picks.
struct Ticks {
    inner: plotters::coord::types::RangedCoordf64,
    at: Option<Vec<f64>>,
}

impl Ranged for Ticks {
    type FormatOption = plotters::coord::ranged1d::NoDefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        self.inner.map(value, limit)
    }

    fn key_points<Hint: plotters::coord::ranged1d::KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        match &self.at {
            // The swept values are the bold ticks; no light lines between them.
            Some(_) if hint.weight().allow_light_points() => Vec::new(),
            Some(at) => at.clone(),
            None => self.inner.key_points(hint),
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.inner.range()
    }
}

impl plotters::coord::ranged1d::ValueFormatter<f64> for Ticks {
    fn format(value: &f64) -> String {
        plotters::coord::types::RangedCoordf64::format(value)
    }
}

/// Draw a line chart as an SVG document. A dimension of whole numbers (k) has its ticks at the
/// values swept and nowhere else: ticks between them were labelled `1 2 2 3 4 4` for k = 1, 2,
/// 4 (1.5 and 3.5 rounded).
pub fn line_svg(c: &LineChart) -> Result<String> {
    let points = || c.series.iter().flat_map(|s| s.points.iter());
    let swept = whole_numbers(&c.x).then(|| {
        let mut swept: Vec<f64> = points().map(|p| p.x).collect();
        swept.sort_by(f64::total_cmp);
        swept.dedup();
        swept
    });
    let xr = Ticks {
        inner: padded(points().map(|p| p.x), if c.rate { 0.05 } else { 0.5 }).into(),
        at: swept,
    };
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(drawing)?;
        let yr = if c.rate {
            0.0..1.0
        } else {
            let top = points().map(|p| p.y).fold(0.0, f64::max);
            0.0..if top > 0.0 { top * 1.12 } else { 1.0 }
        };
        let mut chart = ChartBuilder::on(&root)
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(56)
            .build_cartesian_2d(xr, yr)
            .map_err(drawing)?;
        let y_fmt = |v: &f64| {
            if c.rate {
                format!("{:.0}%", v * 100.0)
            } else {
                format!("{v:.0}")
            }
        };
        let x_fmt = |v: &f64| {
            if whole_numbers(&c.x) {
                format!("{v:.0}")
            } else {
                format!("{v:.2}")
            }
        };
        house_style(&mut chart.configure_mesh())
            .x_desc(c.x.as_str())
            .y_desc(if c.rate {
                "rate"
            } else {
                "tokens per question"
            })
            .x_labels(8)
            .y_labels(6)
            .x_label_formatter(&x_fmt)
            .y_label_formatter(&y_fmt)
            .draw()
            .map_err(drawing)?;
        let n = c.series.len();
        for (i, s) in c.series.iter().enumerate() {
            // Lines drawn first are wider, so that a line hidden under an equal one still shows
            // at its edges; the page's legend names the colours.
            let width = 2 + (n - 1 - i).min(4) as u32;
            let color = series_color(i);
            chart
                .draw_series(LineSeries::new(
                    s.points.iter().map(|p| (p.x, p.y)),
                    color.stroke_width(width),
                ))
                .map_err(drawing)?;
            // A shape per series as well as a colour; later (smaller) markers sit inside the
            // earlier ones where points coincide.
            let size = 3 + 2 * (n - 1 - i).min(3) as i32;
            let style = color.filled();
            let shape = i % MARKERS.len();
            let at = |p: &Point| EmptyElement::at((p.x, p.y));
            let (big, grow) = (size + 1, size);
            match shape {
                0 => chart.draw_series(
                    s.points
                        .iter()
                        .map(|p| at(p) + Circle::new((0, 0), size, style)),
                ),
                1 => chart.draw_series(
                    s.points
                        .iter()
                        .map(|p| at(p) + Rectangle::new([(-size, -size), (size, size)], style)),
                ),
                2 => chart.draw_series(s.points.iter().map(|p| {
                    at(p) + Polygon::new(vec![(0, -big), (big, grow), (-big, grow)], style)
                })),
                _ => chart.draw_series(s.points.iter().map(|p| {
                    at(p) + Polygon::new(vec![(0, -big), (big, 0), (0, big), (-big, 0)], style)
                })),
            }
            .map_err(drawing)?;
        }
        root.present().map_err(drawing)?;
    }
    Ok(svg)
}

/// Draw the best-score strips as an SVG document.
pub fn strips_svg(c: &StripChart) -> Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(drawing)?;
        let all = c
            .answerable
            .iter()
            .chain(&c.unanswerable)
            .map(|d| d.score)
            .chain(c.threshold);
        let lowest = c
            .answerable
            .iter()
            .chain(&c.unanswerable)
            .map(|d| d.score)
            .fold(f64::INFINITY, f64::min);
        let xr = with_tick_below(padded(all, 0.05), lowest);
        let x0 = xr.start;
        let mut chart = ChartBuilder::on(&root)
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(12)
            .build_cartesian_2d(xr, -0.6f64..1.6f64)
            .map_err(drawing)?;
        house_style(&mut chart.configure_mesh())
            .disable_y_mesh()
            .disable_y_axis()
            .x_desc("best retrieval score")
            .x_labels(8)
            .x_label_formatter(&|v: &f64| format!("{v:.2}"))
            .draw()
            .map_err(drawing)?;
        if let Some(clean) = c.clean {
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(clean.above, -0.6), (clean.up_to, 1.6)],
                    RGBColor(0, 158, 115).mix(0.15).filled(),
                )))
                .map_err(drawing)?;
        }
        for (dots, row, color, name) in [
            (&c.answerable, 1.0, ANSWERABLE, "answerable"),
            (&c.unanswerable, 0.0, UNANSWERABLE, "unanswerable"),
        ] {
            draw_strip(&mut chart, dots, row, color)?;
            chart
                .draw_series(std::iter::once(Text::new(
                    format!("{name} ({})", dots.len()),
                    (x0, row + 0.45),
                    label_font().color(&color),
                )))
                .map_err(drawing)?;
        }
        if let Some(t) = c.threshold {
            chart
                .draw_series(DashedLineSeries::new(
                    vec![(t, -0.6), (t, 1.6)],
                    6,
                    4,
                    THRESHOLD.stroke_width(2),
                ))
                .map_err(drawing)?;
            chart
                .draw_series(std::iter::once(Text::new(
                    format!(" minScore {t}"),
                    (t, 1.5),
                    label_font(),
                )))
                .map_err(drawing)?;
        }
        root.present().map_err(drawing)?;
    }
    Ok(svg)
}

type StripArea<'a, 'b> = ChartContext<
    'a,
    SVGBackend<'b>,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

/// One strip: a dot per question at its score, stacked a little when scores coincide.
fn draw_strip(
    chart: &mut StripArea<'_, '_>,
    dots: &[Dot],
    row: f64,
    color: RGBColor,
) -> Result<()> {
    let mut sorted: Vec<f64> = dots.iter().map(|d| d.score).collect();
    sorted.sort_by(f64::total_cmp);
    let mut placed: Vec<(f64, f64)> = Vec::with_capacity(sorted.len());
    let mut stack = 0usize;
    for (i, &score) in sorted.iter().enumerate() {
        // Dots closer than 0.004 apart share a column and are stacked up and down.
        stack = if i > 0 && score - sorted[i - 1] < 0.004 {
            stack + 1
        } else {
            0
        };
        let offset = match stack {
            0 => 0.0,
            s if s % 2 == 1 => 0.12 * s.div_ceil(2) as f64,
            s => -0.12 * (s / 2) as f64,
        };
        placed.push((score, row + offset));
    }
    chart
        .draw_series(
            placed
                .iter()
                .map(|&(x, y)| Circle::new((x, y), 5, color.mix(0.75).filled())),
        )
        .map_err(drawing)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_strip_axis_starts_at_a_round_value_below_the_lowest_point() {
        let r = with_tick_below(0.112..0.7, 0.134);
        assert!((r.start - 0.1).abs() < 1e-9, "{r:?}");
        let r = with_tick_below(0.26..0.45, 0.28);
        assert!((r.start - 0.25).abs() < 1e-9, "{r:?}");
        assert_eq!(with_tick_below(0.0..1.0, f64::INFINITY), 0.0..1.0);
    }

    /// Prompt tokens against k = 1, 2, 4: ticks at 1, 2 and 4 only (issue 33 item 11), where
    /// the axis read `1 2 2 3 4 4`. The SVG is snapshotted so that it stays so.
    #[test]
    fn an_integer_dimension_has_ticks_at_its_swept_values_only() {
        let point = |k: f64, y: f64| Point {
            setting: format!("min_score=0.2,k={k}"),
            x: k,
            y,
        };
        let chart = LineChart {
            id: "prompt_tokens_per_question".into(),
            title: "Prompt tokens per question against k".into(),
            x: "k".into(),
            y: "prompt_tokens_per_question".into(),
            rate: false,
            series: vec![Series {
                label: "min_score=0.2".into(),
                points: vec![point(1.0, 180.0), point(2.0, 330.0), point(4.0, 610.0)],
                same_as: Vec::new(),
            }],
        };
        let svg = line_svg(&chart).unwrap();
        let labels: Vec<&str> = svg
            .split("</text>")
            .filter_map(|t| t.rsplit('>').next())
            .map(str::trim)
            .filter(|t| ["1", "1.5", "2", "2.5", "3", "3.5", "4"].contains(t))
            .collect();
        assert_eq!(labels, ["1", "2", "4"], "the x axis' labels");
        insta::assert_snapshot!("prompt_tokens_against_k_svg", svg);
    }

    #[test]
    fn ranges_are_never_empty() {
        assert_eq!(padded([0.3].into_iter(), 0.05), 0.25..0.35);
        assert_eq!(padded(std::iter::empty(), 0.05), 0.0..1.0);
        let r = padded([1.0, 8.0].into_iter(), 0.5);
        assert!(r.start < 1.0 && r.end > 8.0);
    }
}
