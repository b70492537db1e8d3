//! One module per verb; each takes checked settings and returns an exit status.

pub mod ask;
pub mod gate;
pub mod init;
pub mod mock_llm;
pub mod scan;
pub mod schema;
pub mod sweep;
pub mod validate;

use std::io::Write;

/// Write to stdout; a closed pipe (`rageval ... | head`) is not an error worth reporting.
pub fn print(text: &str) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()
}
