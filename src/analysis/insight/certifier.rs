//! Which settings are certified: every rate limit of the policy holds with the stated
//! confidence for the whole grid at once, although the grid was searched.
//!
//! Each setting `s` and rate limit `l` is a hypothesis `H(s, l)`: "the true rate is above the
//! limit". A setting is certified when every one of its hypotheses is rejected (an
//! intersection-union test, Berger 1982), so certifying a setting that breaks a limit needs a
//! true hypothesis rejected: the family-wise error over all `H(s, l)` bounds the chance that
//! any certified setting breaks a limit. Each test is exact ([`Test`]). Two ways to share the
//! level `δ = 1 - confidence`:
//!
//! **Ordered** (the default). Each rate limit the policy sets is a family with `δ / families`.
//! Within a family, the settings form chains along the ordered dimension ([`Dim::trend`]:
//! minScore), one chain per combination of the other dimensions' values, each walking in the
//! direction in which the limit's rate grows (unwanted answers: from the highest minScore
//! down; false refusals: from the lowest up), so the likeliest passes come first. A family's
//! level is split evenly over its chains; a chain tests its first setting not yet certified at
//! the chain's level and stops at its first failure. When a chain has certified every setting
//! it holds, its level passes to the family's other chains, and when a family is done, its
//! level passes to the other families; a stopped chain then tries again at its higher level.
//!
//! *Why the family-wise error stays at δ.* Write `α(H, R)` for the level the procedure gives
//! hypothesis `H` once the set `R` is rejected: the families not done share δ evenly, each
//! family's chains not done share its level evenly, and within a chain the first hypothesis
//! not in `R` gets the chain's level and the rest 0. Then (i) the levels of the hypotheses not
//! in `R` sum to at most δ, and (ii) `α(H, R)` only grows as `R` grows (fewer families and
//! chains share, and a hypothesis only moves to the front of its chain). Rejecting every `H`
//! with `p(H) ≤ α(H, R)` until nothing changes is then a sequentially rejective procedure in
//! the sense of Goeman and Solari (2010, Theorem 1): for the set `T` of true hypotheses, a
//! first false rejection happens at some `R ⊆ F∖T`, so at level at most `α(H, F∖T)`, and
//! `P(any false rejection) ≤ Σ_{H∈T} α(H, F∖T) ≤ δ` whatever the dependence between the tests.
//! It is the graphical procedure of Bretz, Maurer, Brannath and Posch (2009) with edges along
//! each chain and from each chain's end to the other chains. The order is fixed by the grid
//! before any data: the guarantee holds whether or not the rates are monotone; monotonicity
//! only buys the power. With anytime-valid tests the same argument holds at every number of
//! questions at once (Ville's inequality bounds `P(∃n: p_n(H) ≤ α(H, F∖T))` by that level).
//!
//! **Bonferroni** (`recommend.method: bonferroni`). Every test at `δ / settings`, all limits
//! of a setting at that level (the intersection-union test needs no split over limits).

use std::collections::HashMap;

use super::config::{Method, RecommendConfig};
use super::counts::{slot, Counts};
use super::ppi::{RateSamples, Sample};
use super::rate_test::Test;
use crate::sweep::Setting;
use crate::vocab::dim::{Dim, Trend};
use crate::vocab::limit::Limit;

/// Whether and how settings are certified.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub enum Certification {
    /// `recommend.confidence: 0`: the choice on the measured rates alone.
    #[default]
    Off,
    On {
        confidence: f64,
        method: Method,
        test: Test,
        /// With labels: the distinct labelled replies every rate's prediction-powered test
        /// rests on ([`super::ppi`]).
        labels: Option<u64>,
    },
}

impl Certification {
    pub fn of(policy: &RecommendConfig) -> Self {
        if policy.confidence <= 0.0 {
            return Certification::Off;
        }
        Certification::On {
            confidence: policy.confidence,
            method: policy.method,
            test: if policy.sequential {
                Test::Sequential
            } else {
                Test::Fixed
            },
            labels: None,
        }
    }

    /// The same certification with every rate tested on `labels` labelled replies (none: 0
    /// leaves it as it is).
    pub fn with_labels(self, labels: u64) -> Self {
        match self {
            Certification::On {
                confidence,
                method,
                test,
                ..
            } if labels > 0 => Certification::On {
                confidence,
                method,
                test,
                labels: Some(labels),
            },
            other => other,
        }
    }

    /// The labelled replies the tests rest on; `None` without labels or when off.
    pub fn labels(self) -> Option<u64> {
        match self {
            Certification::On { labels, .. } => labels,
            Certification::Off => None,
        }
    }

