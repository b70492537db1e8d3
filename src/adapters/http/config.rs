//! The `chat`/`embedder` HTTP fields of the` section of `rageval.yaml`, with its documented defaults.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::base::problem::{Checked, Problem};

/// Where an OpenAI-compatible server is and how to talk to it: the fields that `chat` and
/// `embedder` share.
#[derive(Debug, Clone)]
pub struct HttpConfig<'a> {
    pub base_url: &'a Option<BaseUrls>,
    pub api_key_env: &'a str,
    pub timeout_s: f64,
    pub max_retries: u32,
    pub backoff_ms: u64,
    pub headers: &'a std::collections::BTreeMap<String, String>,
    pub requests_per_minute: Option<u32>,
    pub tokens_per_minute: Option<u64>,
}

/// Most `requests_per_minute`: a million (past it the limit paces nothing a server notices).
pub const MAX_REQUESTS_PER_MINUTE: u32 = 1_000_000;
/// Most `tokens_per_minute`: ten billion.
pub const MAX_TOKENS_PER_MINUTE: u64 = 10_000_000_000;

/// `requests_per_minute` as YAML writes it: a number outside 1 to [`MAX_REQUESTS_PER_MINUTE`]
/// is refused with that range, whatever its size.
pub fn requests_per_minute<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<u32>, D::Error> {
    let n = crate::base::yaml_de::whole_in(
        d,
        1,
        MAX_REQUESTS_PER_MINUTE.into(),
        " (leave it out for no limit)",
    )?;
    Ok(n.map(|n| u32::try_from(n).expect("at most MAX_REQUESTS_PER_MINUTE")))
}

/// `tokens_per_minute` likewise, from 1 to [`MAX_TOKENS_PER_MINUTE`].
pub fn tokens_per_minute<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    crate::base::yaml_de::whole_in(d, 1, MAX_TOKENS_PER_MINUTE, " (leave it out for no limit)")
}

/// Longest `timeout_s`: a day. Past it a value is a typo (and `1e20` no duration at all).
pub const MAX_TIMEOUT_S: f64 = 86_400.0;
/// Most `max_retries`.
pub const MAX_RETRIES: u32 = 100;
/// Longest `backoff_ms`: a minute.
pub const MAX_BACKOFF_MS: u64 = 60_000;
/// Default `backoff_ms`.
pub const DEFAULT_BACKOFF_MS: u64 = 200;

/// `url` (a section's base URL, or one of its list) is not an HTTP URL: why, as the checks say.
pub fn not_http(url: &str) -> Option<String> {
    crate::base::redact::http_url_problem(url)
}

