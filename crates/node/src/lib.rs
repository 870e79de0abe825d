//! Drivers that run the sans-IO protocol core: in virtual time inside the simulator
//! (for the lab and the tests), and, with the store adapter, over a real store.

pub mod adapter;
pub mod credit;
pub mod dutycycle;
pub mod framing;
pub mod fuzzing;
pub mod lora;
pub mod mac;
pub mod modem_tx;
pub mod netkey;
pub mod pacer;
pub mod secure;
pub mod sim;
pub mod store_adapter;

pub use adapter::{
    IpLinkConfig, LinkAdapter, Readiness, Underlay, adapter_for, device_params, ip_config_for,
};
pub use sim::{LinkRole, SimNode};
pub use store_adapter::StoreAdapter;
