//! Separability: can any minScore tell answerable from unanswerable questions, whatever the grid?
//!
//! Each question has one best retrieval score. If every answerable question scored higher than
//! every unanswerable one, a threshold between the two groups would refuse all unanswerable
//! questions early and keep every answerable one. With real corpora the groups overlap (the
//! reference chapter's section 7 shows why), so this module measures how much: the ROC AUC of the
//! best score as a classifier, the clean interval when there is one, and for each answerable
//! question the highest minScore at which its expected source still reaches the prompt.

use serde::Serialize;

/// One question's scores.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct QuestionScores {
    pub id: String,
    pub answerable: bool,
    /// The best retrieval score of the question, whatever the setting.
    pub best_score: Option<f64>,
    /// For an answerable question: the highest minScore at which an expected source still
    /// reaches the prompt, which is the best score of an expected chunk among the top k of the
    /// largest k searched. `None` when no expected chunk is that high, or no source is named.
    pub max_min_score: Option<f64>,
}

/// minScore values that separate the groups: every value in `(above, up_to]`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
pub struct CleanRange {
    /// The best score of an unanswerable question: a threshold must be strictly above it.
    pub above: f64,
    /// The lowest best score of an answerable question: a threshold may equal it.
    pub up_to: f64,
}

/// How well the best score separates the two groups.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Separability {
    /// Questions with a best score in each group.
    pub answerable: usize,
    pub unanswerable: usize,
    /// ROC AUC of the best score: the chance that a random answerable question scores higher
    /// than a random unanswerable one, ties counting one half. `None` when a group is empty.
    pub auc: Option<f64>,
    /// The lowest best score among answerable questions.
    pub answerable_min: Option<f64>,
    /// The highest best score among unanswerable questions.
    pub unanswerable_max: Option<f64>,
    /// The minScore interval that separates the groups cleanly, if any.
    pub clean: Option<CleanRange>,
    /// When there is no clean interval: `unanswerable_max - answerable_min` (0 when they tie).
    pub overlap: Option<f64>,
    /// Answerable questions scoring at or below `unanswerable_max`, and unanswerable questions
    /// scoring at or above `answerable_min`: the questions no threshold can sort.
    pub answerable_in_overlap: usize,
    pub unanswerable_in_overlap: usize,
    /// Every question, in question-set order.
    pub questions: Vec<QuestionScores>,
}

impl Separability {
    /// Measure the groups of `questions`.
    pub fn new(questions: Vec<QuestionScores>) -> Self {
        let group = |answerable: bool| -> Vec<f64> {
            questions
                .iter()
                .filter(|q| q.answerable == answerable)
                .filter_map(|q| q.best_score)
                .filter(|s| s.is_finite())
                .collect()
        };
        let (pos, neg) = (group(true), group(false));
        let answerable_min = pos.iter().copied().min_by(f64::total_cmp);
        let unanswerable_max = neg.iter().copied().max_by(f64::total_cmp);
        let (mut clean, mut overlap) = (None, None);
        let (mut answerable_in_overlap, mut unanswerable_in_overlap) = (0, 0);
        if let (Some(lo), Some(hi)) = (answerable_min, unanswerable_max) {
            if lo > hi {
                clean = Some(CleanRange {
                    above: hi,
                    up_to: lo,
                });
            } else {
                overlap = Some(hi - lo);
                answerable_in_overlap = pos.iter().filter(|&&s| s <= hi).count();
                unanswerable_in_overlap = neg.iter().filter(|&&s| s >= lo).count();
            }
        }
        Separability {
            answerable: pos.len(),
            unanswerable: neg.len(),
            auc: auc(&pos, &neg),
            answerable_min,
            unanswerable_max,
            clean,
            overlap,
            answerable_in_overlap,
            unanswerable_in_overlap,
            questions,
        }
    }

    /// The AUC alone, for a table cell: `0.807`, or `-` without both groups.
    pub fn auc_cell(&self) -> String {
        self.auc.map_or_else(|| "-".into(), |a| format!("{a:.3}"))
    }

    /// The threshold finding alone, for a table cell: the clean range of minScore
    /// (`0.536 < minScore ≤ 0.612`), the overlap (`overlap 0.402 (0.134 to 0.536)`), or `-`.
    pub fn threshold_cell(&self) -> String {
        match (self.clean, self.overlap) {
            (Some(c), _) => format!("{:.3} < minScore ≤ {:.3}", c.above, c.up_to),
            (None, Some(o)) => format!(
                "overlap {o:.3} ({:.3} to {:.3})",
                self.answerable_min.unwrap_or_default(),
                self.unanswerable_max.unwrap_or_default(),
            ),
            (None, None) => "-".into(),
        }
    }

    /// One sentence for the terminal and the reports (`separability: ` goes before it).
    pub fn summary(&self) -> String {
        let auc = match self.auc {
            Some(a) => format!("AUC {a:.3}"),
            None => return "needs answerable and unanswerable questions".into(),
        };
        let head = format!(
            "{auc} for the best score ({} answerable vs {} unanswerable)",
            self.answerable, self.unanswerable
        );
        match (self.clean, self.overlap) {
            (Some(c), _) => format!(
                "{head}; any minScore above {:.3} and up to {:.3} separates them cleanly",
                c.above, c.up_to
            ),
            (None, Some(o)) => format!(
                "{head}; no minScore separates them: they overlap by {o:.3} (answerable from {:.3}, unanswerable up to {:.3})",
                self.answerable_min.unwrap_or_default(),
                self.unanswerable_max.unwrap_or_default(),
            ),
            (None, None) => head,
        }
    }
}

