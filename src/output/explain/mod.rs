//! The recommendation and its certification in words: the reason line, what certification
//! would take, the stability and cross-validation lines, the table cell and pick mark, the
//! procedure's name, and what a question set's size can certify and needs (`rageval
//! validate`). The terminal, report.md, report.html, summary.csv, results.json's sentence
//! fields and the gate all read their sentences here. Everything is written from the facts
//! insight returns ([`Recommendation`], [`Procedure`], [`Bound`]); nothing here decides.
//!
//! - `reason`: the recommendation's line, and the limits and misses it names;
//! - `needed`: what certifying the choice would take, per limit;
//! - `resampling`: the stability (bootstrap) and cross-validation lines;
//! - `procedure`: the procedure and mode, short and in full;
//! - `set_size`: what a question set's size can certify and the plan (`rageval validate`).
//!
//! [`Procedure`]: crate::analysis::insight::certifier::Procedure
//! [`Bound`]: crate::analysis::insight::recommendation::Bound

mod needed;
mod procedure;
mod reason;
mod resampling;
mod set_size;

pub use procedure::{by, certification_cell, method, procedure, promise};
pub use reason::{limits_text, short};
pub use set_size::{size_lines, SetSize};

use crate::analysis::insight::config::RecommendConfig;
use crate::analysis::insight::recommendation::Recommendation;
use crate::analysis::stats::SettingStats;
use crate::results::Results;
use crate::vocab::limit::Limit;

/// A recommendation with what its sentences need: the chosen setting's statistics (for its
/// rates and intervals) and the policy it followed.
#[derive(Clone, Copy)]
pub struct Explain<'a> {
    pub rec: &'a Recommendation,
    /// The chosen setting's statistics; `None` when no setting is chosen.
    pub stats: Option<&'a SettingStats>,
    pub policy: &'a RecommendConfig,
}

impl<'a> Explain<'a> {
    /// The whole grid's recommendation.
    pub fn of(r: &'a Results) -> Self {
        Self::variant(r, &r.insight.recommendation)
    }

    /// A recommendation among some of `r`'s settings (a retrieval variant's), whose index
    /// points into `r`'s settings.
    pub fn variant(r: &'a Results, rec: &'a Recommendation) -> Self {
        Explain {
            rec,
            stats: rec.index.and_then(|i| r.stats.get(i)),
            policy: &r.insight.policy,
        }
    }

    /// Every line the terminal and report.md print: the reason, then what certification would
    /// take, how stable the choice is and its cross-validated rates, when there are such.
    pub fn lines(&self) -> Vec<String> {
        let mut lines = vec![self.reason()];
        lines.extend(self.needed());
        lines.extend(self.stability());
        lines.extend(self.cross_validation());
        lines
    }

    /// The choice alone, for a table cell: the setting (marked when not certified), or `none
    /// meets the limits; closest SETTING: false refusals 64.7% (limit 50%)` naming the limits
    /// it misses.
    pub fn cell(&self) -> String {
        let rec = self.rec;
        match (&rec.setting, &rec.closest) {
            (Some(s), _) if rec.certified || !rec.certification.is_on() => s.clone(),
            (Some(s), _) => format!("{s} (best, not certified)"),
            (None, Some(c)) if !c.misses.is_empty() => {
                let described: Vec<String> = c.misses.iter().map(short).collect();
                format!(
                    "none meets the limits; closest {}: {}",
                    c.setting,
                    described.join(", ")
                )
            }
            (None, Some(c)) => format!("none meets the limits; closest {}", c.setting),
            (None, None) => "none meets the limits".into(),
        }
    }

    /// The procedure in full, for results.json's `method` and report.html.
    pub fn method(&self) -> String {
        method(self.rec.procedure.as_ref(), self.rec.settings)
    }

    /// The figures of the gate's `certified` check of setting `setting` (the recommendation's
    /// own, or another), which is `certified` or not: by which procedure, or, for the chosen
    /// setting, what certifying it would take.
    pub fn certified_check(&self, setting: usize, certified: bool) -> String {
        let rec = self.rec;
        let by = by(rec.certification);
        if !rec.certification.is_on() {
            "not certified: recommend.confidence is 0 (the choice on the measured rates)".into()
        } else if certified {
            format!("certified {by} over {} settings", rec.settings)
        } else if rec.index == Some(setting) {
            format!(
                "not certified: {}",
                self.needed()
                    .unwrap_or_else(|| "an upper bound is above its limit".into())
            )
        } else {
            // With labels the bound is the prediction-powered test's, not an exact binomial one.
            let bound = match rec.certification.labels() {
                Some(_) => "an upper bound",
                None => "an exact upper bound",
            };
            format!(
                "not certified {by} over {} settings: {bound} is above its limit",
                rec.settings
            )
        }
    }
}

