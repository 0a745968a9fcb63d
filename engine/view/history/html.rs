//! The history as one self-contained HTML page, like the run report
//! ([`crate::view::run::html`], whose charts it uses; the stylesheet and escape are
//! [`crate::present`]'s): no script, no
//! network. Per suite: the weighted score over the runs as a chart, a small chart per
//! dimension, the steps that changed something, unstable judges, then the runs with
//! their model usage; then the files skipped. Every chart is `role="img"` with a title, and every
//! point carries its run and value as text, so no chart relies on colour alone.

use std::fmt::Write as _;

use super::rows::{self, Aside};
use crate::history::{History, Step, SuiteHistory, Trend};
use crate::present::escape::html as esc;
use crate::present::number::fmt_score;
use crate::present::style::{BLUE, GREY, VERMILLION};
use crate::present::style::{Page, sheet};

/// Renders the history page.
pub(crate) fn render(h: &History) -> String {
    let mut out = String::with_capacity(64 * 1024);
    let _ = write!(
        out,
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <link rel=\"icon\" href=\"data:,\">\n<title>caldera history: {}</title>\n<style>\n{}</style>\n</head>\n<body>\n<main>\n",
        esc(&h.folder),
        sheet(Page::History)
    );
    let _ = writeln!(
        out,
        "<section class=\"verdict\" aria-label=\"history\">\n<div>\n<h1>History of <code>{}</code></h1>\n<div class=\"meta\">{} run(s) of {} suite(s){}. Runs are in time order; each is compared with the one before it as <code>caldera diff</code> compares them (tolerance {}).</div>\n</div>\n</section>",
        esc(&h.folder),
        rows::run_count(h),
        h.suites.len(),
        if h.skipped.is_empty() {
            String::new()
        } else {
            format!(
                "; <a href=\"#skipped\">{} file(s) skipped</a>",
                h.skipped.len()
            )
        },
        fmt_score(Some(h.tolerance))
    );
    for (i, s) in h.suites.iter().enumerate() {
        suite(&mut out, i, s);
    }
    skipped(&mut out, h);
    let _ = write!(
        out,
        "<footer>Written by caldera {}. Every figure here is in <code>caldera history --format json</code>.</footer>\n</main>\n</body>\n</html>\n",
        env!("CARGO_PKG_VERSION")
    );
    out
}

fn suite(out: &mut String, i: usize, s: &SuiteHistory) {
    let span = rows::span(s).map_or(String::new(), |(a, b)| {
        format!(", {} to {}", esc(a), esc(b))
    });
    let _ = writeln!(
        out,
        "<section class=\"block\" id=\"suite-{i}\">\n<h2>Suite <code>{}</code>: {} run(s){span}</h2>",
        esc(&s.suite),
        s.runs.len()
    );
    let ids: Vec<&str> = s.runs.iter().map(|r| r.run.run_id.as_str()).collect();
    let totals: Vec<Option<f64>> = s.runs.iter().map(|r| r.run.total_score).collect();
    let _ = writeln!(
        out,
        "<h3>Weighted score</h3>\n{}",
        trend_chart(
            &format!(
                "Weighted score of suite {} over {} runs",
                s.suite,
                s.runs.len()
            ),
            "weighted score",
            &totals,
            &ids,
            None
        )
    );
    out.push_str("<h3>Trends by dimension</h3>\n<p class=\"muted\">Each dimension's score per run, oldest on the left (1 to 5; vermillion points are below the pass threshold, the dashed line; grey marks at the foot are runs without a score).</p>\n<div class=\"trends\">\n");
    for t in &s.trends {
        trend(out, t, &ids);
    }
    out.push_str("</div>\n");
    steps(out, s);
    unstable(out, s);
    runs(out, s);
    out.push_str("</section>\n");
}

fn runs(out: &mut String, s: &SuiteHistory) {
    let llm = s.usage.is_some();
    let _ = writeln!(
        out,
        "<h3>Runs</h3>\n<table class=\"runs\"><thead><tr><th class=\"num\">#</th><th>run</th><th>time</th><th>mode</th><th>decision</th><th class=\"num\">score</th><th class=\"num\">delta</th>{}</tr></thead><tbody>",
        if llm {
            "<th class=\"num\">tokens (in + out)</th><th class=\"num\">cost</th>"
        } else {
            ""
        }
    );
    for c in rows::runs(s) {
        let r = c.run;
        let mode = match &r.model {
            Some(m) => format!("{} {}", esc(&r.mode), esc(m)),
            None => esc(&r.mode),
        };
        let usage = match (&c.spent, llm) {
            (Some((tokens, cost)), _) => format!(
                "<td class=\"num\">{tokens}</td><td class=\"num\">{}</td>",
                esc(cost)
            ),
            (None, true) => "<td class=\"num\">-</td><td class=\"num\">-</td>".into(),
            (None, false) => String::new(),
        };
        let _ = writeln!(
            out,
            "<tr><td class=\"num\">{}</td><td><code>{}</code></td><td>{}</td><td>{mode}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>{usage}</tr>",
            c.number,
            esc(&r.run_id),
            esc(&r.timestamp),
            esc(&r.decision),
            c.score,
            c.delta
        );
    }
    out.push_str("</tbody></table>\n");
    if let Some(u) = &s.usage {
        let _ = writeln!(
            out,
            "<p>Model usage over {} run(s): {} input + {} output tokens, {}.</p>",
            u.runs,
            u.input_tokens,
            u.output_tokens,
            esc(&u.cost_text())
        );
    }
}

