//! Turning labelled ratings into category positions, once, for every measure.

use std::collections::BTreeMap;

use super::{AgreementError, RatingLabel};

/// Ratings as positions in `categories`, one column per rater.
#[derive(Debug, Clone)]
pub(crate) struct Coded<L> {
    /// The categories in scale order.
    pub categories: Vec<L>,
    /// `columns[rater][item]`: position of the rating in `categories`, `None` for a gap.
    pub columns: Vec<Vec<Option<usize>>>,
}

impl<L> Coded<L> {
    /// Number of items (every column has the same length).
    pub(super) fn n_items(&self) -> usize {
        self.columns.first().map_or(0, Vec::len)
    }

    /// Ratings of one item across raters.
    pub(super) fn item(&self, i: usize) -> impl Iterator<Item = Option<usize>> + '_ {
        self.columns.iter().map(move |c| c[i])
    }
}

/// Codes rater columns against `order`, or against the sorted observed labels.
///
/// `names` label the columns in error messages; positions are used when absent.
pub(crate) fn code<L: RatingLabel>(
    columns: &[&[Option<L>]],
    names: &[String],
    order: Option<&[L]>,
) -> Result<Coded<L>, AgreementError> {
    let expected = columns.first().map_or(0, |c| c.len());
    for (i, c) in columns.iter().enumerate() {
        if c.len() != expected {
            return Err(AgreementError::LengthMismatch {
                rater: names
                    .get(i)
                    .cloned()
                    .unwrap_or_else(|| format!("#{}", i + 1)),
                expected,
                got: c.len(),
            });
        }
    }
    let categories: Vec<L> = match order {
        Some(order) => {
            let mut seen = BTreeMap::new();
            for l in order {
                if seen.insert(l, ()).is_some() {
                    return Err(AgreementError::DuplicateCategory {
                        label: format!("{l:?}"),
                    });
                }
            }
            order.to_vec()
        }
        None => {
            let mut observed: Vec<L> = columns
                .iter()
                .flat_map(|c| c.iter().flatten().cloned())
                .collect();
            observed.sort();
            observed.dedup();
            observed
        }
    };
    let index: BTreeMap<&L, usize> = categories.iter().enumerate().map(|(i, l)| (l, i)).collect();
    let coded = columns
        .iter()
        .map(|c| {
            c.iter()
                .map(|r| match r {
                    None => Ok(None),
                    Some(l) => index.get(l).copied().map(Some).ok_or_else(|| {
                        AgreementError::UnknownLabel {
                            label: format!("{l:?}"),
                        }
                    }),
                })
                .collect::<Result<Vec<_>, _>>()
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Coded {
        categories,
        columns: coded,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_against_order_and_sorted() {
        let a = [Some("exact"), None, Some("missed")];
        let b = [Some("partial"), Some("exact"), Some("exact")];
        let order = ["missed", "partial", "exact"];
        let c = code(&[&a, &b], &[], Some(&order)).unwrap();
        assert_eq!(c.columns[0], vec![Some(2), None, Some(0)]);
        assert_eq!(c.columns[1], vec![Some(1), Some(2), Some(2)]);
        let s = code(&[&a, &b], &[], None).unwrap();
        assert_eq!(s.categories, vec!["exact", "missed", "partial"]);
    }

    #[test]
    fn rejects_bad_input() {
        let a = [Some(1), Some(2)];
        let b = [Some(1)];
        let names = vec!["a".to_string(), "b".to_string()];
        assert!(matches!(
            code(&[&a, &b], &names, None),
            Err(AgreementError::LengthMismatch { ref rater, expected: 2, got: 1 }) if rater == "b"
        ));
        assert!(matches!(
            code(&[&a[..], &a[..]], &names, Some(&[1])),
            Err(AgreementError::UnknownLabel { .. })
        ));
        assert!(matches!(
            code(&[&a[..], &a[..]], &names, Some(&[1, 2, 1])),
            Err(AgreementError::DuplicateCategory { .. })
        ));
    }
}
