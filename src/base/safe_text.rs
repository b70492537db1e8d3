//! Text from files (names, headings, passages, ids, answers) is shown, never obeyed: control
//! characters such as ESC (`"\e[2J"` clears a terminal) and bidirectional overrides (which
//! make `txt.exe` read as `exe.txt`) are written as visible escapes like `\u{1b}`.
//!
//! Terminal output and report.md pass through [`visible`]; report.html escapes the same
//! characters in its own `escape`.

use std::borrow::Cow;

/// Bidirectional embedding, override and isolate controls: U+202A..U+202E, U+2066..U+2069.
pub fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Whether `c` is shown escaped: control characters other than newline and tab, and bidi
/// controls.
pub fn needs_escape(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t') || is_bidi_control(c)
}

/// `text` with every character that [`needs_escape`] written as `\u{XX}` (lowercase hex).
pub fn visible(text: &str) -> Cow<'_, str> {
    escape_where(text, needs_escape)
}

/// `text` on one line: like [`visible`], with newline, carriage return and tab escaped too.
/// For text from outside (a server's reply, a value read from a file) put inside a message of
/// ours, so that it cannot start a line of its own (`\nerror: ...` forging a second error).
pub fn one_line(text: &str) -> Cow<'_, str> {
    escape_where(text, |c| c.is_control() || is_bidi_control(c))
}

/// `text` with every character for which `escape` holds written as `\u{XX}`.
fn escape_where(text: &str, escape: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !text.chars().any(&escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if escape(c) {
            out.push_str(&c.escape_unicode().to_string());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_escapes_every_control_character() {
        assert_eq!(
            one_line("a\nerror: forged\r\tx"),
            "a\\u{a}error: forged\\u{d}\\u{9}x"
        );
        assert_eq!(one_line("\u{1b}[2J\u{202e}"), "\\u{1b}[2J\\u{202e}");
        assert!(matches!(one_line("plain é"), Cow::Borrowed(_)));
    }

    #[test]
    fn controls_and_bidi_overrides_become_visible_escapes() {
        assert_eq!(visible("a\u{1b}[2Jb"), "a\\u{1b}[2Jb");
        assert_eq!(visible("x\u{202e}gpj.exe"), "x\\u{202e}gpj.exe");
        assert_eq!(
            visible("\u{2066}\u{2069}\r\u{7f}\u{9b}"),
            "\\u{2066}\\u{2069}\\u{d}\\u{7f}\\u{9b}"
        );
        assert_eq!(visible("lines\n\tstay é"), "lines\n\tstay é");
        assert!(matches!(visible("plain"), Cow::Borrowed(_)));
    }

    #[test]
    fn one_line_escapes_newlines_and_tabs_too() {
        assert_eq!(
            one_line("id\nerror: forged\r\t\u{1b}"),
            "id\\u{a}error: forged\\u{d}\\u{9}\\u{1b}"
        );
        assert_eq!(one_line("x\u{202e}y"), "x\\u{202e}y");
        assert!(matches!(one_line("batch_1 é"), Cow::Borrowed(_)));
    }
}
