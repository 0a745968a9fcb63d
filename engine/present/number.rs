//! Numbers for people: a score with at most two decimals, a signed delta. Every
//! renderer and the comparison's wording show scores the same way.

/// A score for people: `-` when absent, otherwise up to two decimals without trailing
/// zeros (4, 3.5, 3.33).
pub(crate) fn fmt_score(score: Option<f64>) -> String {
    match score {
        None => "-".into(),
        Some(s) => {
            let text = format!("{s:.2}");
            text.trim_end_matches('0').trim_end_matches('.').to_owned()
        }
    }
}

/// A signed delta: `+0.50`, `-1`, `0`; `-` when absent.
pub(crate) fn fmt_delta(delta: Option<f64>) -> String {
    match delta {
        None => "-".into(),
        Some(d) if d.abs() < 1e-9 => "0".into(),
        Some(d) => {
            let text = fmt_score(Some(d.abs()));
            format!("{}{text}", if d > 0.0 { "+" } else { "-" })
        }
    }
}
