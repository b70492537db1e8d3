//! The labels file: what it refuses, naming line and field, and that rows read are written back
//! byte for byte; the sample: a larger share draws a superset and keeps every label.

use std::collections::HashSet;
use std::path::Path;

use super::sample::{extend, Oversample, Size, Stratum};
use super::*;
use crate::output::report::fixture;

fn row(id: &str, refused: &str, correct: &str) -> Row {
    Row {
        reply_id: id.into(),
        question_id: "q1".into(),
        answerable: "yes".into(),
        question: "How much?".into(),
        expected_answers: "ten".into(),
        passages: "[1] (a.md > Fee) Ten dollars.\n\n[2] (a.md > Other) Misc.".into(),
        reply: "Ten, \"dollars\". [1]".into(),
        graded_refused: "no".into(),
        graded_correct: "yes".into(),
        graded_by: "answer_match".into(),
        inclusion: "0.5".into(),
        seed: "0".into(),
        refused: refused.into(),
        correct: correct.into(),
    }
}

fn text(file: &LabelsFile) -> String {
    let mut out = Vec::new();
    file.write_to(&mut out).unwrap();
    String::from_utf8(out).unwrap()
}

fn parse(text: &str) -> Result<LabelsFile, String> {
    LabelsFile::parse(Path::new("labels.csv"), text.as_bytes()).map_err(|e| e.to_string())
}

#[test]
fn rows_read_are_written_back_byte_for_byte() {
    let file = LabelsFile::new(vec![row("a1", "yes", ""), row("b2", "no", "no")], 0);
    let written = text(&file);
    assert!(written.starts_with("reply_id,question_id,answerable,"));
    assert_eq!(written.matches("reply_id").count(), 1, "one header");
    let back = parse(&written).unwrap();
    assert_eq!(back.rows, file.rows);
    assert_eq!(back.seed, Some(0));
    assert_eq!(text(&back), written);
    let labels = back.labels();
    assert_eq!(labels.len(), 2);
    assert_eq!(labels["a1"].label.refused, Some(true));
    assert_eq!(labels["b2"].label.correct, Some(false));
    assert_eq!(labels["b2"].inclusion, 0.5);
    // An empty file is a header alone.
    assert_eq!(parse(&text(&LabelsFile::default())).unwrap().rows, vec![]);
}

/// A sampled row left empty is no label, and the labelled rows stand for the sample: their
/// inclusion is the sample's times the share labelled (3 of 4 at 0.5 is 0.375), else the
/// corrections would be weighed as if every sampled reply had been read.
#[test]
fn a_label_counts_with_the_chance_its_reply_was_labelled() {
    let rows = vec![
        row("a1", "yes", ""),
        row("b2", "no", "no"),
        row("c3", "", ""),
        row("d4", "no", "yes"),
    ];
    let labels = LabelsFile::new(rows, 0).labels();
    assert_eq!(labels.len(), 3);
    assert!(!labels.contains_key("c3"));
    for id in ["a1", "b2", "d4"] {
        assert_eq!(labels[id].inclusion, 0.375, "{id}");
    }
}

