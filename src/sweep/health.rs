//! Whether a finished sweep is worth a report. A report of a sweep whose every answer call
//! failed (or every call of one chat profile, or every judge call) would only look valid, so
//! the command stops instead, saying what the failures point to ([`Cause`], read from their
//! [`ErrorKind`]s).

use super::{CallLog, Sweep};
use crate::adapters::chat::config::ChatConfig;
use crate::adapters::http::DEAD_AFTER;
use crate::adapters::judge::config::JudgeConfig;
use crate::vocab::call::{ByKind, CallRole, ErrorKind};
use crate::vocab::grid::DEFAULT_PROFILE;

/// What the failures of some calls point to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// Every one was a missing or refused key.
    Auth,
    /// Every one was a server that could not be reached or did not answer in time.
    Unreachable,
    /// Anything else: the server's own errors say more.
    Other,
}

impl Cause {
    /// The cause of the failures counted in `by_kind`.
    pub fn of(by_kind: &ByKind) -> Cause {
        if by_kind.keys().all(|k| *k == ErrorKind::Auth) {
            Cause::Auth
        } else if by_kind.keys().all(|k| k.is_unreachable()) {
            Cause::Unreachable
        } else {
            Cause::Other
        }
    }
}

/// Why a finished sweep is not worth a report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unusable {
    /// Every answer call failed.
    EveryCall(ByKind),
    /// With several chat profiles, every answer call of this one failed.
    Profile(String, ByKind),
    /// Every judge call failed.
    EveryJudgeCall(ByKind),
}

/// The health check of a finished sweep over the chat profiles `profiles`: the first reason
/// it is not worth a report, if any.
pub fn check(sweep: &Sweep, profiles: &[String]) -> Option<Unusable> {
    let c = &sweep.calls;
    if c.failed > 0 && c.failed == c.distinct_prompts {
        return Some(Unusable::EveryCall(c.errors_by_kind.clone()));
    }
    if let Some((profile, by_kind)) = failed_profile(sweep, profiles) {
        return Some(Unusable::Profile(profile, by_kind));
    }
    (c.judge_calls > 0 && c.judge_failed == c.judge_calls)
        .then(|| Unusable::EveryJudgeCall(c.judge_errors_by_kind.clone()))
}

/// With several chat profiles, the first whose every answer call failed, and its failures by
/// kind.
fn failed_profile(sweep: &Sweep, profiles: &[String]) -> Option<(String, ByKind)> {
    if profiles.len() < 2 {
        return None;
    }
    profiles.iter().find_map(|profile| {
        let mut calls: Vec<u32> = sweep
            .runs
            .iter()
            .filter(|r| sweep.settings[r.setting].chat == *profile)
            .filter_map(|r| r.call)
            .collect();
        calls.sort_unstable();
        calls.dedup();
        let mut by_kind = ByKind::new();
        for &c in &calls {
            let error = sweep.call_log.get_index(c as usize)?.1.error.as_ref()?;
            *by_kind.entry(error.kind).or_insert(0) += 1;
        }
        (!calls.is_empty()).then(|| (profile.clone(), by_kind))
    })
}

/// The servers a health message names: each swept chat profile's section, which of them
/// died, and the judge's.
pub struct Servers<'a> {
    /// The swept chat profiles (`default`: the `chat:` section) with their sections.
    pub chats: Vec<(&'a str, &'a ChatConfig)>,
    /// The first chat server that refused [`DEAD_AFTER`] connections in a row: its profile
    /// and its base URLs as messages show them.
    pub dead_chat: Option<(&'a str, String)>,
    /// The `judge:` section, and whether its server died.
    pub judge: Option<&'a JudgeConfig>,
    pub judge_dead: bool,
}

