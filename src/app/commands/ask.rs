//! `rageval ask` and `rageval prompt`: one question through the pipeline, shown in full.

use anyhow::{bail, Result};

use crate::adapters::chat::ChatRequest;
use crate::adapters::corpus::Corpus;
use crate::adapters::evalset::Workspace;
use crate::adapters::prompt::{self, citations};
use crate::adapters::search::{passing, Hit};
use crate::app::options::AskOptions;
use crate::base::exit::ExitStatus;
use crate::sweep::{Engine, Query, Ranking};

/// Retrieval for one question: the passages and the hits that pass.
struct Retrieved {
    corpus: Corpus,
    top_k: Vec<Hit>,
    sent: Vec<Hit>,
}

/// The sweep's retrieval step for one question: the same boundary, builtin or foreign.
async fn retrieve(s: &AskOptions) -> Result<Retrieved> {
    let retriever =
        crate::adapters::retriever::open(s.retriever(), s.pipeline().embedder.clone()).await?;
    let mut corpus = match (s.corpus(), &retriever) {
        // A foreign retriever brings its own passages.
        (None, Some(_)) => Corpus {
            root: ".".into(),
            roots: Vec::new(),
            chunks: Vec::new(),
        },
        (Some(dir), _) => Corpus::load_many(&[dir.to_path_buf()])?,
        (None, None) => {
            let Some(first) = s.first_evalset() else {
                bail!("no corpus: pass `--corpus DIR`, or list a question set in rageval.yaml");
            };
            let ws = Workspace::load(&[first.to_path_buf()])?;
            Corpus::load_many(&ws.sets[0].corpus_paths)?
        }
    };
    corpus.split_long_sections(crate::adapters::corpus::chunk_limit(
        s.max_chunk_tokens(),
        s.pipeline().embedder.max_input_tokens(),
    ));
    let engine = Engine {
        chat_variants: Vec::new(),
        judge: None,
        ..s.pipeline().engine(retriever, Vec::new(), 1)
    };
    let query = Query {
        corpus: 0,
        variant: 0,
        text: s.question(),
        question: s.question(),
    };
    let Ranking {
        mut corpora,
        mut ranked,
        ..
    } = engine.rank(&[corpus], &[query], s.k()).await?;
    let top_k = ranked.remove(0);
    let sent = s
        .order()
        .apply(passing(&top_k, s.k(), s.min_score().to_f64()));
    Ok(Retrieved {
        corpus: corpora.remove(0),
        top_k,
        sent,
    })
}

fn messages(s: &AskOptions, r: &Retrieved) -> Vec<prompt::Message> {
    let chunks: Vec<_> = r.sent.iter().map(|h| &r.corpus.chunks[h.chunk]).collect();
    s.pipeline()
        .rules
        .prompt
        .build(s.question(), &chunks, s.format())
}

/// The request the configured model is sent: the prompt, or the question and passages for a
/// generation endpoint (`chat.kind: http`).
fn request(s: &AskOptions, r: &Retrieved) -> ChatRequest {
    if s.pipeline().model.takes_passages() {
        let passages = r.sent.iter().map(|h| (&r.corpus.chunks[h.chunk], h.score));
        return ChatRequest {
            grounded: Some(crate::adapters::chat::Grounded::of(s.question(), passages)),
            ..ChatRequest::of(Vec::new())
        };
    }
    ChatRequest::of(messages(s, r))
}

fn early_note(s: &AskOptions, r: &Retrieved) -> String {
    let best = r
        .top_k
        .first()
        .map(|h| format!("{:.3}", h.score))
        .unwrap_or_else(|| "none".into());
    format!(
        "no passage scored at least {} (best: {best}), so the pipeline refuses before the model",
        s.min_score()
    )
}

/// Print what the models gathered as warnings (a response that could not be cached).
fn print_warnings(s: &AskOptions) {
    let mut warnings = s.pipeline().embedder.warnings();
    warnings.extend(s.pipeline().model.warnings());
    for w in warnings {
        super::eprint_line(&format!("warning: {w}"));
    }
}

