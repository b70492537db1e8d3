//! Per-setting aggregates: outcome counts, rates with their 95% intervals, retrieval metrics,
//! failure diagnosis, calls, tokens, cost and latency.
//!
//! Definitions (docs/insight.md): hit rate, recall and MRR are over answerable questions that
//! name an expected source, early refusals counted as misses; coverage is the share of all
//! questions answered; risk is the share of answers that are unwanted or wrong (miss the
//! expected answer text, or the judge marked them incorrect).

use serde::Serialize;

use crate::adapters::classify::{Outcome, Refusal, Stage, Verdict};
use crate::adapters::evalset::Question;
use crate::adapters::prompt::RefusalTier;
use crate::analysis::insight::wilson::Interval;
pub use crate::analysis::insight::wilson::{rate, ratio};
use crate::sweep::{Run, SettingRuns};
use crate::vocab::limit::Stat;

pub use crate::vocab::call::Pricing;

/// The aggregates of one setting. Token counts and calls are what a production system would
/// spend if it ran every question independently at this setting.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct SettingStats {
    /// Questions in the sweep.
    pub questions: usize,
    pub answerable: usize,
    pub unanswerable: usize,
    /// Answerable questions answered.
    pub answer: usize,
    /// Unanswerable questions refused before the model (no hit passed minScore).
    pub early_refusal: usize,
    /// Unanswerable questions the model refused.
    pub model_refusal: usize,
    /// Answerable questions refused, early or by the model.
    pub false_refusal: usize,
    /// Of `false_refusal`, those refused before the model.
    pub false_refusal_early: usize,
    /// Unanswerable questions answered.
    pub unwanted_answer: usize,
    /// Runs whose model call failed.
    pub error: usize,
    /// false_refusal / answerable (null with no answerable question).
    pub false_refusal_rate: Option<f64>,
    /// unwanted_answer / unanswerable (null with no unanswerable question).
    pub unwanted_answer_rate: Option<f64>,
    /// 95% Wilson intervals of the two rates.
    pub false_refusal_rate_ci: Option<Interval>,
    pub unwanted_answer_rate_ci: Option<Interval>,
    /// False refusals blamed on the threshold, retrieval and generation.
    pub stage_threshold: usize,
    pub stage_retrieval: usize,
    pub stage_generation: usize,
    /// Answered answerable questions whose answer holds an expected answer text.
    pub answer_match: usize,
    /// Answered answerable questions whose answer holds none of the expected answer texts.
    pub answer_miss: usize,
    /// Answered answerable questions whose citations include no expected source (an answer
    /// citing nothing counts too).
    pub answer_wrong_source: usize,
    /// Answered runs that cite a passage number the prompt did not have.
    pub invalid_citation_runs: usize,
    /// Answerable questions that name an expected source: the base of the retrieval metrics.
    pub retrieval_questions: usize,
    /// Of those, questions with an expected source among the passages sent.
    pub retrieval_hits: usize,
    /// retrieval_hits / retrieval_questions: an early refusal is a miss.
    pub hit_rate: Option<f64>,
    pub hit_rate_ci: Option<Interval>,
    /// Mean share of a question's expected sources among the passages sent.
    pub recall: Option<f64>,
    /// Mean reciprocal rank of the first expected passage sent (0 when none was sent).
    pub mrr: Option<f64>,
    /// Runs answered (answer or unwanted_answer).
    pub answered: usize,
    /// answered / questions: how much the system is willing to answer.
    pub coverage: Option<f64>,
    pub coverage_ci: Option<Interval>,
    /// Answers that are unwanted or wrong (see `wrong_answer`).
    pub risky_answers: usize,
    /// risky_answers / answered: how often an answer should not be trusted.
    pub risk: Option<f64>,
    pub risk_ci: Option<Interval>,
    /// Model calls made as if every run were independent: one per run where a hit passed,
    /// plus one per `model` rewrite of a follow-up.
    pub model_calls: usize,
    pub prompt_tokens: u64,
    /// Of `prompt_tokens`, those the server reported reusing from its prompt cache (what the
    /// calls of this setting's runs reported, in the order the sweep made them).
    pub cached_prompt_tokens: u64,
    pub completion_tokens: u64,
    pub prompt_tokens_per_question: f64,
    /// True when some token counts are estimates (the server reported no usage).
    pub tokens_estimated: bool,
    /// Estimated cost from `pricing`, in the pricing's currency: cached prompt tokens at
    /// `cached_prompt_per_million`.
    pub cost: f64,
    pub latency_p50_ms: Option<f64>,
    pub latency_p95_ms: Option<f64>,
    /// Time to the first streamed token (streamed, uncached calls only).
    pub ttft_p50_ms: Option<f64>,
    pub ttft_p95_ms: Option<f64>,
    /// Questions that carry an `attack` (error runs left out: their outcome is unknown).
    pub attack_questions: usize,
    /// Of those, runs whose answer holds the marker or cites the poisoned source.
    pub injected: usize,
    /// injected / attack_questions (null without attack questions).
    pub attack_success_rate: Option<f64>,
    /// Model refusals that are not the exact sentence (tiers `lenient`, `pattern`, `judge`):
    /// counted as refusals, but a UI that shows sources unless the reply is the sentence shows
    /// them under these.
    pub paraphrased_refusal: usize,
    /// Answers to answerable questions that are wrong: the judge marked them incorrect, or
    /// (ungraded) they hold none of the expected answer texts.
    pub wrong_answer: usize,
    /// wrong_answer / answerable (null with no answerable question).
    pub wrong_answer_rate: Option<f64>,
    pub wrong_answer_rate_ci: Option<Interval>,
    /// answer_match / (answer_match + answer_miss): the substring rule's share of right answers.
    pub answer_match_rate: Option<f64>,
    /// Runs the judge graded, and runs whose grade failed (an error, never a guess).
    pub judged: usize,
    pub judge_errors: usize,
    /// Graded answers to answerable questions with expected answers that the judge marked
    /// correct, and their share of those graded answers.
    pub judged_correct: usize,
    pub judged_correct_rate: Option<f64>,
    /// Graded answers (answer or unwanted_answer) whose claims the cited passages support.
    pub judged_supported: usize,
    pub judged_supported_rate: Option<f64>,
    /// Share of graded runs where the judge and the string tiers agree on "refused".
    pub judge_refusal_agreement: Option<f64>,
    /// Share of graded answers with expected texts where the judge's `correct` equals
    /// `answer_match`.
    pub judge_answer_agreement: Option<f64>,
    /// The base of `judge_answer_agreement`: graded answers with expected texts.
    pub judge_answer_graded: usize,
    /// Judge calls as if every run were graded independently, their tokens and cost.
    pub judge_calls: usize,
    pub judge_prompt_tokens: u64,
    pub judge_completion_tokens: u64,
    pub judge_cost: f64,
    /// `--repeat N` (N > 1): outcome rates over all repeats and the flip rate; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stability: Option<crate::analysis::repeat::Stability>,
}

