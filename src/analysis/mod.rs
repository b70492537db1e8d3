//! What the runs add up to: per-setting statistics, repeat stability, and the insight
//! (recommendation, Pareto front, separability), every rate by tag, and the grader's checks
//! on its own grades.

pub mod checks;
pub mod insight;
pub mod repeat;
pub mod stats;
pub mod tags;
