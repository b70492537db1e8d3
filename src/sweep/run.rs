//! Executing the distinct calls of a plan with bounded concurrency.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::adapters::chat::{CallError, ChatModel, ChatReply, ChatRequest};

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

/// A request's digest in the call log, by the model that answers it
/// ([`super::request_digest`]).
pub type DigestFn = Arc<dyn Fn(&ChatRequest) -> String + Send + Sync>;

/// The digest of each call and its result.
pub type Answered = Vec<(String, Result<ChatReply, CallError>)>;

/// Make every request, at most `concurrency` at a time; per request its digest and result, in
/// request order. A failed call is a value in the result, never an early return: the sweep
/// finishes.
pub async fn execute(
    model: Arc<dyn ChatModel>,
    requests: Vec<ChatRequest>,
    digest: DigestFn,
    concurrency: usize,
    progress: Option<ProgressFn>,
) -> Answered {
    let total = Arc::new(AtomicUsize::new(requests.len()));
    let (tx, rx) = tokio::sync::mpsc::channel(1);
    // The channel has room for the one batch, and its receiver is alive below.
    let _ = tx.try_send(requests);
    drop(tx);
    let stream = Stream {
        requests: rx,
        total,
        lanes: false,
    };
    execute_stream(model, stream, 1, digest, concurrency, progress).await
}

/// Requests on their way from the planner, and how many calls they come to once the plan is
/// complete (0 until then: progress shows the total as unknown).
pub struct Stream {
    pub requests: tokio::sync::mpsc::Receiver<Vec<ChatRequest>>,
    pub total: Arc<AtomicUsize>,
    /// Each batch comes in prefix order ([`super::order`]): cut it into one lane per worker,
    /// which that worker makes in order, so that a server with a slot per worker reuses each
    /// slot's prefix. Else every worker takes the next call of every batch.
    pub lanes: bool,
}

/// [`execute`] for requests that arrive while the plan is still being built: calls start with
/// the first request, so a sweep's model calls overlap its planning, and each prompt is freed
/// once its call is made. Each request is made `repeat` times (`--repeat N`: repeat `r` gets
/// seed `r`); the results come back repeat-major, request `c` of repeat `r` at
/// `r * requests + c`, as [`crate::sweep::repeat::requests`] lays them out; a request's repeats
/// are made one after another. Ends when every sender is dropped and every call has finished.
pub async fn execute_stream(
    model: Arc<dyn ChatModel>,
    stream: Stream,
    repeat: u32,
    digest: DigestFn,
    concurrency: usize,
    progress: Option<ProgressFn>,
) -> Answered {
    let total = stream.total;
    let workers_n = concurrency.max(1);
    let queue = Arc::new(Queue {
        requests: tokio::sync::Mutex::new(stream.requests),
        pending: std::sync::Mutex::new(Pending {
            lanes: if stream.lanes {
                (0..workers_n).map(|_| Default::default()).collect()
            } else {
                Vec::new()
            },
            ..Pending::default()
        }),
        repeat: repeat.max(1),
    });
    let done = Arc::new(AtomicUsize::new(0));
    let mut workers = tokio::task::JoinSet::new();
    for worker in 0..workers_n {
        let (model, queue, done, progress, digest, total) = (
            model.clone(),
            queue.clone(),
            done.clone(),
            progress.clone(),
            digest.clone(),
            total.clone(),
        );
        workers.spawn(async move {
            let mut out = Vec::new();
            let mut taker = Taker {
                worker,
                victim: None,
            };
            while let Some((c, r, request)) = queue.next(&mut taker).await {
                let key = digest(&request);
                let result = model.complete(&request).await;
                drop(request);
                let finished = done.fetch_add(1, Ordering::Relaxed) + 1;
                if let Some(p) = &progress {
                    p(CallEvent {
                        done: finished,
                        total: total.load(Ordering::Relaxed),
                        failed: result.is_err(),
                        cached: result.as_ref().is_ok_and(|r| r.cached),
                    });
                }
                out.push((c, r, key, result));
            }
            out
        });
    }
    let mut finished = Vec::new();
    while let Some(joined) = workers.join_next().await {
        // A worker only panics if a model implementation panics: a bug worth crashing on.
        finished.extend(joined.expect("a chat worker panicked"));
    }
    let distinct = queue.lock_pending().received;
    let mut results: Vec<Option<(String, Result<ChatReply, CallError>)>> = (0..distinct
        * queue.repeat as usize)
        .map(|_| None)
        .collect();
    for (c, r, key, result) in finished {
        results[r as usize * distinct + c] = Some((key, result));
    }
    results
        .into_iter()
        .map(|r| r.expect("every request and repeat is taken by exactly one worker"))
        .collect()
}

/// The executor's queue: batches still to arrive, and the calls of arrived ones still to make.
struct Queue {
    requests: tokio::sync::Mutex<tokio::sync::mpsc::Receiver<Vec<ChatRequest>>>,
    /// Never held across an await: workers take calls from it without waking each other.
    pending: std::sync::Mutex<Pending>,
    repeat: u32,
}

