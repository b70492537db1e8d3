//! Tuning insight end to end: the sample's recommendation, AUC and per-question maximum
//! minScore against numbers worked out by hand, chart data against results.json, escaping.

use serde_json::Value;

use crate::harness::{Record, Test, SAMPLE_SWEEP_TABLE};
use crate::support::Project;

/// The `<script type="application/json" id="chart-data">` block of report.html.
pub fn chart_data(html: &str) -> Value {
    let open = "<script type=\"application/json\" id=\"chart-data\">";
    let start = html.find(open).expect("chart data block") + open.len();
    let len = html[start..].find("</script>").expect("closed");
    serde_json::from_str(&html[start..start + len]).expect("chart data is JSON")
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol
}

/// Worked out by hand from the sample sweep (README's command, default policy):
///
/// - Recommendation. summary.csv: unwanted answers are 6/9, 5/9 at minScore 0.1 and 0.2 and
///   1/9 (11.1%) from 0.3 up, so only minScore >= 0.3 meets `max_unwanted_answer_rate: 0.2`;
///   false refusals are 8/17 (47.1%) at 0.3 and 11/17 (64.7%) at 0.4 and 0.5, so only 0.3 meets
///   `max_false_refusal_rate: 0.5`. The four k at 0.3 share both rates; prompt tokens per
///   question are 83.7, 102.8, 114.5, 116.7, and each k has 1 wrong answer of 17 answerable
///   questions (an answer missing its expected text), so k=1 costs least:
///   8/17 + 3 * 1/9 + 1 * 1/17 + 0.00005 * 83.69 = 0.8669.
/// - AUC. results.json best scores: 17 answerable, 9 unanswerable = 153 pairs. Counting pairs in
///   which the answerable question scores higher: 123 wins and one exact tie (`languages` and
///   `summer-camp` both 0.2696799412369728), so AUC = 123.5 / 153. (`workshop-time`,
///   0.27735008, is not a tie with `vice-president`, 0.27735009: runs.csv's six decimals hide
///   the difference, results.json shows it.)
/// - Maximum minScore. A second sweep at k=8 over minScore 0..0.7 in steps of 0.001; for each
///   answerable question the highest step at which runs.csv says `expected_in_prompt=true`.
///   The exact value lies in [step, step + 0.001). `laptop-follow-up` ("How long can I keep
///   it?", asked without its conversation) never gets its expected source into the prompt.
const MAX_MIN_SCORE: &[(&str, Option<f64>)] = &[
    ("fee-per-term", Some(0.353)),
    ("scholarship", Some(0.282)),
    ("laptop-loan-length", Some(0.379)),
    ("showcase-minutes", Some(0.619)),
    ("president", Some(0.554)),
    ("laptop-follow-up", None),
    ("refund", Some(0.195)),
    ("how-to-pay", Some(0.306)),
    ("term-length", Some(0.223)),
    ("fee-uses", Some(0.456)),
    ("workshop-time", Some(0.277)),
    ("workshop-room", Some(0.369)),
    ("languages", Some(0.269)),
    ("own-laptop", Some(0.654)),
    ("parents-visit", Some(0.300)),
    ("showcase-when", Some(0.516)),
    ("laptop-rules", Some(0.514)),
];

