//! Retries with backoff, and a server taken for dead after connection failures in a row.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

use super::{Endpoint, Failure};
use crate::vocab::call::{CallError, ErrorKind};

/// How failed attempts are retried: exponential backoff with full jitter, bounded attempts.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    /// Attempts in all, the first included (at least 1).
    pub max_attempts: u32,
    pub base_delay: Duration,
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 5,
            base_delay: Duration::from_millis(200),
            max_delay: Duration::from_secs(20),
        }
    }
}

impl RetryPolicy {
    /// The wait before attempt `attempt + 1` (attempt counts from 1): a random duration up to
    /// base * 2^(attempt-1), capped; a server's Retry-After wins when it asks for longer.
    pub fn delay(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        let ceiling = self
            .base_delay
            .saturating_mul(1u32 << (attempt - 1).min(16))
            .min(self.max_delay);
        let jittered = ceiling.mul_f64(fastrand::f64());
        match retry_after {
            Some(ra) => ra.min(self.max_delay).max(jittered),
            None => jittered,
        }
    }
}

/// The longest wait a server's `Retry-After` can ask for; the retry policy caps it further.
pub const MAX_RETRY_AFTER_S: f64 = 86_400.0;

/// A `Retry-After` in seconds (a number; an HTTP date is not used), clamped to
/// [`MAX_RETRY_AFTER_S`]: a number from outside never reaches `Duration` unchecked, where
/// `1e308` would panic.
pub fn retry_after_seconds(value: &str) -> Option<Duration> {
    let s = value.trim().parse::<f64>().ok()?;
    (s.is_finite() && s >= 0.0).then(|| Duration::from_secs_f64(s.min(MAX_RETRY_AFTER_S)))
}

/// Connection failures in a row after which a server is taken for dead: every later call fails
/// at once, without a connection attempt, and the sweep stops with "is the server running?".
pub const DEAD_AFTER: u32 = 20;

/// Counts connection failures in a row across all calls to one server (any answer resets it).
#[derive(Debug, Default)]
pub struct DeadServer {
    in_a_row: AtomicU32,
    dead: AtomicBool,
}

impl DeadServer {
    /// Whether [`DEAD_AFTER`] connection attempts in a row failed.
    pub fn is_dead(&self) -> bool {
        self.dead.load(Ordering::Relaxed)
    }

    /// Take the server for dead (a fleet, once every one of its servers is).
    pub(super) fn mark(&self) {
        self.dead.store(true, Ordering::Relaxed);
    }

    pub(super) fn record<T>(&self, outcome: &Result<T, Failure>) {
        match outcome {
            Err(f) if f.error.kind == ErrorKind::Connect => {
                if self.in_a_row.fetch_add(1, Ordering::Relaxed) + 1 >= DEAD_AFTER {
                    self.dead.store(true, Ordering::Relaxed);
                }
            }
            _ => self.in_a_row.store(0, Ordering::Relaxed),
        }
    }
}

/// After attempt `n` failed with `f`: the failure back when another attempt may mend it, else
/// the call's error (saying how many attempts it took). [`with_retries`] and [`call_any`] end
/// a call by the same rule.
pub(super) fn retry_or_give_up(
    f: Failure,
    n: u32,
    policy: &RetryPolicy,
) -> Result<Failure, CallError> {
    if f.retry && n < policy.max_attempts.max(1) {
        return Ok(f);
    }
    let mut error = f.error;
    if n > 1 {
        error.message = format!("{} (after {n} attempts)", error.message);
    }
    Err(error)
}

/// Run `attempt` until it succeeds, fails for good, or the policy's attempts are spent.
pub async fn with_retries<T, F, Fut>(policy: &RetryPolicy, mut attempt: F) -> Result<T, CallError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, Failure>>,
{
    let mut n = 1;
    loop {
        let f = match attempt().await {
            Ok(v) => return Ok(v),
            Err(f) => retry_or_give_up(f, n, policy)?,
        };
        tokio::time::sleep(policy.delay(n, f.retry_after)).await;
        n += 1;
    }
}

/// [`with_retries`] under `endpoint`'s policy, counting connection failures in a row: once the
/// server is dead ([`DEAD_AFTER`]), attempts fail at once without connecting.
pub async fn call<T, F, Fut>(endpoint: &Endpoint, mut attempt: F) -> Result<T, CallError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, Failure>>,
{
    let dead = endpoint.dead.clone();
    with_retries(&endpoint.retry, || {
        let next = (!dead.is_dead()).then(&mut attempt);
        let dead = dead.clone();
        let shown = &endpoint.shown;
        async move {
            let Some(next) = next else {
                return Err(Failure::fatal(
                    ErrorKind::Connect,
                    format!(
                        "cannot connect to {shown} ({DEAD_AFTER} connection attempts in a row failed; no more are made)"
                    ),
                ));
            };
            let outcome = next.await.map_err(|f| endpoint.hidden(f));
            dead.record(&outcome);
            outcome
        }
    })
    .await
}
