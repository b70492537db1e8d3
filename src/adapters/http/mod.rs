//! Shared plumbing of the OpenAI-compatible clients: the endpoint and its API key
//! (http/endpoint.rs), reading replies within limits (http/body.rs), failures and their kinds
//! (http/failure.rs), retries and dead servers (http/retry.rs).
//!
//! The API key is read from the environment when a client is built and kept in a [`Secret`]
//! that never prints; no error message, log line, cache record or report contains it. A 401
//! names the variable the key came from, never its value.
//!
//! A section's servers (`base_url` as a list) and its rate limit are [`Endpoints`]
//! (http/fleet.rs, http/rate_limit.rs): every OpenAI-compatible client takes one and calls
//! [`call_any`], so each gets several servers and rate limits through the same config fields.

pub mod config;

mod body;
mod endpoint;
mod failure;
mod fleet;
mod rate_limit;
mod retry;

pub use body::{MAX_ERROR_BODY_BYTES, MAX_REPLY_BYTES};
pub use endpoint::{authorization_conflict, authorization_conflict_message, Endpoint, Secret};
pub use failure::{status_failure, transport_failure, Failure};
pub use fleet::{call_any, Endpoints};
pub use rate_limit::{Held, RateLimiter};

use retry::retry_or_give_up;
pub use retry::{
    call, retry_after_seconds, with_retries, DeadServer, RetryPolicy, DEAD_AFTER, MAX_RETRY_AFTER_S,
};
use std::sync::Arc;