#[test]
fn bad_files_are_refused_naming_line_and_field() {
    let good = text(&LabelsFile::new(
        vec![row("a1", "", ""), row("b2", "", "")],
        0,
    ));
    // The second row starts on line 5: the first row's passages span three lines.
    let maybe = text(&LabelsFile::new(
        vec![row("a1", "", ""), row("b2", "maybe", "")],
        0,
    ));
    let cases = [
        (
            maybe,
            "labels.csv:5: `refused`: is `maybe`: write `yes`, `no` or leave it empty",
        ),
        (
            good.replace(",0.5,0,", ",1.5,0,"),
            "labels.csv:2: `inclusion`: is `1.5`, not a probability above 0 and at most 1",
        ),
        (
            good.replacen("reply_id,", "id,", 1),
            "labels.csv:1: `id`: is not a column of a labels file: the columns are reply_id, question_id, answerable, question, expected_answers, passages, reply, graded_refused, graded_correct, graded_by, inclusion, seed, refused, correct",
        ),
        (
            good.replacen(",correct\r\n", "\r\n", 1),
            "labels.csv:1: `correct`: is missing: a labels file has the columns `rageval label` writes",
        ),
        (
            good.trim_end().to_string() + ",x\r\n",
            "labels.csv:5: has 15 fields, but the header has 14",
        ),
    ];
    for (text, want) in cases {
        assert_eq!(parse(&text).unwrap_err(), want);
    }
    let mut other = row("b2", "", "");
    other.seed = "7".into();
    let file = LabelsFile::new(vec![row("a1", "", ""), other], 0);
    assert_eq!(
        parse(&text(&file)).unwrap_err(),
        "labels.csv:5: `seed`: is 7, but the rows above were sampled with seed 0: one file holds one sample"
    );
    let twice = LabelsFile::new(vec![row("a1", "yes", ""), row("a1", "no", "yes")], 0);
    assert_eq!(
        parse(&text(&twice)).unwrap_err(),
        "labels.csv:5: `refused`: reply `a1` is labelled again, differently from line 2: keep one row per reply"
    );
    // The same label twice is one label.
    let same = LabelsFile::new(vec![row("a1", "yes", ""), row("a1", "yes", "")], 0);
    assert_eq!(parse(&text(&same)).unwrap().labels().len(), 1);
    let file = parse(&good).unwrap();
    let known: HashSet<String> = ["a1".to_string()].into();
    assert_eq!(
        file.check_replies(Path::new("labels.csv"), &known)
            .unwrap_err()
            .to_string(),
        "labels.csv:5: `reply_id`: reply `b2` is not a reply of these results: the labels belong to another sweep (or the reply changed since)"
    );
}

/// [`extend`] to a share under the uniform design.
fn extend_uniform(r: &Results, file: LabelsFile, share: f64, seed: u64) -> sample::Sampled {
    extend(r, file, Size::Share(share), seed, &Oversample::default())
}

#[test]
fn a_larger_share_draws_a_superset_and_keeps_every_label() {
    let r = fixture::results();
    let all = sample::distinct_replies(&r);
    assert!(all.len() >= 4, "{}", all.len());
    let small = extend_uniform(&r, LabelsFile::default(), 0.5, 11);
    assert_eq!(small.added, small.file.rows.len());
    let mut labelled = small.file.clone();
    for (i, row) in labelled.rows.iter_mut().enumerate() {
        row.refused = if i % 2 == 0 { "yes" } else { "no" }.into();
    }
    let before = text(&labelled);
    let large = extend_uniform(&r, labelled.clone(), 1.0, 11);
    assert_eq!(large.file.rows.len(), all.len());
    assert_eq!(large.added, all.len() - small.file.rows.len());
    assert_eq!(large.raised, small.file.rows.len());
    for (old, new) in labelled.rows.iter().zip(&large.file.rows) {
        assert_eq!(
            Row {
                inclusion: old.inclusion.clone(),
                ..new.clone()
            },
            *old,
            "only the inclusion of an earlier row changes"
        );
        assert_eq!(new.inclusion, "1");
    }
    // The same share again adds nothing and changes no byte.
    let again = extend_uniform(&r, labelled, 0.5, 11);
    assert_eq!((again.added, again.raised), (0, 0));
    assert_eq!(text(&again.file), before);
    // Every reply is drawn with its own uniform: another seed draws another sample.
    let other = extend_uniform(&r, LabelsFile::default(), 0.5, 12);
    let ids = |f: &LabelsFile| {
        f.rows
            .iter()
            .map(|r| r.reply_id.clone())
            .collect::<Vec<_>>()
    };
    assert!(ids(&other.file) != ids(&small.file) || all.len() < 4);
}

#[test]
fn oversampling_parses_strata_and_factors_and_refuses_the_rest() {
    let o = Oversample::parse(&["unwanted_answer=4", "false_refusal=2.5"]).unwrap();
    assert_eq!(o.factor(Stratum::UnwantedAnswer), 4.0);
    assert_eq!(o.factor(Stratum::FalseRefusal), 2.5);
    assert_eq!(o.factor(Stratum::Answer), 1.0);
    assert_eq!(o.describe(), ", unwanted_answer x4, false_refusal x2.5");
    assert!(Oversample::parse::<&str>(&[]).unwrap().is_uniform());
    for (bad, message) in [
        ("unwanted", "`unwanted` is not STRATUM=FACTOR (e.g. unwanted_answer=4)"),
        ("refusals=2", "`refusals` is not one of `unwanted_answer`, `model_refusal`, `false_refusal`, `wrong_answer`, `answer`"),
        ("answer=0.5", "`answer=0.5`: the factor must be a number from 1 to 1000"),
        ("answer=NaN", "`answer=NaN`: the factor must be a number from 1 to 1000"),
    ] {
        assert_eq!(Oversample::parse(&[bad]).unwrap_err(), message);
    }
    assert_eq!(
        Oversample::parse(&["answer=2", "answer=3"]).unwrap_err(),
        "`answer` is oversampled twice"
    );
}

