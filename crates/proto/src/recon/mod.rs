//! Set reconciliation: which bundles each side of a session lacks.

pub mod riblt;