#[test]
fn sample_insight_matches_the_hand_computation() {
    // --wide: the prose lines unwrapped, as they are matched here.
    let out = Test::sweep()
        .arg("--wide")
        .stdout_contains(
            "\nrecommended: min_score=0.3,k=1 (best, not certified at 95% by ordered tests): false refusals 47% [26–69], unwanted 11% [2–43]",
        )
        // Worked by hand (docs/insight.md): 1 of 9 unanswerable answered, 8 of 17 answerable
        // refused, 4 chains along minScore per limit, so each chain starts at 0.05 / 2 / 4;
        // mpmath gives the sizes.
        .stdout_contains("\nto certify min_score=0.3,k=1 at 95% by ordered tests: unwanted 1 of 9 (bound 57.2% > 20%; its chain stopped at min_score=0.5,k=1): 195 unanswerable questions give a chance of 80% at this rate, or 23 with none answered; false refusals 8 of 17 (bound 77.4% > 50%; its chain stopped at min_score=0.1,k=1): 3246 answerable questions give a chance of 80% at this rate, or 8 with none refused; adding questions and re-sweeping until certified breaks this promise unless `recommend.sequential: true`\n")
        .stdout_contains("\nstability: min_score=0.3,k=1 chosen in ")
        .stdout_contains("\nseparability: AUC 0.807 for the best score (17 answerable vs 9 unanswerable); no minScore separates them")
        .stdout_snapshot("insight__sample_insight_matches_the_hand_computation")
        .run();

    let (record, summary) = (out.results(), out.summary());
    assert_eq!(summary["recommended"], "min_score=0.3,k=1");
    let rec = &summary["recommendation"];
    assert_eq!(rec["setting"], "min_score=0.3,k=1");
    assert_eq!(rec["feasible"], 4);
    assert!(close(rec["cost"].as_f64().unwrap(), 0.8669, 1e-4), "{rec}");
    assert_eq!(
        (
            &rec["certified"],
            &rec["confidence"],
            &rec["certified_settings"]
        ),
        (
            &Value::Bool(false),
            &serde_json::json!(0.95),
            &serde_json::json!(0)
        )
    );
    let bounds = rec["bounds"].as_array().unwrap();
    assert_eq!(bounds[0]["limit"], "max_unwanted_answer_rate");
    assert_eq!(
        (&bounds[0]["failures"], &bounds[0]["questions"]),
        (&serde_json::json!(1), &serde_json::json!(9))
    );
    // An 80% chance at 1 in 9 against 20%, at the level of its chain's head (0.05 / 2 / 4):
    // scipy's binomial gives 195 too (the smallest n whose critical count is reached with
    // probability 0.8 at a rate of 1/9).
    assert_eq!(bounds[0]["questions_needed"], 195);
    assert_eq!(bounds[0]["stopped_at"], "min_score=0.5,k=1");
    assert_eq!(bounds[1]["questions_needed_with_none"], 8);
    assert_eq!(rec["bootstrap"]["resamples"], 200);
    // 9 unanswerable questions are fewer than 10 per class: no folds by default.
    assert!(rec.get("cross_validation").is_none(), "{rec}");
    assert_eq!(summary["policy"]["max_unwanted_answer_rate"], 0.2);

    let sep = &summary["separability"];
    assert!(
        close(sep["auc"].as_f64().unwrap(), 123.5 / 153.0, 1e-12),
        "{sep}"
    );
    assert_eq!(sep["clean"], Value::Null);
    // member-count (0.536) is the best unanswerable score, laptop-follow-up (0.134) the worst
    // answerable.
    assert!(close(
        sep["overlap"].as_f64().unwrap(),
        0.536056 - 0.133631,
        1e-6
    ));

    let questions = &record.questions;
    assert_eq!(
        questions.values().filter(|q| q.answerable).count(),
        MAX_MIN_SCORE.len()
    );
    for &(id, step) in MAX_MIN_SCORE {
        let q = &questions[id];
        let Some(step) = step else {
            assert_eq!(q.expected_score, None, "{q:?}");
            continue;
        };
        let v = q.expected_score.unwrap_or_else(|| panic!("{id}: {q:?}"));
        assert!(
            v >= step && v < step + 0.001,
            "{id}: {v} not in [{step}, {step}+0.001)"
        );
    }
    for q in questions.values().filter(|q| !q.answerable) {
        assert_eq!(q.expected_score, None, "{q:?}");
    }

    // The Pareto column and the recommended row agree with results.json.
    let pareto: Vec<&str> = record
        .settings
        .keys()
        .filter(|id| summary["settings"][id]["pareto"] == true)
        .map(String::as_str)
        .collect();
    assert_eq!(
        pareto,
        [
            "min_score=0.2,k=1",
            "min_score=0.2,k=4",
            "min_score=0.3,k=1",
            "min_score=0.5,k=1",
            "min_score=0.5,k=2",
            "min_score=0.5,k=4",
            "min_score=0.5,k=8"
        ]
    );
    let md = out.read("reports/latest/report.md");
    assert!(md.contains("**Recommended: `min_score=0.3,k=1`**"), "{md}");
    assert!(
        md.contains("| 0.3 | 1 | 47% [26–69] (8) | 11% [2–43] (1) |"),
        "{md}"
    );
}

