//! `rageval mock-llm`: start the HTTP mock and serve until killed.

use anyhow::{bail, Context, Result};

use crate::adapters::prompt::REFUSAL;
use crate::app::cli::MockLlmArgs;
use crate::base::exit::ExitStatus;
use crate::mock_llm::{base_url, serve, Faults, ServerOptions};

/// Check the flags: rates are probabilities that add up to at most 1.
pub fn options(a: &MockLlmArgs) -> Result<ServerOptions> {
    let rates = [
        ("--fail-rate", a.fail_rate),
        ("--malformed-rate", a.malformed_rate),
        ("--drop-rate", a.drop_rate),
        ("--hang-rate", a.hang_rate),
    ];
    for (flag, r) in rates {
        if !(0.0..=1.0).contains(&r) {
            bail!("invalid {flag}: {r} is not a probability between 0 and 1");
        }
    }
    if rates.iter().map(|(_, r)| r).sum::<f64>() > 1.0 + 1e-9 {
        bail!("the fault rates add up to more than 1");
    }
    if !(400..=599).contains(&a.fail_status) {
        bail!(
            "invalid --fail-status: {} is not an HTTP error status (400-599)",
            a.fail_status
        );
    }
    if !(1..=crate::app::config::MAX_DIMENSIONS).contains(&a.dimensions) {
        bail!(
            "invalid --dimensions: must be from 1 to {}",
            crate::app::config::MAX_DIMENSIONS
        );
    }
    Ok(ServerOptions {
        api_key: (!a.no_auth).then(|| a.api_key.clone()),
        delay: std::time::Duration::from_millis(a.delay_ms),
        token_delay: std::time::Duration::from_millis(a.token_delay_ms),
        dimensions: a.dimensions,
        refusal: REFUSAL.to_string(),
        max_body_bytes: a.max_body_bytes,
        vary_per_repeat: a.vary_per_repeat,
        faults: Faults {
            seed: a.seed,
            fail_rate: a.fail_rate,
            fail_status: a.fail_status,
            retry_after_s: a.retry_after,
            malformed_rate: a.malformed_rate,
            drop_rate: a.drop_rate,
            hang_rate: a.hang_rate,
            embeddings: a.faults_on_embeddings,
            fail_every: a.fail_every,
        },
        batch_delay: std::time::Duration::from_millis(a.batch_delay_ms),
        paraphrase: a.paraphrase,
        keep_requests: a.keep_requests,
        prompt_cache_slots: a.prompt_cache_slots,
        prompt_word_time: std::time::Duration::from_micros(a.prompt_word_us),
    })
}

pub async fn run(args: MockLlmArgs) -> Result<ExitStatus> {
    let opts = options(&args)?;
    let listener = tokio::net::TcpListener::bind(args.addr)
        .await
        .with_context(|| format!("cannot listen on {}", args.addr))?;
    let addr = listener.local_addr()?;
    if !addr.ip().is_loopback() {
        super::eprint_line(&format!(
            "warning: listening on {addr}, which is reachable from other machines"
        ));
    }
    let auth = if opts.api_key.is_some() {
        "bearer key required"
    } else {
        "no auth"
    };
    // The first line names the address, so a test or script can read the port it got.
    super::print(&format!(
        "mock-llm listening on {} ({auth})\n",
        base_url(addr)
    ))?;
    serve(listener, opts).await.context("the server stopped")?;
    Ok(ExitStatus::Success)
}