/// (request index, repeat index, request)
type Call = (usize, u32, ChatRequest);

#[derive(Default)]
struct Pending {
    /// Calls any worker takes next, first come first served.
    calls: std::collections::VecDeque<Call>,
    /// With [`Stream::lanes`], each worker's lane of calls in prefix order; empty otherwise.
    lanes: Vec<std::collections::VecDeque<Call>>,
    /// Requests received so far.
    received: usize,
}

/// A worker, as the queue sees it: its lane, and the lane it last took calls from when its
/// own ran out.
struct Taker {
    worker: usize,
    victim: Option<usize>,
}

impl Pending {
    /// The next call for `taker`: from its own lane, else the shared calls, else from the back
    /// of another lane, the one it took from last while that has calls, else the fullest. Taken
    /// from the back, a lane's calls are still in prefix order (reversed) for the taker's own
    /// server slot, and the farthest from where the lane's worker is.
    fn take(&mut self, taker: &mut Taker) -> Option<Call> {
        if let Some(call) = self
            .lanes
            .get_mut(taker.worker)
            .and_then(|lane| lane.pop_front())
        {
            return Some(call);
        }
        if let Some(call) = self.calls.pop_front() {
            return Some(call);
        }
        let victim = taker
            .victim
            .filter(|&v| !self.lanes[v].is_empty())
            .or_else(|| {
                // The fullest lane, the first of equals.
                let (v, lane) = self
                    .lanes
                    .iter()
                    .enumerate()
                    .rev()
                    .max_by_key(|(_, lane)| lane.len())?;
                (!lane.is_empty()).then_some(v)
            })?;
        taker.victim = Some(victim);
        self.lanes[victim].pop_back()
    }

    /// Add a batch of requests, each with its repeats, after those received before.
    fn add(&mut self, batch: Vec<ChatRequest>, repeat: u32) {
        let cuts: Vec<std::ops::Range<usize>> = if self.lanes.is_empty() {
            std::iter::once(0..batch.len()).collect()
        } else {
            super::order::lanes(&batch, self.lanes.len())
        };
        let first = self.received;
        self.received += batch.len();
        let mut batch = batch.into_iter().enumerate();
        for (lane, range) in cuts.into_iter().enumerate() {
            let calls = match self.lanes.get_mut(lane) {
                Some(lane) => lane,
                None => &mut self.calls,
            };
            for (i, request) in batch.by_ref().take(range.len()) {
                let c = first + i;
                if repeat == 1 {
                    calls.push_back((c, 0, request));
                    continue;
                }
                for r in 1..repeat {
                    calls.push_back((c, r, request.with_seed(r)));
                }
                let first = ChatRequest {
                    seed: Some(0),
                    ..request
                };
                calls.push_back((c, 0, first));
            }
        }
    }
}

impl Queue {
    fn lock_pending(&self) -> std::sync::MutexGuard<'_, Pending> {
        // A worker never panics while holding the lock; if one did, its data is still whole.
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The next call to make, waiting for the planner's next batch when none is pending;
    /// `None` once the planner is done and every call is taken.
    async fn next(&self, taker: &mut Taker) -> Option<Call> {
        loop {
            if let Some(call) = self.lock_pending().take(taker) {
                return Some(call);
            }
            let mut requests = self.requests.lock().await;
            // Another worker may have received a batch while this one waited for the receiver.
            if let Some(call) = self.lock_pending().take(taker) {
                return Some(call);
            }
            let batch = requests.recv().await?;
            self.lock_pending().add(batch, self.repeat);
        }
    }
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

/// Below this many items a second thread costs more than it saves.
const PAR_MIN: usize = 256;

/// `f(i, &mut items[i])` for every item, on every core, the results in item order. `f` may take
/// from its item: the run builder moves each plan's passages into its run instead of copying.
pub fn par_map<T: Send, U: Send>(items: &mut [T], f: impl Fn(usize, &mut T) -> U + Sync) -> Vec<U> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let per_thread = items.len().div_ceil(threads).max(PAR_MIN);
    if items.len() <= per_thread {
        return items.iter_mut().enumerate().map(|(i, t)| f(i, t)).collect();
    }
    let n = items.len();
    // Each thread writes its results in place, so that a million runs are not built into
    // per-thread lists and then copied (and held twice) into one.
    let mut out: Vec<U> = Vec::with_capacity(n);
    let f = &f;
    std::thread::scope(|scope| {
        let handles: Vec<_> = items
            .chunks_mut(per_thread)
            .zip(out.spare_capacity_mut()[..n].chunks_mut(per_thread))
            .enumerate()
            .map(|(c, (items, slots))| {
                scope.spawn(move || {
                    for (j, (item, slot)) in items.iter_mut().zip(slots).enumerate() {
                        slot.write(f(c * per_thread + j, item));
                    }
                })
            })
            .collect();
        for h in handles {
            // `f` only panics on a bug: crash as the sequential loop would have.
            h.join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        }
    });
    // SAFETY: the chunks of `items` and of the first `n` spare slots pair up one to one, and
    // every thread wrote each slot of its chunk; a thread that panicked was resumed above, so
    // this line is reached only when all `n` slots are initialised.
    unsafe { out.set_len(n) };
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapters::mock::chat::MockModel;
    use crate::adapters::prompt::{Message, Role};
    use crate::sweep::request_digest;

