//! Date arithmetic: `days_between`.
//!
//! Tool outputs stamp runs, commits and advisories with ISO-8601 dates and
//! RFC 3339 datetimes; judges ask how old something was *at the time of the
//! run* (a file untouched for more than 90 days, an advisory older than a
//! year). Without this, judges converted dates to day numbers by hand with
//! string slicing and calendar formulas.
//!
//! There is no "now": the wall clock would make a run's evidence depend on
//! the day it ran. Both ends are explicit, typically a timestamp from the
//! tool's own output (the scan time) or from the ground truth.

use chrono::{DateTime, NaiveDate, NaiveDateTime};
use minijinja::value::{Rest, ValueOrKwargs};
use minijinja::{Error, Value};

use super::args::{Args, is_nothing};

/// What `days_between` reads, for error messages.
const EXPECTED: &str = "an ISO-8601 date (2025-09-15) or an RFC 3339 datetime \
                        (2025-09-15T08:30:00Z)";

/// `days_between(start, end)`: whole calendar days from the date of `start`
/// to the date of `end` (negative when `end` is earlier). A datetime counts
/// by its date as written, in its own offset, so `2025-09-15T23:59:00Z` and
/// `2025-09-16T00:01:00Z` are one day apart. A missing end (none or
/// undefined) gives none; text that is not a date is an error quoting it.
pub(crate) fn days_between(raw: Rest<ValueOrKwargs>) -> Result<Value, Error> {
    let args = Args::bind("days_between", &["start", "end"], 2, raw)?;
    let (Some(start), Some(end)) = (date_arg(&args, 0)?, date_arg(&args, 1)?) else {
        return Ok(Value::from(()));
    };
    Ok(Value::from((end - start).num_days()))
}

/// Parameter `i` as a calendar date; `None` when it is missing.
fn date_arg(args: &Args, i: usize) -> Result<Option<NaiveDate>, Error> {
    let value = args.raw(i);
    if is_nothing(&value) {
        return Ok(None);
    }
    let parsed = value.as_str().and_then(parse_date);
    match parsed {
        Some(date) => Ok(Some(date)),
        // `error` quotes the value through `describe`, which truncates long text.
        None => Err(args.error(i, EXPECTED, &value)),
    }
}

/// The date of an RFC 3339 datetime (`T`, `t` or a space between date and
/// time; `Z` or an offset), of a datetime without offset, or a plain date.
fn parse_date(text: &str) -> Option<NaiveDate> {
    let text = text.trim();
    if let Ok(datetime) = DateTime::parse_from_rfc3339(text) {
        return Some(datetime.date_naive());
    }
    for format in ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f"] {
        if let Ok(datetime) = NaiveDateTime::parse_from_str(text, format) {
            return Some(datetime.date());
        }
    }
    NaiveDate::parse_from_str(text, "%Y-%m-%d").ok()
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{error, json};
    use serde_json::json;

    #[test]
    fn days_between_counts_calendar_days_of_dates_and_datetimes() {
        assert_eq!(
            json("days_between('2025-06-17', '2025-09-15')", json!({})),
            "90"
        );
        assert_eq!(
            json(
                "days_between('2025-09-15T23:59:00Z', '2025-09-16T00:01:00+00:00')",
                json!({})
            ),
            "1"
        );
        assert_eq!(
            json("days_between('2024-03-01', '2024-02-28')", json!({})),
            "-2"
        );
        assert_eq!(
            json(
                "days_between('2025-01-01 10:00:00', '2025-01-31T08:00:00.5')",
                json!({})
            ),
            "30"
        );
        assert_eq!(
            json(
                "days_between(ts, '2025-09-15')",
                json!({"ts": "2025-09-15"})
            ),
            "0"
        );
    }

    #[test]
    fn days_between_a_missing_date_is_none() {
        assert_eq!(json("days_between(none, '2025-09-15')", json!({})), "null");
        assert_eq!(
            json("days_between('2025-09-15', missing)", json!({})),
            "null"
        );
    }

    #[test]
    fn days_between_quotes_text_that_is_not_a_date() {
        let msg = error("days_between('unknown', '2025-09-15')", json!({}));
        assert!(
            msg.contains("days_between(): argument 'start' must be an ISO-8601 date"),
            "{msg}"
        );
        assert!(msg.contains("got string \"unknown\""), "{msg}");
        let msg = error("days_between('2025-09-15', '2025-02-30')", json!({}));
        assert!(msg.contains("argument 'end'"), "{msg}");
        let long = "9".repeat(500);
        let msg = error(&format!("days_between('{long}', '2025-09-15')"), json!({}));
        let quoted = msg.lines().next().unwrap_or_default();
        assert!(quoted.len() < 300, "unbounded message: {quoted}");
        let msg = error("days_between(20250915, '2025-09-15')", json!({}));
        assert!(msg.contains("got number 20250915"), "{msg}");
    }
}
