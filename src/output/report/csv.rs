//! `summary.csv` (one row per setting) and `runs.csv` (one row per question and setting).
//!
//! RFC 4180 with a header row, UTF-8, `.` as the decimal point. Answers come from untrusted
//! documents, so every free-text cell that a spreadsheet would read as a formula (a leading
//! `=`, `+`, `-`, `@`, tab or carriage return) is prefixed with `'`.

use std::fmt::Write as _;
use std::io::Write;

use anyhow::Result;

use super::{Exporter, Results};
use crate::analysis::insight::wilson::Interval;

pub struct SummaryCsv;
pub struct RunsCsv;

/// Make a text cell inert in spreadsheets (OWASP's CSV injection advice).
pub(crate) fn neutralize(text: &str) -> String {
    if formula_start(text) {
        format!("'{text}")
    } else {
        text.to_string()
    }
}

/// Whether a spreadsheet would read `text` as a formula.
fn formula_start(text: &str) -> bool {
    text.starts_with(['=', '+', '-', '@', '\t', '\r'])
}

fn fixed(v: Option<f64>, digits: usize) -> String {
    v.map(|x| format!("{x:.digits$}")).unwrap_or_default()
}

pub(super) fn writer(out: &mut dyn Write) -> ::csv::Writer<&mut dyn Write> {
    ::csv::WriterBuilder::new()
        .terminator(::csv::Terminator::CRLF)
        .from_writer(out)
}

const SUMMARY_COLUMNS: &[&str] = &[
    "questions",
    "answerable",
    "unanswerable",
    "answer",
    "early_refusal",
    "model_refusal",
    "false_refusal",
    "false_refusal_early",
    "unwanted_answer",
    "error",
    "false_refusal_rate",
    "false_refusal_rate_lo",
    "false_refusal_rate_hi",
    "unwanted_answer_rate",
    "unwanted_answer_rate_lo",
    "unwanted_answer_rate_hi",
    "stage_threshold",
    "stage_retrieval",
    "stage_generation",
    "answer_match",
    "answer_miss",
    "answer_wrong_source",
    "invalid_citation_runs",
    "retrieval_questions",
    "retrieval_hits",
    "hit_rate",
    "hit_rate_lo",
    "hit_rate_hi",
    "recall",
    "mrr",
    "answered",
    "coverage",
    "coverage_lo",
    "coverage_hi",
    "risky_answers",
    "risk",
    "risk_lo",
    "risk_hi",
    "model_calls",
    "prompt_tokens",
    "cached_prompt_tokens",
    "completion_tokens",
    "prompt_tokens_per_question",
    "tokens_estimated",
    "cost",
    "latency_p50_ms",
    "latency_p95_ms",
    "ttft_p50_ms",
    "ttft_p95_ms",
    "attack_questions",
    "injected",
    "attack_success_rate",
    "flagged_in_prompt_runs",
    "paraphrased_refusal",
    "wrong_answer",
    "wrong_answer_rate",
    "wrong_answer_rate_lo",
    "wrong_answer_rate_hi",
    "answer_match_rate",
    "judged",
    "judge_errors",
    "judged_correct",
    "judged_correct_rate",
    "judged_supported",
    "judged_supported_rate",
    "judge_refusal_agreement",
    "judge_answer_agreement",
    "judge_calls",
    "judge_prompt_tokens",
    "judge_completion_tokens",
    "judge_cost",
    "batch_calls",
    "batch_cost",
    "pareto",
    "recommended",
    "certified",
    "certification",
];

/// A rate and its interval bounds: three cells.
pub(super) fn rate_cells(rate: Option<f64>, ci: Option<Interval>) -> [String; 3] {
    [
        fixed(rate, 4),
        fixed(ci.map(|i| i.lo), 4),
        fixed(ci.map(|i| i.hi), 4),
    ]
}

