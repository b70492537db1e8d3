//! The `rageval` binary: parse arguments, run the library, map the result to an exit status.

use clap::Parser;
use rageval::app::cli::Cli;
use rageval::base::exit::ExitStatus;

fn main() {
    rageval::base::timing::init();
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            say(&format!("error: cannot start the async runtime: {e}"));
            std::process::exit(ExitStatus::Error.code());
        }
    };
    // The handlers are in place before the command starts: a signal that comes as soon as a
    // temporary exists (a spawned task might not have run yet) still removes it.
    let signals = {
        let _entered = runtime.enter();
        Signals::listen()
    };
    runtime.spawn(exit_on_signal(signals));
    let status = match runtime.block_on(rageval::run(cli)) {
        Ok(status) => status,
        Err(e) if is_broken_pipe(&e) => ExitStatus::Success,
        Err(e) => {
            // Every message passes the URL redaction once more, whatever produced it, and
            // shows the control characters of names it quotes escaped.
            let message = rageval::base::redact::urls_in(&format!("{e:#}"));
            say(&format!(
                "error: {}",
                rageval::base::safe_text::visible(&message)
            ));
            ExitStatus::Error
        }
    };
    rageval::base::timing::mark("done");
    for line in rageval::base::timing::take_lines() {
        say(&line);
    }
    std::process::exit(status.code());
}

/// SIGINT and SIGTERM, caught from the moment [`Signals::listen`] returns.
struct Signals {
    #[cfg(unix)]
    caught: Option<(tokio::signal::unix::Signal, tokio::signal::unix::Signal)>,
}

impl Signals {
    /// Catch SIGINT and SIGTERM now (inside the runtime's context).
    fn listen() -> Self {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            let caught = match (
                signal(SignalKind::interrupt()),
                signal(SignalKind::terminate()),
            ) {
                (Ok(int), Ok(term)) => Some((int, term)),
                _ => None,
            };
            Signals { caught }
        }
        #[cfg(not(unix))]
        Signals {}
    }
}

/// On Ctrl-C (SIGINT) or SIGTERM, remove the report files and import folders being written,
/// then exit as the signal would (128 + its number): nothing half-written stays.
async fn exit_on_signal(signals: Signals) {
    #[cfg(unix)]
    {
        let Some((mut int, mut term)) = signals.caught else {
            return;
        };
        let code = tokio::select! {
            _ = int.recv() => 130,
            _ = term.recv() => 143,
        };
        rageval::base::in_flight::remove_all();
        std::process::exit(code);
    }
    #[cfg(not(unix))]
    drop(signals);
}

/// One line on stderr. A closed stderr loses it: the standard macros would panic and exit
/// 101, which tells the caller nothing (`rageval ... 2>&1 >/dev/null | head -1`).
fn say(line: &str) {
    use std::io::Write;
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{line}");
    let _ = err.flush();
}

/// `rageval sweep | head` closes stdout early; that is the reader's choice, not a failure.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain()
        .filter_map(|c| c.downcast_ref::<std::io::Error>())
        .any(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
}