fn trend(out: &mut String, t: &Trend, ids: &[&str]) {
    let f = rows::trend(t);
    let _ = writeln!(
        out,
        "<figure class=\"trend\" data-dimension=\"{d}\"><figcaption>{d}</figcaption>\n{}\n<p class=\"muted\">first {}, last {}, min {}, max {}, mean {}; scored in {} of {} runs.</p></figure>",
        trend_chart(
            &format!("Trend of {} over {} runs", t.dimension, t.scores.len()),
            &t.dimension,
            &t.scores,
            ids,
            t.pass_threshold
        ),
        f.first,
        f.last,
        f.min,
        f.max,
        f.mean,
        t.scored,
        t.scores.len(),
        d = esc(&t.dimension)
    );
}

/// A line of scores on the 0-5 scale, one point per run (oldest left), broken where a
/// run has no score (a grey mark at the foot says so); the pass threshold dashed.
fn trend_chart(
    title: &str,
    what: &str,
    scores: &[Option<f64>],
    ids: &[&str],
    threshold: Option<f64>,
) -> String {
    let (left, right, top, bottom) = (28.0, 12.0, 12.0, 24.0);
    let (width, height) = (360.0, 150.0);
    let (plot_w, plot_h) = (width - left - right, height - top - bottom);
    let n = scores.len();
    let x_of = |i: usize| {
        if n <= 1 {
            left + plot_w / 2.0
        } else {
            left + plot_w * i as f64 / (n - 1) as f64
        }
    };
    let y_of = |s: f64| top + plot_h * (1.0 - s.clamp(0.0, 5.0) / 5.0);
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg class="chart trend" role="img" aria-label="{t}" data-runs="{n}" viewBox="0 0 {width:.0} {height:.0}" width="{width:.0}" height="{height:.0}" xmlns="http://www.w3.org/2000/svg"><title>{t}</title>"#,
        t = esc(title)
    );
    for tick in 0..=5 {
        let y = y_of(f64::from(tick));
        let _ = write!(
            svg,
            r##"<line x1="{left}" y1="{y:.1}" x2="{x2:.1}" y2="{y:.1}" stroke="#e2e2e2"/><text x="{tx:.1}" y="{ty:.1}" class="tick" text-anchor="end">{tick}</text>"##,
            x2 = width - right,
            tx = left - 6.0,
            ty = y + 4.0
        );
    }
    let _ = write!(
        svg,
        r#"<text x="{left}" y="{y:.1}" class="tick">run 1</text><text x="{x:.1}" y="{y:.1}" class="tick" text-anchor="end">run {n}</text>"#,
        y = height - 6.0,
        x = width - right
    );
    if let Some(t) = threshold {
        let y = y_of(t);
        let _ = write!(
            svg,
            r##"<line x1="{left}" y1="{y:.1}" x2="{x2:.1}" y2="{y:.1}" stroke="#000" stroke-width="1.5" stroke-dasharray="5 3"><title>pass threshold {v}</title></line>"##,
            x2 = width - right,
            v = fmt_score(Some(t))
        );
    }
    svg.push_str(&line_path(scores, &x_of, &y_of));
    let r = if n > 120 { 1.6 } else { 3.2 };
    for (i, s) in scores.iter().enumerate() {
        let id = esc(ids.get(i).copied().unwrap_or("-"));
        let x = x_of(i);
        match s {
            Some(v) => {
                let below = threshold.is_some_and(|t| *v < t);
                let _ = write!(
                    svg,
                    r#"<circle class="point" cx="{x:.1}" cy="{y:.1}" r="{r}" fill="{c}"><title>run {k} ({id}): {w} {v}</title></circle>"#,
                    y = y_of(*v),
                    c = if below { VERMILLION } else { BLUE },
                    k = i + 1,
                    w = esc(what),
                    v = fmt_score(Some(*v))
                );
            }
            None => {
                let _ = write!(
                    svg,
                    r#"<rect class="gap" x="{x0:.1}" y="{y:.1}" width="3" height="6" fill="{GREY}"><title>run {k} ({id}): no score</title></rect>"#,
                    x0 = x - 1.5,
                    y = y_of(0.0) - 6.0,
                    k = i + 1
                );
            }
        }
    }
    svg.push_str("</svg>");
    svg
}