/// `rageval prompt`: the exact messages, or a note that nothing would be sent.
pub async fn prompt(s: AskOptions) -> Result<ExitStatus> {
    let r = retrieve(&s).await?;
    print_warnings(&s);
    if r.sent.is_empty() {
        super::eprint_line(&format!("note: {}; nothing is sent", early_note(&s, &r)));
        return Ok(ExitStatus::Success);
    }
    let mut out = String::new();
    match &request(&s, &r).grounded {
        // A generation endpoint builds its own prompt: what it is sent is the body.
        Some(g) => out.push_str(&format!(
            "--- POST {}\n{}\n",
            s.pipeline()
                .chat_servers
                .first()
                .map_or("", |c| c.shown.as_str()),
            serde_json::to_string_pretty(g)?
        )),
        None => {
            for m in messages(&s, &r) {
                out.push_str(&format!("--- {}\n{}\n", m.role.as_str(), m.content));
            }
        }
    }
    super::print(&out)?;
    Ok(ExitStatus::Success)
}

/// `rageval ask`: the answer with readable citations and the sources behind it.
pub async fn ask(s: AskOptions) -> Result<ExitStatus> {
    let r = retrieve(&s).await?;
    print_warnings(&s);
    let chunks = &r.corpus.chunks;
    if r.sent.is_empty() {
        super::print(&format!(
            "{}\n\n({})\n",
            s.pipeline().rules.refusal,
            early_note(&s, &r)
        ))?;
        return Ok(ExitStatus::Success);
    }
    let request = request(&s, &r);
    let reply = match s.pipeline().model.complete(&request).await {
        Ok(reply) => reply,
        Err(e) => match s.pipeline().chat_servers.first() {
            Some(server) => bail!("the model call to {} failed: {e}", server.shown),
            None => bail!("the model call failed: {e}"),
        },
    };
    print_warnings(&s);
    if s.pipeline().rules.refusal_tier(&reply.text).is_some() {
        super::print(&format!(
            "{}\n\n(the model refused; {} passages were sent, none is shown as evidence)\n",
            reply.text.trim(),
            r.sent.len()
        ))?;
        return Ok(ExitStatus::Success);
    }
    let cited = citations(&reply.text);
    let label = |n: u32| {
        r.sent
            .get((n as usize).wrapping_sub(1))
            .map(|h| &chunks[h.chunk])
    };
    let mut out = relabel(&reply.text, |n| label(n).map(|c| format!("[{}]", c)));
    out.push_str("\n\nsources (* cited):\n");
    for (i, h) in r.sent.iter().enumerate() {
        let n = i as u32 + 1;
        let mark = if cited.contains(&n) { '*' } else { ' ' };
        out.push_str(&format!(
            "  {mark}[{n}] {} ({:.3})\n",
            chunks[h.chunk], h.score
        ));
    }
    let mut invalid: Vec<u32> = cited
        .iter()
        .copied()
        .filter(|&n| label(n).is_none())
        .collect();
    invalid.dedup();
    if !invalid.is_empty() {
        let list: Vec<String> = invalid.iter().map(|n| format!("[{n}]")).collect();
        out.push_str(&format!(
            "invalid citations: {} (no such passage)\n",
            list.join(" ")
        ));
    }
    out.push_str(&format!(
        "tokens: prompt {}, completion {}{}\n",
        reply.usage.prompt_tokens,
        reply.usage.completion_tokens,
        if reply.usage.estimated {
            " (estimated)"
        } else {
            ""
        }
    ));
    super::print(&out)?;
    Ok(ExitStatus::Success)
}

/// Replace each valid `[n]` with a label; an invalid one is kept and flagged with `(?)`.
fn relabel(text: &str, label: impl Fn(u32) -> Option<String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut end = 0;
    for (span, n) in crate::adapters::prompt::citation_spans(text) {
        out.push_str(&text[end..span.start]);
        match label(n) {
            Some(l) => out.push_str(&l),
            None => out.push_str(&format!("[{n}](?)")),
        }
        end = span.end;
    }
    out.push_str(&text[end..]);
    out
}

#[cfg(test)]
mod tests {
    use super::relabel;

    #[test]
    fn valid_citations_become_labels_and_invalid_ones_are_flagged() {
        let label = |n| (n == 1).then(|| "[a.md > Fee]".to_string());
        assert_eq!(
            relabel("Ten. [1] Five. [7] [x]", label),
            "Ten. [a.md > Fee] Five. [7](?) [x]"
        );
        // Only one to nine digits in brackets are a citation; a bracket may open another.
        assert_eq!(
            relabel("[[1]] [1234567890] [] é[1]", label),
            "[[a.md > Fee]] [1234567890] [] é[a.md > Fee]"
        );
    }
}
