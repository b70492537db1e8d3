//! A labels file checked against results (the reply ids it was checked by, applied by) and
//! the line numbers its reader counts.

use std::collections::HashSet;
use std::path::Path;

use super::*;
use crate::output::report::fixture;

/// A file checked against results hands back the reply ids it was checked by, one per run, so
/// that applying its labels digests no prompt again; applied by them, the labels give the
/// results labels applied afresh give.
#[test]
fn labels_checked_against_results_apply_by_the_ids_they_were_checked_by() {
    let r = fixture::results();
    let rows = r
        .reply_ids()
        .into_iter()
        .flatten()
        .collect::<HashSet<_>>()
        .into_iter()
        .map(|id| Row {
            reply_id: id,
            question_id: "q1".into(),
            answerable: "yes".into(),
            question: String::new(),
            expected_answers: String::new(),
            passages: String::new(),
            reply: String::new(),
            graded_refused: "no".into(),
            graded_correct: "yes".into(),
            graded_by: "answer_match".into(),
            inclusion: "1".into(),
            seed: "0".into(),
            refused: "yes".into(),
            correct: String::new(),
        })
        .collect();
    let mut file = LabelsFile::new(rows, 0);
    let path = Path::new("labels.csv");
    let checked = file.checked(path, &r).unwrap();
    assert_eq!(checked.ids, r.reply_ids());
    assert_eq!(checked.labels, file.labels());
    let by_ids = fixture::results().with_labels_by(&checked.labels, checked.ids);
    let afresh = fixture::results().with_labels(&file.labels());
    assert!(by_ids.labelled_runs() > 0);
    let verdicts = |r: &Results| -> Vec<_> {
        r.runs
            .iter()
            .map(|run| (run.verdict.clone(), run.labelled.clone()))
            .collect()
    };
    assert_eq!(verdicts(&by_ids), verdicts(&afresh));
    file.rows[0].reply_id = "elsewhere".into();
    assert!(
        file.checked(path, &r).is_err(),
        "an unknown reply is refused"
    );
}

/// Lines counted as a reader moves forward are the lines counted from the start, at every byte,
/// in LF and CRLF text, and when a position goes back.
#[test]
fn lines_counted_forward_are_lines_counted_from_the_start() {
    let text = b"a,b\r\n1,\"x\r\ny\"\r\n\r\n2,z\n3,w\n";
    let from_start = |byte: usize| {
        1 + text[..(byte + 1).min(text.len())]
            .iter()
            .filter(|&&b| b == b'\n')
            .count() as u64
    };
    let at = |byte: usize| {
        let mut p = ::csv::Position::new();
        p.set_byte(byte as u64);
        p
    };
    let mut counter = LineCounter::new(text);
    let bytes: Vec<usize> = (0..text.len() + 3).chain([7, 2, 20]).collect();
    for byte in bytes {
        assert_eq!(
            counter.at(Some(&at(byte))),
            Some(from_start(byte)),
            "{byte}"
        );
    }
    assert_eq!(counter.at(None), None);
}
