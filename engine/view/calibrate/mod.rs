//! `caldera calibrate`: the calibration as a terminal or Markdown table ([`text`]) and
//! as an HTML page ([`html`]).

pub(crate) mod html;
pub(crate) mod text;
