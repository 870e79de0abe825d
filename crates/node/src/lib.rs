//! Drivers that run the sans-IO protocol core: in virtual time inside the simulator
//! (for the lab and the tests), and, with the store adapter, over a real store.

pub mod framing;
pub mod sim;
pub mod store_adapter;

pub use sim::{SimNode, params_for};
pub use store_adapter::StoreAdapter;
