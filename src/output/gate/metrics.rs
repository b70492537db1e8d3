//! The gated setting's numbers for CI dashboards: github-action-benchmark's
//! `customSmallerIsBetter` JSON (`--benchmark-json`, for its chart history) and GitLab's metrics
//! report (`--openmetrics`, OpenMetrics text, for the merge-request widget).
//!
//! Every number is one that is better smaller: the three rates and the prompt tokens per
//! question. A rate with no question of its class is left out rather than written as 0.

use std::fmt::Write as _;

use crate::output::report::Results;
use crate::vocab::limit::Stat;

/// The statistics written, in order, with their unit.
const STATS: [(Stat, &str); 4] = [
    (Stat::UnwantedAnswerRate, "share"),
    (Stat::FalseRefusalRate, "share"),
    (Stat::WrongAnswerRate, "share"),
    (Stat::PromptTokensPerQuestion, "tokens"),
];

/// One number of the gated setting.
#[derive(Debug, Clone, PartialEq)]
pub struct Metric {
    /// The statistic's name, as `unwanted_answer_rate`.
    pub name: &'static str,
    pub unit: &'static str,
    pub value: f64,
}

/// The numbers of setting `setting` of `r`.
pub fn of(r: &Results, setting: usize) -> Vec<Metric> {
    let stats = &r.stats[setting];
    STATS
        .iter()
        .filter_map(|&(stat, unit)| {
            Some(Metric {
                name: stat.name(),
                unit,
                value: stats.stat(stat)?,
            })
        })
        .collect()
}

/// github-action-benchmark's `customSmallerIsBetter` input: a JSON array of
/// `{name, unit, value, extra}`. The names stay the same whatever the setting, so a chart's
/// line continues when the gated setting changes; `extra` (shown on hover) names it.
pub fn benchmark_json(metrics: &[Metric], setting: &str, questions: usize) -> String {
    let extra = format!("setting {setting}; {questions} questions");
    let entries: Vec<serde_json::Value> = metrics
        .iter()
        .map(|m| {
            serde_json::json!({
                "name": m.name,
                "unit": m.unit,
                "value": m.value,
                "extra": extra,
            })
        })
        .collect();
    let mut text = serde_json::to_string_pretty(&entries).unwrap_or_else(|_| "[]".into());
    text.push('\n');
    text
}

/// GitLab's metrics report: OpenMetrics text, one gauge per number named `rageval_NAME`, with
/// its `# TYPE` and `# HELP` lines, ended by `# EOF`.
pub fn openmetrics(metrics: &[Metric], setting: &str) -> String {
    let mut s = String::new();
    for m in metrics {
        let name = format!("rageval_{}", m.name);
        let help = format!("{} ({}) of the gated setting {setting}", m.name, m.unit);
        let _ = writeln!(s, "# TYPE {name} gauge");
        let _ = writeln!(s, "# HELP {name} {}", escape_help(&help));
        let _ = writeln!(s, "{name} {}", m.value);
    }
    s.push_str("# EOF\n");
    s
}

/// A `# HELP` text as OpenMetrics escapes it: backslash and newline.
fn escape_help(text: &str) -> String {
    text.replace('\\', "\\\\").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<Metric> {
        vec![
            Metric {
                name: "unwanted_answer_rate",
                unit: "share",
                value: 0.25,
            },
            Metric {
                name: "prompt_tokens_per_question",
                unit: "tokens",
                value: 279.5,
            },
        ]
    }

    #[test]
    fn the_benchmark_json_is_an_array_of_name_unit_value() {
        let text = benchmark_json(&sample(), "min_score=0.2,k=4", 26);
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let entries = v.as_array().unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0]["name"], "unwanted_answer_rate");
        assert_eq!(entries[0]["unit"], "share");
        assert_eq!(entries[0]["value"], 0.25);
        assert_eq!(entries[1]["value"], 279.5);
        assert_eq!(
            entries[1]["extra"],
            "setting min_score=0.2,k=4; 26 questions"
        );
    }

    #[test]
    fn openmetrics_has_a_line_per_number_and_ends_with_eof() {
        let text = openmetrics(&sample(), "k=4\\x");
        assert_eq!(
            text,
            concat!(
                "# TYPE rageval_unwanted_answer_rate gauge\n",
                "# HELP rageval_unwanted_answer_rate unwanted_answer_rate (share) of the gated setting k=4\\\\x\n",
                "rageval_unwanted_answer_rate 0.25\n",
                "# TYPE rageval_prompt_tokens_per_question gauge\n",
                "# HELP rageval_prompt_tokens_per_question prompt_tokens_per_question (tokens) of the gated setting k=4\\\\x\n",
                "rageval_prompt_tokens_per_question 279.5\n",
                "# EOF\n",
            )
        );
    }
}
