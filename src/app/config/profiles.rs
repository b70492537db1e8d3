//! Checks of the `models:` and `embedders:` profiles beyond the HTTP fields every section
//! shares: names that can stand in a setting id, and the fields `chat:` and `embedder:` check.

use super::{ChatConfig, EmbedderConfig, MAX_DIMENSIONS};
use crate::vocab::grid::{DEFAULT_PROFILE, MAX_TEMPERATURE};

/// A profile name: letters, digits, `_`, `-` and `.`, and not `default` (the name of the
/// `chat:` and `embedder:` sections). Names stand in setting ids (`chat=fast`), so a comma or
/// `=` would make an id ambiguous.
pub fn check_name(name: &str) -> Result<(), String> {
    if name == DEFAULT_PROFILE {
        return Err(format!(
            "`{DEFAULT_PROFILE}` names the `chat:` or `embedder:` section; give the profile another name"
        ));
    }
    let fine = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.');
    if name.is_empty() || !name.chars().all(fine) {
        return Err(format!(
            "`{name}` is not a profile name: use letters, digits, `_`, `-` and `.`"
        ));
    }
    Ok(())
}

/// `` `default` `` and the names of a profile map, for messages.
pub fn known<'a>(names: impl Iterator<Item = &'a String>) -> String {
    std::iter::once(DEFAULT_PROFILE)
        .chain(names.map(String::as_str))
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A chat profile's own fields: (the field, what is wrong).
pub fn check_chat(m: &ChatConfig) -> Result<(), (&'static str, String)> {
    if m.max_tokens == Some(0) {
        return Err((
            "max_tokens",
            "must be at least 1 (leave it out for the server's default)".into(),
        ));
    }
    if !(0.0..=MAX_TEMPERATURE).contains(&m.temperature) {
        return Err(("temperature", "must be between 0 and 2".into()));
    }
    Ok(())
}

/// The fields of a `chat:` section or `models:` profile that belong to one kind: (the key
/// whose line is shown, the field named, what is wrong).
pub fn check_chat_kind(m: &ChatConfig) -> Result<(), (&'static str, &'static str, String)> {
    use super::ChatKind;
    let http = m.kind == ChatKind::Http;
    if http {
        let Some(urls) = &m.url else {
            return Err((
                "kind",
                "url",
                "is missing: `kind: http` needs the generation endpoint's URL (`POST {url}` with the question and passages)".into(),
            ));
        };
        if urls.urls().is_empty() {
            return Err(("url", "url", "lists no URL".into()));
        }
        if let Some(why) = urls
            .urls()
            .iter()
            .find_map(|u| crate::base::redact::http_url_problem(u))
        {
            return Err(("url", "url", why));
        }
        if m.base_url.is_some() {
            return Err((
                "base_url",
                "base_url",
                "applies to `kind: openai`; a generation endpoint (`kind: http`) takes `url`, the whole URL it is posted to".into(),
            ));
        }
        for (field, set) in [("stream", m.stream), ("max_tokens", m.max_tokens.is_some())] {
            if set {
                return Err((
                    field,
                    field,
                    "applies to `kind: openai`: a generation endpoint (`kind: http`) is sent the question and passages alone".into(),
                ));
            }
        }
    } else if m.url.is_some() {
        return Err((
            "url",
            "url",
            "applies to `kind: http` (a generation endpoint); `kind: openai` takes `base_url`"
                .into(),
        ));
    }
    Ok(())
}

/// An embedder profile's own fields.
pub fn check_embedder(e: &EmbedderConfig) -> Result<(), (&'static str, String)> {
    if let Some(why) = crate::sweep::concurrency_problem(e.concurrency) {
        return Err(("concurrency", why));
    }
    if e.batch_size == 0 {
        return Err(("batch_size", "must be at least 1".into()));
    }
    if e.max_input_tokens == Some(0) {
        return Err((
            "max_input_tokens",
            "must be at least 1 (leave it out for no limit)".into(),
        ));
    }
    if !(1..=MAX_DIMENSIONS).contains(&e.dimensions) {
        return Err((
            "dimensions",
            format!("must be from 1 to {MAX_DIMENSIONS}, got {}", e.dimensions),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_fit_an_id_pass_and_others_say_why() {
        assert_eq!(check_name("gpt-4o.mini_2"), Ok(()));
        assert_eq!(
            check_name("default").unwrap_err(),
            "`default` names the `chat:` or `embedder:` section; give the profile another name"
        );
        assert_eq!(
            check_name("a,b").unwrap_err(),
            "`a,b` is not a profile name: use letters, digits, `_`, `-` and `.`"
        );
        assert!(check_name("k=1").is_err());
        let hot = ChatConfig {
            temperature: 2.5,
            ..ChatConfig::default()
        };
        assert_eq!(
            check_chat(&hot),
            Err(("temperature", "must be between 0 and 2".to_string()))
        );
    }
}
