//! The application: the config file's shapes, the resolved options of each command, the
//! wiring that builds an engine once, the commands and the command line.

pub mod cli;
pub mod commands;
pub mod config;
pub mod options;
pub mod progress;
pub mod wiring;
