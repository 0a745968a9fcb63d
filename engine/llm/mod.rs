//! Running LLM judge calls: the executor and what it needs around a provider
//! (on-disk cache, interaction log, cost accounting and budget).
pub mod batch;
pub mod bounded;
pub mod cache;
pub mod cost;
pub mod executor;
pub mod log;
mod prefix;
pub mod seal;
pub mod settle;
pub mod writer;
