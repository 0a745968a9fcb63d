//! Band-table checks: scores in range, bounds that can match, order that lets every band
//! be reached, and a final catch-all.

use super::JudgeCx;
use crate::diag::{Code, Diagnostic};
use crate::spec::judge::Band;

impl JudgeCx<'_> {
    pub(super) fn check_bands(&mut self, bands: &[Band]) {
        if bands.is_empty() {
            let d = Diagnostic::error(Code::BandUnreachable, "a heuristic needs at least one band")
                .help("end the table with a catch-all band, e.g. `- { score: 1 }`");
            let d = self.diag(d, "heuristic.bands");
            self.push(d);
            return;
        }
        let mut covered_all = false;
        let mut prev_lower: Option<f64> = None;
        let mut prev_upper: Option<f64> = None;
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
            let lower = match (b.min, b.above) {
                (Some(m), Some(a)) => Some(m.max(a)),
                (m, a) => m.or(a),
            };
            let upper = match (b.max, b.below) {
                (Some(m), Some(x)) => Some(m.min(x)),
                (m, x) => m.or(x),
            };
            if let (Some(l), Some(u)) = (lower, upper)
                && l > u
            {
                let d = Diagnostic::error(
                    Code::BandUnreachable,
                    format!(
                        "this band can never match: its lower bound {l} is above its upper bound {u}"
                    ),
                );
                let d = self.diag(d, &path);
                self.push(d);
            }
            match (lower, upper) {
                (None, None) => covered_all = true,
                (Some(l), None) => {
                    if let Some(p) = prev_lower
                        && l > p
                    {
                        let d = Diagnostic::error(
                            Code::BandsUnordered,
                            format!("bands with lower bounds must go from high to low: {l} follows {p}"),
                        )
                        .help("the first matching band wins, so this band is shadowed by the one before");
                        let d = self.diag(d, &path);
                        self.push(d);
                    } else if prev_lower == Some(l) && b.above.is_none() {
                        let d = Diagnostic::error(
                            Code::BandUnreachable,
                            format!(
                                "this band can never match: an earlier band already starts at {l}"
                            ),
                        );
                        let d = self.diag(d, &path);
                        self.push(d);
                    }
                    prev_lower = Some(l);
                }
                (None, Some(u)) => {
                    if let Some(p) = prev_upper
                        && u < p
                    {
                        let d = Diagnostic::error(
                            Code::BandsUnordered,
                            format!("bands with upper bounds must go from low to high: {u} follows {p}"),
                        )
                        .help("the first matching band wins, so this band is shadowed by the one before");
                        let d = self.diag(d, &path);
                        self.push(d);
                    }
                    prev_upper = Some(u);
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
