//! The prompt cache of `rageval mock-llm --prompt-cache-slots N`: a server's slots as
//! llama.cpp's `llama-server` keeps them, so that the order a client sends its prompts in can
//! be measured without a model.
//!
//! A prompt is its words (split at whitespace), each message led by a marker of its role and
//! the whole followed by the assistant's, as a chat template renders it. Each slot holds the
//! words of the last prompt it evaluated. A request waits for an idle slot, takes the idle slot
//! whose prompt shares the longest prefix with its own (the least recently used on a tie, as
//! llama-server does), reuses that prefix and evaluates the rest; like llama-server it always
//! evaluates the last word, so a repeated prompt reuses all but one. Every prompt also goes
//! into a prefix tree of all prompts received: its size, the number of distinct prefixes, is
//! what a server would evaluate if it reused every prefix it ever saw, the bound no order can
//! beat.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::adapters::prompt::Message;

/// The slots, their waiting line and the counters.
pub struct PromptCache {
    state: Mutex<State>,
    /// One permit per slot: a request holds one while it is evaluated and answered.
    idle: Arc<Semaphore>,
    slots: usize,
}

#[derive(Default)]
struct State {
    slots: Vec<Slot>,
    /// Word ids, so that prompts compare as numbers.
    words: HashMap<String, u32>,
    /// The prefix tree of every prompt received: (node, word) -> child; node 0 is the root.
    tree: HashMap<(u32, u32), u32>,
    /// Requests served.
    requests: u64,
    /// Words of every prompt, reused and evaluated.
    prompt_tokens: u64,
    cached_tokens: u64,
    /// The nodes of `tree` besides the root: every distinct prefix once.
    distinct_prefix_tokens: u64,
    /// Incremented per request: the order slots were last used in.
    clock: u64,
}

#[derive(Default)]
struct Slot {
    words: Vec<u32>,
    busy: bool,
    last_used: u64,
}

/// What serving one prompt cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Evaluated {
    /// The prompt's words.
    pub prompt: u64,
    /// Of those, the words reused from the slot's last prompt.
    pub cached: u64,
}

impl Evaluated {
    /// The words evaluated.
    pub fn evaluated(&self) -> u64 {
        self.prompt - self.cached
    }
}

/// A slot taken by one request; dropping it makes the slot idle again.
pub struct Lease {
    cache: Arc<PromptCache>,
    slot: usize,
    _permit: OwnedSemaphorePermit,
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.cache.lock().slots[self.slot].busy = false;
    }
}

/// Words of a message's text, as the emulated tokenizer splits them.
pub fn words(text: &str) -> u64 {
    text.split_whitespace().count() as u64
}