/// ROC AUC of scores `pos` (should be high) against `neg` (should be low), in the Mann-Whitney
/// form: the share of (pos, neg) pairs where pos scores higher, a tie counting one half.
/// Computed from midranks in O(n log n); `None` when a group is empty.
pub fn auc(pos: &[f64], neg: &[f64]) -> Option<f64> {
    if pos.is_empty() || neg.is_empty() {
        return None;
    }
    let mut all: Vec<(f64, bool)> = pos
        .iter()
        .map(|&s| (s, true))
        .chain(neg.iter().map(|&s| (s, false)))
        .collect();
    all.sort_by(|a, b| a.0.total_cmp(&b.0));
    // Sum of the (1-based, mid-) ranks of the positive scores.
    let mut rank_sum = 0.0;
    let mut i = 0;
    while i < all.len() {
        let mut j = i;
        while j + 1 < all.len() && all[j + 1].0 == all[i].0 {
            j += 1;
        }
        let midrank = (i + j) as f64 / 2.0 + 1.0;
        rank_sum += midrank * all[i..=j].iter().filter(|x| x.1).count() as f64;
        i = j + 1;
    }
    let (np, nn) = (pos.len() as f64, neg.len() as f64);
    Some((rank_sum - np * (np + 1.0) / 2.0) / (np * nn))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The definition, pair by pair.
    fn auc_pairs(pos: &[f64], neg: &[f64]) -> f64 {
        let mut u = 0.0;
        for p in pos {
            for n in neg {
                u += if p > n {
                    1.0
                } else if p == n {
                    0.5
                } else {
                    0.0
                };
            }
        }
        u / (pos.len() * neg.len()) as f64
    }

    #[test]
    fn auc_by_hand() {
        assert_eq!(auc(&[0.9, 0.8], &[0.1, 0.2]), Some(1.0));
        assert_eq!(auc(&[0.1, 0.2], &[0.9, 0.8]), Some(0.0));
        // Pairs: (0.5,0.4)=1 (0.5,0.6)=0 (0.7,0.4)=1 (0.7,0.6)=1 -> 3/4.
        assert_eq!(auc(&[0.5, 0.7], &[0.4, 0.6]), Some(0.75));
        // Ties count one half: (0.5,0.5)=1/2 (0.5,0.3)=1 (0.4,0.5)=0 (0.4,0.3)=1 -> 2.5/4.
        assert_eq!(auc(&[0.5, 0.4], &[0.5, 0.3]), Some(0.625));
        // All equal: a coin toss.
        assert_eq!(auc(&[0.3, 0.3], &[0.3]), Some(0.5));
        assert_eq!(auc(&[], &[0.3]), None);
        assert_eq!(auc(&[0.3], &[]), None);
    }

    #[test]
    fn midranks_agree_with_pairs() {
        let pos = [0.655, 0.655, 0.62, 0.3, 0.264, 0.2, 0.2];
        let neg = [0.536, 0.277, 0.264, 0.264, 0.2, 0.183];
        let a = auc(&pos, &neg).unwrap();
        assert!((a - auc_pairs(&pos, &neg)).abs() < 1e-12, "{a}");
    }

    fn q(id: &str, answerable: bool, best: f64) -> QuestionScores {
        QuestionScores {
            id: id.into(),
            answerable,
            best_score: Some(best),
            max_min_score: None,
        }
    }

    #[test]
    fn clean_interval_when_groups_do_not_overlap() {
        let s = Separability::new(vec![
            q("a", true, 0.6),
            q("b", true, 0.45),
            q("c", false, 0.3),
            q("d", false, 0.2),
        ]);
        assert_eq!(
            s.clean,
            Some(CleanRange {
                above: 0.3,
                up_to: 0.45
            })
        );
        assert_eq!((s.overlap, s.auc), (None, Some(1.0)));
        assert!(
            s.summary().contains("above 0.300 and up to 0.450"),
            "{}",
            s.summary()
        );
    }

    #[test]
    fn overlap_is_measured_and_named() {
        let s = Separability::new(vec![
            q("a", true, 0.6),
            q("b", true, 0.25),
            q("c", false, 0.5),
            q("d", false, 0.2),
        ]);
        assert_eq!(s.clean, None);
        assert!((s.overlap.unwrap() - 0.25).abs() < 1e-12);
        assert_eq!((s.answerable_in_overlap, s.unanswerable_in_overlap), (1, 1));
        assert_eq!(s.auc, Some(0.75));
        let line = s.summary();
        assert!(
            line.contains("no minScore separates them: they overlap by 0.250"),
            "{line}"
        );
    }

    #[test]
    fn equal_extremes_overlap_by_zero() {
        let s = Separability::new(vec![q("a", true, 0.4), q("b", false, 0.4)]);
        assert_eq!((s.clean, s.overlap), (None, Some(0.0)));
    }

    #[test]
    fn one_group_only() {
        let s = Separability::new(vec![q("a", true, 0.4)]);
        assert_eq!((s.auc, s.clean, s.overlap), (None, None, None));
        assert!(s.summary().contains("needs answerable and unanswerable"));
    }
}