    pub fn is_on(self) -> bool {
        self != Certification::Off
    }

    /// `1 - confidence`; 0 when off.
    pub fn delta(self) -> f64 {
        match self {
            Certification::Off => 0.0,
            Certification::On { confidence, .. } => 1.0 - confidence,
        }
    }

    /// The confidence; 0 when off.
    pub fn confidence(self) -> f64 {
        match self {
            Certification::Off => 0.0,
            Certification::On { confidence, .. } => confidence,
        }
    }

    pub fn test(self) -> Test {
        match self {
            Certification::On { test, .. } => test,
            Certification::Off => Test::Fixed,
        }
    }

    pub fn method(self) -> Option<Method> {
        match self {
            Certification::On { method, .. } => Some(method),
            Certification::Off => None,
        }
    }
}

/// How the settings were certified, as facts (the procedure in words is `method`, written
/// from these): results.json's `summary.recommendation.procedure`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, schemars::JsonSchema)]
pub struct Procedure {
    /// `ordered` (ordered family-wise tests) or `bonferroni` (`recommend.method`).
    pub method: Method,
    /// Whether the tests are anytime-valid (`recommend.sequential`).
    pub sequential: bool,
    /// The rate limits tested, each a family with an equal share of `1 - confidence` under
    /// `ordered`.
    pub families: usize,
    /// `ordered`: the chains of each family (the most any family has), one per combination of
    /// the dimensions other than `along`; every setting is a chain of its own when no ordered
    /// dimension varies. Null under `bonferroni`.
    pub chains: Option<usize>,
    /// `ordered`: the ordered dimension the chains run along (`min_score`); null when none
    /// varies in the grid, and under `bonferroni`.
    pub along: Option<String>,
    /// The lowest level a test of the grid starts from: `(1 - confidence) / families /
    /// chains` (ordered, at the first setting of each chain, before any level is passed on) or
    /// `(1 - confidence) / settings` (Bonferroni).
    pub first_level: f64,
    /// With labels (docs/labels.md): the distinct labelled replies the tests rest on; every
    /// rate the labels grade is then tested by the prediction-powered betting test, which
    /// combines every run's grade with the labelled sample. Absent without labels.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub labels: Option<u64>,
}

/// What the rate tests read: every setting's counts and, with labels, its labelled samples
/// (both parallel to the grid's settings).
#[derive(Debug, Clone, Copy)]
pub struct Evidence<'a> {
    pub counts: &'a [Counts],
    pub labelled: Option<&'a [RateSamples]>,
}

impl<'a> Evidence<'a> {
    /// Setting `s`'s labelled sample of rate slot `i`, when it has one.
    pub fn sample(self, s: usize, i: usize) -> Option<&'a Sample> {
        self.labelled?.get(s)?.get(i)?.as_ref()
    }

    /// The evidence of the first `n` settings.
    fn first(self, n: usize) -> Self {
        Evidence {
            counts: &self.counts[..n],
            labelled: self.labelled.map(|l| &l[..n.min(l.len())]),
        }
    }
}

/// One rate limit's tests of one setting.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Verdict {
    /// Whether its hypothesis was rejected: the limit is certified (or, for a probe limit
    /// without probes, not held).
    pub certified: bool,
    /// The level it was tested at, or, when its chain stopped before it, the level it would
    /// get next.
    pub level: f64,
    /// When its chain stopped before reaching it: the setting it stopped at.
    pub stopped_at: Option<usize>,
}

/// Every setting's verdicts: per rate family (in [`Certifier::rates`] order), per setting.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Verdicts {
    /// Per setting: every rate limit certified and the token limit met.
    pub certified: Vec<bool>,
    pub families: Vec<Vec<Verdict>>,
}

/// How settings are certified, with the grid's chains worked out once and the critical
/// counts cached per base size and level (resampling tests the same sizes again and again).
pub struct Certifier {
    pub certification: Certification,
    /// The settings the level is shared over.
    pub settings: usize,
    /// Every limit of the policy.
    pub limits: Vec<(Limit, f64)>,
    /// The rate limits, each a family: limit, its value, its slot in [`Counts`].
    rates: Vec<(Limit, f64, usize)>,
    /// The dimension the chains run along, when one is ordered and varies in the grid.
    pub along: Option<Dim>,
    /// Per family, its chains: settings in test order.
    chains: Vec<Vec<Vec<usize>>>,
    critical: HashMap<(usize, u64, u64), Option<u64>>,
}

