//! What leaves the process: the results record (results.json), the report writers and the gate,
//! all reading the one results value; two results compared question by question (`paired`,
//! for the gate and `rageval compare`); the history of sweeps; and the question set `rageval
//! generate` writes.

pub mod compare;
pub mod explain;
pub mod gate;
pub mod history;
pub mod labels;
pub mod paired;
pub mod question_set;
pub mod record;
pub mod report;
