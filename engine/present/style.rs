//! The one stylesheet of every HTML page caldera writes (run reports, the history page,
//! the calibration page): `style.css`, compiled in. Its first part is common to every
//! page; each page kind adds its own section, which starts at a `/* page: NAME */` line.
//! A page embeds the common part and its own section only, so a page carries no rule it
//! does not use, and a change to the look is made in one file.

// The chart palette of every page (Okabe-Ito: safe for the common colour-vision
// deficiencies). Charts are drawn inline as SVG, so their colours are attributes, not
// stylesheet rules; they are defined beside the stylesheet all the same.

/// Okabe-Ito blue: passing scores, positive agreement.
pub(crate) const BLUE: &str = "#0072B2";
/// Okabe-Ito vermillion: below threshold, negative agreement.
pub(crate) const VERMILLION: &str = "#D55E00";
/// Neutral grey for marks without a score.
pub(crate) const GREY: &str = "#767676";

/// The stylesheet source.
const SHEET: &str = include_str!("style.css");

/// Which page a stylesheet is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Page {
    /// A run report (`run`, `report`, `diff` as HTML): the common part alone.
    Report,
    /// The `history` page: charts of every dimension.
    History,
    /// The `calibrate` page: agreement tables and confusion matrices.
    Calibration,
}

impl Page {
    fn section(self) -> Option<&'static str> {
        match self {
            Page::Report => None,
            Page::History => Some("history"),
            Page::Calibration => Some("calibration"),
        }
    }
}

/// The CSS of `page`: the common part, then the page's own section.
pub(crate) fn sheet(page: Page) -> String {
    let mut parts = SHEET.split("/* page: ");
    let mut out = parts.next().unwrap_or_default().to_owned();
    let Some(name) = page.section() else {
        return out;
    };
    for part in parts {
        if let Some(rules) = part
            .strip_prefix(name)
            .and_then(|r| r.strip_prefix(" */\n"))
        {
            out.push_str(rules);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_page_gets_the_common_part_and_its_own_section_only() {
        let report = sheet(Page::Report);
        let history = sheet(Page::History);
        let calibration = sheet(Page::Calibration);
        assert!(report.starts_with(":root {") && !report.contains("/* page:"));
        assert!(history.starts_with(&report) && history.contains("figure.trend"));
        assert!(!history.contains(".calibration"));
        assert!(calibration.starts_with(&report) && calibration.contains("td.cm"));
        assert!(!calibration.contains("figure.trend"));
    }
}
