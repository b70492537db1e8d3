//! The gate as JUnit XML, so GitLab, Jenkins and GitHub test reporters show each check and
//! each flipped question as a test case.
//!
//! One `<testsuite>` holds a `<testcase>` per check (classname `rageval.gate`) and one per
//! question that flipped for the worse (classname `rageval.gate.flipped`). A flipped question
//! fails when the baseline comparison failed, and passes (with the flip in `<system-out>`) when
//! the change stayed within the tolerance or was not significant.

use std::fmt::Write as _;

use super::Report;

/// The JUnit document for a gate report.
pub fn junit(r: &Report) -> String {
    let mut cases = String::new();
    let mut tests = 0;
    let mut failures = 0;
    for c in &r.checks {
        tests += 1;
        let name = format!("{} at {}", c.name, r.setting);
        let _ = write!(
            cases,
            "    <testcase classname=\"rageval.gate\" name=\"{}\" time=\"0\">",
            escape(&name)
        );
        if c.passed {
            let _ = writeln!(
                cases,
                "\n      <system-out>{}</system-out>\n    </testcase>",
                escape(&c.figures)
            );
        } else {
            failures += 1;
            let _ = writeln!(
                cases,
                "\n      <failure message=\"{}\" type=\"gate\">{}: {}</failure>\n    </testcase>",
                escape(&c.figures),
                escape(&c.name),
                escape(&c.figures)
            );
        }
    }
    if let Some(cmp) = &r.baseline {
        for f in &cmp.worse {
            tests += 1;
            let what = format!("{} -> {} (baseline {})", f.before, f.after, cmp.path);
            let _ = write!(
                cases,
                "    <testcase classname=\"rageval.gate.flipped\" name=\"{}\" time=\"0\">",
                escape(&f.id)
            );
            if cmp.regressed {
                failures += 1;
                let _ = writeln!(
                    cases,
                    "\n      <failure message=\"{}\" type=\"flipped\">question `{}` flipped at {}: {}</failure>\n    </testcase>",
                    escape(&what),
                    escape(&f.id),
                    escape(&r.setting),
                    escape(&what)
                );
            } else {
                let _ = writeln!(
                    cases,
                    "\n      <system-out>{} (within the gate's tolerance)</system-out>\n    </testcase>",
                    escape(&what)
                );
            }
        }
    }
    let mut s = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        s,
        "<testsuites name=\"rageval gate\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\">"
    );
    let _ = writeln!(
        s,
        "  <testsuite name=\"rageval gate {}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" skipped=\"0\" time=\"0\">",
        escape(&r.setting)
    );
    s.push_str(&cases);
    s.push_str("  </testsuite>\n</testsuites>\n");
    s
}

/// Escape text for XML content and attribute values. Characters XML 1.0 cannot hold at all
/// (most control characters) become U+FFFD, so any question id gives a well-formed file.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // Kept in attributes too, where a raw newline would be normalized to a space.
            '\n' => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            '\t' => out.push_str("&#9;"),
            c if is_xml_char(c) => out.push(c),
            _ => out.push('\u{FFFD}'),
        }
    }
    out
}

/// XML 1.0's `Char` production.
fn is_xml_char(c: char) -> bool {
    matches!(c,
        '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..='\u{10FFFF}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_drops_what_xml_cannot_hold() {
        assert_eq!(
            escape(r#"a<b>&"c"'d'"#),
            "a&lt;b&gt;&amp;&quot;c&quot;&apos;d&apos;"
        );
        assert_eq!(escape("x\u{1}y\u{FFFE}"), "x\u{FFFD}y\u{FFFD}");
        assert_eq!(escape("line\nnext"), "line&#10;next");
        assert_eq!(escape("émoji ✓"), "émoji ✓");
    }
}
