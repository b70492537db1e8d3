//! `rageval import squad`: a SQuAD 2.0 file becomes a question set and its corpus that
//! validate, sweep, and hold every expected answer in its expected source's section; bad input
//! is named by its JSON path and leaves nothing behind.

use serde_json::{json, Value};
use serde_yaml::Value as Yaml;

use crate::harness::{Corpus, Test};
use crate::support::{Project, IMPORT_SQUAD_AGAIN};

/// An answer of `context` as SQuAD writes it: its text and its character (not byte) offset.
fn answer(context: &str, text: &str) -> Value {
    let byte = context
        .find(text)
        .unwrap_or_else(|| panic!("{text:?} not in {context:?}"));
    json!({"text": text, "answer_start": context[..byte].chars().count()})
}

/// Two articles: answerable questions (one with two distinct answers and a repeated one),
/// impossible ones with and without plausible answers, and unicode before the answers.
pub(crate) fn small() -> Value {
    let c1 = "Beyoncé Giselle Knowles-Carter (born September 4, 1981) is an American singer. She rose to fame in the late 1990s as lead singer of Destiny's Child.";
    let c2 = "Her debut album, Dangerously in Love (2003), sold 11 million copies.";
    let c3 = "The Normans were the people who in the 10th and 11th centuries gave their name to Normandy, a region in France.";
    json!({"version": "v2.0", "data": [
        {"title": "Beyoncé", "paragraphs": [
            {"context": c1, "qas": [
                {"question": "When did Beyoncé start becoming popular?", "id": "56be85543aeaaa14008c9063",
                 "answers": [answer(c1, "in the late 1990s"), answer(c1, "late 1990s"), answer(c1, "late 1990s")],
                 "is_impossible": false},
                {"question": "What group was she the lead singer of?", "id": "56be86cf3aeaaa14008c9076",
                 "answers": [answer(c1, "Destiny's Child")], "is_impossible": false},
                {"question": "When did Beyoncé leave Destiny's Child?", "id": "5a8d7bf7df8bba001a0f9ab1",
                 "answers": [], "plausible_answers": [answer(c1, "late 1990s")], "is_impossible": true},
            ]},
            {"context": c2, "qas": [
                {"question": "How many copies did her debut album sell?", "id": "56bf6f743aeaaa14008c9631",
                 "answers": [answer(c2, "11 million")], "is_impossible": false},
            ]},
        ]},
        {"title": "Normans", "paragraphs": [
            {"context": c3, "qas": [
                {"question": "In what country is Normandy located?", "id": "56ddde6b9a695914005b9628",
                 "answers": [answer(c3, "France")], "is_impossible": false},
                {"question": "Who gave their name to Normandy in the 1000's and 1100's", "id": "5ad39d53604f3c001a3fe8d1",
                 "answers": [], "is_impossible": true},
            ]},
        ]},
    ]})
}

/// A SQuAD 2.0 file of one article with 96 answerable and 112 unanswerable questions over 12
/// paragraphs, in the shape of the official files: several answers per question (repeated and
/// overlapping spans), impossible questions written against the same paragraph, most of them
/// with plausible answers, and non-ASCII names before the answers.
fn one_article() -> Value {
    let builders = [
        "Zoë Østergaard",
        "Jörg Müller",
        "Ana Peña",
        "Siân Llŷr",
        "Chloé Dubois",
        "Åsa Nyström",
        "Łukasz Wójcik",
        "Ngozi Okafor",
    ];
    let things = [
        "lighthouse",
        "granary",
        "customs house",
        "chapel",
        "dry dock",
        "rope walk",
        "bell tower",
        "fish market",
    ];
    let mut paragraphs = Vec::new();
    let mut n = 0;
    for p in 0..12 {
        let mut context = format!(
            "Part {} of the history of Port Ellery, Ceredigion – “the harbour town”.",
            p + 1
        );
        for (j, thing) in things.iter().enumerate() {
            context.push_str(&format!(
                " The {thing} of quarter {p}{j} was built by {} in {} for {} pounds.",
                builders[(p + j) % 8],
                1700 + 10 * p + j,
                100 + 7 * p + j
            ));
        }
        let mut qas = Vec::new();
        for (j, thing) in things.iter().enumerate() {
            let builder = builders[(p + j) % 8];
            let year = (1700 + 10 * p + j).to_string();
            let by = format!("{builder} in {year}");
            // The spans the annotators chose: the name, the name twice, a longer span.
            let answers = match j % 3 {
                0 => vec![answer(&context, &by)],
                1 => vec![answer(&context, &by), answer(&context, &by)],
                _ => vec![
                    answer(&context, &by),
                    answer(&context, &format!("built by {by}")),
                ],
            };
            qas.push(json!({
                "question": format!("Who built the {thing} of quarter {p}{j}, and when?"),
                "id": format!("5733be284776f41900661{n:03}"),
                "answers": answers,
                "is_impossible": false,
            }));
            n += 1;
        }
        let impossible = if p < 4 { 10 } else { 9 };
        for j in 0..impossible {
            let thing = things[j % 8];
            let mut qa = json!({
                "question": format!("Who demolished the {thing} of quarter {p}{j} in the flood year {}?", 1900 + j),
                "id": format!("5a8d7bf7df8bba001a0f{n:04}"),
                "answers": [],
                "is_impossible": true,
            });
            if j % 4 != 3 {
                let builder = builders[(p + j % 8) % 8];
                qa["plausible_answers"] = json!([answer(&context, builder)]);
            }
            qas.push(qa);
            n += 1;
        }
        paragraphs.push(json!({"context": context, "qas": qas}));
    }
    json!({"version": "v2.0", "data": [{"title": "Port_Ellery", "paragraphs": paragraphs}]})
}