impl Certifier {
    pub fn new(policy: &RecommendConfig, settings: &[Setting]) -> Self {
        let limits: Vec<(Limit, f64)> = policy.limits().iter().collect();
        let rates: Vec<(Limit, f64, usize)> = limits
            .iter()
            .filter_map(|&(l, max)| slot(l).map(|i| (l, max, i)))
            .collect();
        let along = Dim::ALL
            .into_iter()
            .find(|&d| d.is_ordered() && settings.iter().any(|s| s.get(d) != settings[0].get(d)));
        let chains = rates
            .iter()
            .map(|&(limit, _, _)| chains(settings, along, limit))
            .collect();
        Certifier {
            certification: Certification::of(policy),
            settings: settings.len(),
            limits,
            rates,
            along,
            chains,
            critical: HashMap::new(),
        }
    }

    /// The rate limits, in the order of [`Verdicts::families`].
    pub fn rates(&self) -> &[(Limit, f64, usize)] {
        &self.rates
    }

    /// The chains of family `f`.
    pub fn chains(&self, f: usize) -> &[Vec<usize>] {
        &self.chains[f]
    }

    /// The procedure as facts: its method, mode, families, chains and the lowest level a test
    /// starts from; `None` with certification off.
    pub fn procedure(&self) -> Option<Procedure> {
        let Certification::On { method, test, .. } = self.certification else {
            return None;
        };
        let delta = self.certification.delta();
        let families = self.rates.len();
        let (chains, along, first_level) = match method {
            Method::Bonferroni => (None, None, delta / self.settings.max(1) as f64),
            Method::Ordered => {
                let chains = self.chains.iter().map(Vec::len).max().unwrap_or(0);
                let level = delta / families.max(1) as f64 / chains.max(1) as f64;
                (Some(chains), self.along.map(|d| d.to_string()), level)
            }
        };
        Some(Procedure {
            method,
            sequential: test == Test::Sequential,
            families,
            chains,
            along,
            first_level,
            labels: self.certification.labels(),
        })
    }

    /// Whether setting `s` certifies family `f`'s limit at `alpha`: on its labelled sample
    /// when it has one ([`Sample::certifies`]), else on its failures among its questions.
    fn passes(&mut self, f: usize, s: usize, e: Evidence<'_>, alpha: f64) -> bool {
        let (_, max, i) = self.rates[f];
        if let Some(sample) = e.sample(s, i) {
            return sample.certifies(max, alpha);
        }
        let t = e.counts[s].certified[i];
        let test = self.certification.test();
        let crit = *self
            .critical
            .entry((i, t.questions, alpha.to_bits()))
            .or_insert_with(|| test.critical_failures(t.questions, max, alpha));
        crit.is_some_and(|c| t.failures <= c)
    }

    /// Whether family `f`'s hypothesis of a setting with these counts holds without a test: a
    /// probe limit is not held against a setting without probes.
    fn vacuous(&self, f: usize, c: &Counts) -> bool {
        let (limit, _, i) = self.rates[f];
        limit == Limit::MaxAttackSuccessRate && c.certified[i].questions == 0
    }

    /// Whether `c` meets every limit that is not a rate (tokens) on its measured value.
    fn others_hold(&self, c: &Counts) -> bool {
        self.limits
            .iter()
            .all(|&(l, max)| slot(l).is_some() || c.value(l).is_none_or(|v| l.holds(v, max, 0.0)))
    }

    /// Every setting's verdicts (counts parallel to the grid's settings).
    pub fn verdicts(&mut self, counts: &[Counts]) -> Verdicts {
        self.verdicts_of(Evidence {
            counts,
            labelled: None,
        })
    }

    /// Every setting's verdicts on `e`: with labels, each rate with a labelled sample is
    /// tested on it, inside the same procedure.
    pub fn verdicts_of(&mut self, e: Evidence<'_>) -> Verdicts {
        let n = e.counts.len().min(self.settings);
        let e = e.first(n);
        let counts = e.counts;
        let families = match self.certification.method() {
            None => {
                return Verdicts {
                    certified: vec![false; n],
                    families: Vec::new(),
                }
            }
            Some(Method::Bonferroni) => self.bonferroni(e),
            Some(Method::Ordered) => self.ordered(e),
        };
        let certified = (0..n)
            .map(|s| families.iter().all(|f| f[s].certified) && self.others_hold(&counts[s]))
            .collect();
        Verdicts {
            certified,
            families,
        }
    }

    /// Per setting whether it is certified: [`Certifier::verdicts`] without the detail.
    pub fn certified(&mut self, counts: &[Counts]) -> Vec<bool> {
        self.verdicts(counts).certified
    }

