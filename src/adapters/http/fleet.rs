//! Several servers behind one model (`base_url` as a list) and the rate limit they share: each
//! attempt goes to the server with the fewest calls in flight, a failed attempt is retried on
//! another server, and the fleet is dead only when every server is.

use std::sync::{Arc, Mutex};

use super::{retry_or_give_up, Endpoint, Failure, RateLimiter, DEAD_AFTER};
use crate::vocab::call::{CallError, ErrorKind};

/// The servers of one chat or embedder section, with their shared rate limit.
#[derive(Clone)]
pub struct Endpoints {
    servers: Vec<Endpoint>,
    /// Calls in flight per server, in the order of `servers`.
    in_flight: Arc<Mutex<Vec<usize>>>,
    pub limiter: Option<Arc<RateLimiter>>,
    /// Set when every server is dead ([`DEAD_AFTER`] connection failures in a row each): the
    /// sweep then stops early.
    pub dead: Arc<super::DeadServer>,
    /// The servers as shown in messages, redacted: `a`, or `a, b`.
    pub shown: String,
}

impl Endpoints {
    /// The URLs of `path` on each server as shown in messages (`a/rerank, b/rerank`), a base
    /// URL's query after the path as requests send it, redacted.
    pub fn shown_url(&self, path: &str) -> String {
        self.servers
            .iter()
            .map(|s| s.shown_url(path))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The servers in their listed order (ties in load go to the first); at least one.
    pub fn new(servers: Vec<Endpoint>, limiter: Option<Arc<RateLimiter>>) -> Self {
        assert!(!servers.is_empty(), "a fleet has at least one server");
        let shown = servers
            .iter()
            .map(|s| s.shown.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        Endpoints {
            in_flight: Arc::new(Mutex::new(vec![0; servers.len()])),
            servers,
            limiter,
            dead: Arc::default(),
            shown,
        }
    }

    pub fn servers(&self) -> &[Endpoint] {
        &self.servers
    }

    /// The live server with the fewest calls in flight among those this call has not tried
    /// yet (all live ones when it tried every one), taken: its count goes up until the slot
    /// is dropped. `None` when every server is dead.
    fn take(&self, tried: &mut [bool]) -> Option<Slot<'_>> {
        let live: Vec<usize> = (0..self.servers.len())
            .filter(|&i| !self.servers[i].dead.is_dead())
            .collect();
        if live.is_empty() {
            return None;
        }
        let fresh = live.iter().any(|&i| !tried[i]);
        if !fresh {
            tried.iter_mut().for_each(|t| *t = false);
        }
        let mut load = self.in_flight.lock().expect("in-flight lock");
        let index = live
            .into_iter()
            .filter(|&i| !tried[i])
            .min_by_key(|&i| (load[i], i))?;
        load[index] += 1;
        Some(Slot {
            fleet: self,
            index,
            fresh,
        })
    }

    /// The message of a call refused because every server is dead.
    fn dead_message(&self) -> String {
        if self.servers.len() == 1 {
            format!(
                "cannot connect to {} ({DEAD_AFTER} connection attempts in a row failed; no more are made)",
                self.shown
            )
        } else {
            format!(
                "cannot connect to any of {} ({DEAD_AFTER} connection attempts in a row failed on each; no more are made)",
                self.shown
            )
        }
    }
}

impl From<Endpoint> for Endpoints {
    fn from(server: Endpoint) -> Self {
        Endpoints::new(vec![server], None)
    }
}

impl std::fmt::Debug for Endpoints {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoints")
            .field("servers", &self.servers)
            .field("limiter", &self.limiter)
            .finish()
    }
}

/// One attempt's place on a server: counted in flight until dropped.
struct Slot<'a> {
    fleet: &'a Endpoints,
    index: usize,
    /// Whether the call had not tried this server yet (a retry on a server it tried waits
    /// the backoff first; moving to a fresh server does not).
    fresh: bool,
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.fleet.in_flight.lock().expect("in-flight lock")[self.index] -= 1;
    }
}

