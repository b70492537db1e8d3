//! What the runs add up to: per-setting statistics, repeat stability, and the insight
//! (recommendation, Pareto front, separability), every rate by tag, the grader's checks on
//! its own grades, and the test for a rate rising across runs.

pub mod checks;
pub mod insight;
pub mod repeat;
pub mod stats;
pub mod tags;
pub mod trend;
#[cfg(test)]
mod trend_simulation;
