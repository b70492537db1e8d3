//! `gate --comment` on GitHub Actions: one pull-request comment, found again by a hidden marker
//! and updated on every later push instead of adding another.
//!
//! Where it posts comes from the environment GitHub Actions sets: `GITHUB_REPOSITORY`, the
//! pull request in the event file at `GITHUB_EVENT_PATH`, the token in `GITHUB_TOKEN`, and the
//! API base in `GITHUB_API_URL` (GitHub Enterprise, or a test server). The token goes in the
//! `Authorization` header and nowhere else: no message or error names it.

use std::path::Path;

use serde::Deserialize;

use super::comment::MARKER;
use crate::adapters::http::Secret;
use crate::base::input::read_limited;

/// The public API, when `GITHUB_API_URL` is not set.
pub const DEFAULT_API: &str = "https://api.github.com";

/// Comments read per page, and the most pages read looking for the marker.
const PER_PAGE: usize = 100;
const MAX_PAGES: usize = 100;

/// The largest event file read.
const MAX_EVENT_BYTES: u64 = 16 * 1024 * 1024;

/// The largest reply read.
const MAX_REPLY_BYTES: usize = 32 * 1024 * 1024;

/// How long one request may take.
const TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// The pull request a comment goes to.
#[derive(Debug, Clone)]
pub struct PullRequest {
    /// The API base, without a trailing slash.
    pub api: String,
    /// `owner/name`.
    pub repository: String,
    pub number: u64,
    token: Secret,
}

impl PullRequest {
    /// Where to post, read through `var` (the environment); `Err` says why there is nowhere to.
    pub fn from_env(var: impl Fn(&str) -> Option<String>) -> Result<PullRequest, String> {
        let var = |name: &str| var(name).filter(|v| !v.trim().is_empty());
        let Some(repository) = var("GITHUB_REPOSITORY") else {
            return Err("`GITHUB_REPOSITORY` is not set: not on GitHub Actions".into());
        };
        // It goes into the API's URL as path segments: `owner/name` of GitHub's characters
        // only, so that no `..`, `?` or `#` can point the request (and its token) elsewhere.
        let part_ok = |p: &str| {
            !p.is_empty()
                && p != "."
                && p != ".."
                && p.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        };
        let parts: Vec<&str> = repository.trim().split('/').collect();
        if parts.len() != 2 || !parts.iter().all(|p| part_ok(p)) {
            return Err(format!(
                "`GITHUB_REPOSITORY` is `{repository}`, not `owner/name`"
            ));
        }
        let Some(event) = var("GITHUB_EVENT_PATH") else {
            return Err(
                "`GITHUB_EVENT_PATH` is not set: no event to find the pull request in".into(),
            );
        };
        let number = pull_request_number(Path::new(&event))?;
        let Some(token) = var("GITHUB_TOKEN") else {
            return Err("no `GITHUB_TOKEN` (a pull request from a fork gets none; pass `GITHUB_TOKEN: ${{ github.token }}` in the step's `env`)".into());
        };
        let api = var("GITHUB_API_URL").unwrap_or_else(|| DEFAULT_API.into());
        Ok(PullRequest {
            api: api.trim_end_matches('/').to_string(),
            repository: repository.trim().to_string(),
            number,
            token: Secret::new(token.trim().to_string()),
        })
    }

    fn comments_url(&self) -> String {
        format!(
            "{}/repos/{}/issues/{}/comments",
            self.api, self.repository, self.number
        )
    }

    fn comment_url(&self, id: u64) -> String {
        format!(
            "{}/repos/{}/issues/comments/{id}",
            self.api, self.repository
        )
    }
}

/// The pull request number of the event file at `path`: a `pull_request` (or
/// `pull_request_target`) event's, or an `issue_comment` event's on a pull request.
fn pull_request_number(path: &Path) -> Result<u64, String> {
    let bytes = read_limited(path, MAX_EVENT_BYTES)
        .map_err(|e| format!("cannot read the event file `{}`: {e}", path.display()))?;
    let event: serde_json::Value = serde_json::from_slice(&bytes)
        .map_err(|e| format!("the event file `{}` is not JSON: {e}", path.display()))?;
    let number = event
        .pointer("/pull_request/number")
        .or_else(|| {
            event
                .pointer("/issue/pull_request")
                .and_then(|_| event.pointer("/issue/number"))
        })
        .and_then(serde_json::Value::as_u64);
    number.ok_or_else(|| {
        format!(
            "the event in `{}` is not about a pull request (run on `pull_request`)",
            path.display()
        )
    })
}