/// The written set's questions: (list, item).
fn items(text: &str) -> Vec<(String, Yaml)> {
    let doc: Yaml = serde_yaml::from_str(text).unwrap();
    let mut out = Vec::new();
    for list in ["answerable", "unanswerable"] {
        for item in doc[list].as_sequence().cloned().unwrap_or_default() {
            out.push((list.to_string(), item));
        }
    }
    out
}

fn strings(v: &Yaml) -> Vec<String> {
    v.as_sequence()
        .map(|s| s.iter().map(|x| x.as_str().unwrap().to_string()).collect())
        .unwrap_or_default()
}

/// Every expected answer text of the set at `dir` is in its expected source's section, as the
/// corpus splitter reads the written documents; returns how many answers were checked.
fn answers_in_sections(p: &Project, dir: &str) -> usize {
    let corpus = Corpus::load(&p.path().join(dir).join("docs")).unwrap();
    let mut checked = 0;
    for (list, item) in items(&p.read(&format!("{dir}/questions.yaml"))) {
        if list != "answerable" {
            assert!(item.get("expect").is_none(), "{item:?}");
            continue;
        }
        let sources = strings(&item["expect"]["sources"]);
        assert_eq!(sources.len(), 1, "{item:?}");
        let chunk = corpus
            .find(&sources[0])
            .unwrap_or_else(|| panic!("{} names no chunk", sources[0]));
        let section = chunk.text.to_lowercase();
        for a in strings(&item["expect"]["answer"]) {
            assert!(
                section.contains(&a.to_lowercase()),
                "{a:?} not in {}: {section}",
                sources[0]
            );
            checked += 1;
        }
    }
    checked
}

/// Whether anything but `keep` is left in the project's folder (a temporary folder, say).
fn leftovers(p: &Project, keep: &[&str]) -> Vec<String> {
    std::fs::read_dir(p.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !keep.contains(&n.as_str()))
        .collect()
}

