//! Unit tests of the history: the line of a sweep, appends at once, damaged lines, the view.

use super::file::{append, read_last};
use super::view::{self, Changes, Line, Row};
use super::*;
use crate::output::report::fixture;

fn provenance() -> Provenance {
    Provenance {
        time: "2026-12-05T08:00:00Z".into(),
        checkout: Checkout {
            commit: Some("0123456789abcdef0123456789abcdef01234567".into()),
            dirty: Some(true),
        },
        results: "reports/latest/results.json".into(),
        results_digest: "sha256:00".into(),
    }
}

#[test]
fn the_line_of_a_sweep_holds_its_counts_and_reads_back() {
    let r = fixture::results();
    let e = Entry::of(&r, provenance());
    assert_eq!(e.settings.len(), r.settings.len());
    assert_eq!(e.config_digest, r.meta.identity.digest);
    assert_eq!(e.questions, r.questions.len());
    assert_eq!(e.answerable + e.unanswerable, e.questions);
    for (i, (id, s)) in e.settings.iter().enumerate() {
        assert_eq!(id, r.setting_id(i));
        let st = &r.stats[i];
        assert_eq!(
            s.counts(Rate::UnwantedAnswerRate),
            (st.unwanted_answer as u64, st.unanswerable as u64)
        );
        assert_eq!(s.false_refusal_rate, st.false_refusal_rate);
    }
    assert_eq!(e.recommended, r.insight.recommendation.setting);
    let line = e.line();
    assert_eq!(line.matches('\n').count(), 1, "one line");
    assert!(line.ends_with('\n'));
    let back: Entry = serde_json::from_str(&line).unwrap();
    assert_eq!(back, e);
    // The digest of the questions follows what decides an outcome, not the tags.
    let mut qs = r.questions.clone();
    let d = questions_digest(&qs);
    qs[0].tags.push("new-tag".into());
    assert_eq!(questions_digest(&qs), d);
    qs[0].question.push('?');
    assert_ne!(questions_digest(&qs), d);
}

/// An entry with one setting whose unwanted answers are `x` of 10.
fn entry(x: usize, config: &str) -> Entry {
    let mut e = Entry::of(&fixture::results(), provenance());
    e.config_digest = config.into();
    let s = e.settings.values().next().unwrap().clone();
    e.settings = [(
        "min_score=0.3,k=1".to_string(),
        SettingEntry {
            unwanted_answer: x,
            unanswerable: 10,
            ..s
        },
    )]
    .into_iter()
    .collect();
    e.recommended = Some("min_score=0.3,k=1".into());
    e
}

fn unwanted(path: &std::path::Path, last: usize) -> (Vec<(usize, usize)>, Vec<String>) {
    let read = read_last(path, last, |line, e| {
        Some((line, e.settings[0].unwanted_answer))
    })
    .unwrap();
    (read.kept.into_iter().collect(), read.warnings)
}

#[test]
fn damaged_lines_are_skipped_with_their_number_and_appends_start_a_fresh_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("deep/history.jsonl");
    append(&path, &entry(1, "a")).unwrap();
    // A line cut short by a crash, with no newline: the next append starts on a line of its own.
    let cut = entry(2, "a").line();
    std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap()
        .write_all(&cut.as_bytes()[..cut.len() / 2])
        .unwrap();
    append(&path, &entry(3, "a")).unwrap();
    use std::io::Write as _;
    std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap()
        .write_all(b"\n{\"schema\":\"rageval.history/9\"}\nnot json\n")
        .unwrap();
    append(&path, &entry(4, "a")).unwrap();
    let (kept, warnings) = unwanted(&path, 10);
    assert_eq!(kept, [(1, 1), (3, 3), (7, 4)]);
    let shown = path.display();
    assert_eq!(
        warnings,
        [
            format!("warning: `{shown}` line 2 skipped: cut short (a sweep stopped while writing it?)"),
            format!("warning: `{shown}` line 5 skipped: schema `rageval.history/9`, not `rageval.history/1`"),
            format!("warning: `{shown}` line 6 skipped: not a history entry: expected ident at line 1 column 2"),
        ]
    );
    // Only the last ones are kept.
    assert_eq!(unwanted(&path, 2).0, [(3, 3), (7, 4)]);
}

