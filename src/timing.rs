//! Stage timings for benchmarks: with `RAGEVAL_TIMINGS=1` in the environment, each stage of a
//! sweep prints one line to standard error, its end time since the process started and the
//! stage's name. Off (and one relaxed load per mark) otherwise.

use std::sync::OnceLock;
use std::time::Instant;

fn start() -> Option<Instant> {
    static START: OnceLock<Option<Instant>> = OnceLock::new();
    *START.get_or_init(|| {
        std::env::var_os("RAGEVAL_TIMINGS")
            .is_some_and(|v| v == "1")
            .then(Instant::now)
    })
}

/// Start the clock (the first call decides whether timings are on).
pub fn init() {
    let _ = start();
}

/// Print `stage` with the time since [`init`], when timings are on.
pub fn mark(stage: &str) {
    if let Some(t0) = start() {
        eprintln!("timing: {:>8.3} s  {stage}", t0.elapsed().as_secs_f64());
    }
}