#[test]
fn a_squad_file_becomes_a_set_and_a_corpus_with_ids_tags_and_notes_kept() {
    let p = Project::empty();
    p.write("squad.json", &small().to_string());
    Test::at(&p)
        .args(["import", "squad", "squad.json", "--out", "squad"])
        .stdout("imported 2 articles (3 paragraphs): 4 answerable and 2 unanswerable questions (1 with plausible answers) into squad: docs/ and questions.yaml\nnext: rageval validate squad/questions.yaml\n")
        .stderr("")
        .run();
    assert_eq!(
        p.read("squad/docs/Beyoncé.md"),
        "# Beyoncé, paragraph 1\n\nBeyoncé Giselle Knowles-Carter (born September 4, 1981) is an American singer. She rose to fame in the late 1990s as lead singer of Destiny's Child.\n\n# Beyoncé, paragraph 2\n\nHer debut album, Dangerously in Love (2003), sold 11 million copies.\n\n"
    );
    let written = p.read("squad/questions.yaml");
    crate::harness::assert_snapshot(
        "import__a_squad_file_becomes_a_set_and_a_corpus_with_ids_tags_and_notes_kept",
        &written,
    );
    let all = items(&written);
    let (answerable, unanswerable): (Vec<_>, Vec<_>) =
        all.iter().partition(|(l, _)| l == "answerable");
    assert_eq!((answerable.len(), unanswerable.len()), (4, 2));
    // Distinct answer texts, in the file's order.
    assert_eq!(
        strings(&answerable[0].1["expect"]["answer"]),
        ["in the late 1990s", "late 1990s"]
    );
    // A plausible answer is a note and a tag, never an expected answer.
    let leave = &unanswerable[0].1;
    assert_eq!(leave["id"].as_str(), Some("5a8d7bf7df8bba001a0f9ab1"));
    assert_eq!(
        strings(&leave["tags"]),
        ["article:Beyoncé", "plausible-answer"]
    );
    assert!(leave["note"].as_str().unwrap().ends_with(": late 1990s"));
    assert_eq!(strings(&unanswerable[1].1["tags"]), ["article:Normans"]);
    assert_eq!(answers_in_sections(&p, "squad"), 5);
    assert_eq!(
        leftovers(&p, &["squad.json", "squad"]),
        Vec::<String>::new()
    );

    // It validates, and sweeps with the sample's config defaults.
    p.write("rageval.yaml", "evalsets: [squad/questions.yaml]\n");
    Test::at(&p)
        .args(["validate"])
        .stdout(concat!(
            "ok    squad/questions.yaml: 4 answerable, 2 unanswerable; corpus `squad/docs` (3 chunks)\n",
            "      at 95%, 2 unanswerable and 4 answerable questions can certify at best unwanted ≤ 77.6% and false refusals ≤ 52.7% for one setting, unwanted ≤ 92.1% and false refusals ≤ 71.9% at the first setting of each of the 4 chains along min_score of the configured grid\n",
            "      plan for a chance of 80% at 95% by ordered tests (level 0.625%, at the first setting of each of the 4 chains along min_score of the configured grid), if each true rate is half its limit: unwanted 10% needs 145 unanswerable questions (this set has 2), or 23 with none answered; false refusals 25% needs 44 answerable questions (this set has 4), or 8 with none refused\n",
        ))
        .run();
    Test::at(&p)
        .args(["sweep", "--min-score", "0.1,0.3", "--k", "1,2", "--quiet"])
        .run();
    let tags = p.read("reports/latest/tags.csv");
    assert!(tags.contains(",article:Beyoncé,3,1,"), "{tags}");
}

#[test]
fn a_one_article_squad_2_file_imports_with_its_counts_and_every_answer_in_its_section() {
    let p = Project::empty();
    p.write("train-one.json", &one_article().to_string());
    Test::at(&p)
        .args(["import", "squad", "train-one.json", "--out", "port"])
        .stdout(concat!(
            "imported 1 article (12 paragraphs): 96 answerable and 112 unanswerable questions (88 with plausible answers) into port: docs/ and questions.yaml\n",
            "next: rageval validate port/questions.yaml\n",
        ))
        .run();
    assert_eq!(answers_in_sections(&p, "port"), 96 + 24);
    p.write("rageval.yaml", "evalsets: [port/questions.yaml]\n");
    Test::at(&p)
        .args(["validate"])
        .stdout(concat!(
            "ok    port/questions.yaml: 96 answerable, 112 unanswerable; corpus `port/docs` (12 chunks)\n",
            "      at 95%, 112 unanswerable and 96 answerable questions can certify at best unwanted ≤ 2.6% and false refusals ≤ 3.1% for one setting, unwanted ≤ 4.4% and false refusals ≤ 5.1% at the first setting of each of the 4 chains along min_score of the configured grid\n",
            "      plan for a chance of 80% at 95% by ordered tests (level 0.625%, at the first setting of each of the 4 chains along min_score of the configured grid), if each true rate is half its limit: unwanted 10% needs 145 unanswerable questions (this set has 112), or 23 with none answered; false refusals 25% needs 44 answerable questions (this set has 96), or 8 with none refused\n",
        ))
        .run();
    Test::at(&p)
        .args(["sweep", "--min-score", "0.2", "--k", "2", "--quiet"])
        .run();
    let tags = p.read("reports/latest/tags.csv");
    let (header, rows) = crate::support::read_csv(&tags);
    let row = crate::support::row_where(&header, &rows, &[("tag", "article:Port_Ellery")]);
    assert_eq!(crate::support::col(&header, row, "answerable"), "96");
    assert_eq!(crate::support::col(&header, row, "unanswerable"), "112");
    let row = crate::support::row_where(&header, &rows, &[("tag", "plausible-answer")]);
    assert_eq!(crate::support::col(&header, row, "unanswerable"), "88");
}