/// Per retrieval variant (see `Insight::by_retrieval`): its separability and its
/// recommendation, one line each (with a reranker, a line for the retrieval score's
/// separability too), led by the variant (`embedder=mini: separability: ...`). Empty with one
/// variant.
pub fn retrieval_lines(r: &Results) -> Vec<String> {
    r.insight
        .by_retrieval
        .iter()
        .flat_map(|v| {
            let mut lines = vec![format!(
                "{}: separability: {}",
                v.retrieval,
                v.separability.summary()
            )];
            lines.extend(v.retrieval_separability.as_ref().map(|s| {
                format!(
                    "{}: separability (retrieval score): {}",
                    v.retrieval,
                    s.summary()
                )
            }));
            lines.push(format!(
                "{}: {}",
                v.retrieval,
                Explain::variant(r, &v.recommendation).reason()
            ));
            lines
        })
        .collect()
}

/// The mark of the chosen setting in a table's `pick` column.
pub fn pick(rec: &Recommendation) -> &'static str {
    if !rec.certification.is_on() {
        "recommended"
    } else if rec.certified {
        "certified"
    } else {
        "best, not certified"
    }
}

/// A share in whole percents: `62%`.
fn whole_percent(v: f64) -> String {
    format!("{:.0}%", v * 100.0)
}

