//! `rageval label`: draw a sample of a finished sweep's distinct model replies into a labels
//! file for a person to grade (or extend the file's sample), and with `--serve`, serve the page
//! that grades them (docs/labels.md).

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};

use crate::app::options::LabelOptions;
use crate::base::exit::ExitStatus;
use crate::base::text::plural;
use crate::output::labels::sample::{self, Oversample, Size};
use crate::output::labels::{self, LabelsFile};
use crate::results::Results;

pub async fn run(s: LabelOptions) -> Result<ExitStatus> {
    let quiet = s.quiet();
    let (results, dir) = load(s.results())?;
    let out = s
        .out()
        .map_or_else(|| labels::default_path(&dir), Path::to_path_buf);
    let existing = match std::fs::symlink_metadata(&out) {
        Ok(_) => LabelsFile::read(&out, &results)?,
        Err(_) => LabelsFile::default(),
    };
    let seed = seed(&existing, s.seed(), &out)?;
    // The page with neither size: the file as it is, or every reply when there is none.
    let size = match s.size() {
        None if s.serve() && existing.rows.is_empty() => Some(Size::All),
        None if s.serve() => None,
        None => bail!("say how many replies to sample: `--sample N` (about N) or `--share P` (each reply with probability P)"),
        some => some,
    };
    let file = match size {
        Some(size) => {
            let sampled = sample::extend(&results, existing, size, seed, s.oversample());
            if sampled.added > 0 || !out.exists() || sampled.raised > 0 {
                sampled.file.write(&out)?;
            }
            if !quiet {
                super::print(&format!(
                    "{}\n",
                    sampled_line(&sampled, s.oversample(), seed, &out)
                ))?;
            }
            sampled.file
        }
        None => existing,
    };
    if s.serve() {
        serve(file, &out, s.addr(), quiet).await?;
    }
    Ok(ExitStatus::Success)
}

/// The results of `--results` (a folder or its results.json; default the config's `out`
/// folder) and the folder they are in.
fn load(given: &Path) -> Result<(Results, PathBuf)> {
    let given = given.to_path_buf();
    let (file, dir) = if given.is_dir() || given.extension().is_none() {
        (given.join("results.json"), given)
    } else {
        let dir = given.parent().map(Path::to_path_buf).unwrap_or_default();
        (given, dir)
    };
    let results = super::gate::load(&file, "results", "run `rageval sweep` first")?;
    Ok((results, dir))
}

/// The sample's seed: the file's, which `--seed` may only repeat.
fn seed(existing: &LabelsFile, flag: Option<u64>, out: &Path) -> Result<u64> {
    match (existing.seed, flag) {
        (Some(have), Some(want)) if have != want => bail!(
            "`{}` holds a sample drawn with seed {have}: extend it with `--seed {have}` (or no --seed), or write another sample with `--out`",
            out.display()
        ),
        (Some(have), _) => Ok(have),
        (None, flag) => Ok(flag.unwrap_or(0)),
    }
}

/// `label: 12 of 48 distinct model replies sampled (share 0.25, seed 0), 12 new, in FILE; 0 of
/// 12 labelled`.
fn sampled_line(s: &sample::Sampled, design: &Oversample, seed: u64, out: &Path) -> String {
    let mut line = format!(
        "label: {} of {} distinct model replies sampled (share {}{}, seed {seed}), {} new, in {}; {} of {} labelled",
        s.file.rows.len(),
        s.replies,
        s.share,
        design.describe(),
        s.added,
        out.display(),
        s.file.labelled(),
        s.file.rows.len()
    );
    if s.raised > 0 && !design.is_uniform() {
        line.push_str(&format!(
            "; {} drawn before now at a higher inclusion (the larger sample holds them too)",
            plural(s.raised, "row")
        ));
    } else if s.raised > 0 {
        line.push_str(&format!(
            "; {} drawn before now at inclusion {} (the larger sample holds them too)",
            plural(s.raised, "row"),
            s.share
        ));
    }
    line
}

/// Serve the labelling page until the process is stopped.
async fn serve(file: LabelsFile, out: &Path, addr: Option<&str>, quiet: bool) -> Result<()> {
    let addr = crate::output::labels::serve::loopback(addr.unwrap_or("127.0.0.1:0"))?;
    let server = crate::output::labels::serve::Server::bind(addr, file, out).await?;
    if !quiet {
        super::print(&format!(
            "label: grading {} at {}\n(keys: r refused, a answered, c correct, w wrong, s skip, u undo; stop with Ctrl-C)\n",
            out.display(),
            server.url()
        ))?;
    } else {
        // The URL holds the token: without it the page cannot be opened.
        super::print(&format!("{}\n", server.url()))?;
    }
    server.run().await
}
