//! The config file's check: each section's own `check()` under its path, then what no
//! section can check alone.

use super::{profiles, sweep_grid, Config};
use crate::base::problem::{Checked, Problem, Under};
use crate::vocab::grid::Grid;

impl Config {
    /// Check every section with its own `check()`, under its path, then what no section can
    /// check alone; the grid `sweep:` names, when all is well.
    pub fn check(&self) -> Result<Grid, Problem> {
        // Profiles first: a profile's name must be usable before its fields are read.
        for (map, names) in [
            ("models", self.models.keys().collect::<Vec<_>>()),
            ("embedders", self.embedders.keys().collect()),
        ] {
            for name in names {
                profiles::check_name(name)
                    .map_err(|msg| Problem::at(&[], msg).under(&[map, name.as_str()]))?;
            }
        }
        self.chat.check().under(&["chat"])?;
        self.embedder.check().under(&["embedder"])?;
        for (name, m) in &self.models {
            m.check().under(&["models", name.as_str()])?;
        }
        for (name, e) in &self.embedders {
            e.check().under(&["embedders", name.as_str()])?;
        }
        if let Some(j) = &self.judge {
            j.check().under(&["judge"])?;
        }
        if let Some(r) = &self.reranker {
            r.check().under(&["reranker"])?;
        }
        self.retriever.check().under(&["retriever"])?;
        self.scan.check().under(&["scan"])?;
        self.sweep.check().under(&["sweep"])?;
        self.prompt.check().under(&["prompt"])?;
        self.generate.check().under(&["generate"])?;
        self.pricing.check().under(&["pricing"])?;
        self.recommend.check().under(&["recommend"])?;
        self.check_across()?;
        let grid = sweep_grid(self)
            .map_err(|(d, msg)| Problem::new(d.config_key(), msg).under(&["sweep"]))?;
        self.gate.check().under(&["gate"])?;
        self.history.check().under(&["history"])?;
        Ok(grid)
    }

    /// What spans sections: a retriever's queries per k against a reranker, the generator's
    /// model among the profiles.
    fn check_across(&self) -> Checked {
        if self.retriever.query_per_k && self.reranker.is_some() {
            return Err(Problem::new(
                "query_per_k",
                "cannot be combined with a `reranker`, which reorders one list of candidates per question (raise `retriever.ef_search` instead)",
            )
            .under(&["retriever"]));
        }
        let Some(name) = self.generate.model.as_deref() else {
            return Ok(());
        };
        let writer = match name {
            crate::vocab::grid::DEFAULT_PROFILE => Some(&self.chat),
            name => self.models.get(name),
        };
        let problem = |msg: String| Err(Problem::new("model", msg).under(&["generate"]));
        match writer {
            Some(w) if w.kind.takes_passages() => problem(format!(
                "names a generation endpoint (kind: {}), which builds its own prompt: the generator needs a model of kind openai or mock",
                w.kind
            )),
            Some(_) => Ok(()),
            None => problem(format!(
                "unknown chat profile `{name}`; `models:` defines {}",
                profiles::known(self.models.keys())
            )),
        }
    }
}
