//! Swept values that change nothing get one warning line each (issue 39): an `http` retriever
//! whose scores all sit above the swept minScores and whose lists are shorter than the swept
//! k, and one returning reciprocal-rank-fusion scores. (The sample sweep, pinned whole by the
//! `sample_sweep` snapshot tests with its empty stderr, gets none.)

use axum::extract::{Json, Path as UrlPath};
use axum::routing::post;
use axum::Router;
use serde_json::{json, Value};

use crate::rerank::{PASSAGES, SET};
use crate::support::Project;

/// `/high`: two passages scored 0.9 and 0.8 for every question; `/rrf`: the same two with
/// fused-rank scores (1/61 and 1/62).
async fn search(UrlPath(mode): UrlPath<String>, Json(_): Json<Value>) -> Json<Value> {
    let scores = if mode == "rrf" {
        [1.0 / 61.0, 1.0 / 62.0]
    } else {
        [0.9, 0.8]
    };
    let hits: Vec<Value> = ["hours", "sunday"]
        .iter()
        .zip(scores)
        .map(|(id, score)| {
            let text = PASSAGES.iter().find(|p| p.0 == *id).unwrap().1;
            json!({"id": id, "source": format!("{id}.md"), "text": text, "score": score})
        })
        .collect();
    Json(json!({ "hits": hits }))
}

fn project(url: &str, sweep: &str) -> Project {
    let p = Project::empty();
    p.write("sets/shop.yaml", SET);
    p.write(
        "rageval.yaml",
        &format!(
            "evalsets: [sets/shop.yaml]\nsweep: {sweep}\nretriever:\n  kind: http\n  url: {url}\n"
        ),
    );
    p
}

#[test]
fn swept_values_that_change_nothing_are_named_in_one_line_each() {
    let runtime = crate::support::server_runtime();
    let addr = crate::support::serve(&runtime, Router::new().route("/{mode}", post(search)));
    // Every score is above 0.1, 0.2 and 0.3; no list is longer than 2.
    let p = project(
        &format!("http://{addr}/high"),
        "{min_score: \"0.1..0.3\", k: \"1,2,4,8\"}",
    );
    p.rageval(["sweep", "--out", "out", "--quiet"])
        .stderr(concat!(
            "warning: min_score 0.1, 0.2 and 0.3 send the same prompts for every question (no score the retriever returned lies between them): each group measures one setting; sweep values that differ\n",
            "warning: k 2, 4 and 8 send the same prompts for every question (no question has more passages passing minScore than 2): each group measures one setting; sweep values that differ\n",
        ))
        .run();
    // Fused-rank scores: one line for minScore, though 0.01 and 0.02 do filter differently.
    let p = project(
        &format!("http://{addr}/rrf"),
        "{min_score: \"0.01,0.0162,0.02\", k: \"2\"}",
    );
    p.rageval(["sweep", "--out", "out", "--quiet"])
        .stderr(
            "warning: min_score is swept over scores that do not compare across questions: every question's top score is below 0.05 (the highest is 0.0164), as reciprocal rank fusion gives; a threshold on them is a threshold on rank, so have the retriever return a similarity from 0 to 1 (or sweep k alone)\n",
        )
        .run();
    // Scores that filter, and lists as long as k: no warning.
    let p = project(
        &format!("http://{addr}/high"),
        "{min_score: \"0.5,0.85\", k: \"1,2\"}",
    );
    p.rageval(["sweep", "--out", "out", "--quiet"]).run();
}
