//! Refusal recognition: how a reply is read as a refusal, in tiers (the exact sentence, the
//! lenient match, the sentence followed by more text, the user's patterns; the judge is the
//! last tier, in `classify`), and where a refusal sentence starts inside a longer reply.

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
    /// The reply starts with the sentence (as the lenient tier reads it) and goes on: a small
    /// model's refusal followed by text copied from the prompt.
    Prefix,
    /// One of `prompt.refusal_patterns` matches.
    Pattern,
    /// The judge model read the reply as a refusal.
    Judge,
    /// A person labelled the reply a refusal that the grader read as an answer
    /// (docs/labels.md); a label that agrees with the grader keeps the grader's tier.
    Label,
}

text_enum!(RefusalTier { Exact => "exact", Lenient => "lenient", Prefix => "prefix", Pattern => "pattern", Judge => "judge", Label => "label" });

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

/// The string tiers in order: exact, lenient and prefix (unless `mode` is strict), the
/// patterns. `None` when the reply is not a refusal by any of them.
pub fn refusal_tier(
    reply: &str,
    refusal: &str,
    mode: RefusalMatch,
    patterns: &RefusalPatterns,
) -> Option<RefusalTier> {
    let lenient = mode == RefusalMatch::Lenient;
    if is_refusal(reply, refusal, RefusalMatch::Strict) {
        Some(RefusalTier::Exact)
    } else if lenient && is_refusal(reply, refusal, RefusalMatch::Lenient) {
        Some(RefusalTier::Lenient)
    } else if lenient && starts_with_refusal(reply, refusal) {
        Some(RefusalTier::Prefix)
    } else if patterns.is_match(reply) {
        Some(RefusalTier::Pattern)
    } else {
        None
    }
}

fn lenient_form(s: &str) -> String {
    let s = squash(s).replace(APOSTROPHES, "'");
    s.trim_end_matches('.').trim_end().to_lowercase()
}

/// The apostrophes the lenient form reads as `'`.
const APOSTROPHES: [char; 3] = ['\u{2019}', '\u{2018}', '\u{02bc}'];

/// A refusal sentence of fewer words is never looked for inside a longer reply: `No.` would
/// find every "no" of an answer.
pub const MIN_SENTENCE_WORDS: usize = 3;

/// Whether `reply` starts with the refusal sentence, as the lenient tier reads both, and goes
/// on past its final period: `I don't know based on the provided documents.\n\nContext: [1]
/// ...`. The sentence must end at a word boundary (`documentsX` does not start with it).
pub fn starts_with_refusal(reply: &str, refusal: &str) -> bool {
    let Some(at) = refusal_at(reply, refusal) else {
        return false;
    };
    let lead = reply.len() - reply.trim_start().len();
    let rest = reply[at.end..].trim_start_matches(|c: char| c == '.' || c.is_whitespace());
    at.start == lead && !rest.is_empty()
}

/// The byte range of the first refusal sentence in `text`, read as the lenient tier reads it
/// (case, whitespace runs, curly apostrophes; the sentence without its final period), starting
/// and ending at word boundaries; `None` when the text holds none, or when the sentence has
/// fewer than [`MIN_SENTENCE_WORDS`] words. An answer is read up to it: what follows a refusal
/// sentence (often the prompt, copied) is no answer.
pub fn refusal_at(text: &str, refusal: &str) -> Option<std::ops::Range<usize>> {
    if refusal.split_whitespace().count() < MIN_SENTENCE_WORDS || !may_hold(text, refusal) {
        return None;
    }
    let mut needle: Vec<char> = LenientChars::of(refusal).chars;
    while needle.last().is_some_and(|&c| c == '.' || c == ' ') {
        needle.pop();
    }
    let form = LenientChars::of(text);
    let (chars, m) = (&form.chars, needle.len());
    if m == 0 || chars.len() < m {
        return None;
    }
    let word = |i: usize| chars.get(i).is_some_and(|c| c.is_alphanumeric());
    (0..=chars.len() - m)
        .find(|&p| {
            chars[p..p + m] == needle[..]
                && !(p > 0 && word(p - 1) && word(p))
                && !(word(p + m - 1) && word(p + m))
        })
        .map(|p| form.spans[p].start..form.spans[p + m - 1].end)
}

