//! What a batch cycle's events look like on stderr: a line when a batch is sent, then a bar
//! while it runs on a terminal, elsewhere a plain line every few seconds while it runs (none for
//! a batch shorter than that) and one when it ends; nothing with `--quiet`. So what a short
//! batch prints depends on what it did, never on when it was polled.

use std::cell::RefCell;
use std::time::{Duration, Instant};

use crate::base::safe_text::one_line;
use crate::batch::cycle::Event;

/// Failed lines shown one by one per batch; the rest are counted in its last line.
const MAX_SHOWN: usize = 5;

/// The renderer of one cycle's events (see [`View::show`]).
pub struct View {
    quiet: bool,
    terminal: bool,
    interval: Duration,
    state: RefCell<State>,
}

/// What is on screen of the batch being polled.
#[derive(Default)]
struct State {
    /// The batch polled last, its bar (on a terminal), when its polling started and when its
    /// next plain line is due.
    polling: Option<(String, Option<indicatif::ProgressBar>, Instant, Duration)>,
    /// Failed lines shown of the batch being imported.
    shown: usize,
}

impl View {
    pub fn new(quiet: bool) -> Self {
        use std::io::IsTerminal;
        View {
            quiet,
            terminal: std::io::stderr().is_terminal(),
            interval: crate::app::progress::interval(),
            state: RefCell::default(),
        }
    }

    /// Render `event`.
    pub fn show(&self, event: Event) {
        if self.quiet {
            return;
        }
        let mut state = self.state.borrow_mut();
        match event {
            Event::Resumed { ids } => super::eprint_line(&format!(
                "resuming {} batch{} left open by an earlier run: {}",
                ids.len(),
                if ids.len() == 1 { "" } else { "es" },
                ids.iter()
                    .map(|id| one_line(id))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
            Event::Submitted {
                id,
                section,
                requests,
            } => super::eprint_line(&format!(
                "batch {}: sent {requests} request{} to the server of `{section}`",
                one_line(&id),
                if requests == 1 { "" } else { "s" }
            )),
            Event::Polled(st) => {
                if state.polling.as_ref().is_none_or(|p| p.0 != st.id) {
                    let bar = self.terminal.then(|| bar(&st.id));
                    state.polling = Some((st.id.clone(), bar, Instant::now(), self.interval));
                }
                let (_, bar, start, next_line) = state.polling.as_mut().expect("set above");
                match bar {
                    Some(bar) => {
                        bar.set_length(st.total);
                        bar.set_position(st.done());
                        bar.set_message(format!(
                            "{} failed {}",
                            one_line(st.status.as_str()),
                            st.failed
                        ));
                        if st.is_done() {
                            bar.finish_and_clear();
                        }
                    }
                    None if st.is_done() || start.elapsed() >= *next_line => {
                        *next_line = start.elapsed() + self.interval;
                        super::eprint_line(&format!(
                            "batch {}: {}, {}/{} requests done, {} failed",
                            one_line(&st.id),
                            one_line(st.status.as_str()),
                            st.done(),
                            st.total,
                            st.failed
                        ));
                    }
                    None => {}
                }
                if st.is_done() {
                    state.polling = None;
                }
            }
            Event::LineFailed { id, message } => {
                state.shown += 1;
                if state.shown <= MAX_SHOWN {
                    super::eprint_line(&format!(
                        "note: batch {}: {}",
                        one_line(&id),
                        one_line(&message)
                    ));
                }
            }
            Event::Finished {
                id,
                status,
                requests,
                answered,
                failed,
            } => {
                state.shown = 0;
                let ended = match status.as_str() {
                    "completed" => String::new(),
                    other => format!(
                        " (the batch ended `{}`: its answered lines are kept)",
                        one_line(other)
                    ),
                };
                super::eprint_line(&format!(
                    "batch {}: {answered} of {requests} requests answered, {failed} failed{ended}",
                    one_line(&id)
                ));
            }
        }
    }
}

/// The bar of batch `id`.
fn bar(id: &str) -> indicatif::ProgressBar {
    let bar =
        indicatif::ProgressBar::with_draw_target(None, indicatif::ProgressDrawTarget::stderr());
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} batch {prefix} {pos}/{len} {wide_bar} {msg}",
        )
        .expect("a valid template"),
    );
    bar.set_prefix(one_line(id).into_owned());
    bar
}
