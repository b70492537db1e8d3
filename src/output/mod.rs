//! What leaves the process: the results record (results.json), the report writers and the gate,
//! all reading the one results value; the history of sweeps; and the question set `rageval
//! generate` writes.

pub mod explain;
pub mod gate;
pub mod history;
pub mod question_set;
pub mod record;
pub mod report;
