//! What the runs add up to: per-setting statistics, repeat stability, and the insight
//! (recommendation, Pareto front, separability), every rate by tag, and the test for a rate
//! rising across runs.

pub mod insight;
pub mod repeat;
pub mod stats;
pub mod tags;
pub mod trend;
#[cfg(test)]
mod trend_simulation;