#[test]
fn a_stratum_is_drawn_with_its_factor_and_the_sample_size_is_kept() {
    let o = Oversample::parse(&["unwanted_answer=4"]).unwrap();
    assert_eq!(o.inclusion(0.1, Stratum::UnwantedAnswer), 0.4);
    assert_eq!(o.inclusion(0.1, Stratum::Answer), 0.1);
    assert_eq!(o.inclusion(0.3, Stratum::UnwantedAnswer), 1.0);
    // 10 unwanted answers and 90 others, 20 rows: 10 × 4p + 90p = 20, p = 2/13.
    let strata: Vec<Stratum> = (0..100)
        .map(|i| {
            if i < 10 {
                Stratum::UnwantedAnswer
            } else {
                Stratum::Answer
            }
        })
        .collect();
    let p = Size::Sample(20).base(&strata, &o);
    assert!((p - 2.0 / 13.0).abs() < 1e-12, "{p}");
    // 40 rows: the unwanted answers saturate at 1, 10 + 90p = 40, p = 1/3.
    let p = Size::Sample(40).base(&strata, &o);
    assert!((p - 1.0 / 3.0).abs() < 1e-12, "{p}");
    assert_eq!(Size::Sample(100).base(&strata, &o), 1.0);
    // A share is the base itself; a uniform design is the old share.
    assert_eq!(Size::Share(0.2).base(&strata, &o), 0.2);
    assert_eq!(Size::Sample(20).base(&strata, &Oversample::default()), 0.2);
}

#[test]
fn an_oversampled_sample_writes_each_rows_probability_and_a_larger_one_is_a_superset() {
    let r = fixture::results();
    let strata: std::collections::HashMap<String, Stratum> = sample::distinct_replies(&r)
        .into_iter()
        .map(|(id, run)| (id, Stratum::of(&r.runs[run].verdict)))
        .collect();
    // The fixture holds answers and refusals both: raise the answers.
    let counts = |s: Stratum| strata.values().filter(|&&x| x == s).count();
    assert!(counts(Stratum::Answer) > 0 && strata.len() > counts(Stratum::Answer));
    let o = Oversample::parse(&["answer=3"]).unwrap();
    for seed in 0..40 {
        let small = extend(&r, LabelsFile::default(), Size::Share(0.2), seed, &o);
        for row in &small.file.rows {
            let want = if strata[&row.reply_id] == Stratum::Answer {
                "0.6000000000000001"
            } else {
                "0.2"
            };
            assert_eq!(row.inclusion, want, "{}", row.reply_id);
            assert!(sample::uniform(seed, &row.reply_id) < want.parse::<f64>().unwrap());
        }
        // Every reply below its probability is drawn, none above it.
        let drawn = strata
            .iter()
            .filter(|(id, &s)| sample::uniform(seed, id) < o.inclusion(0.2, s))
            .count();
        assert_eq!(small.file.rows.len(), drawn);
        // A larger share at the same strata: a superset, the earlier rows first and raised.
        let large = extend(&r, small.file.clone(), Size::Share(0.3), seed, &o);
        for (old, new) in small.file.rows.iter().zip(&large.file.rows) {
            assert_eq!(old.reply_id, new.reply_id);
        }
        assert_eq!(large.raised, small.file.rows.len());
        let fresh = extend(&r, LabelsFile::default(), Size::Share(0.3), seed, &o);
        let ids = |f: &LabelsFile| {
            let mut v: Vec<String> = f.rows.iter().map(|r| r.reply_id.clone()).collect();
            v.sort();
            v
        };
        assert_eq!(ids(&large.file), ids(&fresh.file), "seed {seed}");
    }
}

#[test]
fn a_value_quoted_in_a_message_shows_bidi_overrides_and_controls_escaped() {
    assert_eq!(clip("yes\u{202e}on"), "yes\\u{202e}on");
    assert_eq!(clip("a\nb"), "a\\u{a}b");
    assert_eq!(clip(&"x".repeat(70)), format!("{}...", "x".repeat(60)));
}
