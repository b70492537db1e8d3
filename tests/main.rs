//! End-to-end tests through the real `rageval` binary (one test binary, as ripgrep and just do).

mod support;

mod browser;
mod commands;
mod errors;
mod insight;
mod sweep;
