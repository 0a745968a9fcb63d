//! What a user can write: serde + schemars types only, documented key by key.
//! No behaviour lives here; `load` validates these into the plan the engine runs.

pub mod cap_note;
pub mod case;
pub mod catalogue;
pub mod judge;
pub mod reasoning;
pub mod strict;
pub mod suite;
pub mod verdict_format;

/// Prefix of a custom deserialization error about the shape of a value; loading reports it
/// as `wrong-type`, without the prefix.
pub const SHAPE_ERROR: &str = "wrong shape: ";
