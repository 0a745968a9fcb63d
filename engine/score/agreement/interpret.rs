//! The verbal scale for kappa-like coefficients used in caldera's reports.

use serde::Serialize;

/// Strength of agreement, after the scoring seed's table (Landis & Koch's bands with
/// "slight" and "poor" merged).
///
/// The published table lists two-decimal ranges (`< 0.20`, `0.21 - 0.40`, ...) and so
/// leaves gaps such as 0.205. caldera closes them by making every band's **upper** bound
/// inclusive and its lower bound exclusive:
///
/// | coefficient         | label          |
/// |---------------------|----------------|
/// | `k <= 0.20`         | Poor           |
/// | `0.20 < k <= 0.40`  | Fair           |
/// | `0.40 < k <= 0.60`  | Moderate       |
/// | `0.60 < k <= 0.80`  | Substantial    |
/// | `0.80 < k`          | Almost Perfect |
///
/// So 0.20 is Poor and 0.205 is Fair: a value belongs to the band it has reached, with
/// no rounding (rounding would make the label depend on a display precision).
/// Negative values are Poor; an undefined coefficient is `Undefined`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Interpretation {
    /// At most 0.20, including negative agreement.
    Poor,
    /// Above 0.20, at most 0.40.
    Fair,
    /// Above 0.40, at most 0.60.
    Moderate,
    /// Above 0.60, at most 0.80.
    Substantial,
    /// Above 0.80.
    #[serde(rename = "Almost Perfect")]
    AlmostPerfect,
    /// The coefficient is undefined (chance agreement is total, or there is no data).
    Undefined,
}

impl Interpretation {
    /// Label for a coefficient; `None` or NaN is `Undefined`.
    #[must_use]
    pub fn of(coefficient: Option<f64>) -> Self {
        match coefficient {
            None => Self::Undefined,
            Some(k) if k.is_nan() => Self::Undefined,
            Some(k) if k <= 0.20 => Self::Poor,
            Some(k) if k <= 0.40 => Self::Fair,
            Some(k) if k <= 0.60 => Self::Moderate,
            Some(k) if k <= 0.80 => Self::Substantial,
            Some(_) => Self::AlmostPerfect,
        }
    }

    /// The label as the seed's table spells it.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Poor => "Poor",
            Self::Fair => "Fair",
            Self::Moderate => "Moderate",
            Self::Substantial => "Substantial",
            Self::AlmostPerfect => "Almost Perfect",
            Self::Undefined => "Undefined",
        }
    }
}

impl std::fmt::Display for Interpretation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::Interpretation::{self, *};

    #[test]
    fn bands_and_boundaries() {
        let cases = [
            (-0.5, Poor),
            (0.0, Poor),
            (0.20, Poor),
            (0.205, Fair),
            (0.40, Fair),
            (0.405, Moderate),
            (0.60, Moderate),
            (0.61, Substantial),
            (0.80, Substantial),
            (0.805, AlmostPerfect),
            (1.0, AlmostPerfect),
        ];
        for (k, want) in cases {
            assert_eq!(Interpretation::of(Some(k)), want, "kappa {k}");
        }
        assert_eq!(Interpretation::of(None), Undefined);
        assert_eq!(Interpretation::of(Some(f64::NAN)), Undefined);
        assert_eq!(
            serde_json::to_value(AlmostPerfect).unwrap(),
            "Almost Perfect"
        );
    }
}