impl HttpConfig<'_> {
    /// The fields every section with servers shares: one `Authorization`, a timeout, retries,
    /// backoff, HTTP base URLs and rate limits in range.
    pub fn check(&self) -> Checked {
        use crate::adapters::http::{authorization_conflict, authorization_conflict_message};
        if let Some(header) = authorization_conflict(self.headers.keys(), self.api_key_env) {
            return Err(Problem::new(
                "headers",
                authorization_conflict_message(&header, self.api_key_env),
            )
            .key(&header));
        }
        if !(self.timeout_s > 0.0 && self.timeout_s <= MAX_TIMEOUT_S) {
            return Err(Problem::new(
                "timeout_s",
                format!("must be a number of seconds above 0 and at most {MAX_TIMEOUT_S}"),
            ));
        }
        if self.max_retries > MAX_RETRIES {
            return Err(Problem::new(
                "max_retries",
                format!("must be from 0 to {MAX_RETRIES}, got {}", self.max_retries),
            ));
        }
        if self.backoff_ms > MAX_BACKOFF_MS {
            return Err(Problem::new(
                "backoff_ms",
                format!(
                    "must be from 0 to {MAX_BACKOFF_MS} milliseconds, got {}",
                    self.backoff_ms
                ),
            ));
        }
        if let Some(urls) = self.base_url {
            if urls.urls().is_empty() {
                return Err(Problem::new(
                    "base_url",
                    "lists no URL (leave it out for the default)",
                ));
            }
            for (i, url) in urls.urls().iter().enumerate() {
                if let Some(msg) = not_http(url) {
                    let problem = Problem::new("base_url", msg);
                    return Err(match urls {
                        BaseUrls::One(_) => problem,
                        BaseUrls::Many(_) => problem.index(i),
                    });
                }
            }
        }
        if let Some(r) = self.requests_per_minute {
            if !(1..=MAX_REQUESTS_PER_MINUTE).contains(&r) {
                return Err(Problem::new(
                    "requests_per_minute",
                    format!("must be from 1 to {MAX_REQUESTS_PER_MINUTE} (leave it out for no limit), got {r}"),
                ));
            }
        }
        if let Some(t) = self.tokens_per_minute {
            if !(1..=MAX_TOKENS_PER_MINUTE).contains(&t) {
                return Err(Problem::new(
                    "tokens_per_minute",
                    format!("must be from 1 to {MAX_TOKENS_PER_MINUTE} (leave it out for no limit), got {t}"),
                ));
            }
        }
        Ok(())
    }

    /// The base URLs in their listed order: the config's, else `$OPENAI_BASE_URL`, else
    /// OpenAI's.
    pub fn base_urls(&self) -> Vec<String> {
        match self.base_url {
            Some(urls) if !urls.urls().is_empty() => urls.urls().to_vec(),
            _ => vec![std::env::var("OPENAI_BASE_URL")
                .ok()
                .filter(|u| !u.is_empty())
                .unwrap_or_else(|| "https://api.openai.com/v1".into())],
        }
    }

    /// The base URLs as messages show them: redacted, comma-separated.
    pub fn shown(&self) -> String {
        self.base_urls()
            .iter()
            .map(|u| crate::base::redact::url(u))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// `base_url`: one server, or a list of servers that serve the same model (each call goes to
/// the one with the fewest calls in flight; docs/http.md).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum BaseUrls {
    One(String),
    Many(Vec<String>),
}

impl BaseUrls {
    pub fn urls(&self) -> &[String] {
        match self {
            BaseUrls::One(u) => std::slice::from_ref(u),
            BaseUrls::Many(v) => v,
        }
    }
}

impl<'de> Deserialize<'de> for BaseUrls {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use crate::base::yaml_de::{either, Either, NoNumber};
        match either::<_, _, NoNumber>(d, "a URL or a list of URLs")? {
            Either::Text(s) => Ok(BaseUrls::One(s)),
            Either::Many(v) => Ok(BaseUrls::Many(v)),
        }
    }
}

/// The environment variable a section's requests take their key from: its `api_key_env`, as
/// each section resolves it (a `chat` section of kind `http` names none unless told).
pub trait KeyEnv {
    fn key_env(&self) -> &str;
}

macro_rules! http_view {
    ($t:ty) => {
        impl $t {
            pub fn http(&self) -> $crate::adapters::http::config::HttpConfig<'_> {
                $crate::adapters::http::config::HttpConfig {
                    base_url: &self.base_url,
                    api_key_env: $crate::adapters::http::config::KeyEnv::key_env(self),
                    timeout_s: self.timeout_s,
                    max_retries: self.max_retries,
                    backoff_ms: self.backoff_ms,
                    headers: &self.headers,
                    requests_per_minute: self.requests_per_minute,
                    tokens_per_minute: self.tokens_per_minute,
                }
            }
        }
    };
}
pub(crate) use http_view;

