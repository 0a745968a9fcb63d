//! The one table routine of the text renderers: columns aligned by width in characters
//! (leading columns to the left, figures to the right), for a terminal; and the same
//! rows as a GitHub-flavoured Markdown pipe table. Cells arrive already escaped for the
//! target (see [`super::escape`]); the routine only lays them out.

use std::fmt::Write as _;

/// How an aligned table is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Layout {
    /// Written before every line (before the first column's separator).
    pub indent: &'static str,
    /// How many leading columns are text, aligned left; the rest are figures, aligned
    /// right so their digits line up.
    pub left_columns: usize,
}

/// `header` and `rows` as aligned columns, two spaces before each cell, trailing spaces
/// trimmed, one line each. A blank line goes before each row whose index is in `breaks`
/// (to set off groups, such as totals). A row shorter than the header leaves the rest
/// of its line empty.
pub(crate) fn aligned(
    header: &[String],
    rows: &[Vec<String>],
    breaks: &[usize],
    layout: Layout,
) -> String {
    let widths = widths(header, rows);
    let mut out = String::new();
    line(&mut out, header, &widths, layout);
    for (i, row) in rows.iter().enumerate() {
        if breaks.contains(&i) {
            out.push('\n');
        }
        line(&mut out, row, &widths, layout);
    }
    out
}

/// Each column's width: its widest cell, the header included, in characters.
fn widths(header: &[String], rows: &[Vec<String>]) -> Vec<usize> {
    (0..header.len())
        .map(|i| {
            rows.iter()
                .filter_map(|r| r.get(i))
                .chain([&header[i]])
                .map(|c| c.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect()
}

fn line(out: &mut String, cells: &[String], widths: &[usize], layout: Layout) {
    let mut text = String::from(layout.indent);
    for (i, cell) in cells.iter().enumerate() {
        let pad = " ".repeat(
            widths
                .get(i)
                .map_or(0, |w| w.saturating_sub(cell.chars().count())),
        );
        text.push_str("  ");
        if i < layout.left_columns {
            text.push_str(cell);
            text.push_str(&pad);
        } else {
            text.push_str(&pad);
            text.push_str(cell);
        }
    }
    let _ = writeln!(out, "{}", text.trim_end());
}

/// How a Markdown column is aligned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Align {
    /// Text (`---`).
    Left,
    /// Figures (`---:`), so their digits line up.
    Right,
}

/// `header` and `rows` as a Markdown pipe table, column `i` aligned as `align[i]` (left
/// past the end of `align`). Each cell is escaped by the caller, so a `|` in data cannot
/// split it.
pub(crate) fn markdown(header: &[&str], align: &[Align], rows: &[Vec<String>]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "| {} |", header.join(" | "));
    out.push('|');
    for i in 0..header.len() {
        out.push_str(match align.get(i) {
            Some(Align::Right) => "---:|",
            _ => "---|",
        });
    }
    out.push('\n');
    for r in rows {
        let _ = writeln!(out, "| {} |", r.join(" | "));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cells(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| (*w).to_owned()).collect()
    }

    #[test]
    fn text_columns_go_left_figures_right_and_breaks_set_off_groups() {
        let header = cells(&["judge", "calls", "cost"]);
        let rows = vec![cells(&["a", "1", "$0"]), cells(&["total", "12", "$0.50"])];
        let text = aligned(
            &header,
            &rows,
            &[1],
            Layout {
                indent: "",
                left_columns: 1,
            },
        );
        assert_eq!(
            text,
            "  judge  calls   cost\n  a          1     $0\n\n  total     12  $0.50\n"
        );
    }

    #[test]
    fn width_counts_characters_not_bytes_and_lines_end_without_spaces() {
        let header = cells(&["név", "x"]);
        let rows = vec![cells(&["é", ""])];
        let layout = Layout {
            indent: "  ",
            left_columns: 1,
        };
        assert_eq!(aligned(&header, &rows, &[], layout), "    név  x\n    é\n");
    }

    #[test]
    fn a_markdown_table_has_a_rule_per_column_aligned_as_asked() {
        let t = markdown(
            &["a", "b", "c"],
            &[Align::Left, Align::Right],
            &[cells(&["x", "1", ""])],
        );
        assert_eq!(t, "| a | b | c |\n|---|---:|---|\n| x | 1 |  |\n");
    }
}
