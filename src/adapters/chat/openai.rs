//! An OpenAI-compatible chat model over HTTP: `POST {base_url}/chat/completions`, plain or
//! streamed (server-sent events), with retries. Works with OpenAI, Azure, vLLM, Ollama,
//! llama.cpp, LM Studio, TGI and `rageval mock-llm`.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::{
    estimate_prompt_tokens, CallError, ChatModel, ChatReply, ChatRequest, ErrorKind, Read, Usage,
};
use crate::adapters::http::{self, transport_failure, Endpoint, Endpoints, Failure};
use crate::base::BoxFuture;

/// Where chat requests go, under the base URL.
const PATH: &str = "chat/completions";

#[derive(Debug, Clone)]
pub struct OpenAiChat {
    client: reqwest::Client,
    endpoints: Endpoints,
    model: String,
    temperature: f64,
    max_tokens: Option<u32>,
    stream: bool,
    /// Send a request's [`ReplyFormat`] as `response_format` (the judge's and the generator's
    /// `structured_output`).
    structured: bool,
}

/// What a server's rejection of `response_format` is told to do.
const STRUCTURED_HINT: &str = "the request carried a JSON Schema as `response_format` (structured output); if this server does not accept it, set `structured_output: false` in this model's section";

impl OpenAiChat {
    /// A client of `endpoints`: one server, or several sharing a rate limit.
    pub fn new(
        endpoints: impl Into<Endpoints>,
        model: &str,
        temperature: f64,
        max_tokens: Option<u32>,
        stream: bool,
    ) -> Result<Self, String> {
        Ok(OpenAiChat {
            client: http::client()?,
            endpoints: endpoints.into(),
            model: model.to_string(),
            temperature,
            max_tokens,
            stream,
            structured: false,
        })
    }

    /// The same client, sending each request's reply format as `response_format` when `on`.
    pub fn with_structured_output(mut self, on: bool) -> Self {
        self.structured = on;
        self
    }

    /// What a request costs under `tokens_per_minute`: the prompt-token estimate plus
    /// `max_tokens` (what a hosted API reserves for the reply), when set.
    fn cost(&self, request: &ChatRequest) -> u64 {
        estimate_prompt_tokens(&request.messages) + u64::from(self.max_tokens.unwrap_or(0))
    }

    fn body(&self, request: &ChatRequest) -> Vec<u8> {
        serde_json::to_vec(&self.body_value(request, self.stream)).expect("a JSON value serializes")
    }

    /// The request's JSON body, streamed or not.
    fn body_value(&self, request: &ChatRequest, stream: bool) -> Value {
        let mut body = json!({
            "model": self.model,
            "messages": request.messages,
            "temperature": self.temperature,
            "stream": stream,
        });
        if let Some(m) = self.max_tokens {
            body["max_tokens"] = json!(m);
        }
        if let Some(seed) = request.seed {
            body["seed"] = json!(seed);
        }
        if let Some(format) = request.format.filter(|_| self.structured) {
            body["response_format"] = format.response_format();
        }
        if stream {
            body["stream_options"] = json!({"include_usage": true});
        }
        body
    }

    /// One attempt on `server`, timed and checked.
    async fn attempt(
        &self,
        server: &Endpoint,
        request: &ChatRequest,
        body: Vec<u8>,
    ) -> Result<ChatReply, Failure> {
        super::timed_attempt(server, request, |started| {
            self.read(server, request, body, started)
        })
        .await
    }

    /// One attempt's reply, read from `server`.
    async fn read(
        &self,
        server: &Endpoint,
        request: &ChatRequest,
        body: Vec<u8>,
        started: Instant,
    ) -> Result<Read, Failure> {
        let mut response = server
            .post(&self.client, PATH, body)
            .send()
            .await
            .map_err(|e| transport_failure(&e, server))?;
        let status = response.status();
        if !status.is_success() {
            let mut failure = server.error_reply(response).await;
            let structured = self.structured && request.format.is_some();
            if structured && status.is_client_error() && failure.error.kind != ErrorKind::Auth {
                failure.error.message = format!("{} ({STRUCTURED_HINT})", failure.error.message);
            }
            return Err(failure);
        }
        if self.stream {
            read_stream(&mut response, started, server).await
        } else {
            let bytes = server.read_body(response, PATH).await?;
            let v: Value = serde_json::from_slice(&bytes).map_err(|e| {
                Failure::fatal(ErrorKind::Malformed, format!("response is not JSON: {e}"))
            })?;
            let text = match &v["choices"][0]["message"]["content"] {
                Value::String(s) => s.clone(),
                Value::Null if v["choices"][0]["message"].is_object() => String::new(),
                _ => {
                    return Err(Failure::fatal(
                        ErrorKind::Malformed,
                        "response has no `choices[0].message.content`",
                    ))
                }
            };
            Ok((text, parse_usage(&v), None))
        }
    }
}

