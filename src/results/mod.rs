//! The one results value of a sweep: its questions, settings, runs, calls, statistics and
//! insight, with the identity of who made it. The engine's output becomes this value once;
//! the record (results.json), every report writer and the gate read it.

pub mod batch;
pub mod build;
pub mod grader;
pub mod identity;
pub mod labels;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::adapters::evalset::Question;
use crate::analysis::insight::config::RecommendConfig;
use crate::analysis::insight::counts::RunTable;
use crate::analysis::insight::{Insight, QuestionFacts};
use crate::analysis::stats::SettingStats;
use crate::sweep::{CallStats, Run, Setting, SettingRuns};
use crate::vocab::dim::Dim;

/// Facts about the run that every report states: the identity of a results record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Meta {
    /// `tool_version`, `config_digest` and `config`: who ran and with which settings.
    #[serde(flatten)]
    pub identity: crate::results::identity::RunIdentity,
    /// The `embedder:` section's model (the `default` embedder profile's).
    pub embedder: String,
    /// The `chat:` section's model (the `default` chat profile's).
    pub model: String,
    /// With `--chat` naming any profile but `default` alone: each swept chat profile's model,
    /// in the flag's order; absent otherwise, so a sweep of the `chat:` model alone records
    /// what it always did.
    #[serde(default, skip_serializing_if = "indexmap::IndexMap::is_empty")]
    pub models: indexmap::IndexMap<String, String>,
    /// The same for `--embedder` and the embedder profiles.
    #[serde(default, skip_serializing_if = "indexmap::IndexMap::is_empty")]
    pub embedders: indexmap::IndexMap<String, String>,
    /// The judge model's name; null when no judge graded the replies.
    pub judge: Option<String>,
    pub refusal: String,
    pub strict_refusal: bool,
    pub currency: String,
    /// Prices per million tokens, for the cost estimates.
    pub pricing: crate::analysis::stats::Pricing,
    /// How the recommended setting is chosen.
    #[schemars(with = "serde_json::Value")]
    pub policy: RecommendConfig,
    pub evalsets: Vec<SetMeta>,
}

impl Meta {
    /// `models: a = llama3.2:1b, b = qwen2.5:0.5b` when the sweep compared chat profiles (or
    /// swept one that is not `default`); `None` otherwise.
    pub fn models_line(&self) -> Option<String> {
        profiles_line("models", &self.models)
    }

    /// `embedders: ...` likewise for the embedder profiles.
    pub fn embedders_line(&self) -> Option<String> {
        profiles_line("embedders", &self.embedders)
    }
}

