//! `--repeat N` in the engine: each distinct answer request made N times, repeat-major, the
//! repeat index sent as the request's `seed`; what the repeats show is `analysis::repeat`'s.

use crate::adapters::chat::ChatRequest;
use crate::adapters::classify::Outcome;

/// Most repeats a sweep may ask for: each one is a full set of model calls.
pub const MAX_REPEAT: u32 = 1000;

/// One later repeat of a run (repeat 1, 2, ...; repeat 0 is the run itself).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repeat {
    /// Its answer call, an index into the sweep's call log; `None` for an early refusal.
    pub call: Option<u32>,
    pub outcome: Outcome,
}

/// The requests of a sweep repeated `repeat` times, repeat-major: request `c` of repeat `r` is
/// at `r * requests.len() + c`, with seed `r`. One repeat leaves the requests as they are.
pub fn requests(requests: Vec<ChatRequest>, repeat: u32) -> Vec<ChatRequest> {
    if repeat <= 1 {
        return requests;
    }
    (0..repeat)
        .flat_map(|r| requests.iter().map(move |q| q.with_seed(r)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapters::prompt::{Message, Role};

    #[test]
    fn one_repeat_leaves_the_requests_and_more_give_each_its_seed() {
        let q = ChatRequest {
            messages: vec![Message {
                role: Role::User,
                content: "hi".into(),
            }],
            seed: None,
            grounded: None,
            slot: 0,
            format: None,
        };
        assert_eq!(requests(vec![q.clone()], 1), vec![q.clone()]);
        let seeds: Vec<Option<u32>> = requests(vec![q.clone(), q], 3)
            .iter()
            .map(|r| r.seed)
            .collect();
        assert_eq!(
            seeds,
            [Some(0), Some(0), Some(1), Some(1), Some(2), Some(2)]
        );
    }
}
