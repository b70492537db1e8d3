//! The `rageval` binary: parse arguments, run the library, map the result to an exit status.

use clap::Parser;
use rageval::cli::Cli;
use rageval::exit::ExitStatus;

fn main() {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            std::process::exit(ExitStatus::Error.code());
        }
    };
    let status = match runtime.block_on(rageval::run(cli)) {
        Ok(status) => status,
        Err(e) if is_broken_pipe(&e) => ExitStatus::Success,
        Err(e) => {
            // Every message passes the URL redaction once more, whatever produced it, and
            // shows the control characters of names it quotes escaped.
            let message = rageval::redact::urls_in(&format!("{e:#}"));
            eprintln!("error: {}", rageval::safe_text::visible(&message));
            ExitStatus::Error
        }
    };
    std::process::exit(status.code());
}

/// `rageval sweep | head` closes stdout early; that is the reader's choice, not a failure.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain()
        .filter_map(|c| c.downcast_ref::<std::io::Error>())
        .any(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
}
