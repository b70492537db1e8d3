//! The progress bar over model calls: on stderr, only on a terminal, never with `--quiet`.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::sweep::{CallEvent, ProgressFn};

/// A bar and the callback that feeds it, or nothing when no one would see it.
pub fn call_bar(quiet: bool) -> Option<(ProgressBar, ProgressFn)> {
    if quiet || !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} calls {pos}/{len} {wide_bar} {rate} eta {eta} {msg}",
        )
        .expect("a valid template")
        .with_key(
            "rate",
            |s: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = write!(w, "{:.1}/s", s.per_sec());
            },
        ),
    );
    let cached = Arc::new(AtomicUsize::new(0));
    let failed = Arc::new(AtomicUsize::new(0));
    let b = bar.clone();
    let feed: ProgressFn = Arc::new(move |e: CallEvent| {
        if b.length() != Some(e.total as u64) {
            b.set_length(e.total as u64);
        }
        let c = cached.fetch_add(usize::from(e.cached), Ordering::Relaxed) + usize::from(e.cached);
        let f = failed.fetch_add(usize::from(e.failed), Ordering::Relaxed) + usize::from(e.failed);
        b.set_message(format!("cached {c} errors {f}"));
        b.set_position(e.done as u64);
    });
    Some((bar, feed))
}