/// The line through consecutive scored runs, broken at a run without a score.
fn line_path(
    scores: &[Option<f64>],
    x_of: &dyn Fn(usize) -> f64,
    y_of: &dyn Fn(f64) -> f64,
) -> String {
    let mut d = String::new();
    let mut pen_down = false;
    for (i, s) in scores.iter().enumerate() {
        match s {
            Some(v) => {
                let _ = write!(
                    d,
                    "{}{:.1} {:.1} ",
                    if pen_down { "L" } else { "M" },
                    x_of(i),
                    y_of(*v)
                );
                pen_down = true;
            }
            None => pen_down = false,
        }
    }
    if d.is_empty() {
        return String::new();
    }
    format!(
        r#"<path d="{}" fill="none" stroke="{BLUE}" stroke-width="1.5"/>"#,
        d.trim_end()
    )
}

fn steps(out: &mut String, s: &SuiteHistory) {
    if s.steps.is_empty() {
        return;
    }
    let (loud, quiet) = rows::loud_steps(s);
    let _ = writeln!(
        out,
        "<h3>Changes between consecutive runs</h3>\n<p class=\"muted\">{} of {} step(s) changed something; the others changed nothing (scores, evidence, problems and decision alike).</p>",
        s.steps.len() - quiet,
        s.steps.len()
    );
    if quiet == s.steps.len() {
        return;
    }
    out.push_str("<table class=\"steps\"><thead><tr><th>step</th><th>dimension</th><th class=\"num\">before</th><th class=\"num\">after</th><th class=\"num\">delta</th><th>change</th><th>evidence</th></tr></thead><tbody>\n");
    for st in loud {
        step(out, st);
    }
    out.push_str("</tbody></table>\n");
}

fn step(out: &mut String, st: &Step) {
    let h = rows::heading(st);
    let decision = h.decision.map_or(String::new(), |(a, b)| {
        format!("; decision {} → {}", esc(a), esc(b))
    });
    let _ = writeln!(
        out,
        "<tr><th colspan=\"7\">Run {} → {} (<code>{}</code> → <code>{}</code>): weighted {}{decision}</th></tr>",
        h.from,
        h.to,
        esc(h.base),
        esc(h.new),
        h.weighted
    );
    if let Some(why) = &st.incomparable {
        let _ = writeln!(
            out,
            "<tr><td></td><td colspan=\"6\">Not compared: {}</td></tr>",
            esc(why)
        );
        return;
    }
    for c in rows::changes(st) {
        let cls = if c.regression {
            " class=\"badge regressed\""
        } else {
            ""
        };
        let evidence = match c.evidence {
            Some((n, first)) => format!("{n} leaf(s) changed, first <code>{}</code>", esc(first)),
            None => "unchanged".into(),
        };
        let interval = c.interval.map_or(String::new(), |ci| {
            format!("<br><span class=\"muted\">{}</span>", esc(ci))
        });
        let _ = writeln!(
            out,
            "<tr><td></td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td><span{cls}>{}</span>{interval}</td><td>{evidence}</td></tr>",
            esc(c.dimension),
            c.before,
            c.after,
            c.delta,
            c.change
        );
    }
    for (kind, line) in rows::asides(st) {
        let label = match kind {
            Aside::Regression => "<strong>Regression:</strong>",
            Aside::NewProblem => "New problem:",
            Aside::ProblemGone => "Problem gone:",
            Aside::Note => "Note:",
        };
        let _ = writeln!(
            out,
            "<tr><td></td><td colspan=\"6\">{label} {}</td></tr>",
            esc(line)
        );
    }
}

fn unstable(out: &mut String, s: &SuiteHistory) {
    if s.unstable.is_empty() {
        return;
    }
    out.push_str("<h3>Unstable judges</h3>\n<p class=\"muted\">Judges whose score moved while their evidence stayed the same, between runs of the same mode and model.</p>\n<ul class=\"problems\">\n");
    for u in &s.unstable {
        let (shown, more) = rows::moves(u, 5);
        let moves: Vec<String> = shown
            .iter()
            .map(|m| {
                format!(
                    "{} → {} (<code>{}</code> → <code>{}</code>)",
                    m.before,
                    m.after,
                    esc(m.base),
                    esc(m.new)
                )
            })
            .collect();
        let _ = writeln!(
            out,
            "<li><span class=\"badge unscored\">unstable</span> <strong>{}</strong>: {} of {} comparable step(s): {}{}</li>",
            esc(&u.dimension),
            u.moves.len(),
            u.comparable_steps,
            moves.join("; "),
            rows::and_more(more)
        );
    }
    out.push_str("</ul>\n");
}

fn skipped(out: &mut String, h: &History) {
    if h.skipped.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "<section class=\"block\" id=\"skipped\">\n<h2>Skipped ({})</h2>\n<p class=\"muted\">Files of the folder that are not part of any history, and why (their content is not shown).</p>\n<ul class=\"problems\">",
        h.skipped.len()
    );
    for s in &h.skipped {
        let _ = writeln!(out, "<li>{}</li>", esc(&s.line()));
    }
    out.push_str("</ul>\n</section>\n");
}