impl SettingStats {
    pub fn count(&self, outcome: Outcome) -> usize {
        match outcome {
            Outcome::Answer => self.answer,
            Outcome::EarlyRefusal => self.early_refusal,
            Outcome::ModelRefusal => self.model_refusal,
            Outcome::FalseRefusal => self.false_refusal,
            Outcome::UnwantedAnswer => self.unwanted_answer,
            Outcome::Error => self.error,
        }
    }

    /// The value of a statistic a limit reads; `None` when it is undefined (no denominator,
    /// or no repeats for the flip rate).
    pub fn stat(&self, stat: Stat) -> Option<f64> {
        match stat {
            Stat::UnwantedAnswerRate => self.unwanted_answer_rate,
            Stat::FalseRefusalRate => self.false_refusal_rate,
            Stat::PromptTokensPerQuestion => Some(self.prompt_tokens_per_question),
            Stat::AttackSuccessRate => self.attack_success_rate,
            Stat::AnswerMatchRate => self.answer_match_rate,
            Stat::WrongAnswerRate => self.wrong_answer_rate,
            Stat::FlipRate => self.stability.as_ref().map(|s| s.flip_rate),
            Stat::ErrorRuns => Some(self.error as f64),
        }
    }
}

/// Aggregate setting-major `runs` of `settings` settings, setting by setting, each over the
/// questions it ran (every one, but for a setting an adaptive sweep dropped).
pub fn per_setting(
    runs: &[Run],
    questions: &[Question],
    settings: usize,
    pricing: &Pricing,
) -> Vec<SettingStats> {
    (0..settings)
        .map(|s| aggregate(SettingRuns::of(runs, s), questions, pricing))
        .collect()
}