/// What posting did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Posted {
    Created(u64),
    Updated(u64),
}

/// Why posting failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failed {
    /// 403: the token may not write (a fork's pull request gets a read-only one).
    Forbidden(String),
    Other(String),
}

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failed::Forbidden(m) => write!(f, "{m} (the token may not write to the pull request; a pull request from a fork gets a read-only token)"),
            Failed::Other(m) => f.write_str(m),
        }
    }
}

#[derive(Deserialize)]
struct Comment {
    id: u64,
    #[serde(default)]
    body: Option<String>,
}

/// Update the pull request's comment that carries [`MARKER`] to `body`, or create one.
pub async fn upsert(pr: &PullRequest, body: &str) -> Result<Posted, Failed> {
    let client = crate::adapters::http::client().map_err(Failed::Other)?;
    let payload = serde_json::json!({ "body": body }).to_string();
    match find(&client, pr).await? {
        Some(id) => {
            let url = pr.comment_url(id);
            let what = format!("PATCH {url}");
            send(pr, &what, client.patch(&url).body(payload)).await?;
            Ok(Posted::Updated(id))
        }
        None => {
            let url = pr.comments_url();
            let what = format!("POST {url}");
            let reply = send(pr, &what, client.post(&url).body(payload)).await?;
            let made: Comment = parse(&reply, &what)?;
            Ok(Posted::Created(made.id))
        }
    }
}

/// The id of the first comment holding the marker, reading the comments page by page.
async fn find(client: &reqwest::Client, pr: &PullRequest) -> Result<Option<u64>, Failed> {
    for page in 1..=MAX_PAGES {
        let url = format!("{}?per_page={PER_PAGE}&page={page}", pr.comments_url());
        let what = format!("GET {url}");
        let reply = send(pr, &what, client.get(&url)).await?;
        let comments: Vec<Comment> = parse(&reply, &what)?;
        if let Some(c) = comments
            .iter()
            .find(|c| c.body.as_deref().is_some_and(|b| b.contains(MARKER)))
        {
            return Ok(Some(c.id));
        }
        if comments.len() < PER_PAGE {
            return Ok(None);
        }
    }
    Ok(None)
}

/// Send `request` (`what`: its method and URL, for messages) with the token and GitHub's
/// headers; the reply's body on a success.
async fn send(
    pr: &PullRequest,
    what: &str,
    request: reqwest::RequestBuilder,
) -> Result<Vec<u8>, Failed> {
    let failed = |e: reqwest::Error| Failed::Other(hide(pr, &format!("{what}: {e}")));
    let mut response = request
        .bearer_auth(pr.token.expose())
        .header(reqwest::header::ACCEPT, "application/vnd.github+json")
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .header("X-GitHub-Api-Version", "2022-11-28")
        .timeout(TIMEOUT)
        .send()
        .await
        .map_err(failed)?;
    let status = response.status();
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(failed)? {
        if body.len() + chunk.len() > MAX_REPLY_BYTES {
            return Err(Failed::Other(format!(
                "{what}: the reply is larger than {} MiB",
                MAX_REPLY_BYTES >> 20
            )));
        }
        body.extend_from_slice(&chunk);
    }
    if status.is_success() {
        return Ok(body);
    }
    let message = serde_json::from_slice::<serde_json::Value>(&body)
        .ok()
        .and_then(|v| v.get("message").and_then(|m| m.as_str()).map(String::from))
        .map(|m| {
            let m: String = m.chars().take(200).collect();
            format!(": {}", crate::base::safe_text::one_line(&m))
        })
        .unwrap_or_default();
    let text = hide(pr, &format!("{what} answered {status}{message}"));
    Err(if status == reqwest::StatusCode::FORBIDDEN {
        Failed::Forbidden(text)
    } else {
        Failed::Other(text)
    })
}

