//! Evidence: values a judge computes from tool output and ground truth.

pub mod builtins;