impl Exporter for SummaryCsv {
    fn file_name(&self) -> &'static str {
        "summary.csv"
    }

    fn write(&self, r: &Results, out: &mut dyn Write) -> Result<()> {
        let mut w = writer(out);
        w.write_record(r.recorded_names().iter().chain(SUMMARY_COLUMNS))?;
        for (i, s) in r.stats.iter().enumerate() {
            let mut row = r.recorded_values(i).to_vec();
            row.extend([
                s.questions.to_string(),
                s.answerable.to_string(),
                s.unanswerable.to_string(),
                s.answer.to_string(),
                s.early_refusal.to_string(),
                s.model_refusal.to_string(),
                s.false_refusal.to_string(),
                s.false_refusal_early.to_string(),
                s.unwanted_answer.to_string(),
                s.error.to_string(),
            ]);
            row.extend(rate_cells(s.false_refusal_rate, s.false_refusal_rate_ci));
            row.extend(rate_cells(
                s.unwanted_answer_rate,
                s.unwanted_answer_rate_ci,
            ));
            row.extend([
                s.stage_threshold.to_string(),
                s.stage_retrieval.to_string(),
                s.stage_generation.to_string(),
                s.answer_match.to_string(),
                s.answer_miss.to_string(),
                s.answer_wrong_source.to_string(),
                s.invalid_citation_runs.to_string(),
                s.retrieval_questions.to_string(),
                s.retrieval_hits.to_string(),
            ]);
            row.extend(rate_cells(s.hit_rate, s.hit_rate_ci));
            row.extend([fixed(s.recall, 4), fixed(s.mrr, 4), s.answered.to_string()]);
            row.extend(rate_cells(s.coverage, s.coverage_ci));
            row.push(s.risky_answers.to_string());
            row.extend(rate_cells(s.risk, s.risk_ci));
            row.extend([
                s.model_calls.to_string(),
                s.prompt_tokens.to_string(),
                s.cached_prompt_tokens.to_string(),
                s.completion_tokens.to_string(),
                format!("{:.1}", s.prompt_tokens_per_question),
                s.tokens_estimated.to_string(),
                format!("{:.6}", s.cost),
                fixed(s.latency_p50_ms, 3),
                fixed(s.latency_p95_ms, 3),
                fixed(s.ttft_p50_ms, 3),
                fixed(s.ttft_p95_ms, 3),
                s.attack_questions.to_string(),
                s.injected.to_string(),
                fixed(s.attack_success_rate, 4),
                r.flagged_runs(i).to_string(),
                s.paraphrased_refusal.to_string(),
                s.wrong_answer.to_string(),
            ]);
            row.extend(rate_cells(s.wrong_answer_rate, s.wrong_answer_rate_ci));
            row.extend([
                fixed(s.answer_match_rate, 4),
                s.judged.to_string(),
                s.judge_errors.to_string(),
                s.judged_correct.to_string(),
                fixed(s.judged_correct_rate, 4),
                s.judged_supported.to_string(),
                fixed(s.judged_supported_rate, 4),
                fixed(s.judge_refusal_agreement, 4),
                fixed(s.judge_answer_agreement, 4),
                s.judge_calls.to_string(),
                s.judge_prompt_tokens.to_string(),
                s.judge_completion_tokens.to_string(),
                format!("{:.6}", s.judge_cost),
                r.batch_calls(Some(i)).to_string(),
                format!("{:.6}", r.batch_cost(Some(i))),
                r.insight.is_pareto(i).to_string(),
                r.insight.is_recommended(i).to_string(),
                r.insight.is_certified(i).to_string(),
                crate::output::explain::certification_cell(r.insight.recommendation.certification),
            ]);
            w.write_record(&row)?;
        }
        w.flush()?;
        Ok(())
    }
}

const RUN_COLUMNS: &[&str] = &[
    "question_id",
    "answerable",
    "outcome",
    "refusal",
    "refusal_match",
    "stage",
    "best_score",
    "hits",
    "passages",
    "expected_in_top_k",
    "expected_in_prompt",
    "expected_rank",
    "expected_recall",
    "cited",
    "invalid_citations",
    "expected_cited",
    "answer_match",
    "wrong_answer",
    "judge_refused",
    "judge_correct",
    "judge_supported",
    "injected",
    "flagged_passages",
    "model_calls",
    "prompt_tokens",
    "cached_prompt_tokens",
    "completion_tokens",
    "judge_prompt_tokens",
    "judge_completion_tokens",
    "latency_ms",
    "ttft_ms",
    "error_kind",
    "error",
    "judge_error",
    "question",
    "asked",
    "rewrite_note",
    "answer",
];

