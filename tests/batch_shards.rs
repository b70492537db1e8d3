//! Batch engines with sharded sweeps: `sweep --shard I/N --batch-out FILE` records its
//! requests in the shard's own cache folder, and `batch import` finds that folder from the
//! answers' `custom_id`s, with no `--cache-dir`, and names the shard's sweep, which runs from
//! the cache.

use crate::batch::{answer, count};
use crate::http::{http_project, keyed, MockLlm};

/// Two shards export their requests; each shard's answers imported with no `--cache-dir` go
/// into that shard's cache folder (the sweep of the shard then calls nothing), and one import
/// of both shards' answers is refused, naming the two folders.
#[test]
fn batch_import_feeds_the_cache_of_the_shard_that_wrote_the_requests() {
    let mock = MockLlm::start(&[]);
    let p = http_project(&mock.url, false, "");
    let engine = MockLlm::start(&[]);
    // The 104 requests of the whole sweep, split by the shards' questions.
    let shards = [("1", 59, 19349), ("2", 45, 14613)];
    for (shard, requests, tokens) in shards {
        let calls = format!("calls{shard}.jsonl");
        let out = keyed(&p, &["sweep", "--shard", &format!("{shard}/2"), "--batch-out", &calls])
            .stdout(format!(
                "wrote {requests} chat requests to {calls} (OpenAI batch input format; no chat call was made).\n\
                 estimated prompt tokens: {tokens}; estimated prompt cost at the batch price (50% off): 0.0000 USD\n\
                 next: have a batch engine answer {calls}, then `rageval batch import OUTPUT.jsonl [ERRORS.jsonl]` and run the sweep: it finishes from the cache (failed lines are called live, or `--batch-out` writes them again).\n"
            ))
            .run();
        let (output, errors) = answer(&engine, &out.read(&calls));
        assert_eq!(errors, "", "the engine answers every request");
        p.write(&format!("answers{shard}.jsonl"), &output);
    }
    assert_eq!(count(&mock.stats(), &["chat_requests"]), 0, "no call");
    keyed(&p, &["batch", "import", "answers1.jsonl", "answers2.jsonl"])
        .unusable(&[
            "these files answer the requests of more than one cache folder",
            ".rageval/cache/shard-1-of-2`, `",
            ".rageval/cache/shard-2-of-2`): import each shard's files on their own",
        ])
        .run();
    for (shard, requests, _) in shards {
        let answers = format!("answers{shard}.jsonl");
        keyed(&p, &["batch", "import", &answers])
            .stdout(format!(
                "imported {requests} answers (0 already in the cache), 0 failed, 0 unknown.\n\
                 the cache answers {requests} of the {requests} requests this project wrote into batch files.\n\
                 next: `rageval sweep --shard {shard}/2` finishes from the cache with no call.\n"
            ))
            .run();
        assert!(p
            .path()
            .join(format!(".rageval/cache/shard-{shard}-of-2/chat.jsonl"))
            .exists());
        keyed(&p, &["sweep", "--shard", &format!("{shard}/2"), "--quiet"]).run();
        assert_eq!(
            count(&mock.stats(), &["chat_requests"]),
            0,
            "shard {shard}/2 sweeps from the cache its import filled"
        );
    }
}
