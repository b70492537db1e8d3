//! Word rules shared by the hash embedder and the mock model.
//!
//! Both see text the same way: a word is a maximal run of Unicode letters and digits, lowercased;
//! everything else (punctuation, apostrophes, hyphens) separates words. A short list of English
//! function words carries no topic and is ignored, so that "how" and "the" do not make every
//! passage look relevant.

/// English function words that neither the embedder nor the mock counts.
pub const STOPWORDS: &[&str] = &[
    "a", "about", "an", "and", "any", "are", "as", "at", "be", "by", "can", "could", "do", "does",
    "for", "from", "has", "have", "how", "i", "if", "in", "into", "is", "it", "its", "me", "my",
    "of", "on", "or", "our", "s", "so", "t", "that", "the", "their", "them", "then", "there",
    "these", "they", "this", "those", "to", "was", "we", "were", "what", "when", "where", "which",
    "who", "why", "will", "with", "would", "you", "your",
];

/// Every word of `text`, lowercased, in order (stopwords included).
pub fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
}

/// Call `f` with each lowercased word of `text`, as [`words`] yields them, without allocating a
/// string per word: the mock model counts millions of words in a large sweep.
pub fn each_word(text: &str, mut f: impl FnMut(&str)) {
    let mut lower = String::new();
    if text.is_ascii() {
        // The common case, a byte at a time: an ASCII char is alphanumeric exactly when its
        // byte is.
        for w in text.as_bytes().split(|b| !b.is_ascii_alphanumeric()) {
            if w.is_empty() {
                continue;
            }
            lower.clear();
            lower.extend(w.iter().map(|b| char::from(b.to_ascii_lowercase())));
            f(&lower);
        }
        return;
    }
    for w in text.split(|c: char| !c.is_alphanumeric()) {
        if w.is_empty() {
            continue;
        }
        if w.is_ascii() {
            lower.clear();
            lower.push_str(w);
            lower.make_ascii_lowercase();
            f(&lower);
        } else {
            // `str::to_lowercase` knows context rules (a final sigma) that chars alone do not.
            f(&w.to_lowercase());
        }
    }
}

/// Whether a lowercased word is a stopword.
pub fn is_stopword(word: &str) -> bool {
    STOPWORDS.binary_search(&word).is_ok()
}

/// The words of `text` that carry content, in order, repeats kept.
pub fn content_words(text: &str) -> impl Iterator<Item = String> + '_ {
    words(text).filter(|w| !is_stopword(w))
}

/// At most `max` characters of `text` on one line, `...` marking a cut.
pub fn excerpt(text: &str, max: usize) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= max {
        return one_line;
    }
    let cut: String = one_line.chars().take(max).collect();
    format!("{cut}...")
}

/// Number words from zero to twenty, by value.
pub const NUMBER_WORDS: [&str; 21] = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
    "twenty",
];

/// `text` with each word (a maximal run of letters and digits) replaced by `f(word)` when that
/// is `Some`. A digit run inside a decimal number (`2.50`, `1,000`) is left alone.
pub fn map_words(text: &str, f: impl Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut prev: Option<char> = None;
    while let Some(start) = rest.find(|c: char| c.is_alphanumeric()) {
        out.push_str(&rest[..start]);
        prev = rest[..start].chars().next_back().or(prev);
        let word_len = rest[start..]
            .find(|c: char| !c.is_alphanumeric())
            .unwrap_or(rest.len() - start);
        let word = &rest[start..start + word_len];
        let after = &rest[start + word_len..];
        let mut next = after.chars();
        let in_number = word.chars().all(|c| c.is_ascii_digit())
            && (matches!(prev, Some('.' | ','))
                || (matches!(next.next(), Some('.' | ','))
                    && next.next().is_some_and(|c| c.is_ascii_digit())));
        match f(word).filter(|_| !in_number) {
            Some(w) => out.push_str(&w),
            None => out.push_str(word),
        }
        prev = word.chars().next_back();
        rest = after;
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_mapped_whole_and_decimals_kept() {
        let f = |w: &str| {
            w.parse::<usize>()
                .ok()
                .and_then(|n| NUMBER_WORDS.get(n))
                .map(|s| s.to_string())
        };
        assert_eq!(
            map_words("7 days, 9 to 12; B2 costs 2.50 or 1,000.", f),
            "seven days, nine to twelve; B2 costs 2.50 or 1,000."
        );
        assert_eq!(map_words("", f), "");
    }

    #[test]
    fn stopwords_are_sorted_for_binary_search() {
        let mut sorted = STOPWORDS.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted, STOPWORDS);
    }

    #[test]
    fn words_split_on_punctuation_and_lowercase() {
        let w: Vec<_> = words("Don't use Wi-Fi, Sophea!").collect();
        assert_eq!(w, ["don", "t", "use", "wi", "fi", "sophea"]);
    }

    #[test]
    fn each_word_yields_what_words_yields() {
        let text = "Don't use Wi-Fi, SOPHEA! \u{39f}\u{394}\u{39f}\u{3a3} Straße 42x";
        let mut seen = Vec::new();
        each_word(text, |w| seen.push(w.to_string()));
        assert_eq!(seen, words(text).collect::<Vec<_>>());
        assert_eq!(seen[..6], ["don", "t", "use", "wi", "fi", "sophea"]);
        // The final sigma of ΟΔΟΣ lowercases to ς, as `str::to_lowercase` does.
        assert_eq!(seen[6], "\u{3bf}\u{3b4}\u{3bf}\u{3c2}");
    }

    #[test]
    fn content_words_drop_function_words() {
        let w: Vec<_> = content_words("How much does the membership cost per term?").collect();
        assert_eq!(w, ["much", "membership", "cost", "per", "term"]);
    }
}
