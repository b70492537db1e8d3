//! Stage timings for benchmarks: with `RAGEVAL_TIMINGS=1` in the environment, each stage of a
//! sweep notes when it ended (seconds since the process started), and `rageval sweep` prints
//! the notes to standard error when it is done. Off (one relaxed check per mark) otherwise.

use std::sync::{Mutex, OnceLock};
use std::time::Instant;

fn start() -> Option<Instant> {
    static START: OnceLock<Option<Instant>> = OnceLock::new();
    *START.get_or_init(|| {
        std::env::var_os("RAGEVAL_TIMINGS")
            .is_some_and(|v| v == "1")
            .then(Instant::now)
    })
}

static MARKS: Mutex<Vec<(f64, &'static str)>> = Mutex::new(Vec::new());

/// Start the clock (the first call decides whether timings are on).
pub fn init() {
    let _ = start();
}

/// Note that `stage` ended now, when timings are on.
pub fn mark(stage: &'static str) {
    if let Some(t0) = start() {
        let at = t0.elapsed().as_secs_f64();
        MARKS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((at, stage));
    }
}

/// The marks so far, one line each, in the order they were made; the list is emptied.
pub fn take_lines() -> Vec<String> {
    let marks = std::mem::take(&mut *MARKS.lock().unwrap_or_else(|e| e.into_inner()));
    marks
        .into_iter()
        .map(|(at, stage)| format!("timing: {at:>8.3} s  {stage}"))
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn lines_name_each_stage_in_order_with_its_time() {
        // Marks are kept only when timings are on; the line format is what benches read.
        super::MARKS
            .lock()
            .unwrap()
            .extend([(0.5, "plan"), (12.25, "calls")]);
        assert_eq!(
            super::take_lines(),
            ["timing:    0.500 s  plan", "timing:   12.250 s  calls"]
        );
        assert!(super::take_lines().is_empty());
    }
}
