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

/// Whether a lowercased word is a stopword.
pub fn is_stopword(word: &str) -> bool {
    STOPWORDS.binary_search(&word).is_ok()
}

/// The words of `text` that carry content, in order, repeats kept.
pub fn content_words(text: &str) -> impl Iterator<Item = String> + '_ {
    words(text).filter(|w| !is_stopword(w))
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn content_words_drop_function_words() {
        let w: Vec<_> = content_words("How much does the membership cost per term?").collect();
        assert_eq!(w, ["much", "membership", "cost", "per", "term"]);
    }
}