/// A reply's JSON as `T`.
fn parse<T: serde::de::DeserializeOwned>(body: &[u8], what: &str) -> Result<T, Failed> {
    serde_json::from_slice(body)
        .map_err(|e| Failed::Other(format!("{what}: the reply is not what GitHub sends: {e}")))
}

/// `text` with the token (or its percent-decoded form), should any part of a message echo
/// it, replaced.
fn hide(pr: &PullRequest, text: &str) -> String {
    let mut secrets = crate::base::redact::Secrets::default();
    secrets.add(pr.token.expose());
    secrets.hide(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    }

    fn event(json: &str) -> tempfile::NamedTempFile {
        let f = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(f.path(), json).unwrap();
        f
    }

    /// The pull request for the event file at `path`, repository `o/r`, with token `token` and
    /// `more` variables.
    fn pr_for(path: &std::path::Path, token: &str, more: &[(&str, &str)]) -> PullRequest {
        let mut vars = vec![
            ("GITHUB_REPOSITORY", "o/r"),
            ("GITHUB_EVENT_PATH", path.to_str().unwrap()),
            ("GITHUB_TOKEN", token),
        ];
        vars.extend_from_slice(more);
        PullRequest::from_env(env(&vars)).unwrap()
    }

    #[test]
    fn the_pull_request_comes_from_the_event_and_the_environment() {
        let e = event(r#"{"action":"synchronize","number":7,"pull_request":{"number":7}}"#);
        let pr = pr_for(e.path(), "ghs_secret", &[]);
        assert_eq!((pr.api.as_str(), pr.number), (DEFAULT_API, 7));
        assert_eq!(
            pr.comments_url(),
            "https://api.github.com/repos/o/r/issues/7/comments"
        );
        assert!(!format!("{pr:?}").contains("ghs_secret"));
        let pr = pr_for(
            e.path(),
            "t",
            &[("GITHUB_API_URL", "https://ghe.example/api/v3/")],
        );
        assert_eq!(
            pr.comment_url(5),
            "https://ghe.example/api/v3/repos/o/r/issues/comments/5"
        );
        // A comment on a pull request names it under `issue`.
        let c = event(r#"{"issue":{"number":9,"pull_request":{"url":"x"}}}"#);
        assert_eq!(pr_for(c.path(), "t", &[]).number, 9);
    }

    #[test]
    fn without_a_pull_request_or_a_token_it_says_why() {
        let push = event(r#"{"ref":"refs/heads/main","issue":{"number":3}}"#);
        let pr = event(r#"{"pull_request":{"number":1}}"#);
        let why = |pairs: &[(&str, &str)]| PullRequest::from_env(env(pairs)).unwrap_err();
        assert!(why(&[]).contains("not on GitHub Actions"));
        assert!(why(&[("GITHUB_REPOSITORY", "o/r")]).contains("`GITHUB_EVENT_PATH` is not set"));
        let e = why(&[
            ("GITHUB_REPOSITORY", "o/r"),
            ("GITHUB_EVENT_PATH", push.path().to_str().unwrap()),
            ("GITHUB_TOKEN", "t"),
        ]);
        assert!(e.contains("not about a pull request"), "{e}");
        let e = why(&[
            ("GITHUB_REPOSITORY", "o/r"),
            ("GITHUB_EVENT_PATH", pr.path().to_str().unwrap()),
            ("GITHUB_TOKEN", " "),
        ]);
        assert!(e.contains("no `GITHUB_TOKEN`"), "{e}");
        assert!(why(&[("GITHUB_REPOSITORY", "just-a-name")]).contains("not `owner/name`"));
        for bad in [
            "o//r", "o/..", "../r", "o/r?x=1", "o/r#f", "o/r/x", "o/r%2f",
        ] {
            assert!(
                why(&[("GITHUB_REPOSITORY", bad)]).contains("not `owner/name`"),
                "{bad}"
            );
        }
    }
}