/// A config section with the HTTP fields of [`HttpConfig`] among its own, its `Default` and its
/// `http()` view. Every field is written `pub name: Type = default,`; three markers stand for
/// the shared fields, in the place they take in the struct:
///
/// - `@server(KEY_ENV) { /// doc }`: `base_url` (with the doc given) and `api_key_env`
///   (default `KEY_ENV`);
/// - `@retries(TIMEOUT_S)`, or `@retries(TIMEOUT_S) { /// doc }` for another doc of
///   `max_retries`: `timeout_s`, `max_retries`, `backoff_ms` and `headers`;
/// - `@rate_limits { /// doc } { /// doc }`: `requests_per_minute` and `tokens_per_minute`,
///   each with its doc.
///
/// The struct comes out as if written by hand, fields in the order given: serde's errors
/// ("expected one of ...") and the JSON schema are the same (`flatten` would have lost
/// `deny_unknown_fields`).
macro_rules! http_section {
    (
        $(#[$attr:meta])*
        pub struct $name:ident { $($body:tt)* }
    ) => {
        $crate::adapters::http::config::http_section!(@munch [$(#[$attr])*] $name [] [] $($body)*);
    };
    (@munch $attrs:tt $name:ident [$($f:tt)*] [$($d:tt)*]
        @server($key:expr) { $(#[$doc:meta])* } $($rest:tt)*
    ) => {
        $crate::adapters::http::config::http_section!(@munch $attrs $name [$($f)*
            $(#[$doc])*
            pub base_url: Option<$crate::adapters::http::config::BaseUrls>,
            /// The environment variable holding the API key; the key itself never goes in a file.
            pub api_key_env: String,
        ] [$($d)* base_url: None, api_key_env: $key.into(),] $($rest)*);
    };
    (@munch $attrs:tt $name:ident [$($f:tt)*] [$($d:tt)*]
        @retries($timeout:expr) { $(#[$doc:meta])* } $($rest:tt)*
    ) => {
        $crate::adapters::http::config::http_section!(@munch $attrs $name [$($f)*
            /// Seconds before an attempt is abandoned.
            pub timeout_s: f64,
            $(#[$doc])*
            pub max_retries: u32,
            /// The first retry waits a random time up to this many milliseconds; each further retry
            /// doubles it, up to 20 s.
            pub backoff_ms: u64,
            /// Extra request headers (values are redacted in reports).
            pub headers: std::collections::BTreeMap<String, String>,
        ] [$($d)*
            timeout_s: $timeout,
            max_retries: 4,
            backoff_ms: $crate::adapters::http::config::DEFAULT_BACKOFF_MS,
            headers: Default::default(),
        ] $($rest)*);
    };
    // No doc given: the usual one.
    (@munch $attrs:tt $name:ident $f:tt $d:tt @retries($timeout:expr) $($rest:tt)*) => {
        $crate::adapters::http::config::http_section!(@munch $attrs $name $f $d
            @retries($timeout) {
                /// Attempts after the first one, on connect errors, timeouts, 429 and 5xx.
            } $($rest)*);
    };
    (@munch $attrs:tt $name:ident [$($f:tt)*] [$($d:tt)*]
        @rate_limits { $(#[$requests:meta])* } { $(#[$tokens:meta])* } $($rest:tt)*
    ) => {
        $crate::adapters::http::config::http_section!(@munch $attrs $name [$($f)*
            $(#[$requests])*
            #[serde(deserialize_with = "crate::adapters::http::config::requests_per_minute")]
            pub requests_per_minute: Option<u32>,
            $(#[$tokens])*
            #[serde(deserialize_with = "crate::adapters::http::config::tokens_per_minute")]
            pub tokens_per_minute: Option<u64>,
        ] [$($d)* requests_per_minute: None, tokens_per_minute: None,] $($rest)*);
    };
    (@munch $attrs:tt $name:ident [$($f:tt)*] [$($d:tt)*]
        $(#[$fattr:meta])* pub $field:ident: $ty:ty = $default:expr, $($rest:tt)*
    ) => {
        $crate::adapters::http::config::http_section!(@munch $attrs $name
            [$($f)* $(#[$fattr])* pub $field: $ty,] [$($d)* $field: $default,] $($rest)*);
    };
    (@munch [$($attr:tt)*] $name:ident [$($f:tt)*] [$($d:tt)*]) => {
        $($attr)*
        pub struct $name { $($f)* }

        impl Default for $name {
            fn default() -> Self {
                $name { $($d)* }
            }
        }

        $crate::adapters::http::config::http_view!($name);
    };
}
pub(crate) use http_section;
