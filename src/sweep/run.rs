//! Executing the distinct calls of a plan with bounded concurrency.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::chat::{CallError, ChatModel, ChatReply, ChatRequest};

/// What the executor reports after each finished call.
#[derive(Debug, Clone, Copy)]
pub struct CallEvent {
    pub done: usize,
    pub total: usize,
    pub failed: bool,
    pub cached: bool,
}

/// A progress callback; it runs on the executor's tasks, so it must be cheap.
pub type ProgressFn = Arc<dyn Fn(CallEvent) + Send + Sync>;

/// Make every request, at most `concurrency` at a time; results come back in request order.
/// A failed call is a value in the result, never an early return: the sweep finishes.
pub async fn execute(
    model: Arc<dyn ChatModel>,
    requests: Vec<ChatRequest>,
    concurrency: usize,
    progress: Option<ProgressFn>,
) -> Vec<Result<ChatReply, CallError>> {
    let total = requests.len();
    let requests = Arc::new(requests);
    let next = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicUsize::new(0));
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..concurrency.clamp(1, total.max(1)) {
        let (model, requests, next, done, progress) = (
            model.clone(),
            requests.clone(),
            next.clone(),
            done.clone(),
            progress.clone(),
        );
        workers.spawn(async move {
            let mut out = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(request) = requests.get(i) else {
                    break;
                };
                let result = model.complete(request).await;
                let finished = done.fetch_add(1, Ordering::Relaxed) + 1;
                if let Some(p) = &progress {
                    p(CallEvent {
                        done: finished,
                        total,
                        failed: result.is_err(),
                        cached: result.as_ref().is_ok_and(|r| r.cached),
                    });
                }
                out.push((i, result));
            }
            out
        });
    }
    let mut results: Vec<Option<Result<ChatReply, CallError>>> = (0..total).map(|_| None).collect();
    while let Some(joined) = workers.join_next().await {
        // A worker only panics if a model implementation panics: a bug worth crashing on.
        for (i, r) in joined.expect("a chat worker panicked") {
            results[i] = Some(r);
        }
    }
    results
        .into_iter()
        .map(|r| r.expect("every request index is taken by exactly one worker"))
        .collect()
}

/// Hand the memory a finished phase freed back to the system. glibc keeps freed small blocks
/// resident for reuse, so at a million runs the prompts, already called and dropped, stayed
/// resident (300 MB) while the run list was allocated as one new block of 400 MB.
pub fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` only returns free pages of the allocator's heaps to the kernel; no
    // live allocation is touched, and Rust's system allocator on this target is glibc's.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// The log digest of each request (`digest`, [`request_digest`] by its model), worked out on
/// every core: each is a JSON rendering and a sha256 of the whole prompt, and a large sweep
/// has tens of thousands.
pub fn digests(
    requests: &[ChatRequest],
    digest: impl Fn(&ChatRequest) -> String + Sync,
) -> Vec<String> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let per_thread = requests.len().div_ceil(threads).max(256);
    if requests.len() <= per_thread {
        return requests.iter().map(&digest).collect();
    }
    let digest = &digest;
    std::thread::scope(|scope| {
        let parts: Vec<_> = requests
            .chunks(per_thread)
            .map(|part| scope.spawn(move || part.iter().map(digest).collect::<Vec<_>>()))
            .collect();
        parts
            .into_iter()
            .flat_map(|p| {
                p.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::mock::MockModel;
    use crate::prompt::{Message, Role};
    use crate::sweep::request_digest;

    #[test]
    fn digests_on_every_core_equal_one_at_a_time_in_order() {
        let model = MockModel::default();
        let requests: Vec<ChatRequest> = (0..1000)
            .map(|i| ChatRequest {
                messages: vec![Message {
                    role: Role::User,
                    content: format!("question {i}"),
                }],
                seed: None,
                slot: 0,
            })
            .collect();
        let one_by_one: Vec<String> = requests.iter().map(|r| request_digest(&model, r)).collect();
        let digest = |r: &ChatRequest| request_digest(&model, r);
        assert_eq!(digests(&requests, digest), one_by_one);
        assert_eq!(digests(&requests[..3], digest), one_by_one[..3]);
        assert!(digests(&[], digest).is_empty());
    }
}
