//! A side floor: the importers of question data a team already has (`rageval import`), each
//! writing a question set and its corpus. Only the app imports it.

pub mod squad;
