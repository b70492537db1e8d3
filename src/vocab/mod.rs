//! The vocabulary every layer above shares: a setting of the sweep (its dimensions and their
//! values) and the named choices some dimensions take.

pub mod call;
pub mod choices;
pub mod dim;
pub mod grid;
pub mod limit;
pub mod spec;
pub mod values;
