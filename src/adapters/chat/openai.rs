//! An OpenAI-compatible chat model over HTTP: `POST {base_url}/chat/completions`, plain or
//! streamed (server-sent events), with retries. Works with OpenAI, Azure, vLLM, Ollama,
//! llama.cpp, LM Studio, TGI and `rageval mock-llm`.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::{
    estimate_prompt_tokens, estimate_tokens, CallError, ChatModel, ChatReply, ChatRequest,
    ErrorKind, Usage,
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
        let mut body = json!({
            "model": self.model,
            "messages": request.messages,
            "temperature": self.temperature,
            "stream": self.stream,
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
        if self.stream {
            body["stream_options"] = json!({"include_usage": true});
        }
        serde_json::to_vec(&body).expect("a JSON value serializes")
    }

    async fn attempt(
        &self,
        server: &Endpoint,
        request: &ChatRequest,
        body: Vec<u8>,
    ) -> Result<ChatReply, Failure> {
        let started = Instant::now();
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
        let (text, usage, ttft) = if self.stream {
            read_stream(&mut response, started, server).await?
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
            (text, parse_usage(&v["usage"]), None)
        };
        // A server that echoes the request would put a credential into the reply, which is
        // shown, cached and written to reports.
        let text = server.hide_owned(text);
        let usage = usage.unwrap_or_else(|| Usage {
            prompt_tokens: estimate_prompt_tokens(&request.messages),
            completion_tokens: estimate_tokens(&text),
            estimated: true,
        });
        Ok(ChatReply {
            text,
            usage,
            latency: started.elapsed(),
            ttft,
            cached: false,
        })
    }
}

fn parse_usage(u: &Value) -> Option<Usage> {
    Some(Usage {
        prompt_tokens: u["prompt_tokens"].as_u64()?,
        completion_tokens: u["completion_tokens"].as_u64().unwrap_or(0),
        estimated: false,
    })
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
    let mut usage = None;
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
            if let Some(u) = parse_usage(&v["usage"]) {
                usage = Some(u);
            }
        }
    }
    if !done {
        return Err(Failure {
            error: CallError {
                kind: ErrorKind::Transport,
                message: "the stream ended without `data: [DONE]`".into(),
            },
            retry: true,
            retry_after: None,
        });
    }
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