impl Exporter for RunsCsv {
    fn file_name(&self) -> &'static str {
        "runs.csv"
    }

    fn write(&self, r: &Results, out: &mut dyn Write) -> Result<()> {
        let mut w = writer(out);
        let header: Vec<&str> = RUN_COLUMNS[..2]
            .iter()
            .chain(&r.recorded_names())
            .chain(&RUN_COLUMNS[2..])
            .copied()
            .collect();
        w.write_record(&header)?;
        w.flush()?;
        drop(w);
        // Blocks of runs are rendered on every core and written in order: the file is the
        // bytes one writer would make, since each record's bytes depend on the run alone.
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        std::thread::scope(|scope| -> Result<()> {
            let mut in_flight = std::collections::VecDeque::new();
            for block in r.runs.chunks(RUN_BLOCK) {
                if in_flight.len() >= threads {
                    write_block(out, in_flight.pop_front())?;
                }
                in_flight.push_back(scope.spawn(move || render_runs(r, block)));
            }
            while let Some(next) = in_flight.pop_front() {
                write_block(out, Some(next))?;
            }
            Ok(())
        })
    }
}

/// Runs rendered per block of [`RunsCsv`]: a few megabytes each.
const RUN_BLOCK: usize = 8192;

fn write_block(
    out: &mut dyn Write,
    block: Option<std::thread::ScopedJoinHandle<'_, ::csv::Result<Vec<u8>>>>,
) -> Result<()> {
    if let Some(block) = block {
        // A renderer only panics on a bug: crash as the sequential loop would have.
        let bytes = block
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))?;
        out.write_all(&bytes)?;
    }
    Ok(())
}

/// The runs.csv records of `runs`, without the header.
fn render_runs(r: &Results, runs: &[crate::sweep::Run]) -> ::csv::Result<Vec<u8>> {
    let mut bytes = Vec::with_capacity(runs.len() * 512);
    {
        // Cell by cell through two reused buffers: a million runs made 45 million strings.
        let mut c = Cells {
            w: writer(&mut bytes),
            buf: String::new(),
            joined: String::new(),
        };
        for run in runs {
            let q = &r.questions[run.question];
            let v = &run.verdict;
            c.text(&q.id)?;
            c.show(Some(q.answerable))?;
            for value in r.recorded_values(run.setting) {
                c.w.write_field(value)?;
            }
            c.show(Some(v.outcome))?;
            c.show(v.refusal.map(|x| x.as_str()))?;
            c.show(v.refusal_match)?;
            c.show(v.stage.map(|s| s.as_str()))?;
            c.fixed(run.best_score, 6)?;
            c.show(Some(run.passages.len()))?;
            c.joined_text(
                run.passages
                    .iter()
                    .map(|h| r.chunk_id(run.question, h.chunk)),
            )?;
            c.show(v.expected_in_top_k)?;
            c.show(v.expected_in_prompt)?;
            c.show(v.expected_rank)?;
            c.fixed(v.expected_recall, 4)?;
            c.joined_text(v.cited.iter().map(String::as_str))?;
            c.buf.clear();
            for (i, n) in v.invalid_citations.iter().enumerate() {
                if i > 0 {
                    c.buf.push(' ');
                }
                let _ = write!(c.buf, "{n}");
            }
            c.w.write_field(&c.buf)?;
            c.show(v.expected_cited)?;
            c.show(v.answer_match)?;
            c.show(v.wrong_answer)?;
            c.show(v.judge_refused)?;
            c.show(v.judge_correct)?;
            c.show(v.judge_supported)?;
            c.show(v.injected)?;
            c.joined_text(r.flagged_passages(run).into_iter())?;
            c.show(Some(run.model_calls))?;
            c.show(Some(run.prompt_tokens))?;
            c.show(Some(run.cached_prompt_tokens))?;
            c.show(Some(run.completion_tokens))?;
            c.show(Some(run.judge_prompt_tokens))?;
            c.show(Some(run.judge_completion_tokens))?;
            c.fixed(run.latency.map(|l| l.as_secs_f64() * 1000.0), 3)?;
            c.fixed(run.ttft.map(|l| l.as_secs_f64() * 1000.0), 3)?;
            c.show(run.error.as_ref().map(|e| e.kind.as_str()))?;
            c.text(run.error.as_ref().map(|e| e.message.as_str()).unwrap_or(""))?;
            c.text(v.judge_error.as_deref().unwrap_or(""))?;
            c.text(&q.question)?;
            c.text(&run.asked)?;
            c.text(run.rewrite_note.as_deref().unwrap_or(""))?;
            c.text(&run.answer)?;
            c.w.write_record(None::<&[u8]>)?;
        }
        c.w.flush()?;
    }
    Ok(bytes)
}

