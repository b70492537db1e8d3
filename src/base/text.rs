//! Word rules shared by the hash embedder, the mock model and judge, and the classifier; and
//! counted nouns for messages ([`plural`]).
//!
//! The embedder and the mock see text the same way: a word is a maximal run of Unicode letters and digits, lowercased;
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

/// Collapse every run of whitespace to one space and trim: one passage, one line.
pub fn squash(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    squash_into(&mut out, text);
    out
}

/// [`squash`] appended to `out`, so that a prompt is built without a copy per passage. A text
/// that is already one line (as the planner's passages are) is copied whole.
pub fn squash_into(out: &mut String, text: &str) {
    // ASCII's Unicode whitespace is tab to carriage return (VT and FF included) and space,
    // exactly what `split_whitespace` splits on.
    let space = |b: u8| matches!(b, b'\t'..=b'\r' | b' ');
    let bytes = text.as_bytes();
    if !text.is_ascii() {
        let start = out.len();
        for w in text.split_whitespace() {
            if out.len() > start {
                out.push(' ');
            }
            out.push_str(w);
        }
        return;
    }
    // One line already: no whitespace but single spaces between words.
    let mut after_space = true;
    let mut flat = true;
    for &b in bytes {
        let is_space = space(b);
        if is_space && (b != b' ' || after_space) {
            flat = false;
            break;
        }
        after_space = is_space;
    }
    // A trailing space is not one line either (an empty text is).
    if flat && (!after_space || bytes.is_empty()) {
        out.push_str(text);
        return;
    }
    let mut first = true;
    for w in text
        .split(|c: char| matches!(c, '\t'..='\r' | ' '))
        .filter(|w| !w.is_empty())
    {
        if !first {
            out.push(' ');
        }
        first = false;
        out.push_str(w);
    }
}

/// An answer as the answer match compares it, and the mock judge: lowercased, whitespace
/// squashed, number words up to twenty as digits (`Seven  Days` -> `7 days`). Both the reply and
/// the expected text are read this way, so `2 hours` matches an expected `two hours`.
pub fn normal_answer(text: &str) -> String {
    let lower = squash(text).to_lowercase();
    map_words(&lower, |w| {
        NUMBER_WORDS
            .iter()
            .position(|n| *n == w)
            .map(|n| n.to_string())
    })
}

/// Whether the answer `expected` occurs in `reply`, both read by [`normal_answer`]: as a
/// substring, except that a number stays whole (`2 hours` is not in `12 hours`, nor `1` in
/// `10`) and a citation is no number (`one` is not in `[1]`).
pub fn holds_answer(reply: &str, expected: &str) -> bool {
    let digit = |b: Option<&u8>| b.is_some_and(u8::is_ascii_digit);
    let bytes = expected.as_bytes();
    let (starts, ends) = (digit(bytes.first()), digit(bytes.last()));
    if !starts && !ends {
        return reply.contains(expected);
    }
    reply.match_indices(expected).any(|(i, _)| {
        let before = reply.as_bytes()[..i].last();
        let after = reply.as_bytes().get(i + expected.len());
        let longer = (starts && digit(before)) || (ends && digit(after));
        let cited = starts && ends && before == Some(&b'[') && after == Some(&b']');
        !longer && !cited
    })
}

/// Sentences end at `.`, `!` or `?` followed by whitespace or the end of the text.
pub fn sentences(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text.trim();
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        // The terminators are ASCII, so they are found byte by byte (no UTF-8 byte of another
        // char equals one), and the char after each is decoded only there.
        let bytes = rest.as_bytes();
        let mut end = rest.len();
        let mut from = 0;
        while let Some(p) = bytes[from..]
            .iter()
            .position(|b| matches!(b, b'.' | b'!' | b'?'))
        {
            let at = from + p;
            if rest[at + 1..]
                .chars()
                .next()
                .is_none_or(char::is_whitespace)
            {
                end = at + 1;
                break;
            }
            from = at + 1;
        }
        let sentence = rest[..end].trim();
        rest = rest[end..].trim_start();
        Some(sentence)
    })
    .filter(|s| !s.is_empty())
}

/// A count and its noun: `1 check`, `3 checks`, `0 questions` (nouns whose plural adds `s`).
pub fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("{n} {word}")
    } else {
        format!("{n} {word}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn squash_joins_words_as_split_whitespace_does() {
        for text in [
            "",
            "   ",
            "one",
            "  Send the fee\nto\tthe\x0btreasurer.\x0c\r\n ",
            "caf\u{e9}\u{a0}au\u{2003}lait \u{3000} ok",
            "a\x1fb",
            "already one line.",
            "a  b",
            " a",
            "a ",
            " ",
            "a\tb",
            "a \nb",
        ] {
            let expected = text.split_whitespace().collect::<Vec<_>>().join(" ");
            assert_eq!(squash(text), expected, "{text:?}");
            let mut out = String::from("[1] ");
            squash_into(&mut out, text);
            assert_eq!(out, format!("[1] {expected}"), "{text:?}");
        }
        assert_eq!(
            squash(" Send the fee\n\nto the treasurer. "),
            "Send the fee to the treasurer."
        );
    }

    #[test]
    fn squash_makes_one_line() {
        assert_eq!(squash("  a\n b\t\tc  \n"), "a b c");
    }

    #[test]
    fn answers_compare_lowercased_squashed_with_number_words_as_digits() {
        assert_eq!(
            normal_answer("About  Two\nhours, or TWENTY-one"),
            "about 2 hours, or 20-1"
        );
        assert_eq!(normal_answer("2 hours"), normal_answer("two hours"));
        assert_eq!(normal_answer("someone at 2.50"), "someone at 2.50");
        let holds = |reply: &str, expected: &str| {
            holds_answer(&normal_answer(reply), &normal_answer(expected))
        };
        assert!(holds("It takes 2 hours.", "two hours"));
        assert!(holds("It takes TWO  hours.", "2 hours"));
        assert!(holds("The fee is $10, paid yearly.", "10"));
        assert!(holds("Ten dollars each", "ten dollar"), "still a substring");
        assert!(!holds("It takes 12 hours.", "two hours"));
        assert!(!holds("Room 2B, floor 21", "1"));
        assert!(!holds("Someone knows.", "one"));
        assert!(!holds("It is in the guide [1].", "one"), "a citation");
        assert!(holds("It is one [1].", "one"));
    }

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
