//! The names of the `models:` and `embedders:` profiles: names that can stand in a setting id.
//! (A profile's fields are checked by its section's own `check()`, as `chat:` and `embedder:`
//! are.)

use crate::vocab::grid::DEFAULT_PROFILE;

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
    }
}