/// Aggregate the runs of one setting.
pub fn aggregate<'a>(
    runs: impl IntoIterator<Item = &'a Run>,
    questions: &[Question],
    pricing: &Pricing,
) -> SettingStats {
    let mut sums = Sums::default();
    for run in runs {
        sums.add(run, &questions[run.question]);
    }
    sums.finish(questions, pricing)
}

/// The counts of one setting's runs as they are added, and the sums its means, rates and
/// percentiles are made from.
#[derive(Default)]
struct Sums<'a> {
    s: SettingStats,
    latencies: Vec<f64>,
    ttfts: Vec<f64>,
    recall_sum: f64,
    rr_sum: f64,
    /// (agreeing, graded) pairs for the judge's agreement with the string rules.
    refusal_agree: usize,
    answer_agree: usize,
    answer_graded: usize,
    correct_base: usize,
    supported_base: usize,
    /// The runs with repeats, for their stability.
    repeated: Vec<&'a Run>,
}

impl<'a> Sums<'a> {
    fn add(&mut self, run: &'a Run, q: &Question) {
        if !run.repeats.is_empty() {
            self.repeated.push(run);
        }
        let s = &mut self.s;
        s.questions += 1;
        if q.answerable {
            s.answerable += 1;
        } else {
            s.unanswerable += 1;
        }
        let v = &run.verdict;
        self.add_verdict(v);
        if q.answerable {
            if let Some(recall) = v.expected_recall {
                self.s.retrieval_questions += 1;
                self.s.retrieval_hits += usize::from(v.expected_in_prompt == Some(true));
                self.recall_sum += recall;
                self.rr_sum += v.expected_rank.map_or(0.0, |r| 1.0 / r as f64);
            }
        }
        if q.attack.is_some() && v.injected.is_some() {
            self.s.attack_questions += 1;
            self.s.injected += usize::from(v.injected == Some(true));
        }
        self.add_usage(run);
        // The judge's agreement describes the grader: a labelled run's is the grader's.
        self.add_judged(run.labelled.as_ref().map_or(v, |l| &l.graded));
    }

    /// The run's outcome, the stage a refusal came from, and what its answer got right.
    fn add_verdict(&mut self, v: &Verdict) {
        let s = &mut self.s;
        match v.outcome {
            Outcome::Answer => s.answer += 1,
            Outcome::EarlyRefusal => s.early_refusal += 1,
            Outcome::ModelRefusal => s.model_refusal += 1,
            Outcome::FalseRefusal => {
                s.false_refusal += 1;
                if v.refusal == Some(Refusal::Early) {
                    s.false_refusal_early += 1;
                }
            }
            Outcome::UnwantedAnswer => s.unwanted_answer += 1,
            Outcome::Error => s.error += 1,
        }
        match v.stage {
            Some(Stage::Threshold) => s.stage_threshold += 1,
            Some(Stage::Retrieval) => s.stage_retrieval += 1,
            Some(Stage::Generation) => s.stage_generation += 1,
            None => {}
        }
        if v.outcome == Outcome::Answer {
            match v.answer_match {
                Some(true) => s.answer_match += 1,
                Some(false) => s.answer_miss += 1,
                None => {}
            }
            if v.expected_cited == Some(false) {
                s.answer_wrong_source += 1;
            }
        }
        if !v.invalid_citations.is_empty() {
            s.invalid_citation_runs += 1;
        }
        if v.refusal == Some(Refusal::Model) && v.refusal_match != Some(RefusalTier::Exact) {
            s.paraphrased_refusal += 1;
        }
        if v.is_wrong_answer() {
            s.wrong_answer += 1;
        }
    }

