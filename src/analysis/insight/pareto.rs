//! The Pareto set: settings that no other setting beats on every cost at once.
//!
//! A setting is dominated when another one has no more false refusals, no more unwanted answers
//! and no more prompt tokens per question, and strictly fewer of at least one. What is left is
//! the menu of honest trade-offs; every other setting is worse than some item on it.

/// The costs a setting is judged on, all to be minimised.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Costs {
    pub false_refusal_rate: f64,
    pub unwanted_answer_rate: f64,
    pub prompt_tokens_per_question: f64,
}

impl Costs {
    fn as_array(&self) -> [f64; 3] {
        [
            self.false_refusal_rate,
            self.unwanted_answer_rate,
            self.prompt_tokens_per_question,
        ]
    }

    /// Whether `self` dominates `other`: no worse anywhere, better somewhere.
    pub fn dominates(&self, other: &Costs) -> bool {
        let (a, b) = (self.as_array(), other.as_array());
        a.iter().zip(&b).all(|(x, y)| x <= y) && a.iter().zip(&b).any(|(x, y)| x < y)
    }
}

/// For each setting, whether it is Pareto-optimal. Settings with equal costs are all kept.
pub fn pareto(costs: &[Costs]) -> Vec<bool> {
    costs
        .iter()
        .map(|c| !costs.iter().any(|other| other.dominates(c)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(fr: f64, ua: f64, tok: f64) -> Costs {
        Costs {
            false_refusal_rate: fr,
            unwanted_answer_rate: ua,
            prompt_tokens_per_question: tok,
        }
    }

    #[test]
    fn dominated_settings_drop_out() {
        let costs = [
            c(0.3, 0.7, 184.0), // beaten by the next one
            c(0.3, 0.6, 170.0),
            c(0.2, 0.6, 286.0), // fewer false refusals, more tokens: a trade-off
            c(0.2, 0.6, 315.0), // same rates, more tokens: dominated
            c(0.5, 0.1, 84.0),
            c(0.6, 0.1, 48.0),
            c(0.6, 0.1, 48.0), // a tie keeps both
            c(0.6, 0.1, 63.0),
        ];
        assert_eq!(
            pareto(&costs),
            [false, true, true, false, true, true, true, false]
        );
    }

    #[test]
    fn one_setting_is_optimal() {
        assert_eq!(pareto(&[c(1.0, 1.0, 1.0)]), [true]);
        assert_eq!(pareto(&[]), Vec::<bool>::new());
    }
}