/// The usage a reply (or a streamed chunk) reports: its `usage`, with the prompt tokens the
/// server reused from its prompt cache, which OpenAI (and vLLM, and a recent llama.cpp) report
/// as `usage.prompt_tokens_details.cached_tokens` and llama.cpp as `timings.cache_n`. A count
/// past the prompt's own is the server's error: it is capped at `prompt_tokens`.
pub fn parse_usage(reply: &Value) -> Option<Usage> {
    let u = &reply["usage"];
    let prompt_tokens = u["prompt_tokens"].as_u64()?;
    Some(Usage {
        prompt_tokens,
        completion_tokens: u["completion_tokens"].as_u64().unwrap_or(0),
        cached_prompt_tokens: cached_tokens(reply).unwrap_or(0).min(prompt_tokens),
        estimated: false,
    })
}

/// The prompt tokens a reply or chunk says the server reused, when it says.
fn cached_tokens(reply: &Value) -> Option<u64> {
    reply["usage"]["prompt_tokens_details"]["cached_tokens"]
        .as_u64()
        .or_else(|| reply["timings"]["cache_n"].as_u64())
}

/// Read an SSE stream to its end: the text, the usage if a chunk carried it, and the time to
/// the first non-empty piece of content. A stream longer than [`http::MAX_REPLY_BYTES`] is
/// refused as a whole reply would be.
async fn read_stream(
    response: &mut reqwest::Response,
    started: Instant,
    endpoint: &Endpoint,
) -> Result<(String, Option<Usage>, Option<Duration>), Failure> {
    let mut buf: Vec<u8> = Vec::new();
    let mut text = String::new();
    let mut usage: Option<Usage> = None;
    let mut cached = None;
    let mut ttft = None;
    let mut done = false;
    let mut read = 0usize;
    while !done {
        let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| transport_failure(&e, endpoint))?
        else {
            break;
        };
        read += chunk.len();
        if read > http::MAX_REPLY_BYTES {
            return Err(Failure::fatal(
                ErrorKind::Malformed,
                format!(
                    "the stream from {} is longer than the limit of {} MiB",
                    endpoint.shown_url(PATH),
                    http::MAX_REPLY_BYTES >> 20
                ),
            ));
        }
        buf.extend_from_slice(&chunk);
        while let Some(end) = buf.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = buf.drain(..=end).collect();
            let line = String::from_utf8_lossy(&line);
            let Some(data) = line.trim_end().strip_prefix("data:") else {
                continue;
            };
            let data = data.trim();
            if data == "[DONE]" {
                done = true;
                break;
            }
            let v: Value = serde_json::from_str(data).map_err(|e| {
                Failure::fatal(
                    ErrorKind::Malformed,
                    format!("stream chunk is not JSON: {e}"),
                )
            })?;
            if let Some(piece) = v["choices"][0]["delta"]["content"].as_str() {
                if !piece.is_empty() && ttft.is_none() {
                    ttft = Some(started.elapsed());
                }
                text.push_str(piece);
            }
            if let Some(u) = parse_usage(&v) {
                usage = Some(u);
            }
            // llama.cpp sends `timings` in the last chunk, which may not be the one with `usage`.
            if let Some(n) = cached_tokens(&v) {
                cached = Some(n);
            }
        }
    }
    if !done {
        return Err(Failure {
            error: CallError {
                kind: ErrorKind::Transport,
                message: "the stream ended without `data: [DONE]`".into(),
                deferred: false,
            },
            retry: true,
            retry_after: None,
        });
    }
    let usage = usage.map(|u| Usage {
        cached_prompt_tokens: cached.unwrap_or(0).min(u.prompt_tokens),
        ..u
    });
    Ok((text, usage, ttft))
}

impl ChatModel for OpenAiChat {
    fn model(&self) -> String {
        self.model.clone()
    }

    fn params(&self) -> Value {
        let mut params = json!({"temperature": self.temperature, "max_tokens": self.max_tokens});
        // Only when on, so that the keys of every other call stay as they were.
        if self.structured {
            params["structured_output"] = json!(true);
        }
        params
    }

    fn prefix_cached(&self) -> bool {
        true
    }