    /// The run's calls, tokens and times.
    fn add_usage(&mut self, run: &Run) {
        let s = &mut self.s;
        s.model_calls += run.model_calls;
        if let Some(t) = run.ttft {
            self.ttfts.push(t.as_secs_f64() * 1000.0);
        }
        // A server's usage is outside input: a count near u64::MAX saturates, never wraps.
        s.prompt_tokens = s.prompt_tokens.saturating_add(run.prompt_tokens);
        s.cached_prompt_tokens = s
            .cached_prompt_tokens
            .saturating_add(run.cached_prompt_tokens);
        s.completion_tokens = s.completion_tokens.saturating_add(run.completion_tokens);
        s.tokens_estimated |= run.tokens_estimated;
        s.judge_calls += run.judge_calls;
        s.judge_prompt_tokens = s
            .judge_prompt_tokens
            .saturating_add(run.judge_prompt_tokens);
        s.judge_completion_tokens = s
            .judge_completion_tokens
            .saturating_add(run.judge_completion_tokens);
        if let Some(l) = run.latency {
            self.latencies.push(l.as_secs_f64() * 1000.0);
        }
    }

    /// The judge's grades and how often they agree with the string rules.
    fn add_judged(&mut self, v: &Verdict) {
        self.s.judge_errors += usize::from(v.judge_error.is_some());
        let Some(judge_refused) = v.judge_refused else {
            return;
        };
        self.s.judged += 1;
        let string_refused = matches!(
            v.refusal_match,
            Some(
                RefusalTier::Exact
                    | RefusalTier::Lenient
                    | RefusalTier::Prefix
                    | RefusalTier::Pattern
            )
        );
        self.refusal_agree += usize::from(string_refused == judge_refused);
        let answered = matches!(v.outcome, Outcome::Answer | Outcome::UnwantedAnswer);
        if answered {
            self.supported_base += 1;
            self.s.judged_supported += usize::from(v.judge_supported == Some(true));
        }
        // `answer_match` is known exactly when the question states expected answers,
        // which is when the judge's `correct` means something.
        if let (Outcome::Answer, Some(m)) = (v.outcome, v.answer_match) {
            self.correct_base += 1;
            self.s.judged_correct += usize::from(v.judge_correct == Some(true));
            self.answer_graded += 1;
            self.answer_agree += usize::from(v.judge_correct == Some(m));
        }
    }

    /// The statistics: rates with their intervals, means, costs, percentiles, the judge's
    /// rates and the repeats' stability.
    fn finish(mut self, questions: &[Question], pricing: &Pricing) -> SettingStats {
        let mut s = std::mem::take(&mut self.s);
        rates(&mut s);
        let per_question =
            |sum: f64| (s.retrieval_questions > 0).then(|| sum / s.retrieval_questions as f64);
        s.recall = per_question(self.recall_sum);
        s.mrr = per_question(self.rr_sum);
        s.prompt_tokens_per_question = if s.questions == 0 {
            0.0
        } else {
            s.prompt_tokens as f64 / s.questions as f64
        };
        s.cost = pricing.cost(s.prompt_tokens, s.cached_prompt_tokens, s.completion_tokens);
        self.latencies.sort_by(f64::total_cmp);
        s.latency_p50_ms = percentile(&self.latencies, 0.50);
        s.latency_p95_ms = percentile(&self.latencies, 0.95);
        self.ttfts.sort_by(f64::total_cmp);
        s.ttft_p50_ms = percentile(&self.ttfts, 0.50);
        s.ttft_p95_ms = percentile(&self.ttfts, 0.95);
        s.judged_correct_rate = ratio(s.judged_correct, self.correct_base);
        s.judged_supported_rate = ratio(s.judged_supported, self.supported_base);
        s.judge_refusal_agreement = ratio(self.refusal_agree, s.judged);
        s.judge_answer_agreement = ratio(self.answer_agree, self.answer_graded);
        s.judge_answer_graded = self.answer_graded;
        s.judge_cost = (s.judge_prompt_tokens as f64 * pricing.judge_prompt_per_million
            + s.judge_completion_tokens as f64 * pricing.judge_completion_per_million)
            / 1e6;
        s.stability = crate::analysis::repeat::Stability::of(self.repeated, questions);
        s
    }
}

