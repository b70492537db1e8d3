//! Client-side rate limits (`requests_per_minute`, `tokens_per_minute`), so a large sweep
//! against a hosted API keeps under its quota instead of living on 429 retries.
//!
//! Each limit is a token bucket that holds one request's worth: requests are paced evenly, one
//! every `60 s / requests_per_minute`, and a request of `n` tokens makes the next one wait
//! `n x 60 s / tokens_per_minute` (a request larger than a minute's tokens still goes, alone).
//! Requests are served in the order they asked. No burst above the rate is ever sent, so a
//! server that measures its quota over any window shorter than a minute is never exceeded.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

/// Paces the attempts sent to one set of endpoints (a chat or embedder section).
#[derive(Debug)]
pub struct RateLimiter {
    /// Between two requests; zero without `requests_per_minute`.
    per_request: Duration,
    /// Per token; zero without `tokens_per_minute`.
    per_token: Duration,
    /// The earliest instant the next request may go.
    next: Mutex<Instant>,
    held: Arc<Held>,
}

impl RateLimiter {
    /// A limiter for the limits that are set, or `None` when neither is; waiting is added to
    /// `held`.
    pub fn new(
        requests_per_minute: Option<u32>,
        tokens_per_minute: Option<u64>,
        held: Arc<Held>,
    ) -> Option<Self> {
        if requests_per_minute.is_none() && tokens_per_minute.is_none() {
            return None;
        }
        let minute = Duration::from_secs(60);
        let per = |n: u64| minute / u32::try_from(n.max(1)).unwrap_or(u32::MAX);
        Some(RateLimiter {
            per_request: requests_per_minute.map_or(Duration::ZERO, |r| per(r.into())),
            per_token: tokens_per_minute.map_or(Duration::ZERO, |t| {
                // Below a nanosecond per token (over 60 billion a minute) is no limit.
                Duration::from_secs_f64(60.0 / t.max(1) as f64)
            }),
            next: Mutex::new(Instant::now()),
            held,
        })
    }

    /// Wait until a request costing `tokens` may be sent; returns how long it waited.
    pub async fn acquire(&self, tokens: u64) -> Duration {
        let now = Instant::now();
        let start = {
            let mut next = self.next.lock().expect("limiter lock");
            let start = (*next).max(now);
            let cost = self.per_request.max(
                self.per_token
                    .saturating_mul(u32::try_from(tokens).unwrap_or(u32::MAX)),
            );
            *next = start + cost;
            start
        };
        if start > now {
            let _held = self.held.enter();
            tokio::time::sleep_until(start).await;
        }
        start - now
    }
}

/// Wall-clock time during which at least one call was held back by a rate limit: what the
/// progress display shows as waiting. Shared by every limiter of a pipeline, so two limits
/// waiting at once count once.
#[derive(Debug, Default)]
pub struct Held {
    state: Mutex<HeldState>,
}

#[derive(Debug, Default)]
struct HeldState {
    waiting: usize,
    since: Option<std::time::Instant>,
    total: Duration,
}

impl Held {
    /// The time held so far, the wait in progress included.
    pub fn total(&self) -> Duration {
        let s = self.state.lock().expect("held lock");
        s.total + s.since.map_or(Duration::ZERO, |t| t.elapsed())
    }

    fn enter(&self) -> HeldGuard<'_> {
        let mut s = self.state.lock().expect("held lock");
        if s.waiting == 0 {
            s.since = Some(std::time::Instant::now());
        }
        s.waiting += 1;
        HeldGuard(self)
    }
}

/// Ends one call's wait when dropped (also when the call is abandoned).
struct HeldGuard<'a>(&'a Held);

impl Drop for HeldGuard<'_> {
    fn drop(&mut self) {
        let mut s = self.0.state.lock().expect("held lock");
        s.waiting -= 1;
        if s.waiting == 0 {
            if let Some(t) = s.since.take() {
                s.total += t.elapsed();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limiter(rpm: Option<u32>, tpm: Option<u64>) -> RateLimiter {
        RateLimiter::new(rpm, tpm, Arc::default()).unwrap()
    }

    #[test]
    fn no_limit_is_no_limiter() {
        assert!(RateLimiter::new(None, None, Arc::default()).is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn requests_are_paced_evenly_with_no_burst() {
        let l = limiter(Some(600), None);
        let start = Instant::now();
        let mut sent = Vec::new();
        for _ in 0..12 {
            l.acquire(0).await;
            sent.push(start.elapsed());
        }
        // 600 a minute: one every 100 ms, the first at once.
        let expected: Vec<Duration> = (0..12).map(|i| Duration::from_millis(100 * i)).collect();
        assert_eq!(sent, expected);
    }

    #[tokio::test(start_paused = true)]
    async fn concurrent_callers_are_served_in_order_at_the_rate() {
        let l = Arc::new(limiter(Some(60), None));
        let start = Instant::now();
        let tasks: Vec<_> = (0..5)
            .map(|_| {
                let l = l.clone();
                tokio::spawn(async move {
                    l.acquire(0).await;
                    start.elapsed()
                })
            })
            .collect();
        let mut at = Vec::new();
        for t in tasks {
            at.push(t.await.unwrap());
        }
        at.sort();
        let expected: Vec<Duration> = (0..5).map(Duration::from_secs).collect();
        assert_eq!(at, expected);
    }

    #[tokio::test(start_paused = true)]
    async fn tokens_make_the_next_request_wait_by_their_cost() {
        // 6000 tokens a minute: 10 ms per token.
        let l = limiter(None, Some(6000));
        assert_eq!(l.acquire(100).await, Duration::ZERO);
        // The first request's 100 tokens cost 1 s; this one waits for them.
        assert_eq!(l.acquire(7000).await, Duration::from_secs(1));
        // A request above a minute's tokens went alone; the next waits its 70 s.
        assert_eq!(l.acquire(1).await, Duration::from_secs(70));
    }

    #[tokio::test(start_paused = true)]
    async fn the_stricter_of_both_limits_paces() {
        // 60 requests a minute (1 s each) and 600 tokens a minute (100 ms per token).
        let l = limiter(Some(60), Some(600));
        l.acquire(5).await;
        assert_eq!(l.acquire(5).await, Duration::from_secs(1), "requests pace");
        assert_eq!(l.acquire(0).await, Duration::from_secs(1), "requests pace");
        l.acquire(0).await;
        let _ = l.acquire(30).await;
        assert_eq!(l.acquire(0).await, Duration::from_secs(3), "30 tokens pace");
    }

    #[tokio::test(start_paused = true)]
    async fn an_idle_limiter_does_not_save_up_a_burst() {
        let l = limiter(Some(60), None);
        l.acquire(0).await;
        tokio::time::sleep(Duration::from_secs(10)).await;
        assert_eq!(l.acquire(0).await, Duration::ZERO);
        assert_eq!(l.acquire(0).await, Duration::from_secs(1));
    }

    #[test]
    fn held_counts_overlapping_waits_once() {
        let h = Held::default();
        let a = h.enter();
        let b = h.enter();
        std::thread::sleep(Duration::from_millis(20));
        drop(a);
        std::thread::sleep(Duration::from_millis(20));
        drop(b);
        let total = h.total();
        assert!(total >= Duration::from_millis(40), "{total:?}");
        // Nothing is waiting now: the total no longer grows.
        std::thread::sleep(Duration::from_millis(10));
        assert_eq!(h.total(), total);
    }
}
