//! A chat model and an embedder whose calls are written down instead of made: the sweep plans
//! and asks as a live one would, every reply and vector the cache holds is given as usual, and
//! every other request is kept in a [`Collector`] for a batch file. A chat call kept is
//! answered with an error, an embedding with a stand-in vector; the command never reports
//! either (it writes no report from such a sweep).

use std::sync::{Arc, Mutex};

use super::{Collector, Line, Pending, Section, StoreKind, CHAT_URL, EMBEDDINGS_URL};
use crate::adapters::cache::{chat_key, embedding_key, Store};
use crate::adapters::chat::{
    estimate_tokens, CallError, ChatModel, ChatReply, ChatRequest, ErrorKind,
};
use crate::adapters::embed::{EmbedError, Embedded, Embedder};
use crate::base::BoxFuture;

/// The message of a call kept for a batch (one that is [`CallError::deferred`]).
const DEFERRED: &str = "kept for a batch, not sent";

/// `inner` (a model behind the response cache) with its uncached calls kept in `collector`.
pub struct DeferredModel {
    inner: Arc<dyn ChatModel>,
    store: StoreKind,
    /// The config section whose server answers it (see [`Pending::section`]).
    section: Section,
    collector: Arc<Collector>,
}

impl DeferredModel {
    pub fn new(
        inner: Arc<dyn ChatModel>,
        store: StoreKind,
        section: Section,
        collector: Arc<Collector>,
    ) -> Self {
        DeferredModel {
            inner,
            store,
            section,
            collector,
        }
    }
}

impl ChatModel for DeferredModel {
    fn model(&self) -> String {
        self.inner.model()
    }

    fn inner(&self) -> Option<&dyn ChatModel> {
        Some(self.inner.as_ref())
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
                section: self.section.clone(),
            });
            Err(CallError {
                kind: ErrorKind::Client,
                message: DEFERRED.into(),
                deferred: true,
            })
        })
    }
}

/// `inner` (an embedder behind the embedding cache `store`) with the texts the cache does not
/// hold kept in `collector`, one line each (`custom_id` the text's embedding key, the body
/// what the live call sends for it alone). Until the first text is kept, cached vectors are
/// given as they are; from then on every text gets a stand-in of the same dimensions, so
/// the sweep can go on planning (its prompts are not the real ones, and the collector holds
/// them back behind the embeddings).
pub struct DeferredEmbedder {
    inner: Arc<dyn Embedder>,
    store: Arc<Store<Vec<f32>>>,
    section: Section,
    collector: Arc<Collector>,
    /// The dimensions of the vectors given so far, and whether a text was kept.
    state: Mutex<(Option<usize>, bool)>,
}

impl DeferredEmbedder {
    pub fn new(
        inner: Arc<dyn Embedder>,
        store: Arc<Store<Vec<f32>>>,
        section: Section,
        collector: Arc<Collector>,
    ) -> Self {
        DeferredEmbedder {
            inner,
            store,
            section,
            collector,
            state: Mutex::new((None, false)),
        }
    }
}

impl Embedder for DeferredEmbedder {
    fn model(&self) -> String {
        self.inner.model()
    }

    fn inner(&self) -> Option<&dyn Embedder> {
        Some(self.inner.as_ref())
    }

    fn embed_each<'a>(
        &'a self,
        texts: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<Embedded>, EmbedError>> {
        Box::pin(async move {
            let cached = self.keep_uncached(texts);
            Ok(self.answers(texts.len(), cached))
        })
    }
}

