//! The labelling page: `rageval label --serve` on loopback (docs/labels.md).
//!
//! It answers only what the page it served asks, with the bridge's protections: a `Host` that
//! is not a loopback name is refused (421: a name that resolves here without being this server,
//! DNS rebinding), a foreign `Origin` too (403), the page needs the random token of the printed
//! URL's query string and every API call carries it in `x-rageval-token` (401 without), and a
//! label is a JSON body (415 otherwise), so a cross-site form or a page elsewhere can neither
//! read the replies nor write a label. Each label is written to the labels file (the whole
//! file, replaced atomically and synced) before the page is told it is saved.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::{bail, Context, Result};
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};

use super::{shown, yes_no, LabelsFile, Row};

/// The page, its script and its style: no other resource is loaded.
const PAGE: &str = include_str!("page.html");
const SCRIPT: &str = include_str!("page.js");

/// The header API calls carry the token in.
const TOKEN_HEADER: &str = "x-rageval-token";

/// Host names that always mean this machine.
const LOOPBACK_NAMES: [&str; 3] = ["127.0.0.1", "localhost", "[::1]"];

/// `addr` as a socket address, refused unless it is a loopback one: the page shows replies and
/// writes labels, for this machine's user only.
pub fn loopback(addr: &str) -> Result<SocketAddr> {
    let parsed: SocketAddr = addr.trim().parse().map_err(|_| {
        anyhow::anyhow!("invalid --addr `{addr}`: write an address and port such as 127.0.0.1:8790")
    })?;
    if !parsed.ip().is_loopback() {
        bail!("invalid --addr `{addr}`: the labelling page listens on loopback only (127.0.0.1 or [::1])");
    }
    Ok(parsed)
}

/// What the handlers share.
struct Shared {
    token: String,
    path: PathBuf,
    file: Mutex<LabelsFile>,
}

/// A bound server, ready to run.
pub struct Server {
    listener: tokio::net::TcpListener,
    url: String,
    shared: Arc<Shared>,
}

impl Server {
    /// Bind `addr` to serve the rows of `file`, which is written to `path`.
    pub async fn bind(addr: SocketAddr, file: LabelsFile, path: &Path) -> Result<Server> {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("cannot listen on {addr}"))?;
        let local = listener.local_addr()?;
        let token = random_token()?;
        let url = format!("http://{local}/?token={token}");
        let shared = Arc::new(Shared {
            token,
            path: path.to_path_buf(),
            file: Mutex::new(file),
        });
        Ok(Server {
            listener,
            url,
            shared,
        })
    }

    /// The page's address, token included.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Serve until the process stops.
    pub async fn run(self) -> Result<()> {
        let app = Router::new()
            .route("/", get(page))
            .route("/label.js", get(script))
            .route("/api/rows", get(rows))
            .route("/api/label", post(label))
            .layer(axum::middleware::from_fn_with_state(
                self.shared.clone(),
                admit,
            ))
            .with_state(self.shared);
        axum::serve(self.listener, app)
            .await
            .context("the labelling page stopped")
    }
}

/// 16 bytes from the operating system's random source, as hex.
fn random_token() -> Result<String> {
    use std::io::Read;
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .context("cannot read /dev/urandom for the page's token")?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// A refusal as JSON: `{"error": {"message": ...}}`.
fn refuse(status: StatusCode, message: &str) -> Response {
    let body = serde_json::json!({ "error": { "message": message } });
    (status, Json(body)).into_response()
}

/// Whether a Host value (`name[:port]`) names this machine.
fn loopback_host(value: &str) -> bool {
    let value = value.trim().to_ascii_lowercase();
    let name = match value.rsplit_once(':') {
        Some((name, port)) if !name.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => value.as_str(),
    };
    LOOPBACK_NAMES.contains(&name)
}

/// Equal strings, in time that does not depend on where they first differ.
fn same_secret(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

/// Refuse what did not come from the page this server served.
async fn admit(State(s): State<Arc<Shared>>, request: Request, next: Next) -> Response {
    let headers = request.headers();
    let hosts: Vec<_> = headers.get_all(header::HOST).iter().collect();
    let host = match hosts.as_slice() {
        [one] => one.to_str().unwrap_or(""),
        _ => {
            return refuse(
                StatusCode::BAD_REQUEST,
                "the request must have one Host header",
            )
        }
    };
    if !loopback_host(host) {
        return refuse(
            StatusCode::MISDIRECTED_REQUEST,
            "this Host is not the labelling page's: it answers 127.0.0.1, localhost and [::1]",
        );
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("");
        let ok = origin
            .strip_prefix("http://")
            .is_some_and(|rest| !rest.contains('/') && loopback_host(rest));
        if !ok {
            return refuse(
                StatusCode::FORBIDDEN,
                "requests from web pages of other origins are refused",
            );
        }
    }
    let path = request.uri().path();
    let given = if path == "/" {
        query_token(request.uri().query().unwrap_or(""))
    } else if path.starts_with("/api/") {
        headers.get(TOKEN_HEADER).and_then(|v| v.to_str().ok())
    } else {
        // The script holds nothing secret.
        Some(s.token.as_str())
    };
    if !given.is_some_and(|t| same_secret(t, &s.token)) {
        return refuse(
            StatusCode::UNAUTHORIZED,
            "open the address `rageval label --serve` printed: it holds the page's token",
        );
    }
    next.run(request).await
}

/// The `token` parameter of a query string.
fn query_token(query: &str) -> Option<&str> {
    query
        .split('&')
        .find_map(|pair| pair.strip_prefix("token="))
}

/// Headers every answer of ours carries: nothing is cached, framed or sniffed.
fn guarded(mut response: Response, content_type: &'static str) -> Response {
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        content_type.parse().expect("a header value"),
    );
    h.insert(
        header::CACHE_CONTROL,
        "no-store".parse().expect("a header value"),
    );
    h.insert(
        "x-content-type-options",
        "nosniff".parse().expect("a header value"),
    );
    h.insert("x-frame-options", "DENY".parse().expect("a header value"));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
            .parse()
            .expect("a header value"),
    );
    h.insert(
        header::REFERRER_POLICY,
        "no-referrer".parse().expect("a header value"),
    );
    response
}