impl PromptCache {
    pub fn new(slots: usize) -> Arc<Self> {
        let slots = slots.max(1);
        Arc::new(PromptCache {
            state: Mutex::new(State {
                slots: (0..slots).map(|_| Slot::default()).collect(),
                ..State::default()
            }),
            idle: Arc::new(Semaphore::new(slots)),
            slots,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // Nothing panics while holding the lock; if something did, the counts are still whole.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Wait for an idle slot, take the one sharing the longest prefix with `messages`, and
    /// count what the prompt reuses and evaluates. The slot stays taken while the lease lives.
    pub async fn serve(self: &Arc<Self>, messages: &[Message]) -> (Lease, Evaluated) {
        let permit = self
            .idle
            .clone()
            .acquire_owned()
            .await
            .expect("the semaphore is never closed");
        let mut s = self.lock();
        let s = &mut *s;
        let prompt: Vec<u32> = {
            let mut id = |w: &str| {
                let next = s.words.len() as u32;
                *s.words.entry(w.to_string()).or_insert(next)
            };
            let mut prompt = Vec::new();
            for m in messages {
                prompt.push(id(&format!("<|{}|>", m.role.as_str())));
                prompt.extend(m.content.split_whitespace().map(&mut id));
            }
            prompt.push(id("<|assistant|>"));
            prompt
        };
        let mut node = 0u32;
        for &w in &prompt {
            let next = s.tree.len() as u32 + 1;
            node = *s.tree.entry((node, w)).or_insert_with(|| {
                s.distinct_prefix_tokens += 1;
                next
            });
        }
        let shared = |slot: &Slot| {
            slot.words
                .iter()
                .zip(&prompt)
                .take_while(|(a, b)| a == b)
                .count()
        };
        // A permit is held, so some slot is idle.
        let (slot, reused) = s
            .slots
            .iter()
            .enumerate()
            .filter(|(_, slot)| !slot.busy)
            .map(|(i, slot)| (i, shared(slot), slot.last_used))
            // The longest shared prefix, then the least recently used, then the first.
            .min_by(|a, b| b.1.cmp(&a.1).then(a.2.cmp(&b.2)))
            .map(|(i, reused, _)| (i, reused))
            .expect("a permit means an idle slot");
        let cost = Evaluated {
            prompt: prompt.len() as u64,
            cached: reused.min(prompt.len().saturating_sub(1)) as u64,
        };
        s.clock += 1;
        s.requests += 1;
        s.prompt_tokens += cost.prompt;
        s.cached_tokens += cost.cached;
        let clock = s.clock;
        let taken = &mut s.slots[slot];
        taken.words = prompt;
        taken.busy = true;
        taken.last_used = clock;
        let lease = Lease {
            cache: self.clone(),
            slot,
            _permit: permit,
        };
        (lease, cost)
    }

    /// The counters, for `GET /stats`.
    pub fn stats(&self) -> Value {
        let s = self.lock();
        json!({
            "slots": self.slots,
            "requests": s.requests,
            "prompt_tokens": s.prompt_tokens,
            "cached_tokens": s.cached_tokens,
            "evaluated_tokens": s.prompt_tokens - s.cached_tokens,
            "distinct_prefix_tokens": s.distinct_prefix_tokens,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapters::prompt::Role;

    fn prompt(user: &str) -> Vec<Message> {
        vec![
            Message {
                role: Role::System,
                content: "answer from the context".into(),
            },
            Message {
                role: Role::User,
                content: user.into(),
            },
        ]
    }

    fn cost(prompt: u64, cached: u64) -> Evaluated {
        Evaluated { prompt, cached }
    }

    /// Markers and words: `<|system|> answer from the context <|user|> ... <|assistant|>` is
    /// 7 words plus the user's.
    #[tokio::test]
    async fn one_slot_reuses_the_prefix_of_the_last_prompt_only() {
        let cache = PromptCache::new(1);
        let mut costs = Vec::new();
        for user in ["a b c", "a b d", "a b d", "x", "a b c"] {
            let (lease, c) = cache.serve(&prompt(user)).await;
            costs.push(c);
            drop(lease);
        }
        assert_eq!(
            costs,
            [
                cost(10, 0),
                // `a b` shared; `d` and the assistant's marker evaluated.
                cost(10, 8),
                // The same prompt again: all but the last word.
                cost(10, 9),
                cost(8, 6),
                // `a b c` was evaluated before, but the slot holds `x` now.
                cost(10, 6),
            ]
        );
        let stats = cache.stats();
        assert_eq!(stats["prompt_tokens"], 48);
        assert_eq!(stats["cached_tokens"], 29);
        assert_eq!(stats["evaluated_tokens"], 19);
        // Distinct prefixes: the 10 of `a b c`, `d` and its marker, `x` and its marker.
        assert_eq!(stats["distinct_prefix_tokens"], 14);
    }

    #[tokio::test]
    async fn a_request_takes_the_idle_slot_with_the_longest_shared_prefix() {
        let cache = PromptCache::new(2);
        let (a, _) = cache.serve(&prompt("a a a")).await;
        // Slot 0 is busy: the other one, cold, is taken.
        let (b, c) = cache.serve(&prompt("a a b")).await;
        assert_eq!((b.slot, c), (1, cost(10, 0)));
        drop((a, b));
        // Both idle: `a a a` shares more with slot 0's prompt.
        let (a, c) = cache.serve(&prompt("a a a z")).await;
        assert_eq!((a.slot, c), (0, cost(11, 9)));
        drop(a);
        // A tie (both share the system message only): the least recently used, slot 1.
        let (b, c) = cache.serve(&prompt("q")).await;
        assert_eq!((b.slot, c), (1, cost(8, 6)));
        // With every slot taken, a request waits for one to be left.
        let (a, _) = cache.serve(&prompt("r")).await;
        let waiting = {
            let cache = cache.clone();
            tokio::spawn(async move { cache.serve(&prompt("q")).await.1 })
        };
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        assert!(!waiting.is_finished());
        drop(b);
        assert_eq!(waiting.await.unwrap(), cost(8, 7), "slot 1 held `q`");
        drop(a);
    }
}