impl DeferredEmbedder {
    /// The vector the cache holds for each text, and for each one it does not hold, a line
    /// kept in the collector.
    fn keep_uncached(&self, texts: &[String]) -> Vec<Option<Vec<f32>>> {
        let model = self.inner.model();
        let mut cached = Vec::with_capacity(texts.len());
        for text in texts {
            let key = embedding_key(&model, text);
            let v = self.store.vector(&key);
            if v.is_none() {
                self.collector.add(Pending {
                    line: Line {
                        custom_id: key,
                        method: "POST".into(),
                        url: EMBEDDINGS_URL.into(),
                        body: serde_json::json!({"model": model, "input": [text]}),
                    },
                    store: StoreKind::Embedding,
                    prompt_tokens: estimate_tokens(text),
                    rewrite: false,
                    section: self.section.clone(),
                });
            }
            cached.push(v);
        }
        cached
    }

    /// The answers to `n` texts whose cached vectors are `cached`: those vectors while no text
    /// was kept, a stand-in for every text from then on.
    fn answers(&self, n: usize, cached: Vec<Option<Vec<f32>>>) -> Vec<Embedded> {
        let mut state = self.state.lock().expect("deferred embedder lock");
        let dims = *state
            .0
            .get_or_insert_with(|| cached.iter().flatten().map(Vec::len).next().unwrap_or(1));
        state.1 |= cached.iter().any(Option::is_none);
        if !state.1 {
            return cached.into_iter().flatten().map(Ok).collect();
        }
        let mut stand_in = vec![0.0; dims];
        stand_in[0] = 1.0;
        (0..n).map(|_| Ok(stand_in.clone())).collect()
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
        let model = DeferredModel::new(
            cached.clone(),
            StoreKind::Chat,
            Section::Chat,
            collector.clone(),
        );
        let request = ChatRequest::of(vec![Message {
            role: Role::User,
            content: "What does it cost?".into(),
        }]);
        let e = model.complete(&request).await.unwrap_err();
        assert!(e.deferred);
        assert_eq!(e.message, DEFERRED);
        let kept = collector.take(&|_| true);
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0].line.custom_id, chat_key(raw.as_ref(), &request));
        assert_eq!(
            kept[0].line.body,
            serde_json::json!({"model": "m", "messages": [{"role": "user", "content": "What does it cost?"}],
                "temperature": 0.5, "stream": false, "max_tokens": 64})
        );
    }

    /// Cached vectors are given as they are until a text is missing; then that text is kept
    /// (once, keyed as the embedding cache keys it, with the live body for it alone) and every
    /// text gets a stand-in of the cached vectors' dimensions, so retrieval goes on.
    #[tokio::test]
    async fn uncached_texts_are_kept_once_and_answered_with_stand_ins_of_the_same_dimensions() {
        use crate::adapters::embed::HashEmbedder;
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<Store<Vec<f32>>> =
            Arc::new(Store::open(&dir.path().join("embeddings.jsonl"), CacheMode::Use).unwrap());
        let inner: Arc<dyn Embedder> = Arc::new(HashEmbedder::new(8));
        let model = inner.model();
        let known = vec![0.6, 0.8, 0.0];
        store
            .put(embedding_key(&model, "known"), known.clone())
            .unwrap();
        let collector = Arc::new(Collector::default());
        let e = DeferredEmbedder::new(inner, store, Section::Embedder, collector.clone());
        let texts = |t: &[&str]| t.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(e.embed(&texts(&["known"])).await.unwrap(), [known]);
        assert!(collector.take(&|_| true).is_empty());
        let got = e.embed(&texts(&["known", "new", "new"])).await.unwrap();
        assert_eq!(
            got,
            vec![vec![1.0, 0.0, 0.0]; 3],
            "stand-ins, of 3 dimensions"
        );
        let kept = collector.take(&|_| true);
        assert_eq!(kept.len(), 1, "each text once");
        assert_eq!(kept[0].line.custom_id, embedding_key(&model, "new"));
        assert_eq!(kept[0].line.url, EMBEDDINGS_URL);
        assert_eq!(
            kept[0].line.body,
            serde_json::json!({"model": model, "input": ["new"]})
        );
        assert_eq!(
            (kept[0].store, &kept[0].section),
            (StoreKind::Embedding, &Section::Embedder)
        );
    }
}
