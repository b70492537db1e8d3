//! A chat model whose calls are written down instead of made: the sweep plans and asks as a
//! live one would, every reply the cache holds is given as usual, and every other request is
//! kept in a [`Collector`] for a batch file and answered with an error the command never
//! reports (it writes no report from such a sweep).

use std::sync::Arc;

use super::{Collector, Line, Pending, StoreKind, CHAT_URL};
use crate::adapters::cache::chat_key;
use crate::adapters::chat::{CallError, ChatModel, ChatReply, ChatRequest, ErrorKind};
use crate::base::BoxFuture;

/// The message of a call kept for a batch.
pub const DEFERRED: &str = "kept for a batch, not sent";

/// `inner` (a model behind the response cache) with its uncached calls kept in `collector`.
pub struct DeferredModel {
    inner: Arc<dyn ChatModel>,
    store: StoreKind,
    collector: Arc<Collector>,
}

impl DeferredModel {
    pub fn new(inner: Arc<dyn ChatModel>, store: StoreKind, collector: Arc<Collector>) -> Self {
        DeferredModel {
            inner,
            store,
            collector,
        }
    }
}

impl ChatModel for DeferredModel {
    fn model(&self) -> String {
        self.inner.model()
    }

    fn params(&self) -> serde_json::Value {
        self.inner.params()
    }

    fn takes_passages(&self) -> bool {
        self.inner.takes_passages()
    }

    fn is_cached(&self, request: &ChatRequest) -> bool {
        self.inner.is_cached(request)
    }

    fn prefix_cached(&self) -> bool {
        self.inner.prefix_cached()
    }

    fn warnings(&self) -> Vec<String> {
        self.inner.warnings()
    }

    fn batch_body(&self, request: &ChatRequest) -> Option<serde_json::Value> {
        self.inner.batch_body(request)
    }

    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatReply, CallError>> {
        Box::pin(async move {
            // A model no batch engine serves (the builtin mock, a generation endpoint)
            // answers as it always does.
            let body = match self.inner.batch_body(request) {
                Some(body) if !self.inner.is_cached(request) => body,
                _ => return self.inner.complete(request).await,
            };
            self.collector.add(Pending {
                line: Line {
                    custom_id: chat_key(self.inner.as_ref(), request),
                    method: "POST".into(),
                    url: CHAT_URL.into(),
                    body,
                },
                store: self.store,
                prompt_tokens: request.estimated_prompt_tokens(),
                rewrite: crate::adapters::rewrite::is_rewrite(request),
            });
            Err(CallError {
                kind: ErrorKind::Client,
                message: DEFERRED.into(),
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapters::cache::{CacheMode, CachedModel};
    use crate::adapters::chat::OpenAiChat;
    use crate::adapters::http::Endpoint;
    use crate::adapters::prompt::{Message, Role};

    /// A request the cache does not hold is kept, keyed as the cache keys it and with the body
    /// the live call sends (unstreamed); one it holds is answered from it; neither reaches the
    /// server (there is none at that address).
    #[tokio::test]
    async fn uncached_calls_are_kept_with_their_cache_key_and_body() {
        let dir = tempfile::tempdir().unwrap();
        let server = Endpoint::for_tests("http://127.0.0.1:1/v1");
        let raw: Arc<dyn ChatModel> =
            Arc::new(OpenAiChat::new(server, "m", 0.5, Some(64), true).unwrap());
        let cached = Arc::new(CachedModel::new(raw.clone(), dir.path(), CacheMode::Use).unwrap());
        let collector = Arc::new(Collector::default());
        let model = DeferredModel::new(cached.clone(), StoreKind::Chat, collector.clone());
        let request = ChatRequest::of(vec![Message {
            role: Role::User,
            content: "What does it cost?".into(),
        }]);
        let e = model.complete(&request).await.unwrap_err();
        assert_eq!(e.message, DEFERRED);
        let kept = collector.take();
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0].line.custom_id, chat_key(raw.as_ref(), &request));
        assert_eq!(
            kept[0].line.body,
            serde_json::json!({"model": "m", "messages": [{"role": "user", "content": "What does it cost?"}],
                "temperature": 0.5, "stream": false, "max_tokens": 64})
        );
    }
}