#[test]
fn no_setting_within_the_limits_names_the_closest() {
    let p = Project::sample();
    p.write(
        "rageval.yaml",
        "evalsets: [evalsets/club.yaml]\nrecommend:\n  max_unwanted_answer_rate: 0.0\n",
    );
    // 1/9 unwanted answers is the least any setting gives (minScore >= 0.3); of those only 0.3
    // keeps false refusals within 50%, and its k=1 has the fewest prompt tokens.
    let line = "no setting meets the limits (unwanted ≤ 0%, false refusals ≤ 50%); closest: min_score=0.3,k=1, which misses max_unwanted_answer_rate by 11.1 points (11.1% against a limit of 0%)";
    let summary = p
        .rageval(["sweep", "--wide"])
        .stdout_contains(line)
        .stdout_snapshot("insight__no_setting_within_the_limits_names_the_closest")
        .run()
        .summary();
    assert_eq!(summary["recommended"], Value::Null);
    assert_eq!(summary["recommendation"]["reason"], line);
    assert_eq!(
        summary["recommendation"]["closest"]["misses"][0]["limit"],
        "max_unwanted_answer_rate"
    );
}

#[test]
fn a_bad_policy_is_an_input_error() {
    let p = Project::sample();
    p.write(
        "rageval.yaml",
        "recommend:\n  max_unwanted_answer_rate: 1.5\n",
    );
    p.rageval(["sweep"])
        .status(2)
        .stderr_contains(
            "rageval.yaml:2: `recommend.max_unwanted_answer_rate`: must be a rate from 0 to 1, got 1.5",
        )
        .stderr(
            "error: rageval.yaml:2: `recommend.max_unwanted_answer_rate`: must be a rate from 0 to 1, got 1.5\n",
        )
        .run();
    p.rageval(["sweep"])
        .write("rageval.yaml", "recommend:\n  weights:\n    tokens: 1\n")
        .status(2)
        .stderr(
            "error: rageval.yaml:3:5: `recommend.weights`: unknown field `tokens`, expected one of `false_refusal_rate`, `unwanted_answer_rate`, `prompt_tokens_per_question`, `wrong_answer_rate`\n",
        )
        .run();
}