/// Make one call on the fleet: each attempt waits for the rate limit (costing `tokens`), goes
/// to the least busy live server and, when it fails in a way another attempt may mend, the
/// next attempt goes to a server this call has not tried, at once; once every live server was
/// tried, attempts back off as on a single server. The retry budget (`max_retries` of the
/// section) is for the call, not per server.
pub async fn call_any<'a, T, F, Fut>(
    fleet: &'a Endpoints,
    tokens: u64,
    mut attempt: F,
) -> Result<T, CallError>
where
    F: FnMut(&'a Endpoint) -> Fut,
    Fut: std::future::Future<Output = Result<T, Failure>>,
{
    let policy = fleet.servers[0].retry;
    let mut tried = vec![false; fleet.servers.len()];
    let mut retry_after = None;
    let mut n = 1;
    let all_dead = |n: u32| {
        fleet.dead.mark();
        let mut message = fleet.dead_message();
        if n > 1 {
            message = format!("{message} (after {} attempts)", n - 1);
        }
        CallError {
            kind: ErrorKind::Connect,
            message,
            deferred: false,
        }
    };
    loop {
        if fleet.servers.iter().all(|s| s.dead.is_dead()) {
            return Err(all_dead(n));
        }
        if let Some(limiter) = &fleet.limiter {
            limiter.acquire(tokens).await;
        }
        let Some(slot) = fleet.take(&mut tried) else {
            return Err(all_dead(n));
        };
        if n > 1 && !slot.fresh {
            tokio::time::sleep(policy.delay(n - 1, retry_after)).await;
        }
        let server = &fleet.servers[slot.index];
        tried[slot.index] = true;
        let outcome = attempt(server).await.map_err(|f| server.hidden(f));
        drop(slot);
        server.dead.record(&outcome);
        match outcome {
            Ok(v) => return Ok(v),
            Err(f) => retry_after = retry_or_give_up(f, n, &policy)?.retry_after,
        }
        n += 1;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use super::*;
    use crate::adapters::http::RetryPolicy;

    fn server(url: &str) -> Endpoint {
        Endpoint::new(
            url,
            "RAGEVAL_TEST_NO_SUCH_VAR",
            &[],
            Duration::from_secs(1),
            RetryPolicy {
                max_attempts: 3,
                base_delay: Duration::from_millis(1),
                max_delay: Duration::from_millis(2),
            },
        )
        .unwrap()
    }

    fn fleet(n: usize) -> Endpoints {
        Endpoints::new(
            (0..n)
                .map(|i| server(&format!("http://127.0.0.1:{}/v1", i + 1)))
                .collect(),
            None,
        )
    }

    fn port(ep: &Endpoint) -> usize {
        ep.shown
            .trim_start_matches("http://127.0.0.1:")
            .trim_end_matches("/v1")
            .parse()
            .unwrap()
    }

    #[tokio::test]
    async fn calls_go_to_the_server_with_the_fewest_in_flight_ties_to_the_first() {
        let f = fleet(3);
        let mut tried = vec![false; 3];
        let a = f.take(&mut tried.clone()).unwrap();
        let b = f.take(&mut tried.clone()).unwrap();
        let c = f.take(&mut tried.clone()).unwrap();
        assert_eq!([a.index, b.index, c.index], [0, 1, 2]);
        drop(b);
        assert_eq!(f.take(&mut tried.clone()).unwrap().index, 1, "the idle one");
        drop(a);
        let d = f.take(&mut tried).unwrap();
        assert_eq!(d.index, 0, "a tie goes to the first listed");
        assert!(d.fresh);
    }

    #[tokio::test]
    async fn a_failed_attempt_moves_to_another_server_within_one_budget() {
        let f = fleet(2);
        let seen = Mutex::new(Vec::new());
        let r = call_any(&f, 0, |ep| {
            seen.lock().unwrap().push(port(ep));
            let ok = port(ep) == 2;
            async move {
                if ok {
                    Ok(port(ep))
                } else {
                    Err(Failure::retryable(ErrorKind::Server, "503"))
                }
            }
        })
        .await;
        assert_eq!(r.unwrap(), 2);
        assert_eq!(*seen.lock().unwrap(), [1, 2]);

        // Every server failing: the budget of 3 attempts is shared, not 3 per server.
        let attempts = AtomicUsize::new(0);
        let r: Result<(), _> = call_any(&f, 0, |_| {
            attempts.fetch_add(1, Ordering::Relaxed);
            async { Err(Failure::retryable(ErrorKind::Timeout, "t")) }
        })
        .await;
        assert_eq!(attempts.load(Ordering::Relaxed), 3);
        assert_eq!(r.unwrap_err().message, "t (after 3 attempts)");

        // A fatal answer is not retried anywhere.
        let attempts = AtomicUsize::new(0);
        let _ = call_any::<(), _, _>(&f, 0, |_| {
            attempts.fetch_add(1, Ordering::Relaxed);
            async { Err(Failure::fatal(ErrorKind::Client, "400")) }
        })
        .await;
        assert_eq!(attempts.load(Ordering::Relaxed), 1);
    }

    #[tokio::test]
    async fn the_fleet_is_dead_only_when_every_server_is() {
        let f = fleet(2);
        let refused = |ep: &Endpoint| {
            let p = port(ep);
            async move {
                if p == 1 {
                    Err(Failure::retryable(ErrorKind::Connect, "refused"))
                } else {
                    Ok(p)
                }
            }
        };
        for _ in 0..DEAD_AFTER + 5 {
            assert_eq!(call_any(&f, 0, refused).await.unwrap(), 2);
        }
        assert!(f.servers[0].dead.is_dead());
        assert!(!f.servers[1].dead.is_dead());
        assert!(!f.dead.is_dead(), "one server still answers");

        let f = fleet(2);
        let down = |_: &Endpoint| async {
            Err::<(), _>(Failure::retryable(ErrorKind::Connect, "refused"))
        };
        for _ in 0..DEAD_AFTER {
            let _ = call_any(&f, 0, down).await;
        }
        let e = call_any(&f, 0, down).await.unwrap_err();
        assert!(f.dead.is_dead());
        assert_eq!(
            e.message,
            "cannot connect to any of http://127.0.0.1:1/v1, http://127.0.0.1:2/v1 (20 connection attempts in a row failed on each; no more are made)"
        );
    }
}
