//! Labels end to end (docs/labels.md): `rageval label` samples distinct replies into a CSV and
//! extends it without touching a label; bad files exit 2 naming line and field; on `mock-llm
//! --paraphrase` without a judge, labels by the replies' true meaning make the counts the
//! truth and the confusion matrix shows exactly the refusals the string rules missed; the
//! `--serve` page refuses foreign Hosts, Origins and requests without its token, and a label it
//! acknowledged survives `kill -9`.

use std::io::BufRead;
use std::process::{Child, Command, Stdio};

use crate::http::{raw, MockLlm, KEY_ENV};
use crate::support::{col, read_csv, Project};

/// grading.rs's set with an answerable question whose answer is not in the documents: the
/// mock refuses it in its fourth wording, which no string tier reads, so the false refusal
/// hides as a wrong answer (as the `judge` question's refusal hides as an unwanted answer).
fn set() -> String {
    crate::grading::SET.replacen(
        "unanswerable:",
        "  - id: treasurer\n    question: Who is the treasurer of it?\n    expect: {answer: [Dara]}\nunanswerable:",
        1,
    )
}

/// The four wordings of a refusal in `mock-llm --paraphrase`.
const REFUSALS: [&str; 4] = [
    "I don't know based on the provided documents.",
    "i don't know based on the provided documents",
    "The provided documents do not mention this.",
    "Sorry, I could not find that in what I was given.",
];

/// grading.rs's project (no judge, a pattern for the third wording) with [`set`].
fn project(url: &str) -> Project {
    let p = crate::grading::project(
        url,
        false,
        "  refusal_patterns:\n    - do(es)? not mention\n",
    );
    p.write("set.yaml", &set());
    p
}

/// A swept project on the paraphrasing mock.
pub(crate) fn swept(server: &MockLlm) -> Project {
    let p = project(&server.url);
    crate::grading::sweep(&p).run();
    p
}

/// The labels file with every row labelled by its reply's true meaning.
pub(crate) fn label_truly(text: &str) -> String {
    let (header, rows) = read_csv(text);
    let mut w = csv::WriterBuilder::new()
        .terminator(csv::Terminator::CRLF)
        .from_writer(Vec::new());
    w.write_record(&header).unwrap();
    for mut row in rows {
        let refused = REFUSALS.contains(&col(&header, &row, "reply"));
        let at = |name: &str| header.iter().position(|h| h == name).unwrap();
        row[at("refused")] = if refused { "yes" } else { "no" }.into();
        row[at("correct")] = if refused { "" } else { "yes" }.into();
        w.write_record(&row).unwrap();
    }
    String::from_utf8(w.into_inner().unwrap()).unwrap()
}

/// What a sweep or gate with these labels says on stderr: the grader misread 2 of 7 replies.
const WARNING: &str = "warning: the grader disagrees with the labels on 2 of 7 labelled replies (28.6%, more than 10%): rates without labels would mislead; the counts use the labels, and report.md shows where the grader errs";

/// The one setting's counts in `dir/summary.csv`, as (column, value).
fn assert_counts(p: &Project, dir: &str, want: &[(&str, &str)]) {
    let (h, rows) = read_csv(&p.read(&format!("{dir}/summary.csv")));
    for (column, value) in want {
        assert_eq!(col(&h, &rows[0], column), *value, "{dir}: {column}");
    }
}

