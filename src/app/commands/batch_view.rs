//! What a batch cycle's events look like on stderr: a line when a batch is sent, then a bar
//! while it runs on a terminal, elsewhere a plain line every few seconds while it runs (none for
//! a batch shorter than that) and one when it ends; nothing with `--quiet`. So what a short
//! batch prints depends on what it did, never on when it was polled.

use std::cell::RefCell;
use std::time::{Duration, Instant};

use crate::base::safe_text::one_line;
use crate::batch::cycle::Event;

/// Lines shown one by one (a batch's failed lines; an import's strangers and failures, of
/// each kind); the rest are counted.
const MAX_SHOWN: usize = crate::batch::import::MAX_KEPT;

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
                let ended = match status {
                    crate::batch::client::BatchState::Completed => String::new(),
                    other => format!(
                        " (the batch ended `{}`: its answered lines are kept)",
                        one_line(other.as_str())
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

/// The import's warnings: the first few strangers and failures by line, the rest counted.
pub fn warn_lines(done: &crate::batch::import::Imported) {
    for (at, id) in &done.unknown {
        super::eprint_line(&format!(
            "warning: {}: `custom_id` {} is no request of this project (not imported)",
            one_line(&at.to_string()),
            one_line(id)
        ));
    }
    if done.unknown_lines > done.unknown.len() {
        super::eprint_line(&format!(
            "warning: ... and {} more lines of requests this project never wrote",
            done.unknown_lines - done.unknown.len()
        ));
    }
    for f in done.failed.iter().take(MAX_SHOWN) {
        super::eprint_line(&format!(
            "warning: {}: {}",
            one_line(&f.at.to_string()),
            one_line(&f.message)
        ));
    }
    if done.failed.len() > MAX_SHOWN {
        super::eprint_line(&format!(
            "warning: ... and {} more failed lines",
            done.failed.len() - MAX_SHOWN
        ));
    }
}

/// What the import did, and what the sweep that wrote the requests (`sweep`: `rageval sweep`,
/// with its `--shard`) will do next: it finishes with no call only when the cache answers
/// every request this project wrote into batch files.
pub fn import_text(
    done: &crate::batch::import::Imported,
    unanswered: usize,
    requests: usize,
    sweep: &str,
) -> String {
    let mut text = format!(
        "imported {} answers ({} already in the cache), {} failed, {} unknown.\n",
        done.imported,
        done.already,
        done.failed.len(),
        done.unknown_lines
    );
    let answered = requests - unanswered;
    text.push_str(&format!(
        "the cache answers {answered} of the {requests} requests this project wrote into batch files.\n"
    ));
    text.push_str(&if done.vectors > 0 {
        format!("next: `{sweep} --batch-out FILE` writes the chat requests, whose prompts depend on what these embeddings retrieve (`{sweep}` makes them live, and embeds live what failed).\n")
    } else if unanswered == 0 {
        format!("next: `{sweep}` finishes from the cache with no call.\n")
    } else {
        format!("next: `{sweep}` finishes from the cache and calls the unanswered requests live; `{sweep} --batch-out FILE` writes them into a new batch file instead.\n")
    });
    text
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
