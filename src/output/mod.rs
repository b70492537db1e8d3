//! What leaves the process: the results record (results.json), the report writers and the gate,
//! all reading the one results value.

pub mod explain;
pub mod gate;
pub mod record;
pub mod report;
