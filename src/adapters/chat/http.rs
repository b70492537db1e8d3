//! `chat.kind: http`: the team's own generation step (a LangChain chain, a LlamaIndex
//! synthesizer, any service) behind `POST {url}` with `{"question", "passages"}`, answering
//! `{"answer", "usage"?}`. rageval sends no prompt: the endpoint builds its own, so a request
//! is the question and the passages alone and equal ones are one call.

use serde_json::Value;

use super::{CallError, ChatModel, ChatReply, ChatRequest, ErrorKind, Read, Usage};
use crate::adapters::http::{self, Endpoint, Endpoints, Failure};
use crate::base::BoxFuture;

/// The longest stretch of a question a failure message quotes.
const QUOTED_CHARS: usize = 80;

#[derive(Debug, Clone)]
pub struct HttpChat {
    client: reqwest::Client,
    endpoints: Endpoints,
    name: String,
}

impl HttpChat {
    /// A client of `endpoints` (the whole URL of each is the endpoint), known as `name` in
    /// reports and cache keys.
    pub fn new(endpoints: impl Into<Endpoints>, name: &str) -> Result<Self, String> {
        Ok(HttpChat {
            client: http::client()?,
            endpoints: endpoints.into(),
            name: name.to_string(),
        })
    }

    /// One attempt's reply, read from `server` (see [`super::timed_attempt`]).
    async fn read(&self, server: &Endpoint, body: Vec<u8>) -> Result<Read, Failure> {
        let bytes = server.post_for_body(&self.client, "", body).await?;
        // As for an HTTP retriever: a body that is not JSON at all (a proxy's error page, a
        // reply cut short) may mend on another attempt; JSON of another shape is what the
        // endpoint meant.
        let v: Value = serde_json::from_slice(&bytes).map_err(|e| {
            Failure::retryable(ErrorKind::Malformed, format!("the reply is not JSON: {e}"))
        })?;
        let malformed = |why: &str| {
            Failure::fatal(
                ErrorKind::Malformed,
                format!("the reply is not `{{\"answer\": \"...\", \"usage\"?: {{prompt_tokens, completion_tokens}}}}`: {why}"),
            )
        };
        let answer = match &v["answer"] {
            Value::String(s) => s.clone(),
            Value::Null if v.get("answer").is_none() => {
                return Err(malformed("it has no `answer`"))
            }
            other => {
                return Err(malformed(&format!(
                    "`answer` is {}, not a string",
                    kind_of(other)
                )))
            }
        };
        let usage = match v.get("usage") {
            None | Some(Value::Null) => None,
            Some(u) => {
                let count = |field: &str| u.get(field).and_then(Value::as_u64);
                match (count("prompt_tokens"), count("completion_tokens")) {
                    (Some(prompt_tokens), Some(completion_tokens)) => Some(Usage {
                        prompt_tokens,
                        completion_tokens,
                        // As OpenAI reports them, when the endpoint passes its model's on.
                        cached_prompt_tokens: u
                            .pointer("/prompt_tokens_details/cached_tokens")
                            .and_then(Value::as_u64)
                            .unwrap_or(0)
                            .min(prompt_tokens),
                        estimated: false,
                    }),
                    _ => {
                        return Err(malformed(
                            "`usage` needs `prompt_tokens` and `completion_tokens` as whole numbers (leave `usage` out to have them estimated)",
                        ))
                    }
                }
            }
        };
        Ok((answer, usage, None))
    }
}

/// How a JSON value is named in a message.
fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

impl ChatModel for HttpChat {
    fn model(&self) -> String {
        self.name.clone()
    }

    /// The endpoints (redacted): two profiles at different URLs are different chains.
    fn params(&self) -> Value {
        serde_json::json!({ "url": self.endpoints.shown })
    }

    fn takes_passages(&self) -> bool {
        true
    }

    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatReply, CallError>> {
        Box::pin(async move {
            let Some(grounded) = &request.grounded else {
                // The planner builds grounded requests for this model; a chat request here is
                // a bug, reported as a failed call rather than a crash.
                return Err(CallError {
                    kind: ErrorKind::Client,
                    message: "a generation endpoint takes the question and passages, not messages"
                        .into(),
                    deferred: false,
                });
            };
            let body = serde_json::to_vec(grounded).expect("strings and numbers serialize");
            let cost = request.estimated_prompt_tokens();
            http::call_any(&self.endpoints, cost, |server| {
                super::timed_attempt(server, request, |_| self.read(server, body.clone()))
            })
            .await
            .map_err(|e| CallError {
                message: format!(
                    "generation for question `{}` failed: {} at {}: {}",
                    crate::base::text::excerpt(&grounded.question, QUOTED_CHARS),
                    e.kind.as_str(),
                    self.endpoints.shown,
                    e.message
                ),
                kind: e.kind,
                deferred: false,
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapters::chat::{Grounded, Score, SentPassage};

    fn request() -> ChatRequest {
        ChatRequest {
            grounded: Some(Grounded {
                question: "How much is it?".into(),
                passages: vec![SentPassage {
                    id: "fee.md#0".into(),
                    source: "fee.md".into(),
                    heading: "Fee".into(),
                    text: "Ten dollars.".into(),
                    score: Score(0.5),
                }],
            }),
            ..ChatRequest::of(Vec::new())
        }
    }

    /// The body is the contract's two fields, nothing else: a seed, a slot or a prompt
    /// format would split equal requests into several calls.
    #[test]
    fn the_body_is_the_question_and_the_passages() {
        let r = request().with_seed(3);
        assert_eq!(
            serde_json::to_string(r.grounded.as_ref().unwrap()).unwrap(),
            r#"{"question":"How much is it?","passages":[{"id":"fee.md#0","source":"fee.md","heading":"Fee","text":"Ten dollars.","score":0.5}]}"#
        );
        // 15 characters: 4 tokens; 12: 3.
        assert_eq!(r.estimated_prompt_tokens(), 7);
    }

    #[tokio::test]
    async fn a_chat_request_is_a_failed_call_not_a_crash() {
        let chat = HttpChat::new(Endpoint::for_tests("http://127.0.0.1:1/generate"), "c").unwrap();
        let e = chat
            .complete(&ChatRequest::of(Vec::new()))
            .await
            .unwrap_err();
        assert_eq!(e.kind, ErrorKind::Client);
        assert!(chat.takes_passages());
        assert_eq!(
            chat.params(),
            serde_json::json!({"url": "http://127.0.0.1:1/generate"})
        );
    }
}