#[test]
fn labels_by_true_meaning_make_the_counts_the_truth_and_show_the_misses() {
    let server = MockLlm::start(&["--paraphrase"]);
    let p = swept(&server);
    // The grader: the fourth wording is an answer, a wrong one to `treasurer`.
    assert_counts(
        &p,
        "reports/latest",
        &[
            ("model_refusal", "3"),
            ("unwanted_answer", "1"),
            ("false_refusal", "0"),
            ("wrong_answer", "1"),
        ],
    );
    p.rageval(["label", "--share", "1"])
        .stdout("label: 7 of 7 distinct model replies sampled (share 1, seed 0), 7 new, in reports/latest/labels.csv; 0 of 7 labelled\n")
        .run();
    p.write(
        "labels.csv",
        &label_truly(&p.read("reports/latest/labels.csv")),
    );
    let out = p
        .sweep(["--labels", "labels.csv"])
        .env(KEY_ENV, "test-key")
        .stderr(format!("{WARNING}\n"))
        .run();
    assert_counts(
        &p,
        "reports/latest",
        &[
            ("model_refusal", "4"),
            ("unwanted_answer", "0"),
            ("false_refusal", "1"),
            ("wrong_answer", "0"),
            ("paraphrased_refusal", "4"),
        ],
    );
    let record = out.results();
    let labelled: Vec<&str> = record
        .runs
        .iter()
        .filter(|r| r.labelled.is_some())
        .map(|r| r.question.as_str())
        .collect();
    assert_eq!(labelled.len(), 7);
    let relabelled: Vec<(&str, Option<String>)> = record
        .runs
        .iter()
        .filter(|r| r.labelled.as_ref().is_some_and(|l| l.graded != r.verdict))
        .map(|r| {
            (
                r.question.as_str(),
                r.verdict.refusal_match.map(|t| t.to_string()),
            )
        })
        .collect();
    assert_eq!(
        relabelled,
        [
            ("treasurer", Some("label".to_string())),
            ("judge", Some("label".to_string()))
        ]
    );
    let grader = &out.summary()["grader"];
    assert_eq!(grader["replies"], 7);
    assert_eq!(grader["disagreements"], 2);
    let all = &grader["graders"][0];
    assert_eq!(all["grader"], "grader");
    let pair = |e: &serde_json::Value| (e["errors"].as_u64().unwrap(), e["of"].as_u64().unwrap());
    assert_eq!(pair(&all["refusals_read_as_answers"]), (2, 5));
    assert_eq!(pair(&all["answers_read_as_refusals"]), (0, 2));
    assert_eq!(pair(&all["right_read_as_wrong"]), (0, 2));
    let report = p.read("reports/latest/report.md");
    assert!(
        report.contains("| grader | 2/5 (40% [11.8%, 76.9%]) | 0/2 (0% [0%, 65.8%]) | - | 0/2 (0% [0%, 65.8%]) |"),
        "{report}"
    );
    assert!(
        report.contains("| pattern | 2/3 (66.7% [20.8%, 93.9%]) |"),
        "{report}"
    );
    let html = p.read("reports/latest/report.html");
    assert!(html.contains("<section id=\"grader\">"));
    assert!(html.contains("id=\"grader-warning\""));
    // The gate counts the same labels on the unlabelled record.
    crate::grading::sweep(&p).run();
    assert_counts(&p, "reports/latest", &[("unwanted_answer", "1")]);
    p.rageval([
        "gate",
        "--labels",
        "labels.csv",
        "--max-unwanted-answer-rate",
        "0",
        "--setting",
        "min_score=0,k=1",
    ])
    .stderr(format!("{WARNING}\n"))
    .stdout(concat!(
        "gate: setting min_score=0,k=1 of reports/latest/results.json (7 questions)\n",
        "PASS  error_runs 0 <= limit 0\n",
        "PASS  unwanted_answer_rate 0.000 <= limit 0.000\n",
        "gate: PASS (2 checks)\n",
    ))
    .run();
}

#[test]
fn a_larger_sample_keeps_every_label_byte_for_byte() {
    let server = MockLlm::start(&["--paraphrase"]);
    let p = swept(&server);
    p.rageval(["label", "--sample", "3", "--seed", "5"])
        .stdout_any("the realised count varies with the seed")
        .run();
    let first = label_truly(&p.read("reports/latest/labels.csv"));
    p.write("reports/latest/labels.csv", &first);
    let rows = read_csv(&first).1.len();
    assert!((1..7).contains(&rows), "{rows} rows");
    p.rageval(["label", "--share", "1"])
        .stdout(format!(
            "label: 7 of 7 distinct model replies sampled (share 1, seed 5), {} new, in reports/latest/labels.csv; {rows} of 7 labelled; {rows} rows drawn before now at inclusion 1 (the larger sample holds them too)\n",
            7 - rows
        ))
        .run();
    let second = p.read("reports/latest/labels.csv");
    let (first_lines, second_lines) = (lines(&first), lines(&second));
    for (a, b) in first_lines.iter().zip(&second_lines) {
        // Only the inclusion changed: the row with it back is the row as labelled.
        let (fa, fb) = (fields(a), fields(b));
        assert_eq!(fa.len(), fb.len());
        for (i, (x, y)) in fa.iter().zip(&fb).enumerate() {
            if i != 10 {
                assert_eq!(x, y, "field {i} of a labelled row changed");
            }
        }
    }
    assert_eq!(second_lines.len(), 8);
    // The same share again writes nothing new; another seed is refused.
    p.rageval(["label", "--share", "1"])
        .stdout_any("the same line as above, compared there")
        .run();
    assert_eq!(p.read("reports/latest/labels.csv"), second);
    p.rageval(["label", "--share", "1", "--seed", "6"])
        .fails("`reports/latest/labels.csv` holds a sample drawn with seed 5: extend it with `--seed 5` (or no --seed), or write another sample with `--out`")
        .run();
}

