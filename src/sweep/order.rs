//! The order a sweep sends its prompts in, so that a server's prompt cache reuses what it has
//! evaluated.
//!
//! Model servers keep the prompt they last evaluated (llama.cpp's `llama-server` one per slot,
//! vLLM's prefix caching, hosted APIs' prompt caching) and reuse its longest shared prefix. A
//! sweep's prompts share long prefixes: the system message, then for one question the k=1
//! prompt's passage is the k=2 prompt's first. Sorted by their messages, the prompts are a
//! depth-first walk of their prefix tree: each shares with the one before it the longest
//! prefix it shares with any earlier one, so a server with one slot evaluates every distinct
//! prefix once. With N calls in flight, the sorted list is cut into N lanes where neighbours
//! share least (between subtrees), each worker sends its own lane in order, and a server with
//! N slots keeps one lane's subtrees in each. A worker whose lane is done takes from the back
//! of another's (see [`super::run`]).
//!
//! The order is a pure function of the requests, and results do not depend on it: the planner
//! keeps its own order of the calls, and the executor's results are put back in it.

use std::cmp::Ordering;
use std::ops::Range;

use crate::adapters::chat::ChatRequest;
use crate::adapters::prompt::Message;

/// The order of two requests: by chat model (each has its own server or cache), then message
/// by message, role and text, as a chat template renders them one after the other.
fn compare(a: &ChatRequest, b: &ChatRequest) -> Ordering {
    fn message(m: &Message) -> (u8, &[u8]) {
        (m.role as u8, m.content.as_bytes())
    }
    a.slot
        .cmp(&b.slot)
        .then_with(|| {
            a.messages
                .iter()
                .map(message)
                .cmp(b.messages.iter().map(message))
        })
        .then_with(|| a.seed.cmp(&b.seed))
}

/// `requests` in prefix order, and for each position the index in `requests` of the request
/// there. Equal requests keep their order.
pub fn sort(requests: Vec<ChatRequest>) -> (Vec<usize>, Vec<ChatRequest>) {
    let mut tagged: Vec<(usize, ChatRequest)> = requests.into_iter().enumerate().collect();
    tagged.sort_by(|(_, a), (_, b)| compare(a, b));
    tagged.into_iter().unzip()
}

/// Results of calls made in the order [`sort`] gave (`sent[p]` is the plan index of the p-th
/// sent), repeat-major with `distinct` calls per repeat, put back in plan order. An empty
/// `sent` means they were made in plan order.
pub fn in_plan_order<T>(results: Vec<T>, sent: &[usize], distinct: usize) -> Vec<T> {
    if sent.is_empty() {
        return results;
    }
    let mut out: Vec<Option<T>> = (0..results.len()).map(|_| None).collect();
    for (i, result) in results.into_iter().enumerate() {
        out[i / distinct * distinct + sent[i % distinct]] = Some(result);
    }
    out.into_iter()
        .map(|r| r.expect("`sent` is a permutation of the plan's requests"))
        .collect()
}

/// The bytes two requests share before they differ, over their messages in order (a message
/// counts when its role and text are equal; the first that differs counts its common start).
/// Requests of different chat models share nothing.
pub fn shared(a: &ChatRequest, b: &ChatRequest) -> usize {
    if a.slot != b.slot {
        return 0;
    }
    let mut n = 0;
    for (x, y) in a.messages.iter().zip(&b.messages) {
        if x.role != y.role {
            break;
        }
        if x.content == y.content {
            n += x.content.len();
            continue;
        }
        n += x
            .content
            .bytes()
            .zip(y.content.bytes())
            .take_while(|(p, q)| p == q)
            .count();
        break;
    }
    n
}

