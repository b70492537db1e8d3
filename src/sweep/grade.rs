//! The judge's grades: one call per distinct (question, expected answers, passages, reply).

use super::*;

impl Engine {
    /// Grade every reply that is not the exact refusal sentence with the judge: one call per
    /// distinct request, each added to `log`. Per planned run, its grade and its judge call's
    /// index in the log (`None`: not judged); empty without a judge, where a `None` per run
    /// cost 72 MB at a million runs.
    pub(crate) async fn grade(
        &self,
        planned: &[PlannedRun],
        questions: &[Question],
        corpora: &[Corpus],
        views: &[View],
        replies: &[Result<ChatReply, CallError>],
        log: &mut CallLog,
    ) -> Vec<Option<(Judged, u32)>> {
        let Some(judge) = &self.judge else {
            return Vec::new();
        };
        // As in the planner, two levels: (answer call, question, view, passages) is cheap to
        // hash and fixes the request (a template need not quote the question or the passages,
        // so the call alone does not), so most runs never build one; the request itself then
        // catches equal requests of different questions.
        let mut requests: Vec<ChatRequest> = Vec::new();
        let mut by_request: HashMap<ChatRequest, usize> = HashMap::new();
        type Key = (usize, usize, usize, Vec<usize>);
        let mut by_key: HashMap<Key, Option<usize>> = HashMap::new();
        let slots: Vec<Option<usize>> = planned
            .iter()
            .map(|p| {
                let c = p.call?;
                let chunk_ids = p.passages.iter().map(|h| h.chunk).collect();
                *by_key
                    .entry((c, p.question, p.view, chunk_ids))
                    .or_insert_with(|| {
                        let reply = replies[c].as_ref().ok()?;
                        if self.rules.refusal_tier(&reply.text) == Some(RefusalTier::Exact) {
                            return None;
                        }
                        let q = &questions[p.question];
                        let corpus = &corpora[q.corpus];
                        let chunks: Vec<_> =
                            p.passages.iter().map(|h| &corpus.chunks[h.chunk]).collect();
                        let text = &views[p.view].text;
                        let r = judge::request(text, &q.expect.answers, &chunks, &reply.text);
                        Some(*by_request.entry(r.clone()).or_insert_with(|| {
                            requests.push(r);
                            requests.len() - 1
                        }))
                    })
            })
            .collect();
        let digest: run::DigestFn = {
            let judge = judge.clone();
            Arc::new(move |r: &ChatRequest| request_digest(judge.as_ref(), r))
        };
        let (digests, replies): (Vec<_>, Vec<_>) = execute(
            judge.clone(),
            requests,
            digest,
            self.concurrency,
            self.progress.clone(),
        )
        .await
        .into_iter()
        .unzip();
        let logged = log_calls(log, CallRole::Judge, digests, &replies);
        let grades: Vec<(Judged, u32)> = replies
            .into_iter()
            .zip(logged)
            .map(|(reply, call)| {
                let usage = reply.as_ref().map(|r| r.usage).unwrap_or_default();
                let grade = reply.and_then(|r| judge::parse(&r.text));
                if let (Err(e), Some((_, record))) = (&grade, log.get_index_mut(call as usize)) {
                    // A reply that is not a grade is the call's error: counted as failed
                    // wherever the record is read, its text kept.
                    record.error = Some(e.clone());
                }
                (Judged { grade, usage }, call)
            })
            .collect();
        slots
            .into_iter()
            .map(|slot| slot.map(|i| grades[i].clone()))
            .collect()
    }

    /// The log digest of a request, by its slot's model.
    pub(crate) fn digest_fn(slots: &Arc<ChatSlots>) -> run::DigestFn {
        let slots = slots.clone();
        Arc::new(move |r: &ChatRequest| request_digest(slots.model(r.slot).as_ref(), r))
    }
}