/// `LABEL: name = model, ...`, or `None` for no profiles.
fn profiles_line(label: &str, profiles: &indexmap::IndexMap<String, String>) -> Option<String> {
    if profiles.is_empty() {
        return None;
    }
    let each: Vec<String> = profiles
        .iter()
        .map(|(name, model)| format!("{name} = {model}"))
        .collect();
    Some(format!("{label}: {}", each.join(", ")))
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SetMeta {
    pub path: String,
    pub corpus: String,
    pub answerable: usize,
    pub unanswerable: usize,
    /// sha256 of the question set file.
    pub digest: String,
    /// sha256 of the corpus chunks (ids, headings, texts).
    pub corpus_digest: String,
}

/// Everything a report can show.
#[derive(Debug)]
pub struct Results {
    pub meta: Meta,
    /// Corpus names (their folders), by corpus index.
    pub corpora: Vec<String>,
    /// The shard these results cover, when the sweep ran one.
    pub shard: Option<crate::sweep::Shard>,
    /// Per question: its position in the whole sweep's question order (a shard's questions
    /// are some of them), and its question set (an index into `meta.evalsets`).
    pub positions: Vec<usize>,
    pub question_set: Vec<usize>,
    pub questions: Vec<Question>,
    pub settings: Vec<Setting>,
    pub stats: Vec<SettingStats>,
    /// Setting-major, each setting's in question order; a setting an adaptive sweep dropped
    /// has the runs of its questions only. Read one setting's with [`Results::runs_of`].
    pub runs: Vec<Run>,
    pub calls: CallStats,
    /// Every distinct model call; runs name theirs by index.
    pub call_log: crate::sweep::CallLog,
    /// Chunk ids by corpus, to name passages.
    pub chunk_ids: Vec<Vec<String>>,
    /// Chunks the scan flags, by corpus: chunk index -> the pattern that matched.
    pub flagged: Vec<std::collections::BTreeMap<usize, String>>,
    /// Chunk labels by corpus (`file.md > Heading`), to show passages to people.
    pub chunk_labels: Vec<Vec<String>>,
    /// Chunk texts by corpus, whitespace squashed as prompts send them: the passages a
    /// person labelling a reply reads, and part of its reply id (docs/labels.md).
    pub chunk_texts: Vec<Vec<String>>,
    /// Per question: the highest minScore at which an expected source reaches the prompt
    /// (see [`crate::sweep::Sweep::expected_scores`]).
    pub expected_scores: Vec<Option<f64>>,
    /// With more than one retrieval variant: per variant (in [`Results::retrieval_groups`]
    /// order), per question, the expected source's best score under it; empty otherwise.
    pub expected_by_retrieval: Vec<Vec<Option<f64>>>,
    /// Recommendation, Pareto set and separability, computed from the fields above.
    pub insight: Insight,
    /// Each setting's id and values as text, worked out on first use: writers print them for
    /// every run.
    pub setting_text: std::sync::OnceLock<SettingText>,
    /// Each setting's rates by tag, worked out on first use (see [`Results::by_tag`]): the
    /// summary, the tags report, its table and the gate all read them.
    pub tag_stats: std::sync::OnceLock<Vec<std::sync::OnceLock<crate::analysis::tags::ByTag>>>,
}

/// The settings as text, once.
#[derive(Debug, Default)]
pub struct SettingText {
    /// The dimension columns worth showing (see [`Results::dims`]).
    dims: Vec<Dim>,
    ids: Vec<String>,
    /// Every dimension's value, per setting, in [`Dim::ALL`] order.
    values: Vec<Vec<String>>,
    /// The dimensions results.json and the CSV files name (see [`Results::recorded`]).
    recorded: Vec<Dim>,
    /// Their values, per setting.
    recorded_values: Vec<Vec<String>>,
}

impl Results {
    /// The runs of setting `s`: one per question, or fewer for a setting an adaptive sweep
    /// dropped (see [`crate::sweep::SettingRuns`]).
    pub fn runs_of(&self, s: usize) -> SettingRuns<'_> {
        SettingRuns::of(&self.runs, s)
    }

    /// Whether an adaptive sweep dropped setting `s`: it ran fewer than every question.
    pub fn dropped(&self, s: usize) -> bool {
        self.runs_of(s).dropped(self.questions.len())
    }

    /// When an adaptive sweep dropped setting `s`: the answerable and unanswerable questions
    /// it ran before it was out.
    pub fn dropped_after(&self, s: usize) -> Option<[usize; 2]> {
        let runs = self.runs_of(s);
        runs.dropped(self.questions.len()).then(|| {
            let answerable = runs
                .iter()
                .filter(|r| self.questions[r.question].answerable)
                .count();
            [answerable, runs.len() - answerable]
        })
    }

    /// The rates by tag of setting `s` (see [`crate::analysis::tags`]).
    pub fn by_tag(&self, s: usize) -> &crate::analysis::tags::ByTag {
        let all = self.tag_stats.get_or_init(|| {
            (0..self.settings.len())
                .map(|_| std::sync::OnceLock::new())
                .collect()
        });
        all[s].get_or_init(|| crate::analysis::tags::by_tag(self.runs_of(s), &self.questions))
    }

    pub(crate) fn text(&self) -> &SettingText {
        self.setting_text.get_or_init(|| {
            let values: Vec<Vec<String>> = self.settings.iter().map(Setting::values).collect();
            let recorded = crate::vocab::grid::recorded_columns(&self.settings);
            SettingText {
                dims: crate::vocab::grid::shown_columns(&self.settings),
                ids: self.settings.iter().map(Setting::id).collect(),
                recorded_values: values
                    .iter()
                    .map(|v| recorded.iter().map(|&d| v[d as usize].clone()).collect())
                    .collect(),
                recorded,
                values,
            }
        })
    }

    /// The dimensions results.json and the CSV files name: the first five always, a model
    /// dimension when some setting moves it off its default.
    pub fn recorded(&self) -> &[Dim] {
        &self.text().recorded
    }

    /// Names of [`Results::recorded`].
    pub fn recorded_names(&self) -> Vec<&'static str> {
        self.recorded().iter().map(|d| d.name()).collect()
    }

    /// Setting `s`'s values for [`Results::recorded`].
    pub fn recorded_values(&self, s: usize) -> &[String] {
        &self.text().recorded_values[s]
    }

    /// The dimension columns worth showing: minScore and k, and any other dimension that some
    /// setting moves off its default.
    pub fn dims(&self) -> &[Dim] {
        &self.text().dims
    }

    /// Names of [`Results::dims`].
    pub fn dim_names(&self) -> Vec<&'static str> {
        self.dims().iter().map(|d| d.name()).collect()
    }

    /// Setting `s`'s values for [`Results::dims`].
    pub fn dim_values(&self, s: usize) -> Vec<&str> {
        let values = &self.text().values[s];
        self.dims()
            .iter()
            .map(|&d| values[d as usize].as_str())
            .collect()
    }

    /// Setting `s`'s values for every dimension, in [`Dim::ALL`] order.
    pub fn setting_values(&self, s: usize) -> &[String] {
        &self.text().values[s]
    }

    /// Setting `s`'s id.
    pub fn setting_id(&self, s: usize) -> &str {
        &self.text().ids[s]
    }

    /// Columns of the scenarios a sweep measured, when it measured them: the attack success of
    /// injection probes, time to first token of streamed calls. `(header, cell per setting)`.
    pub fn scenario_columns(&self) -> Vec<(&'static str, Vec<String>)> {
        let mut cols = Vec::new();
        if self.stats.iter().any(|s| s.attack_questions > 0) {
            let cells = self
                .stats
                .iter()
                .map(|s| {
                    let rate = s
                        .attack_success_rate
                        .map(crate::analysis::insight::format::percent)
                        .unwrap_or_else(|| "-".into());
                    format!("{}/{} {rate}", s.injected, s.attack_questions)
                })
                .collect();
            cols.push(("injected", cells));
        }
        if self.stats.iter().any(|s| s.ttft_p50_ms.is_some()) {
            let ms = |v: Option<f64>| v.map(|x| format!("{x:.0}")).unwrap_or_else(|| "-".into());
            let cells = self
                .stats
                .iter()
                .map(|s| format!("{}/{}", ms(s.ttft_p50_ms), ms(s.ttft_p95_ms)))
                .collect();
            cols.push(("ttft p50/p95 ms", cells));
        }
        if self.stats.iter().any(|s| s.paraphrased_refusal > 0) {
            let cells = self
                .stats
                .iter()
                .map(|s| s.paraphrased_refusal.to_string())
                .collect();
            cols.push(("paraphrased ref", cells));
        }
        if self.judged() {
            let rate = |v: Option<f64>| {
                v.map(crate::analysis::insight::format::percent)
                    .unwrap_or_else(|| "-".into())
            };
            for (name, pick) in [
                (
                    "answer match",
                    (|s| s.answer_match_rate) as fn(&SettingStats) -> Option<f64>,
                ),
                ("judged correct", |s| s.judged_correct_rate),
                ("judged supported", |s| s.judged_supported_rate),
            ] {
                cols.push((name, self.stats.iter().map(|s| rate(pick(s))).collect()));
            }
        }
        cols
    }

    /// The grader's checks on its own grades, over every run.
    pub fn grader_checks(&self) -> crate::analysis::checks::GraderChecks {
        crate::analysis::checks::GraderChecks::of(&self.runs)
    }

    /// Whether a judge graded this sweep's replies.
    pub fn judged(&self) -> bool {
        self.meta.judge.is_some()
    }

    /// One line on how often the judge agreed with the string rules over all settings, when a
    /// judge graded: where they part, the cheap rules mislead.
    pub fn judge_summary(&self) -> Option<String> {
        if !self.judged() {
            return None;
        }
        let sum = |f: fn(&SettingStats) -> usize| self.stats.iter().map(f).sum::<usize>();
        let graded = sum(|s| s.judged);
        let c = &self.calls;
        let agree = |f: fn(&SettingStats) -> Option<f64>, base: fn(&SettingStats) -> usize| {
            let n: usize = self.stats.iter().map(base).sum();
            let agreeing: f64 = self
                .stats
                .iter()
                .map(|s| f(s).unwrap_or(0.0) * base(s) as f64)
                .sum();
            if n == 0 {
                "-".to_string()
            } else {
                format!(
                    "{} ({}/{n})",
                    crate::analysis::insight::format::percent(agreeing / n as f64),
                    agreeing.round() as usize
                )
            }
        };
        Some(format!(
            "judge `{}`: {} calls ({} from cache, {} failed) graded {graded} runs; agrees with the string rules on refusals {} and with answer_match on answers {}{}",
            self.meta.judge.as_deref().unwrap_or(""),
            c.judge_calls,
            c.judge_cache_hits,
            c.judge_failed,
            agree(|s| s.judge_refusal_agreement, |s| s.judged),
            agree(|s| s.judge_answer_agreement, |s| s.judge_answer_graded),
            self.grader_checks().overrides(),
        ))
    }

    /// One line on the reranker's calls, when a reranker rescored the passages: one call per
    /// distinct question text and passages, like the answer calls counted by the line above it.
    pub fn rerank_summary(&self) -> Option<String> {
        let reranker = self.meta.identity.config.reranker.as_ref()?;
        let c = &self.calls;
        Some(format!(
            "reranker `{}`: {} calls ({} from cache, {} failed)",
            reranker.model, c.rerank_calls, c.rerank_cache_hits, c.rerank_failed
        ))
    }

    /// One line naming the flagged chunks that reached a prompt, if any.
    pub fn flagged_summary(&self) -> Option<String> {
        let flagged = self.flagged_in_prompts();
        if flagged.is_empty() {
            return None;
        }
        let items: Vec<String> = flagged
            .iter()
            .map(|(chunk, pattern, runs)| format!("{chunk} ({runs} runs, matches `{pattern}`)"))
            .collect();
        Some(format!(
            "scan: {} flagged chunk(s) reached a prompt: {}. The scan is a tripwire for review, not a defence.",
            flagged.len(),
            items.join("; ")
        ))
    }

    /// Ids of the flagged chunks among a run's passages.
    pub fn flagged_passages(&self, run: &Run) -> Vec<&str> {
        let flagged = &self.flagged[self.questions[run.question].corpus];
        run.passages
            .iter()
            .filter(|h| flagged.contains_key(&h.chunk))
            .map(|h| self.chunk_id(run.question, h.chunk))
            .collect()
    }

    /// Runs of setting `s` whose prompt held a flagged chunk.
    pub fn flagged_runs(&self, s: usize) -> usize {
        self.runs_of(s)
            .iter()
            .filter(|run| !self.flagged_passages(run).is_empty())
            .count()
    }

    /// Flagged chunks that reached a prompt: (chunk id, pattern, runs), in corpus order.
    pub fn flagged_in_prompts(&self) -> Vec<(&str, &str, usize)> {
        let mut out = Vec::new();
        for (c, flagged) in self.flagged.iter().enumerate() {
            for (&chunk, pattern) in flagged {
                let runs = self
                    .runs
                    .iter()
                    .filter(|run| {
                        self.questions[run.question].corpus == c
                            && run.passages.iter().any(|h| h.chunk == chunk)
                    })
                    .count();
                if runs > 0 {
                    out.push((self.chunk_ids[c][chunk].as_str(), pattern.as_str(), runs));
                }
            }
        }
        out
    }

    /// The chunk id of a hit of question `q`.
    pub fn chunk_id(&self, q: usize, chunk: usize) -> &str {
        &self.chunk_ids[self.questions[q].corpus][chunk]
    }

    /// The label (`file.md > Heading`) of a hit of question `q`.
    pub fn chunk_label(&self, q: usize, chunk: usize) -> &str {
        self.chunk_labels
            .get(self.questions[q].corpus)
            .and_then(|c| c.get(chunk))
            .map(String::as_str)
            .unwrap_or_else(|| self.chunk_id(q, chunk))
    }

    /// Question `q`'s run at setting `s`, or, when an adaptive sweep dropped `s` before `q`,
    /// at the first setting that asks and retrieves as `s` does (the same rewrite, embedder
    /// and chunk size: the same text asked, the same scores). For what a question's run says
    /// whatever the thresholds.
    pub fn run_like(&self, s: usize, q: usize) -> Option<&Run> {
        self.runs_of(s).get(q).or_else(|| {
            let a = &self.settings[s];
            (0..self.settings.len())
                .filter(|&t| {
                    let b = &self.settings[t];
                    (b.rewrite, &b.embedder, b.chunk_tokens)
                        == (a.rewrite, &a.embedder, a.chunk_tokens)
                })
                .find_map(|t| self.runs_of(t).get(q))
        })
    }

    /// The best retrieval score of question `q`, whatever the setting.
    pub fn best_score(&self, q: usize) -> Option<f64> {
        self.run_like(0, q).and_then(|run| run.best_score)
    }

    /// With more than one retrieval variant: each variant's label (`embedder=NAME`,
    /// `chunk_tokens=N` or both) and its settings, in the order settings first name them (the
    /// order of [`Results::expected_by_retrieval`]); empty otherwise.
    pub fn retrieval_groups(&self) -> Vec<(String, Vec<usize>)> {
        let dims = self.recorded_names();
        let mut groups: Vec<(String, Vec<usize>)> = Vec::new();
        for s in 0..self.settings.len() {
            let label = self.settings[s].retrieval_label(&dims);
            match groups.iter_mut().find(|(l, _)| *l == label) {
                Some((_, members)) => members.push(s),
                None => groups.push((label, vec![s])),
            }
        }
        if groups.len() < 2 {
            groups.clear();
        }
        groups
    }

    /// With a reranker, the best retrieval score of question `q` before reranking.
    pub fn best_retrieval_score(&self, q: usize) -> Option<f64> {
        self.run_like(0, q).and_then(|run| run.best_retrieval_score)
    }

    /// Per question, the best score and the best retrieval score of the run like setting `s`'s
    /// ([`Results::run_like`]), each looked up once.
    fn scores_like(&self, s: usize) -> (Vec<Option<f64>>, Vec<Option<f64>>) {
        (0..self.questions.len())
            .map(|q| {
                self.run_like(s, q)
                    .map_or((None, None), |r| (r.best_score, r.best_retrieval_score))
            })
            .unzip()
    }

    /// Compute [`Results::insight`] from the rest, under `policy`.
    pub fn with_insight(mut self, policy: &RecommendConfig) -> Self {
        let (best, retrieval) = self.scores_like(0);
        let labels = self.labelled_replies();
        let table = RunTable::new(
            (0..self.settings.len()).map(|s| self.runs_of(s)),
            &self.questions,
        )
        .with_labels(labels);
        self.insight = Insight::new(
            QuestionFacts {
                questions: &self.questions,
                best_scores: &best,
                expected_scores: &self.expected_scores,
                retrieval_scores: &retrieval,
            },
            &self.settings,
            &self.stats,
            &table,
            policy,
        );
        let by_retrieval = self
            .retrieval_groups()
            .into_iter()
            .enumerate()
            .map(|(g, (label, members))| {
                let (best, retrieval) = self.scores_like(members[0]);
                let settings: Vec<Setting> =
                    members.iter().map(|&s| self.settings[s].clone()).collect();
                let stats: Vec<_> = members.iter().map(|&s| self.stats[s].clone()).collect();
                let expected = self.expected_by_retrieval.get(g).map_or(&[][..], |e| e);
                let table =
                    RunTable::new(members.iter().map(|&s| self.runs_of(s)), &self.questions)
                        .with_labels(labels);
                let mut within = Insight::new(
                    QuestionFacts {
                        questions: &self.questions,
                        best_scores: &best,
                        expected_scores: expected,
                        retrieval_scores: &retrieval,
                    },
                    &settings,
                    &stats,
                    &table,
                    policy,
                );
                within.recommendation.index = within.recommendation.index.map(|i| members[i]);
                crate::analysis::insight::RetrievalInsight {
                    retrieval: label,
                    recommendation: within.recommendation,
                    separability: within.separability,
                    retrieval_separability: within.retrieval_separability,
                }
            })
            .collect();
        self.insight.by_retrieval = by_retrieval;
        self
    }
}