/// Whether `text` may hold the sentence: it holds the sentence's longest ASCII word, case
/// aside. Most replies do not, and are passed over without putting them in the lenient form.
/// (Only the Kelvin and Ångström signs lowercase into ASCII letters from outside ASCII.)
fn may_hold(text: &str, refusal: &str) -> bool {
    let word = refusal
        .split(|c: char| !c.is_ascii_alphabetic())
        .max_by_key(|w| w.len())
        .unwrap_or("");
    word.is_empty()
        || text
            .as_bytes()
            .windows(word.len())
            .any(|w| w.eq_ignore_ascii_case(word.as_bytes()))
}

/// A text in the lenient form, char by char, with the bytes of the original each char came
/// from (so that a match in the form is a range of the original).
struct LenientChars {
    chars: Vec<char>,
    spans: Vec<std::ops::Range<usize>>,
}

impl LenientChars {
    fn of(text: &str) -> Self {
        let mut out = LenientChars {
            chars: Vec::with_capacity(text.len()),
            spans: Vec::with_capacity(text.len()),
        };
        for (i, c) in text.char_indices() {
            let span = i..i + c.len_utf8();
            if c.is_whitespace() {
                if out.chars.last().is_some_and(|&l| l != ' ') {
                    out.chars.push(' ');
                    out.spans.push(span);
                }
            } else if APOSTROPHES.contains(&c) {
                out.chars.push('\'');
                out.spans.push(span);
            } else {
                for l in c.to_lowercase() {
                    out.chars.push(l);
                    out.spans.push(span.clone());
                }
            }
        }
        out
    }
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
    fn a_reply_that_starts_with_the_sentence_and_goes_on_is_a_prefix_refusal() {
        let starts = |s| starts_with_refusal(s, REFUSAL);
        assert!(starts(
            "I don't know based on the provided documents.\n\nContext:\n[1] (source: a.md#Fee) Membership costs 10 US dollars."
        ));
        assert!(starts(
            "  i don\u{2019}t KNOW based on the provided\ndocuments, but [1] says 10."
        ));
        assert!(
            !starts("I don't know based on the provided documents."),
            "the sentence alone is the exact tier's"
        );
        assert!(!starts("I don't know based on the provided documents ..."));
        assert!(
            !starts("I don't know based on the provided documentsX and more"),
            "the sentence ends at a word boundary"
        );
        assert!(
            !starts("It costs 10 dollars. I don't know based on the provided documents."),
            "a refusal after an answer does not start the reply"
        );
        assert!(!starts_with_refusal("No, it is free. [1]", "No."));
    }

    #[test]
    fn a_refusal_sentence_is_found_inside_a_reply_at_word_boundaries() {
        let at = |s| refusal_at(s, REFUSAL);
        let reply = "It is free. I DON'T know based on the provided  documents.\n[1] 10 dollars";
        let range = at(reply).unwrap();
        assert_eq!(
            &reply[range.clone()],
            "I DON'T know based on the provided  documents"
        );
        assert_eq!(&reply[..range.start], "It is free. ");
        assert_eq!(
            at("Eyes: i don't know based on the provided documents"),
            Some(6..50)
        );
        assert_eq!(
            at("aI don't know based on the provided documents"),
            None,
            "a word boundary before it"
        );
        assert_eq!(at("It costs 10 dollars. [1]"), None);
        assert_eq!(
            refusal_at("There is no fee. [1]", "No."),
            None,
            "a sentence under three words is never looked for"
        );
        let curly = "Ünïcode first. I don\u{2019}t know based on the provided documents";
        assert_eq!(
            &curly[refusal_at(curly, REFUSAL).unwrap()],
            "I don\u{2019}t know based on the provided documents"
        );
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
        assert_eq!(
            tier(
                "I don't know based on the provided documents.\n\nContext:\n[1] (source: a.md#Fee) 10 dollars.",
                lenient
            ),
            Some(RefusalTier::Prefix)
        );
        assert_eq!(
            tier(
                "I don't know based on the provided documents. The documents do not mention it.",
                RefusalMatch::Strict
            ),
            Some(RefusalTier::Pattern),
            "strict turns the prefix tier off too; the patterns still read the reply"
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