async fn page() -> Response {
    guarded(PAGE.into_response(), "text/html; charset=utf-8")
}

async fn script() -> Response {
    guarded(SCRIPT.into_response(), "text/javascript; charset=utf-8")
}

/// One row as the page shows it.
#[derive(Serialize)]
struct RowView<'a> {
    reply_id: &'a str,
    question_id: String,
    answerable: bool,
    question: String,
    expected_answers: String,
    passages: String,
    reply: String,
    graded_refused: &'a str,
    graded_correct: &'a str,
    graded_by: &'a str,
    refused: &'static str,
    correct: &'static str,
}

impl<'a> RowView<'a> {
    fn of(row: &'a Row) -> RowView<'a> {
        let label = row.label();
        RowView {
            reply_id: &row.reply_id,
            question_id: shown(&row.question_id),
            answerable: yes_no(&row.answerable) == Ok(Some(true)),
            question: shown(&row.question),
            expected_answers: shown(&row.expected_answers),
            passages: shown(&row.passages),
            reply: shown(&row.reply),
            graded_refused: &row.graded_refused,
            graded_correct: &row.graded_correct,
            graded_by: &row.graded_by,
            refused: super::yes_no_text(label.refused),
            correct: super::yes_no_text(label.correct),
        }
    }
}

/// How far the labelling is.
#[derive(Serialize)]
struct Progress {
    labelled: usize,
    total: usize,
}

async fn rows(State(s): State<Arc<Shared>>) -> Response {
    let file = s.file.lock().unwrap_or_else(|e| e.into_inner());
    let rows: Vec<RowView> = file.rows.iter().map(RowView::of).collect();
    let body = serde_json::json!({
        "rows": rows,
        "labelled": file.labelled(),
        "total": file.rows.len(),
        "file": s.path.display().to_string(),
    });
    guarded(Json(body).into_response(), "application/json")
}

/// A label as the page sends it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Given {
    reply_id: String,
    refused: String,
    correct: String,
}

async fn label(
    State(s): State<Arc<Shared>>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
    if !json {
        return refuse(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "the body must be Content-Type: application/json",
        );
    }
    let given: Given = match serde_json::from_slice(&body) {
        Ok(g) => g,
        Err(e) => return refuse(StatusCode::BAD_REQUEST, &format!("not a label: {e}")),
    };
    for value in [&given.refused, &given.correct] {
        if !matches!(value.as_str(), "yes" | "no" | "") {
            return refuse(
                StatusCode::UNPROCESSABLE_ENTITY,
                "`refused` and `correct` are `yes`, `no` or empty",
            );
        }
    }
    let mut file = s.file.lock().unwrap_or_else(|e| e.into_inner());
    let Some(i) = file.rows.iter().position(|r| r.reply_id == given.reply_id) else {
        return refuse(
            StatusCode::UNPROCESSABLE_ENTITY,
            "no row of the labels file holds this reply",
        );
    };
    let before = file.rows[i].clone();
    file.rows[i].refused = given.refused;
    file.rows[i].correct = given.correct;
    if let Err(e) = file.write(&s.path) {
        file.rows[i] = before;
        return refuse(StatusCode::INTERNAL_SERVER_ERROR, &format!("{e:#}"));
    }
    let progress = Progress {
        labelled: file.labelled(),
        total: file.rows.len(),
    };
    guarded(Json(progress).into_response(), "application/json")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_and_addresses_are_loopback_only() {
        for ok in ["127.0.0.1:8790", "localhost", "LOCALHOST:1", "[::1]:80"] {
            assert!(loopback_host(ok), "{ok}");
        }
        for bad in [
            "evil.example:8790",
            "127.0.0.2:1",
            "localhost.evil.com",
            "",
            "[::2]:1",
        ] {
            assert!(!loopback_host(bad), "{bad}");
        }
        assert!(loopback("127.0.0.1:0").is_ok());
        assert!(loopback("[::1]:0").is_ok());
        assert!(loopback("0.0.0.0:8790").is_err());
        assert!(loopback("localhost:8790").is_err());
    }

    #[test]
    fn secrets_compare_whole() {
        assert!(same_secret("abc", "abc"));
        assert!(!same_secret("abc", "abd"));
        assert!(!same_secret("abc", "ab"));
        assert_eq!(query_token("a=1&token=xyz"), Some("xyz"));
        assert_eq!(query_token("tokens=1"), None);
        assert_eq!(shown("'=1+1"), "=1+1");
        assert_eq!(shown("'quoted"), "'quoted");
    }
}