/// One line on the stability of a repeated sweep, for the terminal footer and report.md; `None`
/// when nothing was repeated. Names the flip rate over every run, at the recommended setting,
/// and the least stable questions.
pub fn repeat_line(r: &Results) -> Option<String> {
    let rates = crate::analysis::repeat::question_flip_rates(&r.runs, r.questions.len());
    if rates.is_empty() {
        return None;
    }
    let repeats = r.runs.iter().map(|run| 1 + run.repeats.len()).max()?;
    let (flipped, total) = r.runs.iter().fold((0, 0), |(f, t), run| {
        (
            f + crate::analysis::repeat::flips(run),
            t + 1 + run.repeats.len(),
        )
    });
    let percent = |v: f64| format!("{:.1}%", v * 100.0);
    let mut line = format!(
        "repeats: every call made {repeats} times; flip rate {} over all runs",
        percent(flipped as f64 / total.max(1) as f64)
    );
    let recommended = r.insight.recommendation.index;
    if let Some(st) = recommended.and_then(|i| r.stats.get(i)?.stability.as_ref()) {
        line.push_str(&format!(
            ", {} at the recommended setting ({} of {} questions flipped)",
            percent(st.flip_rate),
            st.flipped_questions,
            r.questions.len()
        ));
    }
    let mut worst: Vec<(usize, f64)> = rates
        .into_iter()
        .enumerate()
        .filter(|(_, v)| *v > 0.0)
        .collect();
    worst.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    if worst.is_empty() {
        line.push_str("; no question flipped");
    } else {
        let names: Vec<String> = worst
            .iter()
            .take(3)
            .map(|&(q, v)| format!("{} ({})", r.questions[q].id, percent(v)))
            .collect();
        line.push_str(&format!("; least stable: {}", names.join(", ")));
    }
    Some(line)
}