/// Why a finished sweep over `servers` gets no report, said for people with what to check;
/// `None` when it is worth one. The cache keeps the calls that finished, so a rerun resumes.
pub fn stop_reason(sweep: &Sweep, servers: &Servers<'_>) -> Option<String> {
    let c = &sweep.calls;
    if let Some((profile, shown)) = &servers.dead_chat {
        let to = if servers.chats.len() > 1 || *profile != DEFAULT_PROFILE {
            format!(" to chat profile `{profile}`")
        } else {
            String::new()
        };
        return Some(format!(
            "the sweep stopped early: {DEAD_AFTER} connection attempts in a row{to} failed ({}); no report written; is the model server at `{shown}` running?",
            kinds(&c.errors_by_kind),
        ));
    }
    let first = first_failure(&sweep.call_log);
    let judge_url = || servers.judge.map(|j| j.http().shown()).unwrap_or_default();
    let profiles: Vec<String> = servers.chats.iter().map(|(p, _)| p.to_string()).collect();
    Some(match check(sweep, &profiles) {
        Some(Unusable::EveryCall(by_kind)) => format!(
            "every model call failed ({}); no report written; {}",
            kinds(&by_kind),
            failure_hint(&servers.chats, &by_kind, first)
        ),
        // One profile's column of the report would be all errors: its server is down or
        // refuses us, whatever the others did.
        Some(Unusable::Profile(profile, by_kind)) => format!(
            "every model call of chat profile `{profile}` failed ({}); no report written; {}",
            kinds(&by_kind),
            failure_hint(
                &servers
                    .chats
                    .iter()
                    .filter(|(p, _)| *p == profile)
                    .copied()
                    .collect::<Vec<_>>(),
                &by_kind,
                first
            )
        ),
        _ if servers.judge_dead => format!(
            "the sweep stopped early: {DEAD_AFTER} connection attempts in a row to the judge failed ({}); no report written; is the judge server at `{}` running?",
            kinds(&c.judge_errors_by_kind),
            judge_url()
        ),
        Some(Unusable::EveryJudgeCall(by_kind)) => {
            let hint = match (servers.judge, Cause::of(&by_kind)) {
                (Some(_), Cause::Unreachable) => {
                    format!("is the judge server at `{}` running?", judge_url())
                }
                (Some(j), Cause::Auth) => format!("check the key in `${}`", j.api_key_env),
                _ => "see docs/judge.md for the reply the rubric asks for".to_string(),
            };
            format!(
                "every judge call failed ({}); no report written; {hint}",
                kinds(&by_kind)
            )
        }
        None => return None,
    })
}

/// What to check when every call of the chat profiles `chats` failed with `by_kind`: the key
/// when all were refused as unauthorised, else the servers, each with its profile's name when
/// there are several. A generation endpoint's failure names its question, so the first one
/// (`first`) is shown in full.
fn failure_hint(chats: &[(&str, &ChatConfig)], by_kind: &ByKind, first: Option<&str>) -> String {
    let sections: Vec<&(&str, &ChatConfig)> =
        chats.iter().filter(|(_, c)| c.kind.is_remote()).collect();
    let each = |f: &dyn Fn(&ChatConfig) -> String| match &sections[..] {
        [(_, c)] => format!("`{}`", f(c)),
        _ => sections
            .iter()
            .map(|(p, c)| format!("`{}` (profile `{p}`)", f(c)))
            .collect::<Vec<_>>()
            .join(", "),
    };
    let url = each(&|c| c.endpoint().shown());
    let endpoint = sections.iter().any(|(_, c)| c.kind.takes_passages());
    match Cause::of(by_kind) {
        Cause::Auth => format!(
            "check the key in {}",
            each(&|c| match c.http().api_key_env {
                "" => "api_key_env: none is named".to_string(),
                named => format!("${named}"),
            })
        ),
        Cause::Unreachable => format!("is the model server at {url} running?"),
        Cause::Other => match first.filter(|_| endpoint) {
            Some(first) => format!("the first: {first}"),
            None => format!("see the errors of the server at {url}"),
        },
    }
}

/// The message of the first answer call that failed, in the order calls were planned.
pub fn first_failure(log: &CallLog) -> Option<&str> {
    log.values()
        .filter(|c| c.role == CallRole::Answer)
        .find_map(|c| c.error.as_ref())
        .map(|e| e.message.as_str())
}

/// `3 timeout, 1 server`
pub fn kinds(by_kind: &ByKind) -> String {
    by_kind
        .iter()
        .map(|(k, n)| format!("{n} {}", k.as_str()))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use ErrorKind::*;

    fn by_kind(counts: &[(ErrorKind, usize)]) -> ByKind {
        counts.iter().copied().collect()
    }

    #[test]
    fn the_cause_is_read_from_the_error_kinds() {
        let of = |kinds: &[ErrorKind]| Cause::of(&kinds.iter().map(|k| (*k, 1)).collect());
        assert_eq!(of(&[Auth]), Cause::Auth);
        assert_eq!(of(&[Connect, Timeout]), Cause::Unreachable);
        assert_eq!(of(&[Timeout]), Cause::Unreachable);
        assert_eq!(of(&[Connect, Server]), Cause::Other);
        assert_eq!(of(&[Auth, Timeout]), Cause::Other);
        assert_eq!(of(&[Malformed]), Cause::Other);
    }

    #[test]
    fn kinds_are_listed_by_name_with_their_counts() {
        assert_eq!(
            kinds(&by_kind(&[(Timeout, 3), (Server, 1)])),
            "1 server, 3 timeout"
        );
        // Declared connect before auth, listed after it, as results.json lists them.
        assert_eq!(
            kinds(&by_kind(&[(Connect, 2), (Auth, 1), (RateLimited, 4)])),
            "1 auth, 2 connect, 4 rate_limited"
        );
    }
}
