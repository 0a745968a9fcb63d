//! Optimal one-to-one assignment (Hungarian algorithm) on a rectangular score matrix.

use pathfinding::kuhn_munkres::kuhn_munkres;
use pathfinding::matrix::Matrix;

/// Scores are scaled to integers before assignment: `kuhn_munkres` needs an exactly
/// ordered weight type, and floats would risk endless loops on rounding. Six decimals
/// are far finer than any threshold a judge declares.
const SCALE: f64 = 1_000_000.0;

/// Maximum-weight assignment of rows to columns.
///
/// `weights[r][c]` is in `[0, 1]`; a zero weight means "may not be paired". Returns the
/// `(row, col)` pairs with a positive weight, sorted by row. Works for any shape,
/// including empty: the smaller side is put in the rows, as `kuhn_munkres` requires.
pub(crate) fn assign(weights: &[Vec<f64>], n_cols: usize) -> Vec<(usize, usize)> {
    let n_rows = weights.len();
    if n_rows == 0 || n_cols == 0 {
        return Vec::new();
    }
    #[allow(clippy::cast_possible_truncation)]
    let w = |r: usize, c: usize| -> i64 {
        let v = weights[r].get(c).copied().unwrap_or(0.0);
        if v.is_finite() {
            (v.clamp(0.0, 1.0) * SCALE).round() as i64
        } else {
            0
        }
    };
    let transpose = n_rows > n_cols;
    let (rows, cols) = if transpose {
        (n_cols, n_rows)
    } else {
        (n_rows, n_cols)
    };
    let cells = (0..rows)
        .flat_map(|r| (0..cols).map(move |c| if transpose { w(c, r) } else { w(r, c) }))
        .collect();
    // Dimensions are consistent by construction and non-zero, so this cannot fail.
    let Ok(matrix) = Matrix::from_vec(rows, cols, cells) else {
        return Vec::new();
    };
    let (_, assignment) = kuhn_munkres(&matrix);
    let mut pairs: Vec<(usize, usize)> = assignment
        .into_iter()
        .enumerate()
        .filter(|&(r, c)| matrix[(r, c)] > 0)
        .map(|(r, c)| if transpose { (c, r) } else { (r, c) })
        .collect();
    pairs.sort_unstable();
    pairs
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Equally good pairings are resolved one fixed way: a square table is solved as
    /// given (rows to columns), never transposed, so which findings pair with which
    /// truths under a tie does not depend on the table's orientation. Here every
    /// derangement scores 2.7; the rows-to-columns solution is the one reported.
    #[test]
    fn a_square_table_resolves_ties_as_given() {
        let w = vec![
            vec![0.2, 0.9, 0.9],
            vec![0.9, 0.2, 0.9],
            vec![0.9, 0.9, 0.2],
        ];
        assert_eq!(assign(&w, 3), vec![(0, 1), (1, 2), (2, 0)]);
    }

    #[test]
    fn prefers_global_optimum_over_greedy() {
        // Greedy would pair row 0 with col 0 (0.9) and leave row 1 with 0.1.
        let w = vec![vec![0.9, 0.8], vec![0.85, 0.1]];
        assert_eq!(assign(&w, 2), vec![(0, 1), (1, 0)]);
    }

    #[test]
    fn rectangular_both_ways_and_empty() {
        let tall = vec![vec![0.2], vec![0.9], vec![0.0]];
        assert_eq!(assign(&tall, 1), vec![(1, 0)]);
        let wide = vec![vec![0.0, 0.3, 0.7]];
        assert_eq!(assign(&wide, 3), vec![(0, 2)]);
        assert_eq!(assign(&[], 3), vec![]);
        assert_eq!(assign(&[vec![], vec![]], 0), vec![]);
        let zeros = vec![vec![0.0, 0.0], vec![0.0, 0.0]];
        assert_eq!(assign(&zeros, 2), vec![]);
    }
}