#[test]
fn an_existing_folder_is_replaced_only_with_force() {
    let p = Project::empty();
    p.write("squad.json", &small().to_string());
    Test::at(&p)
        .args(["import", "squad", "squad.json", "--out", "squad", "-q"])
        .run();
    p.write("squad/keep.txt", "mine");
    Test::at(&p)
        .args(["import", "squad", "squad.json", "--out", "squad"])
        .fails("squad: exists: pass `--force` to replace it (nothing was written)")
        .run();
    assert_eq!(p.read("squad/keep.txt"), "mine");
    Test::at(&p)
        .args(IMPORT_SQUAD_AGAIN)
        .args(["--quiet"])
        .stdout("")
        .run();
    assert!(!p.path().join("squad/keep.txt").exists());
    assert_eq!(answers_in_sections(&p, "squad"), 5);
    assert_eq!(
        leftovers(&p, &["squad.json", "squad"]),
        Vec::<String>::new()
    );
}

/// Bad input: one line naming the file, the JSON path (or line and column) and what is wrong,
/// exit 2, and no folder written (not even a temporary one).
#[test]
fn bad_input_names_its_json_path_and_writes_nothing() {
    let mut missing = small();
    missing["data"][1]["paragraphs"][0]["qas"][1]
        .as_object_mut()
        .unwrap()
        .remove("question");
    let mut moved = small();
    moved["data"][0]["paragraphs"][1]["qas"][0]["answers"][0]["answer_start"] = json!(3);
    let mut duplicate = small();
    duplicate["data"][1]["paragraphs"][0]["qas"][0]["id"] = json!("56be86cf3aeaaa14008c9076");
    let mut typed = small();
    typed["data"][1]["paragraphs"][0]["qas"][0]["question"] = json!(7);
    let mut no_answer = small();
    no_answer["data"][0]["paragraphs"][1]["qas"][0]["answers"] = json!([]);
    let cases: Vec<(String, String)> = vec![
        ("{\"data\": [".into(), "squad.json:1:10: is not JSON: EOF while parsing a list".into()),
        ("{\"data\": [\n".into(), "squad.json:1: is not JSON: EOF while parsing a list".into()),
        ("not json".into(), "squad.json:1:2: is not JSON: expected ident".into()),
        ("{\"version\": \"v2.0\"}".into(), "squad.json: `data`: is missing: a SQuAD file is `{\"version\": \"v2.0\", \"data\": [articles]}`".into()),
        (missing.to_string(), "squad.json: `data[1].paragraphs[0].qas[1].question`: is missing".into()),
        (moved.to_string(), "squad.json: `data[0].paragraphs[1].qas[0].answers[0].answer_start`: the context does not hold `11 million` at character 3 (it holds ` debut alb`)".into()),
        (duplicate.to_string(), "squad.json: `data[1].paragraphs[0].qas[0].id`: duplicate id `56be86cf3aeaaa14008c9076` (also `data[0].paragraphs[0].qas[1]`)".into()),
        (no_answer.to_string(), "squad.json: `data[0].paragraphs[1].qas[0].answers`: is empty: an answerable question (`is_impossible` false or absent) needs an answer".into()),
    ];
    for (text, line) in cases {
        let p = Project::empty();
        p.write("squad.json", &text);
        Test::at(&p)
            .args(["import", "squad", "squad.json", "--out", "squad"])
            .fails(&line)
            .absent("squad")
            .run();
        assert_eq!(leftovers(&p, &["squad.json"]), Vec::<String>::new());
    }
    // A value of the wrong type is named by its article and the line its value ends on.
    let p = Project::empty();
    p.write("squad.json", &serde_json::to_string_pretty(&typed).unwrap());
    Test::at(&p)
        .args(["import", "squad", "squad.json", "--out", "squad"])
        .fails("squad.json:85: `data[1]`: invalid type: integer `7`, expected a string")
        .absent("squad")
        .run();
}
