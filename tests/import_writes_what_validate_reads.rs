//! `rageval import squad` writes only what rageval reads back (issue 41 item 6): file names
//! unique after sanitising and within the file system's 255-byte limit, a title of one line,
//! article tags apart from the tags rageval gives itself (`article:` in front), and a set or
//! corpus file over rageval's own read limits refused before anything is written, naming the
//! limit, instead of "next: rageval validate" about files validate then refuses.

use serde_json::{json, Value};

use crate::harness::Test;
use crate::support::Project;

const CONTEXT: &str = "The fee is ten dollars per term.";

/// An article titled `title` with one paragraph and one answerable question of id `id`.
fn article(title: &str, id: &str) -> Value {
    json!({"title": title, "paragraphs": [{"context": CONTEXT, "qas": [
        {"question": "What is the fee?", "id": id, "answers": [{"text": "ten dollars", "answer_start": 11}]}
    ]}]})
}

fn squad(articles: Vec<Value>) -> String {
    json!({"version": "v2.0", "data": articles}).to_string()
}

fn files(p: &Project, dir: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(p.path().join(dir))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn validates(p: &Project, articles: usize) {
    Test::at(p)
        .args(["validate", "out/questions.yaml"])
        .stdout_any("the certification plan lines are validate's own tests'")
        .stdout_contains(format!(
            "ok    out/questions.yaml: {articles} answerable, 0 unanswerable; corpus `out/docs` ({articles} chunks)"
        ))
        .run();
}

#[test]
fn titles_that_sanitise_alike_get_distinct_files() {
    // The audit's case: `A`, `A`, `A-2` wrote two files, one article over another.
    let p = Project::empty();
    p.write(
        "squad.json",
        &squad(vec![
            article("A", "1"),
            article("A", "2"),
            article("A-2", "3"),
        ]),
    );
    Test::at(&p)
        .args(["import", "squad", "squad.json", "--out", "out", "-q"])
        .run();
    assert_eq!(files(&p, "out/docs"), ["A-2-2.md", "A-2.md", "A.md"]);
    validates(&p, 3);
    // Apart in any case, for file systems that do not tell case apart.
    let p = Project::empty();
    p.write(
        "squad.json",
        &squad(vec![
            article("A", "1"),
            article("a", "2"),
            article("A-2", "3"),
            article("A?", "4"),
        ]),
    );
    Test::at(&p)
        .args(["import", "squad", "squad.json", "--out", "out", "-q"])
        .run();
    assert_eq!(
        files(&p, "out/docs"),
        ["A-2-2.md", "A-3.md", "A.md", "a-2.md"]
    );
    validates(&p, 4);
}

#[test]
fn a_title_of_long_letters_makes_a_name_the_file_system_takes() {
    // 80 letters of four bytes each: 320 bytes, more than a file name may have.
    let long = "𝒜".repeat(80);
    let p = Project::empty();
    p.write(
        "squad.json",
        &squad(vec![article(&long, "1"), article(&long, "2")]),
    );
    Test::at(&p)
        .args(["import", "squad", "squad.json", "--out", "out", "-q"])
        .run();
    let names = files(&p, "out/docs");
    assert_eq!(names.len(), 2);
    assert!(names.iter().all(|n| n.len() <= 255), "{names:?}");
    validates(&p, 2);
}

#[test]
fn a_line_break_in_a_title_is_named() {
    Test::empty()
        .write("squad.json", &squad(vec![article("Fees\nand rules", "1")]))
        .args(["import", "squad", "squad.json", "--out", "out"])
        .fails("squad.json: `data[0].title`: holds a line break or another control character: a title is one line (it heads each paragraph's section of the article's file)")
        .absent("out")
        .run();
}

#[test]
fn article_tags_stay_apart_from_rageval_s_own() {
    let p = Project::empty();
    p.write(
        "squad.json",
        &squad(vec![
            article("plausible-answer", "1"),
            article("generated", "2"),
            article("reviewed", "3"),
        ]),
    );
    Test::at(&p)
        .args(["import", "squad", "squad.json", "--out", "out", "-q"])
        .run();
    let set = p.read("out/questions.yaml");
    for tag in [
        "article:plausible-answer",
        "article:generated",
        "article:reviewed",
    ] {
        assert!(set.contains(&format!("  - {tag}\n")), "{set}");
    }
    assert!(!set.contains("  - generated\n") && !set.contains("  - plausible-answer\n"));
}

#[test]
fn a_question_set_over_the_read_limit_is_refused_naming_it() {
    // 9,000 questions of 2,000 characters: about 18 MiB of YAML, over the 16 MiB limit.
    let long = "Why ".repeat(500);
    let qas: Vec<Value> = (0..9000)
        .map(|i| json!({"question": format!("{long}{i}?"), "id": format!("q{i}"), "is_impossible": true, "answers": []}))
        .collect();
    let p = Project::empty();
    p.write(
        "squad.json",
        &json!({"data": [{"title": "Big", "paragraphs": [{"context": CONTEXT, "qas": qas}]}]})
            .to_string(),
    );
    Test::at(&p)
        .args(["import", "squad", "squad.json", "--out", "out"])
        .unusable(&[
            "squad.json: `data[0].paragraphs[0].qas[",
            "the questions up to here make a question set of more than the 16 MiB rageval reads of one (nothing was written): split the file's `data` into parts and import each into its own folder",
        ])
        .absent("out")
        .run();
}

#[test]
fn a_corpus_file_over_the_read_limit_is_refused_naming_it() {
    // 17 paragraphs of 1 MiB: one article's file of 17 MiB, over the 16 MiB limit.
    let context = "word ".repeat(1024 * 1024 / 5);
    let paragraphs: Vec<Value> = (0..17)
        .map(|_| json!({"context": context, "qas": []}))
        .collect();
    let p = Project::empty();
    p.write(
        "squad.json",
        &json!({"data": [{"title": "Big", "paragraphs": paragraphs}]}).to_string(),
    );
    Test::at(&p)
        .args(["import", "squad", "squad.json", "--out", "out"])
        .fails("squad.json: `data[0]`: article `Big` makes a corpus file of 17.0 MiB, more than the 16 MiB rageval reads of one document: split its paragraphs into several articles")
        .absent("out")
        .run();
}
