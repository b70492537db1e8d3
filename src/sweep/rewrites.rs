//! `--rewrite model`: each follow-up question rewritten once by the chat model before
//! retrieval.

use super::*;

/// The `model` rewrite requests of the follow-up questions.
pub(crate) struct RewriteRequests {
    /// The follow-up questions, by index.
    pub wanted: Vec<usize>,
    /// Distinct requests: equal follow-ups (same turns, same question) share one.
    pub requests: Vec<ChatRequest>,
    /// Per wanted question, its request.
    pub slot: Vec<usize>,
}

/// The requests of the follow-up questions some `model`-rewrite setting runs (`asked(q)`: not
/// every such setting was dropped before question `q`).
pub(crate) fn rewrite_requests(
    questions: &[Question],
    asked: impl Fn(usize) -> bool,
) -> RewriteRequests {
    let wanted: Vec<usize> = (0..questions.len())
        .filter(|&q| !questions[q].history.is_empty() && asked(q))
        .collect();
    let mut requests: Vec<ChatRequest> = Vec::new();
    let mut index: HashMap<ChatRequest, usize> = HashMap::new();
    let slot: Vec<usize> = wanted
        .iter()
        .map(|&q| {
            let r = rewrite::request(&questions[q].question, &questions[q].history);
            *index.entry(r.clone()).or_insert_with(|| {
                requests.push(r);
                requests.len() - 1
            })
        })
        .collect();
    RewriteRequests {
        wanted,
        requests,
        slot,
    }
}

/// The outcome of a `model` rewrite of one follow-up question.
pub(crate) struct ModelRewrite {
    pub(crate) text: String,
    pub(crate) note: Option<String>,
    pub(crate) usage: Usage,
    /// Its call, an index into the call log.
    pub(crate) call: u32,
}

impl Engine {
    /// Whether some setting of `grid` with the `model` rewrite runs question `q` (the engine's
    /// coverage may leave it out of every one).
    pub(crate) fn asked_by_model(&self, grid: &Grid) -> impl Fn(usize) -> bool + '_ {
        let by_model: Vec<usize> = grid
            .settings()
            .iter()
            .enumerate()
            .filter(|(_, s)| s.rewrite == Rewrite::Model)
            .map(|(i, _)| i)
            .collect();
        move |q| by_model.iter().any(|&s| self.coverage.runs(s, q))
    }

    /// Ask the model to rewrite every follow-up question once (only when the grid asks for it).
    pub(crate) async fn model_rewrites(
        &self,
        questions: &[Question],
        grid: &Grid,
        log: &mut CallLog,
    ) -> Vec<Option<ModelRewrite>> {
        if !grid.rewrites().any(|r| r == Rewrite::Model) {
            return questions.iter().map(|_| None).collect();
        }
        let RewriteRequests {
            wanted,
            requests,
            slot,
        } = rewrite_requests(questions, self.asked_by_model(grid));
        // Rewrites are asked of the configured `chat:` model (slot 0).
        let slots = self.slots();
        let (digests, replies) = self.call(&slots, requests).await;
        let logged = log_calls(log, CallRole::Rewrite, digests, &replies);
        let mut out: Vec<Option<ModelRewrite>> = questions.iter().map(|_| None).collect();
        for (&q, &i) in wanted.iter().zip(&slot) {
            let question = &questions[q].question;
            let (text, note, usage) = match &replies[i] {
                Ok(r) => match rewrite::accept(&r.text, question) {
                    Ok(text) => (text, None, r.usage),
                    Err(why) => (question.clone(), Some(why), r.usage),
                },
                Err(e) => (
                    question.clone(),
                    Some(format!("the rewrite call failed: {e}")),
                    Usage::default(),
                ),
            };
            out[q] = Some(ModelRewrite {
                text,
                note,
                usage,
                call: logged[i],
            });
        }
        out
    }
}

/// A note per question whose `model` rewrite is not used, and why.
pub(crate) fn notes(questions: &[Question], rewrites: &[Option<ModelRewrite>]) -> Vec<String> {
    questions
        .iter()
        .zip(rewrites)
        .filter_map(|(q, r)| {
            let why = r.as_ref()?.note.as_ref()?;
            Some(format!(
                "question `{}`: {why}; using the question as asked",
                q.id
            ))
        })
        .collect()
}