#[test]
fn appends_at_once_never_mix_their_lines() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.jsonl");
    // Long lines (about 200 KB each): a write in pieces would show as a damaged line.
    let mut big = entry(0, "a");
    let s = big.settings[0].clone();
    for i in 0..1000 {
        big.settings
            .insert(format!("min_score=0.{i},k=1"), s.clone());
    }
    std::thread::scope(|scope| {
        for t in 0..4 {
            let (path, mut e) = (&path, big.clone());
            e.settings[0].unwanted_answer = t;
            scope.spawn(move || {
                for _ in 0..25 {
                    append(path, &e).unwrap();
                }
            });
        }
    });
    let read = read_last(&path, 1000, |_, e| Some(e.settings[0].unwanted_answer)).unwrap();
    assert!(read.warnings.is_empty(), "{:?}", read.warnings);
    assert_eq!(read.entries, 100);
    for t in 0..4 {
        assert_eq!(read.kept.iter().filter(|&&x| x == t).count(), 25);
    }
}

fn lines(entries: Vec<Entry>) -> Vec<Line> {
    let mut changes = Changes::default();
    entries
        .into_iter()
        .enumerate()
        .map(|(i, entry)| Line {
            line: i + 1,
            changed: changes.next(&entry),
            entry,
        })
        .collect()
}

#[test]
fn rows_say_what_changed_and_find_the_setting_by_its_values() {
    let mut e3 = entry(3, "b");
    e3.questions_digest = "other".into();
    let reads = lines(vec![entry(1, "a"), entry(2, "b"), e3]);
    let changed: Vec<String> = reads.iter().map(|r| r.changed.text()).collect();
    assert_eq!(changed, ["", "config", "questions"]);
    assert_eq!(
        view::chosen_setting(&reads, None).unwrap(),
        "min_score=0.3,k=1"
    );
    let spec = "k=1,min_score=0.30".parse().unwrap();
    assert_eq!(
        view::chosen_setting(&reads, Some(&spec)).unwrap(),
        "min_score=0.3,k=1"
    );
    let spec = "min_score=0.4,k=1".parse().unwrap();
    let err = view::chosen_setting(&reads, Some(&spec)).unwrap_err();
    assert!(
        err.starts_with("line 3: no setting is `min_score=0.4,k=1`"),
        "{err}"
    );
    let row = Row::new(&reads[1], Some("min_score=0.3,k=1"));
    assert_eq!(row.unwanted_answer_rate, Some(0.2));
    let ci = crate::analysis::insight::wilson::wilson(2, 10).unwrap();
    assert_eq!(
        (row.unwanted_answer_rate_lo, row.unwanted_answer_rate_hi),
        (Some(ci.lo), Some(ci.hi))
    );
    let absent = Row::new(&reads[1], Some("min_score=0.9,k=1"));
    assert_eq!((absent.setting, absent.unwanted_answer_rate), (None, None));
}

#[test]
fn sparklines_run_from_the_lowest_value_to_the_highest() {
    assert_eq!(
        view::sparkline(&[Some(0.1), Some(0.2), None, Some(0.45)]),
        "▁▃ █"
    );
    assert_eq!(view::sparkline(&[Some(0.1), Some(0.1)]), "▁▁");
    assert_eq!(view::sparkline(&[]), "");
}

#[test]
fn a_hand_edited_commit_is_cut_by_characters_not_bytes() {
    let mut e = entry(1, "a");
    // Ten bytes end inside the `é` (bytes 9 and 10): slicing bytes would panic.
    e.commit = Some("abcdefghiéjk".into());
    e.dirty = Some(true);
    let row = Row::new(&lines(vec![e])[0], None);
    assert_eq!(view::commit_text(&row), "abcdefghié+");
}