#[test]
fn chart_values_match_results_json() {
    let out = Test::sweep().stdout_snapshot(SAMPLE_SWEEP_TABLE).run();
    let (record, summary) = (out.results(), out.summary());
    let html = out.read("reports/latest/report.html");
    let charts = chart_data(&html);
    let settings = &record.settings;
    let setting = |id: &str| setting_row(&record, &summary, id);

    let lines = charts["lines"].as_array().unwrap();
    let ids: Vec<&str> = lines.iter().map(|c| c["id"].as_str().unwrap()).collect();
    assert_eq!(
        ids,
        [
            "false_refusal_rate",
            "unwanted_answer_rate",
            "prompt_tokens_per_question"
        ]
    );
    for chart in lines {
        let (x, y) = (chart["x"].as_str().unwrap(), chart["y"].as_str().unwrap());
        let mut points = 0;
        for series in chart["series"].as_array().unwrap() {
            for pt in series["points"].as_array().unwrap() {
                let s = setting(pt["setting"].as_str().unwrap());
                assert_eq!(pt["x"].as_f64(), s[x].as_f64(), "{chart}");
                assert_eq!(pt["y"].as_f64(), s[y].as_f64(), "{y} of {}", s["id"]);
                points += 1;
            }
        }
        assert_eq!(
            points,
            settings.len(),
            "every setting is plotted once in {y}"
        );
        // One line per value of the other dimension: 4 k values, or 5 minScores.
        let want = if x == "min_score" { 4 } else { 5 };
        assert_eq!(chart["series"].as_array().unwrap().len(), want);
        let figure = figure(&html, chart["id"].as_str().unwrap());
        // One marker per setting: a shape per line (circle, square, triangle, diamond).
        assert_eq!(markers(figure), settings.len(), "{y}");
        assert!(figure.contains("<polyline"), "{y}: lines drawn");
    }

    let strips = &charts["strips"];
    let questions = &record.questions;
    for (group, answerable) in [("answerable", true), ("unanswerable", false)] {
        let dots = strips[group].as_array().unwrap();
        let want: Vec<_> = questions
            .iter()
            .filter(|(_, q)| q.answerable == answerable)
            .collect();
        assert_eq!(dots.len(), want.len());
        for (dot, (id, q)) in dots.iter().zip(want) {
            assert_eq!(dot["question"], id.as_str());
            assert_eq!(dot["score"].as_f64(), q.best_score);
        }
    }
    assert_eq!(
        strips["threshold"].as_f64(),
        setting(summary["recommended"].as_str().unwrap())["min_score"].as_f64()
    );
    assert!(figure(&html, "best_scores").matches("<circle").count() >= questions.len());

    // The scatter's axis has a labelled tick to the left of its lowest point.
    let lowest = ["answerable", "unanswerable"]
        .iter()
        .flat_map(|g| strips[g].as_array().unwrap())
        .map(|d| d["score"].as_f64().unwrap())
        .fold(f64::INFINITY, f64::min);
    let tick = regex::Regex::new(r">\s*(-?\d+\.\d\d)\s*</text>").unwrap();
    let first_tick = tick
        .captures_iter(figure(&html, "best_scores"))
        .map(|c| c[1].parse::<f64>().unwrap())
        .fold(f64::INFINITY, f64::min);
    assert!(
        first_tick < lowest,
        "first tick {first_tick}, lowest point {lowest}"
    );

    // Lines that coincide are named together in the legend (k=1 and k=2 refuse alike at every
    // minScore, as do k=4 and k=8), and each line has its own marker shape.
    let fr = figure(&html, "false_refusal_rate");
    let coincide: Vec<&str> = fr
        .split("<span class=\"small coincide\">")
        .skip(1)
        .map(|s| &s[..s.find("</span>").unwrap()])
        .collect();
    assert_eq!(
        coincide,
        [
            "coincide (one line, the first drawn widest): k=1 = k=2",
            "coincide (one line, the first drawn widest): k=4 = k=8"
        ]
    );
    let fr_series = &lines[0]["series"];
    assert_eq!(fr_series[1]["same_as"], serde_json::json!(["k=1"]));
    assert_eq!(fr_series[2].get("same_as"), None);
    for shape in ["●", "■", "▲", "◆"] {
        assert!(fr.contains(&format!("\">{shape}</b> k=")), "{shape}");
    }
}

/// A setting of results.json as one object: its dimension values and its statistics.
fn setting_row(record: &Record, summary: &Value, id: &str) -> Value {
    let mut row = serde_json::json!(record.settings[id]);
    let obj = row.as_object_mut().unwrap();
    obj.extend(summary["settings"][id].as_object().unwrap().clone());
    obj.insert("id".into(), id.into());
    row
}

/// The point markers of a line chart's figure: circles, squares and polygons (the background is
/// the one other `<rect>`).
pub fn markers(figure: &str) -> usize {
    figure.matches("<circle").count()
        + figure.matches("<polygon").count()
        + figure.matches("<rect").count()
        - 1
}