/// One client for every call: connections are pooled and reused.
pub fn client() -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        // A redirect is an error naming it (see `status_failure`): followed, it would carry
        // the configured headers to another host, and a 301 or 302 would turn the POST into
        // a GET whose reply is used.
        .redirect(reqwest::redirect::Policy::none())
        .pool_max_idle_per_host(64)
        .user_agent(concat!("rageval/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))
}

/// The servers of a section with its rate limit; waiting is counted in `held`.
pub fn endpoints(http: config::HttpConfig<'_>, held: &Arc<Held>) -> anyhow::Result<Endpoints> {
    let headers: Vec<(String, String)> = http
        .headers
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let servers = http
        .base_urls()
        .iter()
        .map(|url| {
            Endpoint::new(
                url,
                http.api_key_env,
                &headers,
                std::time::Duration::from_secs_f64(http.timeout_s),
                RetryPolicy {
                    max_attempts: http.max_retries + 1,
                    base_delay: std::time::Duration::from_millis(http.backoff_ms),
                    ..RetryPolicy::default()
                },
            )
            .map_err(|e| anyhow::anyhow!(e))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let limiter = RateLimiter::new(
        http.requests_per_minute,
        http.tokens_per_minute,
        held.clone(),
    )
    .map(Arc::new);
    Ok(Endpoints::new(servers, limiter))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use reqwest::header::{HeaderMap, HeaderValue, AUTHORIZATION, RETRY_AFTER};
    use reqwest::StatusCode;

    use super::*;
    use crate::vocab::call::ErrorKind;

    #[test]
    fn secrets_never_print() {
        let s = Secret("sk-very-secret".into());
        assert!(!format!("{s:?}").contains("sk-"));
    }

    #[test]
    fn urls_keep_the_query_after_the_path_and_show_no_credential() {
        let ep = Endpoint::for_tests("http://u:sk-1@127.0.0.1:1/v1/?api-version=2");
        assert_eq!(
            ep.url("/chat/completions"),
            "http://u:sk-1@127.0.0.1:1/v1/chat/completions?api-version=2"
        );
        assert_eq!(ep.shown, "http://<redacted>@127.0.0.1:1/v1/?<redacted>");
        assert!(!format!("{ep:?}").contains("sk-1"));
    }

    /// A server on loopback that answers with the `Authorization` headers it received.
    async fn echo_authorization() -> String {
        use axum::routing::post;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app = axum::Router::new().route(
            "/v1/echo",
            post(|headers: HeaderMap| async move {
                let seen: Vec<String> = headers
                    .get_all(AUTHORIZATION)
                    .iter()
                    .map(|v| v.to_str().unwrap_or("?").to_string())
                    .collect();
                axum::Json(seen)
            }),
        );
        tokio::spawn(async move { axum::serve(listener, app).await });
        format!("127.0.0.1:{}", addr.port())
    }

    async fn sent(ep: &Endpoint) -> Vec<String> {
        let response = ep
            .post(&client().unwrap(), "echo", Vec::new())
            .send()
            .await
            .unwrap();
        serde_json::from_slice(&response.bytes().await.unwrap()).unwrap()
    }

    fn endpoint(url: &str, key_env: &str) -> Result<Endpoint, String> {
        Endpoint::new(
            url,
            key_env,
            &[],
            Duration::from_secs(60),
            RetryPolicy::default(),
        )
    }

    #[tokio::test]
    async fn credentials_in_the_url_or_a_key_make_one_authorization_header() {
        let host = echo_authorization().await;
        // `user:pass`, as reqwest sends URL credentials: Basic auth, off the URL.
        let ep = endpoint(
            &format!("http://user:pass@{host}/v1"),
            "RAGEVAL_TEST_NO_SUCH_VAR",
        );
        assert_eq!(sent(&ep.unwrap()).await, ["Basic dXNlcjpwYXNz"]);
        // A key (`$PATH` is set wherever tests run) is the Bearer token.
        let key = std::env::var("PATH").unwrap();
        let ep = endpoint(&format!("http://{host}/v1"), "PATH");
        assert_eq!(sent(&ep.unwrap()).await, [format!("Bearer {key}")]);
        // Both would send two: refused, naming neither secret.
        let err = endpoint(&format!("http://user:s3cret@{host}/v1?k=q"), "PATH").unwrap_err();
        assert_eq!(
            err,
            format!("base_url `http://<redacted>@{host}/v1?<redacted>` holds credentials (`user:password@`, sent as Basic auth) and `$PATH` holds an API key (sent as a Bearer token): a request carries one `Authorization` header, so keep one of them (remove the credentials from the URL, or point `api_key_env` at a variable that is not set)")
        );
        // An `Authorization` header beside a key would be a second one too.
        let header = [("authorization".to_string(), "Bearer x".to_string())];
        let both = Endpoint::new(
            &format!("http://{host}/v1"),
            "PATH",
            &header,
            Duration::from_secs(5),
            RetryPolicy::default(),
        );
        assert_eq!(
            both.unwrap_err(),
            authorization_conflict_message("authorization", "PATH")
        );
        // A user name alone is credentials too; an `@` in the path is not.
        assert!(endpoint(&format!("http://user@{host}/v1"), "PATH").is_err());
        assert!(endpoint(&format!("http://{host}/v1/a@b"), "PATH").is_ok());
    }

    /// A reply that announces more than the limit is refused before its body is read, naming
    /// the URL (query redacted); one at the limit is read whole.
    #[tokio::test]
    async fn a_reply_past_the_limit_is_refused_naming_the_url() {
        use axum::routing::post;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app = axum::Router::new()
            .route(
                "/v1/big",
                post(|| async { vec![b'x'; MAX_REPLY_BYTES + 1] }),
            )
            .route("/v1/full", post(|| async { vec![b'x'; MAX_REPLY_BYTES] }));
        tokio::spawn(async move { axum::serve(listener, app).await });
        let ep = endpoint(
            &format!("http://{addr}/v1?key=s3cret"),
            "RAGEVAL_TEST_NO_SUCH_VAR",
        )
        .unwrap();
        let client = client().unwrap();
        let f = ep
            .post_for_body(&client, "big", Vec::new())
            .await
            .unwrap_err();
        assert_eq!(f.error.kind, ErrorKind::Malformed);
        assert!(!f.retry);
        assert_eq!(
            f.error.message,
            format!(
                "the reply from http://{addr}/v1/big?<redacted> is larger than the limit of 32 MiB"
            )
        );
        let body = ep.post_for_body(&client, "full", Vec::new()).await.unwrap();
        assert_eq!(body.len(), MAX_REPLY_BYTES);
    }

    #[test]
    fn a_server_is_dead_after_connection_failures_in_a_row_only() {
        let d = DeadServer::default();
        let refused = || Err::<(), _>(Failure::retryable(ErrorKind::Connect, "refused"));
        for _ in 0..DEAD_AFTER - 1 {
            d.record(&refused());
        }
        d.record(&Err::<(), _>(Failure::retryable(ErrorKind::Server, "500")));
        for _ in 0..DEAD_AFTER - 1 {
            d.record(&refused());
        }
        assert!(!d.is_dead(), "an answer in between resets the count");
        d.record(&refused());
        assert!(d.is_dead());
    }

    #[test]
    fn backoff_grows_is_capped_and_honours_retry_after() {
        let p = RetryPolicy {
            max_attempts: 5,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_secs(1),
        };
        for _ in 0..100 {
            assert!(p.delay(1, None) <= Duration::from_millis(100));
            assert!(p.delay(3, None) <= Duration::from_millis(400));
            assert!(p.delay(12, None) <= Duration::from_secs(1));
            assert!(p.delay(1, Some(Duration::from_millis(700))) >= Duration::from_millis(700));
            assert_eq!(
                p.delay(1, Some(Duration::from_secs(60))),
                Duration::from_secs(1)
            );
        }
    }

    #[test]
    fn statuses_are_classified() {
        let ep = Endpoint::for_tests("http://127.0.0.1:1/v1");
        let h = HeaderMap::new();
        let body = br#"{"error":{"message":"Incorrect API key provided: sk-abc"}}"#;
        let f = status_failure(StatusCode::UNAUTHORIZED, &h, body, &ep);
        assert_eq!(f.error.kind, ErrorKind::Auth);
        assert!(!f.retry);
        assert!(f.error.message.contains("RAGEVAL_TEST_NO_SUCH_VAR"));
        assert!(
            !f.error.message.contains("sk-abc"),
            "a 401 body is never shown"
        );
        let mut h = HeaderMap::new();
        h.insert(RETRY_AFTER, HeaderValue::from_static("2"));
        let f = status_failure(StatusCode::TOO_MANY_REQUESTS, &h, b"", &ep);
        assert!(f.retry);
        assert_eq!(f.retry_after, Some(Duration::from_secs(2)));
        // A number too large for a Duration is the longest wait, never a panic; garbage and
        // negative or non-finite numbers are no Retry-After at all.
        for (value, want) in [
            ("1e308", Some(Duration::from_secs(86_400))),
            ("1e30", Some(Duration::from_secs(86_400))),
            (" 0.5 ", Some(Duration::from_millis(500))),
            ("-1", None),
            ("inf", None),
            ("NaN", None),
            ("Wed, 21 Oct 2015 07:28:00 GMT", None),
        ] {
            h.insert(RETRY_AFTER, HeaderValue::from_str(value).unwrap());
            let f = status_failure(StatusCode::SERVICE_UNAVAILABLE, &h, b"", &ep);
            assert_eq!(f.retry_after, want, "Retry-After: {value}");
        }
        assert!(status_failure(StatusCode::SERVICE_UNAVAILABLE, &h, b"", &ep).retry);
        let f = status_failure(
            StatusCode::BAD_REQUEST,
            &h,
            br#"{"error":{"message":"bad model"}}"#,
            &ep,
        );
        assert!(!f.retry);
        assert!(f.error.message.ends_with(": bad model"));
    }

    #[tokio::test]
    async fn retries_stop_at_the_bound_and_on_fatal_errors() {
        let policy = RetryPolicy {
            max_attempts: 3,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(2),
        };
        let mut calls = 0;
        let r: Result<(), _> = with_retries(&policy, || {
            calls += 1;
            async { Err(Failure::retryable(ErrorKind::Server, "500")) }
        })
        .await;
        assert_eq!(calls, 3);
        assert!(r.unwrap_err().message.contains("after 3 attempts"));
        let mut calls = 0;
        let _ = with_retries::<(), _, _>(&policy, || {
            calls += 1;
            async { Err(Failure::fatal(ErrorKind::Client, "400")) }
        })
        .await;
        assert_eq!(calls, 1);
        let mut calls = 0;
        let r = with_retries(&policy, || {
            calls += 1;
            let ok = calls == 2;
            async move {
                if ok {
                    Ok(7)
                } else {
                    Err(Failure::retryable(ErrorKind::Timeout, "t"))
                }
            }
        })
        .await;
        assert_eq!(r.unwrap(), 7);
    }
}