    fn asking(text: &str, seed: Option<u32>) -> ChatRequest {
        ChatRequest {
            messages: vec![Message {
                role: Role::User,
                content: text.into(),
            }],
            seed,
            grounded: None,
            slot: 0,
            format: None,
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn streamed_requests_are_made_while_sent_and_come_back_repeat_major_with_digests() {
        let model = Arc::new(MockModel::default());
        let digest: DigestFn = {
            let model = model.clone();
            Arc::new(move |r: &ChatRequest| request_digest(model.as_ref(), r))
        };
        // A sink of one place: the sender waits for the executor, as the planner does.
        let (tx, rx) = tokio::sync::mpsc::channel(1);
        let sender = std::thread::spawn(move || {
            for c in 0..5 {
                tx.blocking_send(vec![asking(&format!("question {c}"), None)])
                    .unwrap();
            }
        });
        let stream = Stream {
            requests: rx,
            total: Arc::new(AtomicUsize::new(0)),
            lanes: false,
        };
        let answered = execute_stream(model.clone(), stream, 3, digest, 4, None).await;
        sender.join().unwrap();
        assert_eq!(answered.len(), 15);
        for r in 0..3 {
            for c in 0..5 {
                let (key, reply) = &answered[r * 5 + c];
                let text = format!("question {c}");
                // The mock echoes a message that is not a context block.
                assert_eq!(reply.as_ref().unwrap().text, text);
                let seeded = asking(&text, Some(r as u32));
                assert_eq!(key, &request_digest(model.as_ref(), &seeded), "{r} {c}");
            }
        }
        let single = execute(
            model.clone(),
            vec![asking("a", None), asking("b", None)],
            Arc::new(|r: &ChatRequest| r.messages[0].content.clone()),
            8,
            None,
        )
        .await;
        let keys: Vec<&str> = single.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            keys,
            ["a", "b"],
            "no seed and request order with one repeat"
        );
        assert!(execute(
            model,
            Vec::new(),
            Arc::new(|_: &ChatRequest| String::new()),
            8,
            None
        )
        .await
        .is_empty());
    }

    /// In lanes, a worker makes its own lane front to back, then takes from the back of the
    /// fullest other lane and keeps to it while it lasts; repeats of a request stay together.
    #[test]
    fn a_worker_makes_its_lane_then_takes_from_the_back_of_the_fullest() {
        // Two subtrees of two and four requests, cut into two lanes where they meet.
        let users = ["a", "a b", "c", "c d", "c e", "c f"];
        let mut pending = Pending {
            lanes: vec![Default::default(), Default::default()],
            ..Pending::default()
        };
        pending.add(users.iter().map(|u| asking(u, None)).collect(), 1);
        let mut worker = [0, 1].map(|w| Taker {
            worker: w,
            victim: None,
        });
        let mut take = |w: usize| pending.take(&mut worker[w]).map(|(c, _, _)| c);
        assert_eq!([take(0), take(0), take(1)], [Some(0), Some(1), Some(2)]);
        // Worker 0's lane is done: it takes lane 1's last, then the one before.
        assert_eq!(
            [take(0), take(1), take(0), take(1)],
            [Some(5), Some(3), Some(4), None]
        );
        assert_eq!(take(0), None);

        let mut pending = Pending::default();
        pending.add(vec![asking("x", None), asking("y", None)], 3);
        let made: Vec<(usize, u32)> = std::iter::from_fn(|| {
            pending
                .take(&mut Taker {
                    worker: 0,
                    victim: None,
                })
                .map(|(c, r, q)| {
                    assert_eq!(q.seed, Some(r));
                    (c, r)
                })
        })
        .collect();
        assert_eq!(made, [(0, 1), (0, 2), (0, 0), (1, 1), (1, 2), (1, 0)]);
    }

    #[test]
    fn par_map_keeps_item_order_gives_each_index_and_may_take_from_items() {
        for n in [0, 1, PAR_MIN, PAR_MIN + 1, 10 * PAR_MIN + 7] {
            let mut items: Vec<Vec<usize>> = (0..n).map(|i| vec![i; 3]).collect();
            let out = par_map(&mut items, |i, v| (i, std::mem::take(v)));
            assert_eq!(out.len(), n);
            for (i, (index, taken)) in out.into_iter().enumerate() {
                assert_eq!((index, taken), (i, vec![i; 3]));
            }
            assert!(items.iter().all(Vec::is_empty), "every item was taken from");
        }
    }
}