/// A CSV writer and scratch buffers, for writing cells without a string each.
struct Cells<'a> {
    w: ::csv::Writer<&'a mut dyn Write>,
    buf: String,
    joined: String,
}

impl Cells<'_> {
    /// A free-text cell, prefixed with `'` when it starts like a formula.
    fn text(&mut self, text: &str) -> ::csv::Result<()> {
        if formula_start(text) {
            self.buf.clear();
            self.buf.push('\'');
            self.buf.push_str(text);
            self.w.write_field(&self.buf)
        } else {
            self.w.write_field(text)
        }
    }

    /// Items joined by spaces, as one free-text cell.
    fn joined_text<'t>(&mut self, items: impl Iterator<Item = &'t str>) -> ::csv::Result<()> {
        let mut joined = std::mem::take(&mut self.joined);
        joined.clear();
        for (i, item) in items.enumerate() {
            if i > 0 {
                joined.push(' ');
            }
            joined.push_str(item);
        }
        let written = self.text(&joined);
        self.joined = joined;
        written
    }

    /// A value as text, or an empty cell.
    fn show<T: std::fmt::Display>(&mut self, v: Option<T>) -> ::csv::Result<()> {
        self.buf.clear();
        if let Some(v) = v {
            let _ = write!(self.buf, "{v}");
        }
        self.w.write_field(&self.buf)
    }

    /// [`fixed`]: a number with `digits` decimals, or an empty cell.
    fn fixed(&mut self, v: Option<f64>, digits: usize) -> ::csv::Result<()> {
        self.buf.clear();
        if let Some(x) = v {
            let _ = write!(self.buf, "{x:.digits$}");
        }
        self.w.write_field(&self.buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::report::fixture;

    fn render(e: &dyn Exporter) -> String {
        let mut buf = Vec::new();
        e.write(&fixture::results(), &mut buf).unwrap();
        String::from_utf8(buf).unwrap()
    }

    /// `batch_calls` and `batch_cost` count the calls a batch answered, each once per
    /// setting, at the chat prices less the discount; a setting without any gets 0, never -0.
    #[test]
    fn batch_columns_count_and_price_the_batch_answered_calls() {
        let mut r = fixture::results();
        r.meta.pricing.batch_discount = 0.5;
        let first = r.runs_of(1).iter().find_map(|run| run.call).unwrap();
        let call = &mut r.call_log[first as usize];
        call.batch = true;
        let u = call.usage;
        let full =
            r.meta
                .pricing
                .cost(u.prompt_tokens, u.cached_prompt_tokens, u.completion_tokens);
        assert!(full > 0.0);
        let mut buf = Vec::new();
        SummaryCsv.write(&r, &mut buf).unwrap();
        let text = String::from_utf8(buf).unwrap();
        let mut rows = text.lines().map(|l| l.split(',').collect::<Vec<_>>());
        let header = rows.next().unwrap();
        let at = |name: &str| header.iter().position(|h| *h == name).unwrap();
        let cells: Vec<(String, String)> = rows
            .map(|row| {
                (
                    row[at("batch_calls")].to_string(),
                    row[at("batch_cost")].to_string(),
                )
            })
            .collect();
        let shares = |s: usize| r.runs_of(s).iter().any(|run| run.call == Some(first));
        for (s, (calls, cost)) in cells.iter().enumerate() {
            if shares(s) {
                assert_eq!(
                    (calls.as_str(), cost.clone()),
                    ("1", format!("{:.6}", full * 0.5))
                );
            } else {
                assert_eq!((calls.as_str(), cost.as_str()), ("0", "0.000000"));
            }
        }
        assert_eq!(r.batch_calls(None), 1);
    }

    /// A setting an adaptive sweep dropped has rows for the questions it ran and no other;
    /// its summary counts those questions alone.
    #[test]
    fn a_dropped_setting_has_rows_for_its_own_questions_only() {
        let (r, plain) = (fixture::dropped(), fixture::results());
        let text = |e: &dyn Exporter, r: &Results| {
            let mut buf = Vec::new();
            e.write(r, &mut buf).unwrap();
            String::from_utf8(buf).unwrap()
        };
        let rows: Vec<String> = text(&RunsCsv, &r).lines().map(String::from).collect();
        let all: Vec<String> = text(&RunsCsv, &plain).lines().map(String::from).collect();
        let dropped_row = |l: &String| l.starts_with("refund,") && l.contains(",0.2,2,");
        assert_eq!(all.iter().filter(|l| dropped_row(l)).count(), 1);
        let kept: Vec<String> = all.into_iter().filter(|l| !dropped_row(l)).collect();
        assert_eq!(rows, kept);
        assert_eq!(r.stats[1].questions, 2);
        assert_eq!((r.stats[1].answerable, r.stats[1].unanswerable), (1, 1));
        assert_eq!(r.stats[0], plain.stats[0]);
    }

    #[test]
    fn summary_columns_snapshot() {
        insta::assert_snapshot!("summary_csv", render(&SummaryCsv));
    }

    #[test]
    fn runs_columns_snapshot() {
        insta::assert_snapshot!("runs_csv", render(&RunsCsv));
    }

    #[test]
    fn runs_rendered_in_blocks_on_every_core_are_the_runs_in_order() {
        let mut r = fixture::results();
        let one = r.runs.clone();
        r.runs = (0..3 * RUN_BLOCK + 5)
            .map(|i| {
                let mut run = one[i % one.len()].clone();
                run.prompt_tokens = i as u64;
                run
            })
            .collect();
        let mut parallel = Vec::new();
        RunsCsv.write(&r, &mut parallel).unwrap();
        let text = String::from_utf8(parallel).unwrap();
        let lines: Vec<&str> = text.split("\r\n").collect();
        assert_eq!(
            lines.len(),
            1 + r.runs.len() + 1,
            "header, runs, final empty"
        );
        let one_block = render_runs(&r, &r.runs).unwrap();
        let header_len = lines[0].len() + 2;
        assert_eq!(text.as_bytes()[header_len..], one_block[..]);
    }

    #[test]
    fn formula_starts_are_neutralized() {
        for bad in ["=1+1", "+1", "-1", "@SUM(A1)", "\tx", "\rx"] {
            assert!(neutralize(bad).starts_with('\''), "{bad:?}");
        }
        assert_eq!(
            neutralize("Membership costs 10 = ten"),
            "Membership costs 10 = ten"
        );
        assert_eq!(neutralize(""), "");
    }

    /// Adding a dimension is one place: with every dimension moved off its default, the CSV
    /// headers, the setting ids and results.json's setting maps name exactly [`Dim::ALL`], in
    /// its order, and the record reads back into the same settings.
    #[test]
    fn every_dimension_reaches_the_csv_files_ids_and_record() {
        use crate::vocab::dim::Dim;
        let mut r = fixture::results();
        for d in Dim::ALL {
            let [v] = <[_; 1]>::try_from(d.parse(d.example()).unwrap()).unwrap();
            r.settings[0].set(d, v);
        }
        // The fixture's insight has worked the settings' text out already.
        r.setting_text = Default::default();
        r.tag_stats = Default::default();
        let names: Vec<&str> = Dim::ALL.iter().map(|d| d.name()).collect();
        let header = |e: &dyn Exporter| {
            let mut buf = Vec::new();
            e.write(&r, &mut buf).unwrap();
            let text = String::from_utf8(buf).unwrap();
            text.lines()
                .next()
                .unwrap()
                .split(',')
                .map(String::from)
                .collect::<Vec<_>>()
        };
        assert_eq!(header(&SummaryCsv)[..names.len()], names);
        assert_eq!(header(&RunsCsv)[2..2 + names.len()], names);
        let keys: Vec<String> = r
            .setting_id(0)
            .split(',')
            .map(|pair| pair.split_once('=').unwrap().0.to_string())
            .collect();
        assert_eq!(keys, names);
        assert_eq!(r.dim_names(), names);
        let record = crate::output::record::Record::of(&r);
        assert_eq!(record.dimensions, names);
        let map = &record.settings[r.setting_id(0)];
        assert_eq!(map.keys().collect::<Vec<_>>(), names);
        let back = record.into_results().unwrap();
        assert_eq!(back.settings[0], r.settings[0]);
    }
}
