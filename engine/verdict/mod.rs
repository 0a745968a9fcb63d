//! Verdicts: reading a judge's reply (and, from the engine, heuristic bands and caps).
pub mod reply;
