//! One module per verb; each takes checked settings and returns an exit status.

pub mod adaptive;
pub mod ask;
pub mod batch;
pub mod batch_view;
pub mod compare;
mod engine;
pub mod gate;
pub mod generate;
pub mod history;
pub mod import;
pub mod index;
pub mod init;
pub mod label;
pub mod merge;
pub mod mock_llm;
pub mod scan;
pub mod schema;
pub mod sweep;
pub mod validate;

use std::io::Write;

/// Write text for people to stdout, control characters and bidi overrides shown escaped
/// ([`crate::base::safe_text::visible`]); a closed pipe (`rageval ... | head`) is not an error worth
/// reporting.
pub fn print(text: &str) -> std::io::Result<()> {
    print_raw(&crate::base::safe_text::visible(text))
}

/// Write a document for programs (JSON, whose strings escape what they must) to stdout as is.
pub fn print_raw(text: &str) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()
}

/// A line for people on stderr, shown as [`print`] shows text.
pub fn eprint_line(line: &str) {
    eprint_raw(&format!("{}\n", crate::base::safe_text::visible(line)));
}

/// Text for people on stderr, as is. A stderr that is closed (`2>&-`) or a pipe whose reader
/// left (`2>&1 >/dev/null | head -1`) loses the text: the standard macros would panic there
/// and exit 101, which is no exit status of ours.
pub fn eprint_raw(text: &str) {
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(text.as_bytes());
    let _ = err.flush();
}