/// The records of a CSV text, one string each (a record may span lines).
fn lines(text: &str) -> Vec<String> {
    let mut r = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(text.as_bytes());
    r.records()
        .map(|rec| rec.unwrap().iter().collect::<Vec<_>>().join("\u{1f}"))
        .collect()
}

fn fields(line: &str) -> Vec<&str> {
    line.split('\u{1f}').collect()
}

#[test]
fn bad_labels_files_exit_2_naming_line_and_field() {
    let server = MockLlm::start(&["--paraphrase"]);
    let p = swept(&server);
    p.rageval(["label", "--share", "1"])
        .stdout_any("compared in the test above")
        .run();
    let good = p.read("reports/latest/labels.csv");
    let (header, rows) = read_csv(&good);
    let write = |rows: &[Vec<String>]| {
        let mut w = csv::WriterBuilder::new()
            .terminator(csv::Terminator::CRLF)
            .from_writer(Vec::new());
        w.write_record(&header).unwrap();
        for r in rows {
            w.write_record(r).unwrap();
        }
        String::from_utf8(w.into_inner().unwrap()).unwrap()
    };
    let at = |name: &str| header.iter().position(|h| h == name).unwrap();
    let mut unknown = rows.clone();
    unknown[1][at("reply_id")] = "0123456789abcdef".into();
    let mut maybe = rows.clone();
    maybe[2][at("correct")] = "maybe".into();
    let mut twice = rows.clone();
    twice[0][at("refused")] = "yes".into();
    let mut again = twice[0].clone();
    again[at("refused")] = "no".into();
    twice.push(again);
    // Each row is one line (one passage each); the header is line 1.
    let line_of = |row: usize| row + 2;
    for (name, text, message) in [
        (
            "unknown.csv",
            write(&unknown),
            format!(
                "unknown.csv:{}: `reply_id`: reply `0123456789abcdef` is not a reply of these results: the labels belong to another sweep (or the reply changed since)",
                line_of(1)
            ),
        ),
        (
            "maybe.csv",
            write(&maybe),
            format!(
                "maybe.csv:{}: `correct`: is `maybe`: write `yes`, `no` or leave it empty",
                line_of(2)
            ),
        ),
        (
            "twice.csv",
            write(&twice),
            "twice.csv:9: `refused`: reply `".to_string()
                + &rows[0][at("reply_id")]
                + "` is labelled again, differently from line 2: keep one row per reply",
        ),
    ] {
        p.write(name, &text);
        p.sweep(["--labels", name])
            .env(KEY_ENV, "test-key")
            .fails(&message)
            .run();
        p.rageval(["gate", "--labels", name]).fails(&message).run();
    }
    p.sweep(["--labels", "missing.csv"])
        .env(KEY_ENV, "test-key")
        .unusable(&["missing.csv", "labels file"])
        .run();
}

/// `rageval label --serve` in the background: the process and the printed URL's address and
/// token.
pub struct Page {
    child: Child,
    pub url: String,
    pub addr: String,
    pub token: String,
}

impl Page {
    pub fn start(p: &Project, extra: &[&str]) -> Page {
        let mut child = Command::new(assert_cmd::cargo::cargo_bin("rageval"))
            .args(["label", "--serve", "-q"])
            .args(extra)
            .current_dir(p.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start rageval label --serve");
        let mut url = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut url)
            .unwrap();
        let url = url.trim().to_string();
        let rest = url.strip_prefix("http://").expect("an http url");
        let (addr, query) = rest.split_once("/?token=").expect("a token in the query");
        Page {
            addr: addr.to_string(),
            token: query.to_string(),
            url: url.clone(),
            child,
        }
    }

    /// One HTTP/1.1 request (`METHOD PATH`) with `headers`, Host included: (status, body).
    pub fn request(&self, head: &str, headers: &[(&str, &str)], body: &str) -> (u16, String) {
        let (method, path) = head.split_once(' ').expect("METHOD PATH");
        let (status, body) = raw(&self.addr, method, path, headers, body.as_bytes());
        (status, String::from_utf8(body).unwrap())
    }

