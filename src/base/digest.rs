//! The configuration digest over effective values only: what differs from the defaults.
//!
//! Digesting the whole configuration made every new field with a default change every user's
//! digest (and so every baseline's "configuration changed" note). Leaving out what equals the
//! default keeps a digest stable across versions that only add fields.

use serde_json::{Map, Value};

/// The parts of `value` that differ from `defaults`: objects are compared key by key, anything
/// else as a whole.
pub fn effective(value: &Value, defaults: &Value) -> Value {
    match (value, defaults) {
        (Value::Object(v), Value::Object(d)) => {
            let mut out = Map::new();
            for (key, item) in v {
                match d.get(key) {
                    Some(default) if default == item => {}
                    Some(default) => {
                        let diff = effective(item, default);
                        if diff != Value::Object(Map::new()) || !item.is_object() {
                            out.insert(key.clone(), diff);
                        }
                    }
                    None => {
                        out.insert(key.clone(), item.clone());
                    }
                }
            }
            Value::Object(out)
        }
        _ => value.clone(),
    }
}

/// sha256 of some bytes, as `sha256:<hex>`.
pub fn digest(parts: &[&[u8]]) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for p in parts {
        h.update((p.len() as u64).to_le_bytes());
        h.update(p);
    }
    let hex: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// sha256 of a file's bytes, read as a stream, as `sha256:<hex>` (the plain digest of the
/// bytes, as `sha256sum` prints it, not [`digest`]'s length-prefixed parts).
pub fn file_digest(path: &std::path::Path) -> std::io::Result<String> {
    let mut d = Digesting::new(std::io::sink());
    std::io::copy(&mut std::fs::File::open(path)?, &mut d)?;
    Ok(d.finish())
}

/// A writer that passes its bytes on to `W` and digests them on the way: the `sha256:<hex>`
/// of a file as it is written ([`file_digest`] of the file once written), without reading it
/// back.
pub struct Digesting<W> {
    inner: W,
    hasher: sha2::Sha256,
}

impl<W: std::io::Write> Digesting<W> {
    pub fn new(inner: W) -> Self {
        use sha2::Digest;
        Digesting {
            inner,
            hasher: sha2::Sha256::new(),
        }
    }

    /// `sha256:<hex>` of every byte `W` took.
    pub fn finish(self) -> String {
        use sha2::Digest;
        let hex: String = self
            .hasher
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        format!("sha256:{hex}")
    }
}

impl<W: std::io::Write> std::io::Write for Digesting<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        use sha2::Digest;
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// `sha256:<hex>` of the effective values of `value`.
pub fn config_digest(value: &Value, defaults: &Value) -> String {
    digest(&[effective(value, defaults).to_string().as_bytes()])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_new_field_at_its_default_leaves_the_digest_alone() {
        let defaults = json!({"chat": {"model": "mock", "timeout": 30}, "sweep": {"k": [1, 2]}});
        let user = json!({"chat": {"model": "gpt", "timeout": 30}, "sweep": {"k": [1, 2]}});
        // The next version adds `chat.stream_options` with a default; the user's file does not
        // set it, so both the defaults and the effective config carry the default value.
        let defaults_next = json!({"chat": {"model": "mock", "timeout": 30, "retries": 2},
            "sweep": {"k": [1, 2]}, "judge": {"model": null}});
        let user_next = json!({"chat": {"model": "gpt", "timeout": 30, "retries": 2},
            "sweep": {"k": [1, 2]}, "judge": {"model": null}});
        assert_eq!(
            config_digest(&user, &defaults),
            config_digest(&user_next, &defaults_next)
        );
        assert_eq!(
            effective(&user, &defaults),
            json!({"chat": {"model": "gpt"}})
        );
        // A changed value changes it; so does a changed list, compared whole.
        let other = json!({"chat": {"model": "gpt", "timeout": 60}, "sweep": {"k": [1, 2]}});
        assert_ne!(
            config_digest(&user, &defaults),
            config_digest(&other, &defaults)
        );
        let k = json!({"chat": {"model": "gpt", "timeout": 30}, "sweep": {"k": [1]}});
        assert_eq!(
            effective(&k, &defaults),
            json!({"chat": {"model": "gpt"}, "sweep": {"k": [1]}})
        );
    }

    #[test]
    fn the_defaults_digest_as_an_empty_config() {
        let defaults = json!({"chat": {"model": "mock"}, "out": null});
        assert_eq!(config_digest(&defaults, &defaults), digest(&[b"{}"]));
    }
}