    fn batch_body(&self, request: &ChatRequest) -> Option<Value> {
        Some(self.body_value(request, false))
    }

    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatReply, CallError>> {
        Box::pin(async move {
            let body = self.body(request);
            http::call_any(&self.endpoints, self.cost(request), |server| {
                self.attempt(server, request, body.clone())
            })
            .await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapters::prompt::{Message, Role};

    /// A stream that never sends `[DONE]` is cut at the reply limit, naming the URL.
    #[tokio::test]
    async fn an_endless_stream_is_cut_at_the_reply_limit() {
        use axum::routing::post;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let chunk = "data: {\"choices\":[{\"delta\":{\"content\":\"\"}}]}\n".repeat(1000);
        let app = axum::Router::new().route(
            "/v1/chat/completions",
            post(move || async move {
                let piece = axum::body::Bytes::from(chunk);
                let body = futures_util::stream::repeat(Ok::<_, std::convert::Infallible>(piece));
                axum::body::Body::from_stream(body)
            }),
        );
        tokio::spawn(async move { axum::serve(listener, app).await });
        // 32 MiB through a debug build on a busy machine: more than the 1 s of `for_tests`.
        let server = Endpoint::new(
            &format!("http://{addr}/v1"),
            "RAGEVAL_TEST_NO_SUCH_VAR",
            &[],
            Duration::from_secs(60),
            http::RetryPolicy::default(),
        )
        .unwrap();
        let chat = OpenAiChat::new(server.clone(), "m", 0.0, None, true).unwrap();
        let request = ChatRequest {
            messages: Vec::new(),
            seed: None,
            grounded: None,
            slot: 0,
            format: None,
        };
        let f = chat
            .attempt(&server, &request, chat.body(&request))
            .await
            .unwrap_err();
        assert_eq!(
            f.error.message,
            format!("the stream from http://{addr}/v1/chat/completions is longer than the limit of 32 MiB")
        );
    }

    /// The usage parts of replies as the servers send them: OpenAI's (`cached_tokens` in
    /// `prompt_tokens_details`), llama-server's (that and `timings`, taken from a real reply
    /// of the build `scripts/real-model.sh` installs), `timings` alone (older llama.cpp), and
    /// none.
    #[test]
    fn cached_prompt_tokens_are_read_from_openai_and_llama_cpp_replies() {
        let usage = |body: &str| parse_usage(&serde_json::from_str(body).unwrap());
        let openai = r#"{"usage":{"prompt_tokens":2006,"completion_tokens":300,"total_tokens":2306,
            "prompt_tokens_details":{"cached_tokens":1920,"audio_tokens":0}}}"#;
        let llama = r#"{"usage":{"completion_tokens":8,"prompt_tokens":25,"total_tokens":33,
            "prompt_tokens_details":{"cached_tokens":24}},
            "timings":{"cache_n":24,"prompt_n":1,"prompt_ms":68.508,"predicted_n":8}}"#;
        let timings = r#"{"usage":{"completion_tokens":8,"prompt_tokens":25},
            "timings":{"cache_n":17,"prompt_n":8}}"#;
        let plain = r#"{"usage":{"completion_tokens":8,"prompt_tokens":25}}"#;
        let past = r#"{"usage":{"prompt_tokens":25,"prompt_tokens_details":{"cached_tokens":99}}}"#;
        let got: Vec<(u64, u64, u64)> = [openai, llama, timings, plain, past]
            .iter()
            .map(|b| usage(b).unwrap())
            .map(|u| (u.prompt_tokens, u.completion_tokens, u.cached_prompt_tokens))
            .collect();
        assert_eq!(
            got,
            [
                (2006, 300, 1920),
                (25, 8, 24),
                (25, 8, 17),
                (25, 8, 0),
                (25, 0, 25)
            ]
        );
        assert_eq!(usage(r#"{"timings":{"cache_n":3}}"#), None, "no usage");
    }

    /// A stream whose `usage` and `timings` come in different chunks, as llama.cpp may send
    /// them, is read as one usage.
    #[tokio::test]
    async fn a_streamed_reply_counts_the_cached_tokens_of_its_last_chunks() {
        use axum::routing::post;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let body = concat!(
            "data: {\"choices\":[{\"delta\":{\"content\":\"Room B2.\"}}]}\n\n",
            "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":120,\"completion_tokens\":3}}\n\n",
            "data: {\"choices\":[],\"timings\":{\"cache_n\":96,\"prompt_n\":24}}\n\n",
            "data: [DONE]\n\n",
        );
        let app =
            axum::Router::new().route("/v1/chat/completions", post(move || async move { body }));
        tokio::spawn(async move { axum::serve(listener, app).await });
        let server = Endpoint::for_tests(&format!("http://{addr}/v1"));
        let chat = OpenAiChat::new(server.clone(), "m", 0.0, None, true).unwrap();
        let request = ChatRequest::of(Vec::new());
        let reply = chat
            .attempt(&server, &request, chat.body(&request))
            .await
            .unwrap();
        assert_eq!(reply.text, "Room B2.");
        assert_eq!(
            reply.usage,
            Usage {
                prompt_tokens: 120,
                completion_tokens: 3,
                cached_prompt_tokens: 96,
                estimated: false,
            }
        );
    }

    #[test]
    fn a_request_costs_its_prompt_estimate_plus_max_tokens() {
        let server = Endpoint::for_tests("http://127.0.0.1:1/v1");
        let request = ChatRequest {
            messages: vec![
                Message {
                    role: Role::System,
                    content: "abcde".into(),
                },
                Message {
                    role: Role::User,
                    content: "abcd".into(),
                },
            ],
            seed: None,
            grounded: None,
            slot: 0,
            format: None,
        };
        // 5 characters: 2 tokens; 4 characters: 1.
        let chat = OpenAiChat::new(server.clone(), "m", 0.0, Some(100), false).unwrap();
        assert_eq!(chat.cost(&request), 103);
        let chat = OpenAiChat::new(server, "m", 0.0, None, false).unwrap();
        assert_eq!(chat.cost(&request), 3);
    }
}
