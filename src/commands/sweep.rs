//! `rageval sweep`: the main job.

use anyhow::Result;

use crate::cli::OutputFormat;
use crate::evalset::Workspace;
use crate::exit::ExitStatus;
use crate::report::{self, Exporter, Meta, Results, SetMeta};
use crate::settings::SweepSettings;
use crate::stats::aggregate;
use crate::sweep::{Engine, Sweep};

pub async fn run(s: SweepSettings) -> Result<ExitStatus> {
    // Everything that can be wrong with the input is found here, before any file is written.
    let ws = Workspace::load(&s.evalsets)?;
    let engine = Engine {
        embedder: s.pipeline.embedder.clone(),
        model: s.pipeline.model.clone(),
        rules: s.pipeline.rules.clone(),
        concurrency: s.concurrency,
        progress: None,
    };
    let sweep = engine.sweep(&ws, &s.grid).await?;
    let results = collect(&s, &ws, sweep);
    let written = report::write_all(&results, &s.out)?;

    match s.format {
        OutputFormat::Json => {
            let mut buf = Vec::new();
            report::JsonResults.write(&results, &mut buf)?;
            super::print(&String::from_utf8(buf)?)?;
        }
        OutputFormat::Table if !s.quiet => {
            let c = &results.calls;
            let insight = &results.insight;
            let mut text = format!(
                "{}\n{}\n(rates: percent [95% Wilson interval]; pareto: no other setting has fewer false refusals, unwanted answers and prompt tokens at once)\n\n{}\nseparability: {}\n",
                report::table::settings_table(&results),
                insight.recommendation.reason,
                report::table::scores_table(&results),
                insight.separability.summary(),
            );
            text.push_str(&format!(
                "{} questions x {} settings = {} runs; {} needed the model, {} distinct prompts were sent.\n",
                results.questions.len(),
                results.settings.len(),
                results.runs.len(),
                c.runs_with_call,
                c.distinct_prompts,
            ));
            let names: Vec<String> = written.iter().map(|p| p.display().to_string()).collect();
            text.push_str(&format!("wrote {}\n", names.join(", ")));
            super::print(&text)?;
        }
        OutputFormat::Table => {}
    }
    if results.calls.failed > 0 {
        eprintln!(
            "error: {} of {} model calls failed; their runs are counted as `error` in the reports",
            results.calls.failed, results.calls.distinct_prompts
        );
        return Ok(ExitStatus::Error);
    }
    Ok(ExitStatus::Success)
}

/// Aggregate a finished sweep into the value every report reads.
pub fn collect(s: &SweepSettings, ws: &Workspace, sweep: Sweep) -> Results {
    let questions: Vec<_> = ws.questions().cloned().collect();
    let n = questions.len();
    let stats = (0..sweep.settings.len())
        .map(|i| {
            aggregate(
                &sweep.runs[i * n..(i + 1) * n],
                &questions,
                &s.pipeline.pricing,
            )
        })
        .collect();
    let mut config = serde_json::to_value(&s.config.config).unwrap_or_default();
    if let Some(obj) = config.as_object_mut() {
        // Where reports go and how fast calls are made do not change a result.
        obj.remove("out");
        obj.remove("evalsets");
        if let Some(sweep) = obj.get_mut("sweep").and_then(|v| v.as_object_mut()) {
            sweep.remove("concurrency");
        }
    }
    // The recommendation policy judges results; it does not change them.
    let mut digested = config.clone();
    if let Some(obj) = digested.as_object_mut() {
        obj.remove("recommend");
    }
    let config_digest = report::digest(&[digested.to_string().as_bytes()]);
    let evalsets = ws
        .sets
        .iter()
        .map(|set| {
            let corpus = &ws.corpora[set.questions[0].corpus];
            let parts: Vec<&[u8]> = corpus
                .chunks
                .iter()
                .flat_map(|c| [c.id.as_bytes(), c.heading.as_bytes(), c.text.as_bytes()])
                .collect();
            let answerable = set.questions.iter().filter(|q| q.answerable).count();
            SetMeta {
                path: set.path.display().to_string(),
                corpus: set.corpus_path.display().to_string(),
                answerable,
                unanswerable: set.questions.len() - answerable,
                digest: report::digest(&[set.text.as_bytes()]),
                corpus_digest: report::digest(&parts),
            }
        })
        .collect();
    Results {
        meta: Meta {
            tool_version: env!("CARGO_PKG_VERSION").to_string(),
            config_digest,
            config,
            embedder: s.pipeline.embedder.model(),
            model: s.pipeline.model.model(),
            refusal: s.pipeline.rules.refusal.clone(),
            strict_refusal: s.pipeline.rules.refusal_match == crate::prompt::RefusalMatch::Strict,
            currency: s.pipeline.currency.clone(),
            evalsets,
        },
        chunk_ids: ws
            .corpora
            .iter()
            .map(|c| c.chunks.iter().map(|ch| ch.id.clone()).collect())
            .collect(),
        chunk_labels: ws
            .corpora
            .iter()
            .map(|c| c.chunks.iter().map(ToString::to_string).collect())
            .collect(),
        expected_scores: sweep.expected_scores,
        questions,
        settings: sweep.settings,
        stats,
        runs: sweep.runs,
        calls: sweep.calls,
        insight: Default::default(),
    }
    .with_insight(&s.config.config.recommend)
}
