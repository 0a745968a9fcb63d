//! Band-table checks: scores in range, bounds that can match, order that lets every band
//! be reached, and a final catch-all.
//!
//! A band that also bounds the heuristic's second metric (`and:`) covers only part of
//! what its first-metric bounds say, so it shadows no later band: the order checks read
//! it as a band that can be shadowed, never as one that shadows.

use super::JudgeCx;
use crate::diag::{Code, Diagnostic};
use crate::spec::judge::{Band, HeuristicSpec};

impl JudgeCx<'_> {
    /// `and_metric`: whether the heuristic names a second metric for `and:` bounds.
    pub(super) fn check_bands(&mut self, bands: &[Band], and_metric: bool) {
        if bands.is_empty() {
            let d = Diagnostic::error(Code::BandUnreachable, "a heuristic needs at least one band")
                .help("end the table with a catch-all band, e.g. `- { score: 1 }`");
            let d = self.diag(d, "heuristic.bands");
            self.push(d);
            return;
        }
        let mut covered_all = false;
        // The last band bounded on one side only, lower or upper: it covers everything
        // from its bound up (or down), so a later band of the same kind must reach past it.
        let mut prev_lower: Option<Bound> = None;
        let mut prev_upper: Option<Bound> = None;
        for (i, b) in bands.iter().enumerate() {
            let path = format!("heuristic.bands[{i}]");
            self.check_score(b.score, &format!("{path}.score"));
            if !self.check_bounds_finite(b, &path) {
                continue;
            }
            if covered_all {
                let d = Diagnostic::error(
                    Code::BandUnreachable,
                    "this band can never match: an earlier band has no bounds and matches everything",
                )
                .help("put the catch-all band last");
                let d = self.diag(d, &path);
                self.push(d);
                continue;
            }
            let partial = self.check_and_bounds(b, &path, and_metric);
            let (lower, upper) = (lower_bound(b), upper_bound(b));
            if let (Some(l), Some(u)) = (lower, upper)
                && (l.at > u.at || (l.at == u.at && !(l.inclusive && u.inclusive)))
            {
                self.unreachable(
                    &path,
                    format!(
                        "this band can never match: no number is {} {} and {} {}",
                        if l.inclusive { "at least" } else { "above" },
                        l.at,
                        if u.inclusive { "at most" } else { "below" },
                        u.at
                    ),
                );
            }
            match (lower, upper) {
                (None, None) if partial => {}
                (None, None) => covered_all = true,
                (Some(l), None) => {
                    match prev_lower {
                        Some(p) if l.at > p.at => {
                            let d = Diagnostic::error(
                                Code::BandsUnordered,
                                format!("bands with lower bounds must go from high to low: {} follows {}", l.at, p.at),
                            )
                            .help("the first matching band wins, so this band is shadowed by the one before");
                            let d = self.diag(d, &path);
                            self.push(d);
                        }
                        // Equal bounds leave this band only the bound itself, and only
                        // when the earlier band excluded it and this one includes it.
                        Some(p) if l.at == p.at && (p.inclusive || !l.inclusive) => self.unreachable(
                            &path,
                            format!("this band can never match: an earlier band already covers everything from {} up", l.at),
                        ),
                        _ => {}
                    }
                    if !partial {
                        prev_lower = Some(l);
                    }
                }
                (None, Some(u)) => {
                    match prev_upper {
                        Some(p) if u.at < p.at => {
                            let d = Diagnostic::error(
                                Code::BandsUnordered,
                                format!("bands with upper bounds must go from low to high: {} follows {}", u.at, p.at),
                            )
                            .help("the first matching band wins, so this band is shadowed by the one before");
                            let d = self.diag(d, &path);
                            self.push(d);
                        }
                        Some(p) if u.at == p.at && (p.inclusive || !u.inclusive) => self.unreachable(
                            &path,
                            format!("this band can never match: an earlier band already covers everything up to {}", u.at),
                        ),
                        _ => {}
                    }
                    if !partial {
                        prev_upper = Some(u);
                    }
                }
                (Some(_), Some(_)) => {}
            }
        }
        if !covered_all {
            let d = Diagnostic::warning(
                Code::BandUnreachable,
                "the last band has bounds: a metric outside every band leaves the judge unscored",
            )
            .help("end the table with a catch-all band such as `- { score: 1 }`");
            let d = self.diag(d, &format!("heuristic.bands[{}]", bands.len() - 1));
            self.push(d);
        }
    }

    /// `and_metric` must be one of the judge's evidence names, as `metric` must.
    pub(super) fn check_and_metric(&mut self, h: &HeuristicSpec, names: &[String]) {
        let Some(second) = &h.and_metric else { return };
        self.used.insert(second.clone());
        if !names.contains(second) {
            let d = Diagnostic::error(
                Code::MetricNotEvidence,
                format!("heuristic and_metric `{second}` is not an evidence name"),
            )
            .maybe_help(self.metric_help(second, names));
            let d = self.diag(d, "heuristic.and_metric");
            self.push(d);
        }
    }

    /// The `and:` bounds of band `b`: finite, able to match, and only with an
    /// `and_metric` to bound. True when the band bounds the second metric at all.
    fn check_and_bounds(&mut self, b: &Band, path: &str, and_metric: bool) -> bool {
        let Some(and) = &b.and else { return false };
        let path = format!("{path}.and");
        if !and_metric {
            let d = Diagnostic::error(
                Code::MissingKey,
                "`and:` bounds the heuristic's second metric, and it names none",
            )
            .help("name it beside `metric`: `and_metric: <evidence name>`");
            let d = self.key_diag(d, &path);
            self.push(d);
            return false;
        }
        let band = and.as_band();
        if !self.check_bounds_finite(&band, &path) {
            return true;
        }
        if let (Some(l), Some(u)) = (lower_bound(&band), upper_bound(&band))
            && (l.at > u.at || (l.at == u.at && !(l.inclusive && u.inclusive)))
        {
            self.unreachable(
                &path,
                format!(
                    "this band can never match: no second-metric value is {} {} and {} {}",
                    if l.inclusive { "at least" } else { "above" },
                    l.at,
                    if u.inclusive { "at most" } else { "below" },
                    u.at
                ),
            );
        }
        lower_bound(&band).is_some() || upper_bound(&band).is_some()
    }

    fn unreachable(&mut self, path: &str, message: String) {
        let d = Diagnostic::error(Code::BandUnreachable, message);
        let d = self.diag(d, path);
        self.push(d);
    }

    /// A NaN bound never holds and an infinite one is no bound at all: both are
    /// mistakes, reported on the bound. True when every bound is finite.
    fn check_bounds_finite(&mut self, band: &Band, path: &str) -> bool {
        let mut ok = true;
        for (key, bound) in [
            ("min", band.min),
            ("above", band.above),
            ("max", band.max),
            ("below", band.below),
        ] {
            if let Some(v) = bound
                && !v.is_finite()
            {
                let d = Diagnostic::error(
                    Code::NotFinite,
                    format!("band bound `{key}` must be a finite number, got {v}"),
                )
                .help("leave the bound out for a band open on that side");
                let d = self.diag(d, &format!("{path}.{key}"));
                self.push(d);
                ok = false;
            }
        }
        ok
    }
}

/// One side of a band: its bound, and whether the bound itself matches (`min`, `max`)
/// or not (`above`, `below`).
#[derive(Clone, Copy)]
struct Bound {
    at: f64,
    inclusive: bool,
}

/// The tighter of `min` (inclusive) and `above` (exclusive); at equal values `above`.
fn lower_bound(b: &Band) -> Option<Bound> {
    match (b.min, b.above) {
        (Some(m), Some(a)) if m > a => Some(Bound {
            at: m,
            inclusive: true,
        }),
        (_, Some(a)) => Some(Bound {
            at: a,
            inclusive: false,
        }),
        (Some(m), None) => Some(Bound {
            at: m,
            inclusive: true,
        }),
        (None, None) => None,
    }
}

/// The tighter of `max` (inclusive) and `below` (exclusive); at equal values `below`.
fn upper_bound(b: &Band) -> Option<Bound> {
    match (b.max, b.below) {
        (Some(m), Some(x)) if m < x => Some(Bound {
            at: m,
            inclusive: true,
        }),
        (_, Some(x)) => Some(Bound {
            at: x,
            inclusive: false,
        }),
        (Some(m), None) => Some(Bound {
            at: m,
            inclusive: true,
        }),
        (None, None) => None,
    }
}
