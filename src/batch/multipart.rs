//! The one `multipart/form-data` body the Files API takes (`purpose=batch` and the file),
//! written by the client and read by `rageval mock-llm`: two fields are not worth a crate.

/// The boundary rageval writes: no line of JSON can hold it at a line's start.
pub const BOUNDARY: &str = "----rageval-batch-7c1e4b2a9d";

/// The body of an upload of `file` (named `name`) for `purpose`, and its content type.
pub fn form(purpose: &str, name: &str, file: &[u8]) -> (Vec<u8>, String) {
    let mut body = Vec::with_capacity(file.len() + 512);
    body.extend_from_slice(
        format!(
            "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\n{purpose}\r\n"
        )
        .as_bytes(),
    );
    body.extend_from_slice(
        format!(
            "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\nContent-Type: application/jsonl\r\n\r\n"
        )
        .as_bytes(),
    );
    body.extend_from_slice(file);
    body.extend_from_slice(format!("\r\n--{BOUNDARY}--\r\n").as_bytes());
    (body, format!("multipart/form-data; boundary={BOUNDARY}"))
}

/// The fields of a `multipart/form-data` body whose content type is `content_type`, as (name,
/// bytes); `None` when it is not one.
pub fn fields(content_type: &str, body: &[u8]) -> Option<Vec<(String, Vec<u8>)>> {
    let boundary = content_type
        .split(';')
        .map(str::trim)
        .find_map(|p| p.strip_prefix("boundary="))?
        .trim_matches('"');
    let delimiter = format!("--{boundary}").into_bytes();
    let mut out = Vec::new();
    let mut rest = body;
    // Skip the preamble up to the first delimiter.
    let start = find(rest, &delimiter)?;
    rest = &rest[start + delimiter.len()..];
    loop {
        if rest.starts_with(b"--") {
            return Some(out);
        }
        rest = rest.strip_prefix(b"\r\n")?;
        let head_end = find(rest, b"\r\n\r\n")?;
        let head = std::str::from_utf8(&rest[..head_end]).ok()?;
        let name = head
            .lines()
            .find(|l| l.to_ascii_lowercase().starts_with("content-disposition:"))?
            .split(';')
            .map(str::trim)
            .find_map(|p| p.strip_prefix("name="))?
            .trim_matches('"')
            .to_string();
        rest = &rest[head_end + 4..];
        let mut close = b"\r\n".to_vec();
        close.extend_from_slice(&delimiter);
        let end = find(rest, &close)?;
        out.push((name, rest[..end].to_vec()));
        rest = &rest[end + close.len()..];
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_form_reads_back_as_its_fields() {
        let file = b"{\"custom_id\": \"a\"}\n{\"custom_id\": \"b\"}\n";
        let (body, content_type) = form("batch", "calls.jsonl", file);
        let got = fields(&content_type, &body).unwrap();
        assert_eq!(
            got,
            [
                ("purpose".to_string(), b"batch".to_vec()),
                ("file".to_string(), file.to_vec())
            ]
        );
        assert_eq!(fields("application/json", &body), None);
        assert_eq!(fields(&content_type, b"--nothing"), None);
    }
}
