//! Progress over model calls, on stderr and never with `--quiet`: a bar on a terminal, and
//! elsewhere (a CI log, a file) a plain line every few seconds, so long work is never silent.
//! Under a rate limit both also say how long calls were held back by it.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::adapters::http::Held;
use crate::sweep::{CallEvent, ProgressFn};

/// How often a plain progress line is written when stderr is not a terminal.
const DEFAULT_INTERVAL: Duration = Duration::from_secs(10);

/// Overrides [`DEFAULT_INTERVAL`], in milliseconds (for tests and chatty CI logs).
const INTERVAL_ENV: &str = "RAGEVAL_PROGRESS_INTERVAL_MS";

/// What shows progress; [`Progress::finish`] removes the bar or stops the lines.
pub enum Progress {
    Bar(ProgressBar),
    Lines {
        stop: Arc<AtomicBool>,
        thread: Option<std::thread::JoinHandle<()>>,
    },
}

impl Progress {
    pub fn finish(mut self) {
        match &mut self {
            Progress::Bar(bar) => bar.finish_and_clear(),
            Progress::Lines { stop, thread } => {
                stop.store(true, Ordering::Relaxed);
                if let Some(t) = thread.take() {
                    let _ = t.join();
                }
            }
        }
    }
}

/// Counts fed by the sweep, read by whoever shows them.
#[derive(Default)]
struct Counts {
    done: AtomicUsize,
    total: AtomicUsize,
    cached: AtomicUsize,
    failed: AtomicUsize,
}

impl Counts {
    fn feed(&self, e: &CallEvent) {
        self.done.store(e.done, Ordering::Relaxed);
        self.total.store(e.total, Ordering::Relaxed);
        self.cached
            .fetch_add(usize::from(e.cached), Ordering::Relaxed);
        self.failed
            .fetch_add(usize::from(e.failed), Ordering::Relaxed);
    }
}

/// The progress display and the callback that feeds it, or nothing when no one would see it.
/// With `held` (a rate limit is set), it shows the time calls waited for the limit.
pub fn call_bar(quiet: bool, held: Option<Arc<Held>>) -> Option<(Progress, ProgressFn)> {
    if quiet {
        return None;
    }
    if std::io::stderr().is_terminal() {
        return Some(bar(held));
    }
    Some(lines(interval(), held))
}

/// How often a plain progress line is written: [`INTERVAL_ENV`], else [`DEFAULT_INTERVAL`].
pub fn interval() -> Duration {
    std::env::var(INTERVAL_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|&ms| ms > 0)
        .map_or(DEFAULT_INTERVAL, Duration::from_millis)
}

fn bar(held: Option<Arc<Held>>) -> (Progress, ProgressFn) {
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
    let counts = Arc::new(Counts::default());
    let b = bar.clone();
    let feed: ProgressFn = Arc::new(move |e: CallEvent| {
        counts.feed(&e);
        // A total of 0 is one still being planned: shown as unknown, not as 0.
        let total = (e.total > 0).then_some(e.total as u64);
        if b.length() != total {
            match total {
                Some(total) => b.set_length(total),
                None => b.unset_length(),
            }
        }
        b.set_message(format!(
            "cached {} errors {}{}",
            counts.cached.load(Ordering::Relaxed),
            counts.failed.load(Ordering::Relaxed),
            held.as_ref().map_or(String::new(), |h| format!(
                " rate-limited {}",
                duration(h.total().as_secs_f64())
            ))
        ));
        b.set_position(e.done as u64);
    });
    (Progress::Bar(bar), feed)
}

/// A line every `interval` on stderr until stopped; nothing at all for work shorter than that.
fn lines(interval: Duration, held: Option<Arc<Held>>) -> (Progress, ProgressFn) {
    let counts = Arc::new(Counts::default());
    let stop = Arc::new(AtomicBool::new(false));
    let (c, s) = (counts.clone(), stop.clone());
    let thread = std::thread::spawn(move || {
        let start = Instant::now();
        let mut next = interval;
        while !s.load(Ordering::Relaxed) {
            let elapsed = start.elapsed();
            if elapsed < next {
                std::thread::sleep((next - elapsed).min(Duration::from_millis(50)));
                continue;
            }
            next += interval;
            let mut text = line(
                c.done.load(Ordering::Relaxed),
                c.total.load(Ordering::Relaxed),
                c.failed.load(Ordering::Relaxed),
                elapsed,
            );
            if let Some(h) = &held {
                text.push_str(&held_suffix(h.total()));
            }
            // A closed stderr is no reason to stop the sweep.
            let _ = writeln!(std::io::stderr(), "{text}");
        }
    });
    let feed: ProgressFn = Arc::new(move |e: CallEvent| counts.feed(&e));
    (
        Progress::Lines {
            stop,
            thread: Some(thread),
        },
        feed,
    )
}

/// `progress: 40/104 calls, 3.2 calls/s, eta 20s, 0 errors`
pub fn line(done: usize, total: usize, errors: usize, elapsed: Duration) -> String {
    let secs = elapsed.as_secs_f64();
    let rate = if secs > 0.0 { done as f64 / secs } else { 0.0 };
    let eta = if done == 0 || rate <= 0.0 {
        "unknown".to_string()
    } else {
        duration(total.saturating_sub(done) as f64 / rate)
    };
    let total = if total == 0 {
        "?".to_string()
    } else {
        total.to_string()
    };
    format!(
        "progress: {done}/{total} calls, {rate:.1} calls/s, eta {eta}, {errors} {}",
        if errors == 1 { "error" } else { "errors" }
    )
}

/// `, 12s held by the rate limit`: appended to a progress line under a rate limit.
pub fn held_suffix(held: Duration) -> String {
    format!(", {} held by the rate limit", duration(held.as_secs_f64()))
}

/// `45s`, `3m05s`, `1h02m`
fn duration(secs: f64) -> String {
    let s = secs.ceil() as u64;
    if s < 60 {
        format!("{s}s")
    } else if s < 3600 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{}h{:02}m", s / 3600, s % 3600 / 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_says_done_rate_eta_and_errors() {
        assert_eq!(
            line(40, 104, 0, Duration::from_secs(10)),
            "progress: 40/104 calls, 4.0 calls/s, eta 16s, 0 errors"
        );
        assert_eq!(
            line(0, 0, 1, Duration::from_secs(5)),
            "progress: 0/? calls, 0.0 calls/s, eta unknown, 1 error"
        );
        assert_eq!(
            line(1, 400, 2, Duration::from_secs(1)),
            "progress: 1/400 calls, 1.0 calls/s, eta 6m39s, 2 errors"
        );
        assert_eq!(duration(3725.0), "1h02m");
        assert_eq!(
            held_suffix(Duration::from_millis(12_300)),
            ", 13s held by the rate limit"
        );
        assert_eq!(held_suffix(Duration::ZERO), ", 0s held by the rate limit");
    }
}
