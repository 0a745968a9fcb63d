//! What a user can write in a suite or judge file: serde + schemars types only.
pub mod verdict_format;