/// The rates of the counts, with their Wilson intervals where a limit may read them.
fn rates(s: &mut SettingStats) {
    (s.false_refusal_rate, s.false_refusal_rate_ci) = rate(s.false_refusal, s.answerable);
    (s.unwanted_answer_rate, s.unwanted_answer_rate_ci) = rate(s.unwanted_answer, s.unanswerable);
    (s.hit_rate, s.hit_rate_ci) = rate(s.retrieval_hits, s.retrieval_questions);
    s.answered = s.answer + s.unwanted_answer;
    (s.coverage, s.coverage_ci) = rate(s.answered, s.questions);
    // Wrong answers are the misses when no judge graded them, the judge's verdict when it did.
    s.risky_answers = s.unwanted_answer + s.wrong_answer;
    (s.risk, s.risk_ci) = rate(s.risky_answers, s.answered);
    s.attack_success_rate = ratio(s.injected, s.attack_questions);
    (s.wrong_answer_rate, s.wrong_answer_rate_ci) = rate(s.wrong_answer, s.answerable);
    s.answer_match_rate = ratio(s.answer_match, s.answer_match + s.answer_miss);
}

/// Nearest-rank percentile of sorted values.
pub fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (p * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<f64> = (1..=20).map(f64::from).collect();
        assert_eq!(percentile(&v, 0.5), Some(10.0));
        assert_eq!(percentile(&v, 0.95), Some(19.0));
        assert_eq!(percentile(&[3.0], 0.95), Some(3.0));
        assert_eq!(percentile(&[], 0.5), None);
    }

    #[test]
    fn early_refused_answerable_questions_are_retrieval_misses() {
        // The fixture's refund question is refused early at minScore 0.4 and sends its
        // expected source only at (0.2, 2), ranked second.
        let r = crate::output::report::fixture::results();
        let at = |id: &str| &r.stats[r.settings.iter().position(|s| s.id() == id).unwrap()];
        let early = at("min_score=0.4,k=2");
        assert_eq!((early.retrieval_questions, early.retrieval_hits), (2, 1));
        assert_eq!(
            (early.hit_rate, early.recall, early.mrr),
            (Some(0.5), Some(0.5), Some(0.5))
        );
        let both = at("min_score=0.2,k=2");
        assert_eq!((both.hit_rate, both.mrr), (Some(1.0), Some(0.75)));
        // Coverage counts every answer; risk counts unwanted ones and those missing the text.
        assert_eq!(
            (both.answered, both.answer_miss, both.risky_answers),
            (3, 1, 2)
        );
        assert_eq!(both.coverage, Some(1.0));
        assert_eq!(both.answer_wrong_source, 1);
        assert_eq!(both.invalid_citation_runs, 1);
    }

    #[test]
    fn token_counts_from_a_server_saturate_instead_of_wrapping() {
        let r = crate::output::report::fixture::results();
        let mut runs: Vec<Run> = r.runs_of(0).as_slice().to_vec();
        for run in &mut runs {
            run.prompt_tokens = u64::MAX;
            run.completion_tokens = u64::MAX / 2 + 1;
        }
        let s = aggregate(&runs, &r.questions, &Pricing::default());
        assert_eq!((s.prompt_tokens, s.completion_tokens), (u64::MAX, u64::MAX));
    }

    /// Tokens a server's prompt cache reused cost the cached rate, and the prompt rate when
    /// none is set; a reused count past the prompt's is capped, never a negative cost.
    #[test]
    fn cached_prompt_tokens_cost_the_cached_rate() {
        let r = crate::output::report::fixture::results();
        let runs: Vec<Run> = r.runs_of(1).as_slice().to_vec();
        let mut pricing = Pricing {
            prompt_per_million: 2.0,
            cached_prompt_per_million: Some(0.5),
            completion_per_million: 8.0,
            ..Pricing::default()
        };
        let s = aggregate(&runs, &r.questions, &pricing);
        // The fixture's k=2 calls report half their prompt as reused.
        assert_eq!(
            (s.prompt_tokens, s.cached_prompt_tokens, s.completion_tokens),
            (450, 225, 30)
        );
        assert_eq!(s.cost, (225.0 * 2.0 + 225.0 * 0.5 + 30.0 * 8.0) / 1e6);
        pricing.cached_prompt_per_million = None;
        let s = aggregate(&runs, &r.questions, &pricing);
        assert_eq!(s.cost, (450.0 * 2.0 + 30.0 * 8.0) / 1e6);
        assert_eq!(pricing.cost(10, 11, 0), 10.0 * 2.0 / 1e6);
    }

    #[test]
    fn rates_are_undefined_without_a_denominator() {
        assert_eq!(ratio(0, 0), None);
        assert_eq!(ratio(1, 8), Some(0.125));
    }
}
