//! How the choice holds up on resampled question sets: the stability line (bootstrap) and
//! the cross-validation line (held-out folds).

use super::procedure::by;
use super::{whole_percent, Explain};
use crate::analysis::insight::format::rate_with_interval;

impl Explain<'_> {
    /// `stability: min_score=0.3,k=1 chosen in 62% of 200 resampled question sets
    /// (min_score=0.2,k=1 in 25%); certified at 95% by ordered tests in 40%`.
    pub fn stability(&self) -> Option<String> {
        let rec = self.rec;
        let st = rec.bootstrap.as_ref()?;
        let what = match &rec.setting {
            Some(s) => format!("{s} chosen in {}", whole_percent(st.chosen_share)),
            None => format!("no setting chosen in {}", whole_percent(st.chosen_share)),
        };
        let runner_up = match (&st.runner_up, st.runner_up_share) {
            (Some(Some(s)), Some(share)) => format!(" ({s} in {})", whole_percent(share)),
            (Some(None), Some(share)) => format!(" (no setting in {})", whole_percent(share)),
            _ => String::new(),
        };
        let certified = if rec.certification.is_on() {
            format!(
                "; certified {} in {}",
                by(rec.certification),
                whole_percent(st.certified_share)
            )
        } else {
            String::new()
        };
        Some(format!(
            "stability: {what} of {} resampled question sets{runner_up}{certified}",
            st.resamples
        ))
    }

    /// `cross-validation (5 folds): held-out false refusals 30% [..], unwanted 12% [..]; the
    /// folds chose min_score=0.3,k=1 (4), min_score=0.2,k=1 (1), 4 of 5 certified at 95% by
    /// ordered tests`.
    pub fn cross_validation(&self) -> Option<String> {
        let rec = self.rec;
        let cv = rec.cross_validation.as_ref()?;
        let rates: Vec<String> = cv
            .held_out
            .iter()
            .map(|h| {
                format!(
                    "{} {} ({} of {})",
                    h.limit.label(),
                    rate_with_interval(h.rate, h.interval),
                    h.failures,
                    h.questions
                )
            })
            .collect();
        let chose: Vec<String> = cv
            .choices
            .iter()
            .map(|c| {
                format!(
                    "{} ({})",
                    c.setting.as_deref().unwrap_or("no setting"),
                    c.folds
                )
            })
            .collect();
        let certified = if rec.certification.is_on() {
            format!(
                ", {} of {} certified {}",
                cv.certified_folds,
                cv.folds,
                by(rec.certification)
            )
        } else {
            String::new()
        };
        Some(format!(
            "cross-validation ({} folds): held-out {}; the folds chose {}{certified}",
            cv.folds,
            rates.join(", "),
            chose.join(", ")
        ))
    }
}