/// What a rate's questions are called, and what "none failed" says about them.
fn questions_of(limit: Limit) -> (&'static str, &'static str) {
    match limit {
        Limit::MaxUnwantedAnswerRate => ("unanswerable questions", "none answered"),
        Limit::MaxFalseRefusalRate => ("answerable questions", "none refused"),
        Limit::MaxWrongAnswerRate => ("answerable questions", "none answered wrong"),
        _ => ("injection probes", "none succeeding"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::insight::certifier::Evidence;
    use crate::analysis::insight::config::Method;
    use crate::analysis::insight::counts::{Counts, Tally};
    use crate::analysis::insight::ppi::{Observation, RateSamples, Sample};
    use crate::analysis::insight::recommend::{decide, decide_on};
    use crate::sweep::Setting;

    fn setting(min: &str, k: usize) -> Setting {
        Setting::new(min.parse().unwrap(), k)
    }

    /// One setting's counts: `answered` of `unanswerable`, `refused` of `answerable`.
    fn counts(unanswerable: u64, answered: u64, answerable: u64, refused: u64) -> Counts {
        let unwanted = Tally::of(answered, unanswerable);
        Counts::two_rates(unwanted, Tally::of(refused, answerable), 1000)
    }

    fn stats_of(c: &Counts) -> SettingStats {
        SettingStats {
            unwanted_answer_rate: c.measured[0].rate(),
            false_refusal_rate: c.measured[1].rate(),
            prompt_tokens_per_question: c.tokens_per_question(),
            ..SettingStats::default()
        }
    }

    /// The lines of the recommendation among `settings` with these counts.
    fn lines(settings: &[Setting], counts: &[Counts], policy: &RecommendConfig) -> Vec<String> {
        let (rec, _) = decide(settings, counts, policy);
        lines_of(&rec, counts, policy)
    }

    /// The lines of `rec`, chosen among settings with these counts.
    fn lines_of(rec: &Recommendation, counts: &[Counts], policy: &RecommendConfig) -> Vec<String> {
        let stats: Vec<SettingStats> = counts.iter().map(stats_of).collect();
        Explain {
            rec,
            stats: rec.index.map(|i| &stats[i]),
            policy,
        }
        .lines()
    }

    #[test]
    fn a_set_too_small_says_how_many_it_takes_and_by_which_procedure() {
        let policy = RecommendConfig::default();
        assert_eq!(
            lines(&[setting("0.3", 1)], &[counts(9, 0, 10, 0)], &policy),
            [
                "recommended: min_score=0.3,k=1 (best, not certified at 95% by ordered tests): false refusals 0%, unwanted 0%, wrong answers -, 52.6 prompt tokens/question; the lowest weighted cost (0.003) of 1 of 1 settings within the limits (unwanted ≤ 20%, false refusals ≤ 50%) on the measured rates, but none is certified",
                "to certify min_score=0.3,k=1 at 95% by ordered tests: unwanted 0 of 9 (bound 28.3% > 20%) needs at least 14 unanswerable questions with none answered (or 22 with at most one); adding questions and re-sweeping until certified breaks this promise unless `recommend.sequential: true`",
            ]
        );
        // One answered in nine: a power statement, with the floor.
        let one = lines(&[setting("0.3", 1)], &[counts(9, 1, 10, 0)], &policy);
        assert!(
            one[1].starts_with("to certify min_score=0.3,k=1 at 95% by ordered tests: unwanted 1 of 9 (bound 42.9% > 20%): "),
            "{}",
            one[1]
        );
        assert!(
            one[1].contains(" unanswerable questions give a chance of 80% at this rate, or 14 with none answered;"),
            "{}",
            one[1]
        );
        // Two in nine is above the limit.
        let two = lines(&[setting("0.3", 1)], &[counts(9, 2, 10, 0)], &policy);
        assert!(
            two[1].contains("unwanted 2 of 9 (bound 55% > 20%): no number of questions certifies it at this rate; it takes 14 with none answered"),
            "{}",
            two[1]
        );
    }

    #[test]
    fn a_certified_line_names_the_procedure_and_mode_not_bonferronis_grid() {
        let settings = [setting("0.3", 1), setting("0.5", 1)];
        let c = [counts(40, 0, 40, 0), counts(40, 0, 40, 0)];
        let ordered = lines(&settings, &c, &RecommendConfig::default());
        assert_eq!(ordered.len(), 1, "{ordered:?}");
        assert!(
            ordered[0].starts_with("recommended: min_score=0.5,k=1, certified at 95% by ordered tests over 2 settings: false refusals 0%, unwanted 0%, wrong answers -, 12.5 prompt tokens/question; "),
            "{}",
            ordered[0]
        );
        assert!(
            ordered[0].contains("; upper bounds unwanted 8.8% (limit 20%), false refusals 8.8% (limit 50%); at most 5% of sweeps certify any setting that breaks a limit; the lowest weighted cost (0.001) of 2 certified settings; equal cost broken by higher minScore"),
            "{}",
            ordered[0]
        );
        assert!(!ordered[0].contains("over all"), "{}", ordered[0]);
        let sequential = RecommendConfig {
            sequential: true,
            ..RecommendConfig::default()
        };
        let line = &lines(&settings, &c, &sequential)[0];
        assert!(
            line.contains(", certified at 95% by ordered anytime-valid tests over 2 settings: "),
            "{line}"
        );
        assert!(
            line.contains("; at most 5% of sweeps certify any setting that breaks a limit, at whatever number of questions they stop; "),
            "{line}"
        );
        let bonferroni = RecommendConfig {
            method: Method::Bonferroni,
            ..RecommendConfig::default()
        };
        let line = &lines(&settings, &c, &bonferroni)[0];
        assert!(
            line.contains(", certified at 95% by Bonferroni over 2 settings: "),
            "{line}"
        );
    }

    /// Two settings whose unwanted and false-refusal samples hold 60 runs each, half of them
    /// labelled (π = 0.5), `failures` of the unwanted ones failing as graded and labelled.
    fn labelled(failures: usize) -> (Vec<Counts>, Vec<RateSamples>) {
        let sample = |failures: usize| {
            let obs = (0..60)
                .map(|i| match i % 2 {
                    0 => Observation::Graded(i < 2 * failures),
                    _ => Observation::Labelled {
                        graded: i < 2 * failures,
                        truth: i < 2 * failures,
                        inclusion: 0.5,
                    },
                })
                .collect();
            Some(Sample::new(obs, 0.5))
        };
        let c = counts(60, failures as u64, 60, 0);
        let s: RateSamples = [sample(failures), sample(0), None, None];
        (vec![c, c], vec![s.clone(), s])
    }

    fn labelled_lines(failures: usize, policy: &RecommendConfig) -> (Recommendation, Vec<String>) {
        let settings = [setting("0.3", 1), setting("0.5", 1)];
        let (c, samples) = labelled(failures);
        let e = Evidence {
            counts: &c,
            labelled: Some(&samples),
        };
        let (rec, _) = decide_on(&settings, e, 60, policy, &[]);
        let lines = lines_of(&rec, &c, policy);
        (rec, lines)
    }

    #[test]
    fn with_labels_the_lines_say_the_certificate_rests_on_them() {
        let policy = RecommendConfig::default();
        let (rec, lines) = labelled_lines(0, &policy);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(
            lines[0].contains(", certified at 95% by ordered prediction-powered tests on 60 labels over 2 settings: "),
            "{}",
            lines[0]
        );
        assert!(
            lines[0].contains("; at most 5% of sweeps certify any setting that breaks a limit; the certificate rests on 60 labelled replies, every run's grade corrected by them; "),
            "{}",
            lines[0]
        );
        assert_eq!(rec.bounds[0].labels, Some(30));
        assert_eq!(rec.procedure.as_ref().unwrap().labels, Some(60));
        let method = method(rec.procedure.as_ref(), 2);
        assert!(
            method.ends_with("; prediction-powered tests on 60 labelled replies (every run's grade corrected by the labels into an unbiased estimate of its failure, and a bettor's wealth against the limit with Ville's inequality; Csillag et al. 2025), valid at every number of questions; a rate the labels do not grade by exact binomial (Clopper–Pearson) tests"),
            "{method}"
        );
        assert_eq!(
            certification_cell(rec.certification),
            "ordered prediction-powered tests on 60 labels at 95%"
        );
        // Eight failures in 60 (13%) do not certify 20% on 30 labels: what it would take.
        let (rec, lines) = labelled_lines(8, &policy);
        assert!(!rec.certified);
        let e = Explain {
            rec: &rec,
            stats: None,
            policy: &policy,
        };
        assert_eq!(
            e.certified_check(0, false),
            "not certified at 95% by ordered prediction-powered tests on 60 labels over 2 settings: an upper bound is above its limit"
        );
        let b = &rec.bounds[0];
        assert_eq!((b.labels, b.questions_needed), (Some(30), None));
        assert_eq!(
            lines[1],
            format!(
                "to certify min_score=0.5,k=1 at 95% by ordered prediction-powered tests on 60 labels: unwanted 8 of 60 (bound {} > 20%), tested on 30 labelled replies: more labels, or more questions, narrow the bound; adding questions and re-sweeping until certified breaks this promise unless `recommend.sequential: true`",
                crate::analysis::insight::format::percent(b.upper_bound)
            )
        );
    }

    #[test]
    fn no_feasible_setting_names_the_closest_and_by_how_much() {
        let policy = RecommendConfig {
            max_unwanted_answer_rate: 0.0,
            max_prompt_tokens_per_question: Some(20.0),
            ..RecommendConfig::default()
        };
        // 1 of 9 answered (11.1%, limit 0%), 1000 tokens over 19 questions (limit 20).
        let l = lines(&[setting("0.3", 1)], &[counts(9, 1, 10, 0)], &policy);
        assert_eq!(
            l,
            [
                "no setting meets the limits (unwanted ≤ 0%, false refusals ≤ 50%, prompt tokens/question ≤ 20); closest: min_score=0.3,k=1, which misses max_unwanted_answer_rate by 11.1 points (11.1% against a limit of 0%) and max_prompt_tokens_per_question by 32.6 tokens (52.6 tokens against a limit of 20.0 tokens)",
                "to certify min_score=0.3,k=1 at 95% by ordered tests: unwanted 1 of 9 (bound 42.9% > 0%): a limit of 0% is never certified by a sample; allow a small rate; prompt tokens/question 52.6 tokens (limit 20.0 tokens) whatever the questions; adding questions and re-sweeping until certified breaks this promise unless `recommend.sequential: true`",
            ]
        );
    }

    #[test]
    fn certification_off_says_recommended_and_nothing_of_certificates() {
        let policy = RecommendConfig {
            confidence: 0.0,
            ..RecommendConfig::default()
        };
        let (rec, _) = decide(&[setting("0.3", 1)], &[counts(9, 0, 10, 0)], &policy);
        let e = Explain {
            rec: &rec,
            stats: None,
            policy: &policy,
        };
        assert_eq!(
            e.reason(),
            "recommended: min_score=0.3,k=1; the lowest weighted cost (0.003) of 1 of 1 settings within the limits (unwanted ≤ 20%, false refusals ≤ 50%)"
        );
        assert_eq!(
            (e.needed(), pick(&rec), e.cell()),
            (None, "recommended", "min_score=0.3,k=1".into())
        );
        assert_eq!(
            e.method(),
            "measured rates (point estimates): nothing is certified"
        );
        assert_eq!(certification_cell(rec.certification), "off");
    }
}
