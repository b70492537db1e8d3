//! What the runs add up to: per-setting statistics, repeat stability, and the insight
//! (recommendation, Pareto front, separability), and every rate by tag.

pub mod insight;
pub mod repeat;
pub mod stats;
pub mod tags;