/// The `<figure>` of chart `id`.
pub fn figure<'a>(html: &'a str, id: &str) -> &'a str {
    let open = format!("<figure id=\"chart-{id}\"");
    let start = html.find(&open).unwrap_or_else(|| panic!("no {open}"));
    let len = html[start..].find("</figure>").expect("closed figure");
    &html[start..start + len]
}

/// Markup that must show as text: in a section, a heading, a question and an expected answer.
pub const PAYLOADS: &[&str] = &["<script>alert(1)</script>", "<img src=x onerror=alert(1)>"];

/// A project whose corpus and questions carry script payloads, plus two that would leave a
/// trace in the DOM if they ever ran.
pub fn xss_project() -> Project {
    let p = Project::empty();
    p.write(
        "docs/evil.md",
        concat!(
            "# Membership fee\n",
            "The membership fee is ten dollars <script>alert(1)</script> per term <img src=x onerror=alert(1)> for everyone.\n\n",
            "# Lockers\n",
            "Pay the monthly locker charge <script>document.title='PWNED'</script> <img src=x onerror=\"document.body.setAttribute('data-pwned','1')\"> by card.\n\n",
            "# <img src=x onerror=alert(2)> Rules\n",
            "Be kind to other members.\n",
        ),
    );
    p.write(
        "set.yaml",
        concat!(
            "corpus: docs\n",
            "answerable:\n",
            "  - id: fee\n",
            "    question: What is the membership fee?\n",
            "    expect:\n",
            "      sources: [\"evil.md#Membership fee\"]\n",
            "      answer: [\"<b>ten</b> dollars\"]\n",
            "unanswerable:\n",
            "  - id: locker\n",
            "    question: How do I pay the locker charge?\n",
            "  - id: xss-question\n",
            "    question: \"<script>alert(3)</script> Who runs the club?\"\n",
        ),
    );
    p.rageval([
        "sweep",
        "--evalset",
        "set.yaml",
        "--min-score",
        "0,0.1",
        "--k",
        "1,3",
    ])
    .stdout_snapshot("insight__corpus_markup_reaches_report_html_only_as_text")
    .run();
    p
}

#[test]
fn corpus_markup_reaches_report_html_only_as_text() {
    let p = xss_project();
    let html = p.read("reports/latest/report.html");
    let answers: Vec<String> = crate::harness::results(&p, "reports/latest")
        .calls
        .into_values()
        .map(|c| c.reply)
        .collect();
    assert!(
        answers
            .iter()
            .any(|a| a.contains(PAYLOADS[0]) && a.contains(PAYLOADS[1]))
            && answers.iter().any(|a| a.contains("data-pwned")),
        "the mock must answer with the payload sentences for this test to mean anything: {answers:?}"
    );
    for payload in PAYLOADS {
        let escaped = payload.replace('<', "&lt;").replace('>', "&gt;");
        assert!(html.contains(&escaped), "{payload} not shown as text");
    }
    assert!(html.contains("&lt;script&gt;alert(3)&lt;/script&gt; Who runs the club?"));
    assert!(
        html.contains("&lt;img src=x onerror=alert(2)&gt; Rules"),
        "heading label"
    );
    assert!(
        html.contains("&lt;b&gt;ten&lt;/b&gt; dollars"),
        "expected answer"
    );
    assert!(!html.contains("<img"), "an img element");
    assert!(!html.contains("<b>ten"), "markup from the question set");
    assert_eq!(
        html.matches("<script").count(),
        1,
        "only the chart data block"
    );
    assert!(
        !chart_data_text(&html).contains("</"),
        "the JSON block cannot close itself"
    );
    let md = p.read("reports/latest/report.md");
    assert!(!md.contains("<script") && !md.contains("<img"), "{md}");
}

fn chart_data_text(html: &str) -> &str {
    let open = "id=\"chart-data\">";
    let start = html.find(open).unwrap() + open.len();
    &html[start..start + html[start..].find("</script>").unwrap()]
}