    /// `POST /api/label` as the page sends it.
    pub fn label(&self, reply_id: &str, refused: &str, correct: &str) -> (u16, String) {
        let body = format!(
            "{{\"reply_id\":\"{reply_id}\",\"refused\":\"{refused}\",\"correct\":\"{correct}\"}}"
        );
        let host = self.addr.clone();
        self.request(
            "POST /api/label",
            &[
                ("Host", &host),
                ("Origin", &format!("http://{host}")),
                ("Content-Type", "application/json"),
                ("x-rageval-token", &self.token),
            ],
            &body,
        )
    }

    /// Stop it as `kill -9` would.
    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Page {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A request line, its headers and the status it must get.
type Case<'a> = (&'a str, Vec<(&'a str, &'a str)>, u16);

#[test]
fn the_page_refuses_foreign_hosts_origins_and_missing_tokens() {
    let server = MockLlm::start(&["--paraphrase"]);
    let p = swept(&server);
    let page = Page::start(&p, &[]);
    assert!(page.url.starts_with("http://127.0.0.1:"), "{}", page.url);
    let host = page.addr.clone();
    let with_token = format!("GET /?token={}", page.token);
    let token = page.token.clone();
    let cases: Vec<Case> = vec![
        (&with_token, vec![("Host", &host)], 200),
        (&with_token, vec![("Host", "localhost:1")], 200),
        (&with_token, vec![("Host", "evil.example")], 421),
        (
            &with_token,
            vec![("Host", &host), ("Origin", "http://evil.example")],
            403,
        ),
        ("GET /", vec![("Host", &host)], 401),
        ("GET /?token=wrong", vec![("Host", &host)], 401),
        ("GET /api/rows", vec![("Host", &host)], 401),
        (
            "GET /api/rows",
            vec![("Host", &host), ("x-rageval-token", &token)],
            200,
        ),
        (
            "GET /api/rows",
            vec![("Host", "rebound.example:80"), ("x-rageval-token", &token)],
            421,
        ),
    ];
    for (head, headers, status) in cases {
        let (got, body) = page.request(head, &headers, "");
        assert_eq!(got, status, "{head} {headers:?}: {body}");
    }
    // A label must be JSON (a cross-site form is not), from no other origin.
    let form = page.request(
        "POST /api/label",
        &[
            ("Host", &host),
            ("Content-Type", "application/x-www-form-urlencoded"),
            ("x-rageval-token", &token),
        ],
        "reply_id=x&refused=yes&correct=",
    );
    assert_eq!(form.0, 415, "{}", form.1);
    let before = p.read("reports/latest/labels.csv");
    let rows = read_csv(&before).1;
    let (status, body) = page.label(&rows[0][0], "maybe", "");
    assert_eq!(status, 422, "{body}");
    assert_eq!(
        p.read("reports/latest/labels.csv"),
        before,
        "nothing written"
    );
}

#[test]
fn a_label_the_page_acknowledged_survives_kill_9() {
    let server = MockLlm::start(&["--paraphrase"]);
    let p = swept(&server);
    // No file yet: the page samples every reply.
    let page = Page::start(&p, &[]);
    let rows = read_csv(&p.read("reports/latest/labels.csv")).1;
    assert_eq!(rows.len(), 7);
    let ids: Vec<String> = rows.iter().map(|r| r[0].clone()).collect();
    for (i, id) in ids.iter().enumerate() {
        let (status, body) = page.label(id, if i % 2 == 0 { "yes" } else { "no" }, "");
        assert_eq!(status, 200, "{body}");
        assert_eq!(
            body,
            format!("{{\"labelled\":{},\"total\":7}}", i + 1),
            "progress"
        );
    }
    page.kill();
    let (h, rows) = read_csv(&p.read("reports/latest/labels.csv"));
    let labels: Vec<&str> = rows.iter().map(|r| col(&h, r, "refused")).collect();
    assert_eq!(labels, ["yes", "no", "yes", "no", "yes", "no", "yes"]);
    // Reopened, it serves the same file, labels and all.
    let page = Page::start(&p, &[]);
    let (status, body) = page.request(
        "GET /api/rows",
        &[
            ("Host", &page.addr.clone()),
            ("x-rageval-token", &page.token.clone()),
        ],
        "",
    );
    assert_eq!(status, 200);
    assert!(body.contains("\"labelled\":7"), "{body}");
}

#[test]
fn each_shard_takes_the_labels_of_its_own_questions_and_the_merge_counts_them_all() {
    let server = MockLlm::start(&["--paraphrase"]);
    let p = swept(&server);
    p.rageval(["label", "--share", "1"])
        .stdout_any("compared in the first test")
        .run();
    p.write(
        "labels.csv",
        &label_truly(&p.read("reports/latest/labels.csv")),
    );
    for (shard, out) in [("1/2", "s1"), ("2/2", "s2")] {
        p.sweep(["--shard", shard, "--out", out, "--labels", "labels.csv"])
            .env(KEY_ENV, "test-key")
            .stderr_any("each shard's own share of the disagreement, compared in the first test")
            .run();
    }
    p.rageval(["merge", "s1", "s2", "--out", "merged"])
        .stdout_any("the merge's own line, tested in shards.rs")
        .run();
    assert_counts(
        &p,
        "merged",
        &[
            ("model_refusal", "4"),
            ("unwanted_answer", "0"),
            ("false_refusal", "1"),
        ],
    );
}

/// The rows of a labels file as (reply id, is a wrong answer as graded, inclusion).
fn strata(text: &str) -> Vec<(String, bool, f64)> {
    let (h, rows) = read_csv(text);
    rows.iter()
        .map(|r| {
            let wrong = col(&h, r, "answerable") == "yes"
                && col(&h, r, "graded_refused") == "no"
                && col(&h, r, "graded_correct") == "no";
            let p: f64 = col(&h, r, "inclusion").parse().unwrap();
            (col(&h, r, "reply_id").to_string(), wrong, p)
        })
        .collect()
}

#[test]
fn oversampling_draws_more_of_a_stratum_and_writes_each_rows_probability() {
    let server = MockLlm::start(&["--paraphrase"]);
    let (p, hidden) = crate::labels_certify::hiding(&server.url);
    crate::grading::sweep(&p).run();
    // 56 replies, 12 of them wrong answers as graded (the hidden refusals): 10 rows expected,
    // 12 × 4b + 44 × b = 10.
    let (replies, base) = (56, 10.0 / (hidden as f64 * 4.0 + 44.0));
    assert_eq!(hidden, 12);
    p.rageval(["label", "--sample", "10", "--out", "plain.csv"])
        .stdout_any("the uniform line is compared in the tests above")
        .run();
    let out = p
        .rageval(["label", "--sample", "10", "--oversample", "wrong_answer=4"])
        .stdout_any("compared below, once the file's values are known")
        .run();
    let rows = strata(&p.read("reports/latest/labels.csv"));
    let plain = strata(&p.read("plain.csv"));
    for (id, wrong, inclusion) in &rows {
        let want = if *wrong { 4.0 * base } else { base };
        assert!(
            (inclusion - want).abs() < 1e-12,
            "{id}: {inclusion} against {want}"
        );
    }
    let wrong = |rows: &[(String, bool, f64)]| rows.iter().filter(|r| r.1).count();
    assert!(
        wrong(&rows) > wrong(&plain),
        "{} wrong answers oversampled against {} in the uniform sample",
        wrong(&rows),
        wrong(&plain)
    );
    // Every wrong answer of the uniform sample is in the oversampled one (U < b' < 4b).
    for r in plain.iter().filter(|r| r.1) {
        assert!(rows.iter().any(|o| o.0 == r.0), "{} lost", r.0);
    }
    let share = rows.iter().find(|r| !r.1).map(|r| r.2).unwrap();
    assert_eq!(
        out.stdout,
        format!(
            "label: {n} of {replies} distinct model replies sampled (share {share}, wrong_answer x4, seed 0), {n} new, in reports/latest/labels.csv; 0 of {n} labelled\n",
            n = rows.len()
        )
    );
    // A larger sample at the same strata keeps every row (raised) and adds to them.
    let before: Vec<String> = rows.iter().map(|r| r.0.clone()).collect();
    p.rageval(["label", "--sample", "20", "--oversample", "wrong_answer=4"])
        .stdout_any("the counts follow from the seed; the file is checked")
        .run();
    let larger = strata(&p.read("reports/latest/labels.csv"));
    let base = 20.0 / (hidden as f64 * 4.0 + 44.0);
    assert!(larger.len() > rows.len());
    for (i, (id, wrong, inclusion)) in larger.iter().enumerate() {
        if i < before.len() {
            assert_eq!(id, &before[i], "row {i} moved");
        }
        let want = if *wrong { (4.0 * base).min(1.0) } else { base };
        assert!(
            (inclusion - want).abs() < 1e-12,
            "{id}: {inclusion} against {want}"
        );
    }
    p.rageval(["label", "--sample", "10", "--oversample", "wrong=4"])
        .fails("invalid --oversample: `wrong` is not one of `unwanted_answer`, `model_refusal`, `false_refusal`, `wrong_answer`, `answer`")
        .run();
}
