//! `caldera calibrate`: the calibration as a terminal or Markdown table ([`text`]) and
//! as an HTML page ([`html`]).

pub mod html;
pub mod text;
