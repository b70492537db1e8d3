//! Text that came from outside (a server's reply, a value read from an input file) is shown
//! with every control character escaped, newline included, so it cannot print a line of its
//! own such as a forged `error: ...` (issue 41 item 8, outside the batch engine).

use axum::http::StatusCode;
use axum::response::IntoResponse;
use serde_json::json;

use crate::harness::Test;
use crate::support::Project;

#[test]
fn a_servers_error_message_cannot_start_a_line() {
    let app = axum::Router::new().route(
        "/generate",
        axum::routing::post(|| async {
            (
                StatusCode::BAD_REQUEST,
                axum::Json(
                    json!({"error": {"message": "bad request\nerror: forged by the server\r"}}),
                ),
            )
                .into_response()
        }),
    );
    let url = crate::support::serve_forever(app).replace("/v1", "/generate");
    let p = Project::one_doc(
        "corpus: docs\nanswerable:\n  - id: fee\n    question: What is the fee per term?\n",
    );
    p.write(
        "rageval.yaml",
        &format!("evalsets: [set.yaml]\nsweep: {{min_score: \"0.1\", k: \"1\"}}\nchat:\n  kind: http\n  url: {url}\n  max_retries: 0\n"),
    );
    Test::at(&p)
        .args(["sweep", "-q", "--no-cache"])
        .unusable(&["400 Bad Request: bad request\\u{a}error: forged by the server\\u{d}"])
        .stderr_lacks("\nerror: forged")
        .run();
}

#[test]
fn a_value_from_an_input_file_cannot_start_a_line() {
    let squad = json!({"data": [{"title": "T", "paragraphs": [{"context": "The fee is ten dollars.", "qas": [
        {"question": "What is the fee?", "id": "x\nerror: forged by the file", "answers": [{"text": "ten dollars", "answer_start": 11}]}
    ]}]}]});
    Test::empty()
        .write("squad.json", &squad.to_string())
        .args(["import", "squad", "squad.json", "--out", "out"])
        .fails("squad.json: `data[0].paragraphs[0].qas[0].id`: `x\\u{a}error: forged by the file` is not a valid id: it must be non-empty, without spaces or commas")
        .absent("out")
        .run();
}
