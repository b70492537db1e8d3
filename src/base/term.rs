//! The width that terminal output fits, and word wrapping at that width.

use std::io::IsTerminal;

/// The width used when stdout is no terminal and `COLUMNS` is unset: a CI log or a pipe.
pub const DEFAULT_WIDTH: usize = 100;

/// Narrower than this, nothing fits anyway: wrapping below it only makes output longer.
const MIN_WIDTH: usize = 40;

/// The width stdout's lines should fit: the terminal's, else `$COLUMNS`, else 100.
pub fn width() -> usize {
    let terminal = std::io::stdout()
        .is_terminal()
        .then(|| terminal_size::terminal_size_of(std::io::stdout()))
        .flatten()
        .map(|(w, _)| usize::from(w.0));
    let columns = std::env::var("COLUMNS")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&w| w > 0);
    terminal.or(columns).unwrap_or(DEFAULT_WIDTH).max(MIN_WIDTH)
}

/// `text` broken at spaces so that no line exceeds `width` characters (a word longer than the
/// width stays whole); continuation lines are indented by two spaces. Line breaks in `text`
/// are kept.
pub fn wrap(text: &str, width: usize) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for (n, line) in text.split('\n').enumerate() {
        if n > 0 {
            out.push('\n');
        }
        let mut len = 0;
        for word in line.split(' ') {
            let w = word.chars().count();
            if len > 0 && len + 1 + w > width {
                out.push_str("\n  ");
                len = 2;
            } else if len > 0 {
                out.push(' ');
                len += 1;
            }
            out.push_str(word);
            len += w;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps_at_spaces_and_indents_continuations() {
        assert_eq!(
            wrap("one two three four five", 10),
            "one two\n  three\n  four\n  five"
        );
        assert_eq!(wrap("short", 10), "short");
        assert_eq!(wrap("a\nb c", 3), "a\nb c");
        // Width counts characters, not bytes: `≤` and `–` are one column each.
        assert_eq!(wrap("x ≤ 20% [6–41]", 14), "x ≤ 20% [6–41]");
        assert_eq!(
            wrap("averyveryverylongword b", 5),
            "averyveryverylongword\n  b"
        );
    }
}
