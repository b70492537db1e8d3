//! The one results value of a sweep, with its identity: what every writer, the record and the
//! gate read.

pub mod identity;
