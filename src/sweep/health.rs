//! Whether a finished sweep is worth a report. A report of a sweep whose every answer call
//! failed (or every call of one chat profile, or every judge call) would only look valid, so
//! the command stops instead, saying what the failures point to ([`Cause`], read from their
//! [`ErrorKind`]s).

use std::collections::BTreeMap;

use super::{CallLog, Sweep};
use crate::vocab::call::{CallRole, ErrorKind};

/// Failed calls by error kind, as [`super::CallStats`] counts them.
pub type ByKind = BTreeMap<String, usize>;

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
        let kinds: Vec<Option<ErrorKind>> = by_kind.keys().map(|k| ErrorKind::named(k)).collect();
        if kinds.iter().all(|k| *k == Some(ErrorKind::Auth)) {
            Cause::Auth
        } else if kinds
            .iter()
            .all(|k| k.is_some_and(ErrorKind::is_unreachable))
        {
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
            *by_kind.entry(error.kind.as_str().to_string()).or_insert(0) += 1;
        }
        (!calls.is_empty()).then(|| (profile.clone(), by_kind))
    })
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
        .map(|(k, n)| format!("{n} {k}"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cause_is_read_from_the_error_kinds() {
        let of = |kinds: &[&str]| Cause::of(&kinds.iter().map(|k| (k.to_string(), 1)).collect());
        assert_eq!(of(&["auth"]), Cause::Auth);
        assert_eq!(of(&["connect", "timeout"]), Cause::Unreachable);
        assert_eq!(of(&["connect", "server"]), Cause::Other);
        assert_eq!(of(&["auth", "timeout"]), Cause::Other);
        assert_eq!(of(&["not-a-kind"]), Cause::Other);
        assert_eq!(
            kinds(&[("server".to_string(), 1), ("timeout".to_string(), 3)].into()),
            "1 server, 3 timeout"
        );
    }
}