    /// Per setting whether it is certified on `e`.
    pub fn certified_on(&mut self, e: Evidence<'_>) -> Vec<bool> {
        self.verdicts_of(e).certified
    }

    fn bonferroni(&mut self, e: Evidence<'_>) -> Vec<Vec<Verdict>> {
        let alpha = self.certification.delta() / self.settings.max(1) as f64;
        (0..self.rates.len())
            .map(|f| {
                (0..e.counts.len())
                    .map(|s| Verdict {
                        certified: self.vacuous(f, &e.counts[s]) || self.passes(f, s, e, alpha),
                        level: alpha,
                        stopped_at: None,
                    })
                    .collect()
            })
            .collect()
    }

    fn ordered(&mut self, e: Evidence<'_>) -> Vec<Vec<Verdict>> {
        let counts = e.counts;
        let delta = self.certification.delta();
        let families = self.rates.len();
        let mut out: Vec<Vec<Verdict>> = (0..families)
            .map(|f| {
                counts
                    .iter()
                    .map(|c| Verdict {
                        certified: self.vacuous(f, c),
                        level: 0.0,
                        stopped_at: None,
                    })
                    .collect()
            })
            .collect();
        // Per family and chain: the position of its first setting not certified.
        let mut heads: Vec<Vec<usize>> = self.chains.iter().map(|c| vec![0; c.len()]).collect();
        let done = |out: &[Verdict], chain: &[usize], head: &mut usize| {
            while *head < chain.len() && out[chain[*head]].certified {
                *head += 1;
            }
            *head >= chain.len()
        };
        loop {
            // The levels at this point, from the chains and families not done.
            let mut open: Vec<Vec<usize>> = Vec::with_capacity(families);
            for f in 0..families {
                let chains = &self.chains[f];
                open.push(
                    (0..chains.len())
                        .filter(|&c| !done(&out[f], &chains[c], &mut heads[f][c]))
                        .collect(),
                );
            }
            let open_families = open.iter().filter(|c| !c.is_empty()).count();
            if open_families == 0 {
                break;
            }
            let mut changed = false;
            for f in 0..families {
                if open[f].is_empty() {
                    continue;
                }
                let level = delta / open_families as f64 / open[f].len() as f64;
                for &c in &open[f] {
                    let s = self.chains[f][c][heads[f][c]];
                    out[f][s].level = level;
                    if self.passes(f, s, e, level) {
                        out[f][s].certified = true;
                        changed = true;
                    }
                }
            }
            if !changed {
                // Nothing moves at these levels: the settings behind each head wait for it.
                for f in 0..families {
                    for &c in &open[f] {
                        let chain = &self.chains[f][c];
                        let head = chain[heads[f][c]];
                        let level = out[f][head].level;
                        for &s in &chain[heads[f][c] + 1..] {
                            if !out[f][s].certified {
                                out[f][s].level = level;
                                out[f][s].stopped_at = Some(head);
                            }
                        }
                    }
                }
                break;
            }
        }
        out
    }
}

/// The chains of one limit's family: settings grouped by every dimension but `along`, in grid
/// order of their first member, each sorted along `along` in the direction the limit's rate
/// grows (its likeliest pass first). A limit `along` does not order, or a grid without an
/// ordered dimension that varies, gives one chain per setting.
fn chains(settings: &[Setting], along: Option<Dim>, limit: Limit) -> Vec<Vec<usize>> {
    let Some((along, trend)) = along.and_then(|d| d.trend(limit).map(|t| (d, t))) else {
        return (0..settings.len()).map(|s| vec![s]).collect();
    };
    let key = |s: &Setting| -> Vec<String> {
        Dim::ALL
            .into_iter()
            .filter(|&d| d != along)
            .map(|d| s.get(d).to_string())
            .collect()
    };
    let mut groups: Vec<(Vec<String>, Vec<usize>)> = Vec::new();
    for (i, s) in settings.iter().enumerate() {
        let k = key(s);
        match groups.iter_mut().find(|(g, _)| *g == k) {
            Some((_, members)) => members.push(i),
            None => groups.push((k, vec![i])),
        }
    }
    let value = |i: usize| settings[i].get(along).number().unwrap_or(0.0);
    groups
        .into_iter()
        .map(|(_, mut members)| {
            members.sort_by(|&a, &b| {
                let o = value(a).total_cmp(&value(b));
                match trend {
                    // The rate falls as the value rises: the highest value first.
                    Trend::Falls => o.reverse(),
                    Trend::Rises => o,
                }
            });
            members
        })
        .collect()
}
