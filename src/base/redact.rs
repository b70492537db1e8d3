//! Credentials in URLs are never shown: one function turns `http://user:sk-1@host/v1?key=2`
//! into `http://<redacted>@host/v1?<redacted>`, and every endpoint, error message and recorded
//! run identity goes through it.

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
    fn urls_inside_messages_are_hidden() {
        assert_eq!(
            urls_in("is the model server at `http://u:p@h/v1?k=s` running? (http://h/x)"),
            "is the model server at `http://<redacted>@h/v1?<redacted>` running? (http://h/x)"
        );
        assert_eq!(urls_in("no url here"), "no url here");
    }
}
