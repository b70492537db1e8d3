//! The leaves: text, escaping, redaction, terminal width, timing, input files, temporaries a
//! signal removes, folders written whole, errors, YAML locations, exit statuses, the clock and
//! the checkout's commit. Nothing here imports anything of the crate outside `base`.

pub mod atomic;
pub mod clock;
pub mod digest;
pub mod error;
pub mod escape;
pub mod exit;
pub mod git;
pub mod in_flight;
pub mod input;
pub mod out_folder;
pub mod problem;
pub mod redact;
pub mod safe_text;
pub mod term;
pub mod text;
pub mod timing;
pub(crate) mod yaml_de;
pub(crate) mod yaml_loc;

use std::future::Future;
use std::pin::Pin;

/// The name serde gives `value` (a unit variant's `rename_all` name): what a kind's `Display`
/// shows, so that names are written once, in the serde attribute.
pub fn serde_name<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// A boxed future, so that model and embedder traits can be used as trait objects.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// `as_str`, `Display` and `FromStr` for an enum of named values.
macro_rules! text_enum {
    ($t:ty { $($v:ident => $s:literal),+ }) => {
        impl $t {
            pub fn as_str(self) -> &'static str {
                match self { $(Self::$v => $s),+ }
            }
        }
        impl std::fmt::Display for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
        impl std::str::FromStr for $t {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                match s.trim() {
                    $($s => Ok(Self::$v),)+
                    other => Err(format!("`{other}` is not one of {}", [$(concat!("`", $s, "`")),+].join(", "))),
                }
            }
        }
    };
}

pub(crate) use text_enum;
