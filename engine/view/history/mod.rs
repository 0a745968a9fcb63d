//! `caldera history`: the history of a results folder as a terminal table ([`table`]),
//! Markdown ([`markdown`]), one HTML page ([`html`]) or JSON. The three text formats
//! take their cells from one walk of the runs ([`rows`]) and only lay them out.

pub(crate) mod html;
pub(crate) mod markdown;
pub(crate) mod rows;
pub(crate) mod table;

use crate::history::History;

/// The output formats of `caldera history`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Format {
    /// The terminal (colour on a terminal).
    Table,
    /// One self-contained HTML page (no script, no network): a chart per dimension.
    Html,
    /// GitHub-flavoured Markdown.
    Md,
    /// The history as a JSON document.
    Json,
}

impl Format {
    /// Renders `history` in this format.
    pub(crate) fn render(self, history: &History) -> String {
        match self {
            Format::Table => table::render(history),
            Format::Html => html::render(history),
            Format::Md => markdown::render(history),
            Format::Json => {
                let mut text = serde_json::to_string_pretty(history).unwrap_or_default();
                text.push('\n');
                text
            }
        }
    }
}

/// A line of eight-level blocks for scores on the 1-5 scale (`·` where there is none),
/// for the terminal and Markdown.
pub(crate) fn sparkline(scores: &[Option<f64>]) -> String {
    const LEVELS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    scores
        .iter()
        .map(|s| match s {
            None => '·',
            Some(v) => {
                let at = ((v.clamp(1.0, 5.0) - 1.0) / 4.0 * 7.0).round() as usize;
                LEVELS[at.min(7)]
            }
        })
        .collect()
}

/// Runs shown in a sparkline; an older part of a longer history is summed up by the
/// figures beside it.
pub(crate) const SPARK_RUNS: usize = 60;

/// The last [`SPARK_RUNS`] scores, and how many older ones were left out.
pub(crate) fn spark_window(scores: &[Option<f64>]) -> (&[Option<f64>], usize) {
    let cut = scores.len().saturating_sub(SPARK_RUNS);
    (&scores[cut..], cut)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sparkline_maps_one_to_five_onto_eight_levels() {
        assert_eq!(
            sparkline(&[Some(1.0), Some(3.0), None, Some(5.0), Some(9.0)]),
            "▁▅·██"
        );
    }
}