/// Cut requests in prefix order into `lanes` contiguous lanes of about equal length, each cut
/// where neighbours share least within a quarter of a lane (at least one request) of the even
/// cut (at the start of a
/// subtree, so that no lane starts in the middle of another's), the nearest to it on a tie.
/// `lanes` ranges in order, covering every request, none empty unless there are fewer
/// requests than lanes (then one request each, and the rest empty).
pub fn lanes(requests: &[ChatRequest], lanes: usize) -> Vec<Range<usize>> {
    let n = requests.len();
    let lanes = lanes.max(1);
    if n < lanes {
        return (0..lanes).map(|i| i.min(n)..(i + 1).min(n)).collect();
    }
    let reach = (n / (4 * lanes)).max(1);
    let mut cuts = vec![0];
    for i in 1..lanes {
        let even = i * n / lanes;
        let last = *cuts.last().expect("cuts start at 0");
        // A cut at `p` starts a lane with request `p`: it divides `p - 1` from `p`. It leaves
        // a request for each lane before and after it; with `n >= lanes`, `lo <= hi`.
        let lo = even.saturating_sub(reach).max(last + 1);
        let hi = (even + reach).min(n - (lanes - i));
        let cut = (lo..=hi)
            .min_by_key(|&p| (shared(&requests[p - 1], &requests[p]), p.abs_diff(even)))
            .expect("a lane has room to start");
        cuts.push(cut);
    }
    cuts.push(n);
    cuts.windows(2).map(|w| w[0]..w[1]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapters::prompt::Role;
    use proptest::prelude::*;

    fn request(slot: u32, user: &str) -> ChatRequest {
        ChatRequest {
            messages: vec![
                Message {
                    role: Role::System,
                    content: "rules".into(),
                },
                Message {
                    role: Role::User,
                    content: user.into(),
                },
            ],
            seed: None,
            slot,
            grounded: None,
            format: None,
        }
    }

    /// The bytes of a request as one text, message by message.
    fn text(r: &ChatRequest) -> Vec<u8> {
        let mut t = vec![r.slot as u8];
        for m in &r.messages {
            t.push(m.role as u8);
            t.extend(m.content.bytes());
        }
        t
    }

    /// The nodes of the prefix tree of the texts: each distinct prefix once.
    fn tree_size(texts: &[Vec<u8>]) -> usize {
        let mut prefixes = std::collections::HashSet::new();
        for t in texts {
            for end in 1..=t.len() {
                prefixes.insert(&t[..end]);
            }
        }
        prefixes.len()
    }

    proptest! {
        /// In prefix order, a server that keeps only the last prompt evaluates each distinct
        /// prefix once: the bytes each request does not share with the one before add up to
        /// the prefix tree's size. In the order given, they need not.
        #[test]
        fn one_slot_in_prefix_order_evaluates_each_prefix_once(
            users in proptest::collection::vec("[ab]{0,3}( [ab]{0,3}){0,3}", 1..40),
            slots in proptest::collection::vec(0u32..2, 40),
        ) {
            let requests: Vec<ChatRequest> = users
                .iter()
                .zip(&slots)
                .map(|(u, &s)| request(s, u))
                .collect();
            let (order, sorted) = sort(requests.clone());
            // A permutation, each position naming its request.
            let mut seen = order.clone();
            seen.sort_unstable();
            prop_assert_eq!(seen, (0..requests.len()).collect::<Vec<_>>());
            for (p, &i) in order.iter().enumerate() {
                prop_assert_eq!(&sorted[p], &requests[i]);
            }
            let texts: Vec<Vec<u8>> = sorted.iter().map(text).collect();
            let mut distinct = texts.clone();
            distinct.dedup();
            let evaluated: usize = distinct
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    let before = if i == 0 { &[][..] } else { &distinct[i - 1][..] };
                    t.len() - t.iter().zip(before).take_while(|(a, b)| a == b).count()
                })
                .sum();
            prop_assert_eq!(evaluated, tree_size(&distinct));
        }

        #[test]
        fn lanes_cover_the_requests_in_order(n in 0usize..60, k in 1usize..6) {
            let requests: Vec<ChatRequest> =
                (0..n).map(|i| request(0, &format!("{} {i}", i % 3))).collect();
            let (_, sorted) = sort(requests);
            let lanes = lanes(&sorted, k);
            prop_assert_eq!(lanes.len(), k);
            prop_assert_eq!(lanes[0].start, 0);
            prop_assert_eq!(lanes[k - 1].end, n);
            for w in lanes.windows(2) {
                prop_assert_eq!(w[0].end, w[1].start);
            }
            // No lane is empty while another holds more than one request.
            prop_assert!(lanes.iter().all(|l| !l.is_empty() || l.start == n));
            prop_assert!(n < k || lanes.iter().all(|l| !l.is_empty()));
        }
    }

    #[test]
    fn results_go_back_to_plan_order_in_every_repeat() {
        // Plan order a, b, c; sent c, a, b; two repeats.
        let sent = [2, 0, 1];
        let made = vec!["c0", "a0", "b0", "c1", "a1", "b1"];
        assert_eq!(
            in_plan_order(made, &sent, 3),
            ["a0", "b0", "c0", "a1", "b1", "c1"]
        );
        assert_eq!(in_plan_order(vec!["x", "y"], &[], 2), ["x", "y"]);
    }

    #[test]
    fn a_lane_starts_where_a_subtree_does() {
        // Three subtrees (a, b, c) of 4, 3 and 5 prompts; two lanes, the even cut at 6 falls
        // inside b's subtree, so the cut moves to where c's begins (7), not b's (4): nearer.
        let users = [
            "a", "a 1", "a 1 2", "a 2", "b", "b 1", "b 2", "c", "c 1", "c 1 2", "c 2", "c 3",
        ];
        let requests: Vec<ChatRequest> = users.iter().map(|u| request(0, u)).collect();
        let (order, sorted) = sort(requests);
        assert_eq!(
            order,
            (0..12).collect::<Vec<_>>(),
            "already in prefix order"
        );
        assert_eq!(shared(&sorted[6], &sorted[7]), 5, "the system message only");
        assert_eq!(shared(&sorted[5], &sorted[6]), 5 + 2, "`b `");
        assert_eq!(lanes(&sorted, 2), [0..7, 7..12]);
        assert_eq!(lanes(&sorted, 3), [0..4, 4..7, 7..12]);
        assert_eq!(
            lanes(&sorted, 1),
            std::iter::once(0..12).collect::<Vec<_>>()
        );
        assert_eq!(lanes(&sorted[..2], 3), [0..1, 1..2, 2..2]);
        // Another chat model's prompts share nothing with these.
        assert_eq!(shared(&sorted[0], &request(1, "a")), 0);
    }
}
