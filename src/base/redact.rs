//! Credentials in URLs are never shown: one function turns `http://user:sk-1@host/v1?key=2`
//! into `http://<redacted>@host/v1?<redacted>`, and every endpoint, error message and recorded
//! run identity goes through it.
//!
//! Text from outside (a server's error body, a reply that echoes the request) may quote a
//! credential anywhere, not only in a URL: [`Secrets`] holds every configured secret value of an
//! endpoint (API key, header values, URL userinfo and query, DSN password) and hides each
//! wherever it appears.

/// What a hidden part reads as.
pub const REDACTED: &str = "<redacted>";

/// `url` with its userinfo, query and fragment replaced by [`REDACTED`]; scheme, host, port and
/// path are kept.
pub fn url(url: &str) -> String {
    let (scheme, rest) = match url.find("://") {
        Some(i) => url.split_at(i + 3),
        None => ("", url),
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let mut out = String::with_capacity(url.len());
    out.push_str(scheme);
    match authority.rfind('@') {
        Some(at) => {
            out.push_str(REDACTED);
            out.push_str(&authority[at..]);
        }
        None => out.push_str(authority),
    }
    let path_end = tail.find(['?', '#']).unwrap_or(tail.len());
    out.push_str(&tail[..path_end]);
    let extra = &tail[path_end..];
    if extra.starts_with('?') {
        out.push('?');
        out.push_str(REDACTED);
    }
    if extra.contains('#') {
        out.push('#');
        out.push_str(REDACTED);
    }
    out
}

/// Why `url` cannot be an HTTP endpoint, in words that show it redacted: it must start with
/// `http://` or `https://` and parse as a URL with a host (a port past 65535, an empty host or
/// a space in the host is refused here, with the config's file and line, rather than retried
/// and reported as a transport failure of every call).
pub fn http_url_problem(raw: &str) -> Option<String> {
    let shown = url(raw);
    if !(raw.starts_with("http://") || raw.starts_with("https://")) {
        return Some(format!("`{shown}` must start with http:// or https://"));
    }
    match reqwest::Url::parse(raw) {
        Err(e) => Some(format!("`{shown}` is not a URL: {e}")),
        Ok(u) if u.host_str().is_none_or(str::is_empty) => {
            Some(format!("`{shown}` is not a URL: it names no host"))
        }
        Ok(_) => None,
    }
}

/// `text` with every `http://` or `https://` URL in it redacted as [`url`] does. A URL ends at
/// whitespace or at a quote, backtick, bracket or parenthesis that closes it.
pub fn urls_in(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = find_scheme(rest) {
        out.push_str(&rest[..start]);
        let tail = &rest[start..];
        let stop = |c: char| c.is_whitespace() || matches!(c, '`' | '"' | '\'' | ')' | '>' | ']');
        let mut end = 0;
        loop {
            end += tail[end..].find(stop).unwrap_or(tail.len() - end);
            // A URL redacted before keeps its `<redacted>` parts: their `>` ends the URL only
            // when no host (`@`) or fragment (`#`) follows.
            if tail[..end].ends_with("<redacted") && tail[end..].starts_with('>') {
                end += 1;
                if tail[end..].starts_with(['@', '#']) {
                    continue;
                }
            }
            break;
        }
        out.push_str(&url(&tail[..end]));
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

/// The secret values of one endpoint, hidden from text that came from outside before it is
/// shown or written. The `Debug` form names how many there are, never one.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secrets(Vec<String>);

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Secrets({})", self.0.len())
    }
}

impl Secrets {
    /// Values shorter than this are not searched for: hiding `1` or `on` would garble every
    /// message, and no credential is that short.
    pub const MIN_LEN: usize = 4;

    /// Hide `value` too (trimmed), and its percent-decoded form.
    pub fn add(&mut self, value: &str) {
        for v in [value.to_string(), percent_decoded(value)] {
            let v = v.trim();
            if v.len() >= Self::MIN_LEN && !self.0.iter().any(|s| s == v) {
                self.0.push(v.to_string());
            }
        }
        // Longest first: a secret that holds another is hidden whole.
        self.0.sort_by_key(|s| std::cmp::Reverse(s.len()));
    }

    /// Hide the credentials of `url`: its userinfo (each part, and `user:password` as Basic
    /// auth sends it, base64), its query (whole, and each value) and its fragment.
    pub fn add_url(&mut self, url: &str) {
        let rest = url.split_once("://").map_or(url, |(_, r)| r);
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        if let Some(at) = rest[..end].rfind('@') {
            let userinfo = &rest[..at];
            self.add(userinfo);
            let (user, password) = userinfo.split_once(':').unwrap_or((userinfo, ""));
            self.add(user);
            self.add(password);
            for (u, p) in [
                (user.to_string(), password.to_string()),
                (percent_decoded(user), percent_decoded(password)),
            ] {
                self.add(&base64(format!("{u}:{p}").as_bytes()));
            }
        }
        let tail = &rest[end..];
        if let Some(q) = tail.find(['?', '#']) {
            let extra = &tail[q + 1..];
            for part in extra.split(['&', '#', '?']) {
                self.add(part);
                if let Some((_, value)) = part.split_once('=') {
                    self.add(value);
                }
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `text` with every secret replaced by [`REDACTED`].
    pub fn hide(&self, text: &str) -> String {
        let mut out = text.to_string();
        for s in &self.0 {
            if out.contains(s.as_str()) {
                out = out.replace(s.as_str(), REDACTED);
            }
        }
        out
    }

    /// [`Secrets::hide`] for text the caller owns: returned as it is, without a copy, when it
    /// holds no secret (the usual case: every reply and passage goes through this).
    pub fn hide_owned(&self, text: String) -> String {
        if self.0.iter().any(|s| text.contains(s.as_str())) {
            self.hide(&text)
        } else {
            text
        }
    }

    /// A message quoting text from outside, as it may be shown: secrets hidden, then every URL
    /// in it redacted as [`urls_in`] does.
    pub fn message(&self, text: &str) -> String {
        urls_in(&self.hide(text))
    }
}

/// `%XX` escapes decoded (invalid ones kept), lossily as UTF-8.
fn percent_decoded(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Standard base64 with padding, as HTTP Basic auth writes `user:password`.
fn base64(bytes: &[u8]) -> String {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ABC[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn find_scheme(text: &str) -> Option<usize> {
    match (text.find("http://"), text.find("https://")) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_urls_are_checked_beyond_their_scheme() {
        assert_eq!(http_url_problem("http://127.0.0.1:8787/v1"), None);
        assert_eq!(
            http_url_problem("https://u:k@api.example.com/v1?key=2"),
            None
        );
        assert_eq!(
            http_url_problem("http://127.0.0.1:99999/g"),
            Some("`http://127.0.0.1:99999/g` is not a URL: invalid port number".into())
        );
        assert_eq!(
            http_url_problem("http://u:sk-1@:80/v1"),
            Some("`http://<redacted>@:80/v1` is not a URL: empty host".into())
        );
        assert_eq!(
            http_url_problem("ftp://host/x"),
            Some("`ftp://host/x` must start with http:// or https://".into())
        );
        assert_eq!(
            http_url_problem("http://exa mple.com/"),
            Some("`http://exa mple.com/` is not a URL: invalid international domain name".into())
        );
    }

    #[test]
    fn urls_redacted_before_stay_as_they_are() {
        let shown = "http://<redacted>@127.0.0.1:1/v1?<redacted>";
        assert_eq!(
            urls_in(&format!("at {shown}: down")),
            format!("at {shown}: down")
        );
        assert_eq!(urls_in(&format!("<{shown}>")), format!("<{shown}>"));
        let fragment = "http://h/v1?<redacted>#<redacted>";
        assert_eq!(
            urls_in(&format!("{fragment}, then")),
            format!("{fragment}, then")
        );
    }

    #[test]
    fn userinfo_query_and_fragment_are_hidden() {
        assert_eq!(
            url("http://user:sk-1@127.0.0.1:8787/v1?api_key=2#x"),
            "http://<redacted>@127.0.0.1:8787/v1?<redacted>#<redacted>"
        );
        assert_eq!(url("https://a@b@host/v1"), "https://<redacted>@host/v1");
        assert_eq!(url("http://host?k=1"), "http://host?<redacted>");
        assert_eq!(
            url("http://127.0.0.1:8787/v1"),
            "http://127.0.0.1:8787/v1",
            "nothing to hide"
        );
    }

    #[test]
    fn every_configured_secret_is_hidden_wherever_text_quotes_it() {
        let mut s = Secrets::default();
        s.add("sk-live-key");
        s.add("hdr-value");
        s.add("on");
        s.add_url("http://us%65r:pa%40ss@h/v1?api_key=q-secret&v=2#frag");
        let echoed = "got Bearer sk-live-key, X-Secret: hdr-value, Basic dXNlcjpwYUBzcw==, \
                      Basic dXMlNjVyOnBhJTQwc3M=, pa@ss, api_key=q-secret, turned on";
        assert_eq!(
            s.hide(echoed),
            "got Bearer <redacted>, X-Secret: <redacted>, Basic <redacted>, \
                      Basic <redacted>, <redacted>, <redacted>, turned on"
        );
        assert_eq!(format!("{s:?}"), format!("Secrets({})", s.0.len()));
        assert!(!format!("{s:?}").contains("sk-"));
        assert_eq!(
            s.message("see http://h/v1?x=1 for sk-live-key"),
            "see http://h/v1?<redacted> for <redacted>"
        );
        assert_eq!(base64(b"user:pass"), "dXNlcjpwYXNz");
        assert_eq!(base64(b"ab"), "YWI=");
        assert_eq!(percent_decoded("a%2Fb%zz%4"), "a/b%zz%4");
    }

    #[test]
    fn urls_inside_messages_are_hidden() {
        assert_eq!(
            urls_in("is the model server at `http://u:p@h/v1?k=s` running? (http://h/x)"),
            "is the model server at `http://<redacted>@h/v1?<redacted>` running? (http://h/x)"
        );
        assert_eq!(urls_in("no url here"), "no url here");
    }
}
