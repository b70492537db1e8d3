//! Exit statuses: CI must tell "quality regressed" from "the tool could not run".

/// What the process reports to its caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    /// Everything ran and every check passed.
    Success,
    /// A gate found a regression.
    Failure,
    /// Bad input, or a run that could not complete.
    Error,
}

impl ExitStatus {
    pub fn code(self) -> i32 {
        match self {
            ExitStatus::Success => 0,
            ExitStatus::Failure => 1,
            ExitStatus::Error => 2,
        }
    }
}
