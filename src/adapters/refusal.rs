//! Refusal recognition: how a reply is read as a refusal, in tiers (the exact sentence, the
//! lenient match, the user's patterns; the judge is the last tier, in `classify`).

use serde::{Deserialize, Serialize};

use crate::adapters::corpus::squash;
use crate::base::text_enum;

/// How a reply is compared with the refusal sentence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefusalMatch {
    /// The trimmed reply equals the sentence exactly.
    Strict,
    /// Case, runs of whitespace, curly apostrophes and a missing final period are forgiven.
    Lenient,
}

/// Whether `reply` is the refusal sentence.
pub fn is_refusal(reply: &str, refusal: &str, mode: RefusalMatch) -> bool {
    match mode {
        RefusalMatch::Strict => reply.trim() == refusal.trim(),
        RefusalMatch::Lenient => lenient_form(reply) == lenient_form(refusal),
    }
}

/// The grading tier that recognised a refusal: the `refusal_match` column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RefusalTier {
    /// The trimmed reply is the sentence (and every early refusal, whose answer is the
    /// sentence).
    Exact,
    /// The sentence up to case, whitespace, curly apostrophes and the final period.
    Lenient,
    /// One of `prompt.refusal_patterns` matches.
    Pattern,
    /// The judge model read the reply as a refusal.
    Judge,
    /// A person labelled the reply a refusal that the grader read as an answer
    /// (docs/labels.md); a label that agrees with the grader keeps the grader's tier.
    Label,
}

text_enum!(RefusalTier { Exact => "exact", Lenient => "lenient", Pattern => "pattern", Judge => "judge", Label => "label" });

/// `prompt.refusal_patterns`, compiled: matched case-insensitively against the reply with its
/// whitespace squashed.
#[derive(Debug, Clone, Default)]
pub struct RefusalPatterns {
    patterns: Vec<regex::Regex>,
}

impl RefusalPatterns {
    /// Compile every pattern; the error names the first that is not a regular expression by
    /// its position in the list.
    pub fn new(patterns: &[String]) -> Result<Self, (usize, String)> {
        let patterns = patterns
            .iter()
            .enumerate()
            .map(|(i, p)| {
                regex::RegexBuilder::new(p)
                    .case_insensitive(true)
                    .size_limit(1 << 20)
                    .build()
                    .map_err(|e| {
                        (
                            i,
                            format!(
                                "`{p}` is not a valid regular expression: {}",
                                first_line(&e.to_string())
                            ),
                        )
                    })
            })
            .collect::<Result<_, _>>()?;
        Ok(RefusalPatterns { patterns })
    }

    pub fn is_match(&self, reply: &str) -> bool {
        if self.patterns.is_empty() {
            return false;
        }
        let reply = squash(reply);
        self.patterns.iter().any(|p| p.is_match(&reply))
    }
}

/// The regex crate's messages span lines (the pattern, a caret, the error); one line says it.
fn first_line(message: &str) -> String {
    message
        .lines()
        .map(str::trim)
        .rfind(|l| l.starts_with("error:"))
        .map(|l| l.trim_start_matches("error:").trim().to_string())
        .unwrap_or_else(|| squash(message))
}

/// The string tiers in order: exact, lenient (unless `mode` is strict), the patterns. `None`
/// when the reply is not a refusal by any of them.
pub fn refusal_tier(
    reply: &str,
    refusal: &str,
    mode: RefusalMatch,
    patterns: &RefusalPatterns,
) -> Option<RefusalTier> {
    if is_refusal(reply, refusal, RefusalMatch::Strict) {
        Some(RefusalTier::Exact)
    } else if mode == RefusalMatch::Lenient && is_refusal(reply, refusal, RefusalMatch::Lenient) {
        Some(RefusalTier::Lenient)
    } else if patterns.is_match(reply) {
        Some(RefusalTier::Pattern)
    } else {
        None
    }
}

fn lenient_form(s: &str) -> String {
    let s = squash(s).replace(['\u{2019}', '\u{2018}', '\u{02bc}'], "'");
    s.trim_end_matches('.').trim_end().to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapters::prompt::REFUSAL;

    /// The Unicode classes the docs promise for refusals in other languages compile and match
    /// (the regex crate needs its general-category and script tables for them).
    #[test]
    fn patterns_take_unicode_letters_and_scripts() {
        let patterns = RefusalPatterns::new(&[
            r"^\p{Greek}+( \p{Greek}+)*\.?$".to_string(),
            r"^\p{Letter}+ \p{L}+ \p{Han}+$".to_string(),
        ])
        .unwrap();
        assert!(patterns.is_match("Δεν γνωρίζω."));
        assert!(patterns.is_match("Je sais 不知道"));
        assert!(!patterns.is_match("I do not know."));
    }

    #[test]
    fn refusal_matching_modes() {
        let lenient = |s| is_refusal(s, REFUSAL, RefusalMatch::Lenient);
        assert!(lenient("  I don't know based on the provided documents.\n"));
        assert!(lenient(
            "i don\u{2019}t know  based on the provided documents"
        ));
        assert!(!lenient(
            "I don't know based on the provided documents, but [1] says 10."
        ));
        assert!(!lenient("I don't know."));
        let strict = |s| is_refusal(s, REFUSAL, RefusalMatch::Strict);
        assert!(strict(" I don't know based on the provided documents. "));
        assert!(!strict("I don't know based on the provided documents"));
        assert!(!strict("i don't know based on the provided documents."));
    }

    #[test]
    fn tiers_in_order_exact_lenient_pattern() {
        let patterns = RefusalPatterns::new(&["do(es)? not (mention|say)".into()]).unwrap();
        let tier = |s, mode| refusal_tier(s, REFUSAL, mode, &patterns);
        let lenient = RefusalMatch::Lenient;
        assert_eq!(
            tier(" I don't know based on the provided documents. ", lenient),
            Some(RefusalTier::Exact)
        );
        assert_eq!(
            tier("i don't know based on the provided documents", lenient),
            Some(RefusalTier::Lenient)
        );
        assert_eq!(
            tier(
                "i don't know based on the provided documents",
                RefusalMatch::Strict
            ),
            None,
            "strict turns the lenient tier off"
        );
        assert_eq!(
            tier("The documents DO NOT\nmention it.", lenient),
            Some(RefusalTier::Pattern)
        );
        assert_eq!(tier("It costs 10 dollars. [1]", lenient), None);
        assert_eq!(
            RefusalPatterns::new(&["ok".into(), "(unclosed".into()]).unwrap_err(),
            (
                1,
                "`(unclosed` is not a valid regular expression: unclosed group".into()
            )
        );
    }
}
