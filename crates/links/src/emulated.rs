//! `emulated`: one of the serial-kind links carried through a named link profile on the
//! real clock, with the far end exposed as a serial port for another driver (another
//! daemon, or a test).
//!
//! - `framing = "serial"` with a byte-stream profile (`hf-modem`, ...): the simulator's
//!   stream model between two ptys (`skywave-emulate`); this side runs a `serial` driver
//!   paced for the profile, and the far end wants `type = "serial"` with the same
//!   `profile`.
//! - `framing = "rfd900"` with a radio profile (`uhf-csma`, ...): two emulated RFD900
//!   radios on a shared channel at the profile's rate, loss and buffer; the far end wants
//!   `type = "rfd900"` with `air_rate` set to the profile's rate.
//! - `framing = "hf-modem"` with a half-duplex stream profile: two emulated AT-command
//!   modems; this side (id `LOCAL`) dials the far one (id `PEER`), whose driver answers
//!   (`type = "hf-modem"` without `station`, `profile` the same).

use std::path::{Path, PathBuf};

use serde::Deserialize;
use skywave_sim::{LinkConfig, LinkKind};

use crate::hf::{HfConfig, HfModemConfig, HfModems};
use crate::link::Shared;
use crate::rfd900::{MediumConfig, Rfd900Config, Rfd900Medium};
use crate::serial::{StreamSpec, lookup_profile};
use crate::{Error, LinkHandle};

/// How frames are carried over the emulated link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Framing {
    Serial,
    Rfd900,
    HfModem,
}

/// `[[link]] type = "emulated"`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmulatedConfig {
    /// Link profile name or spec (`hf-modem`, `uhf-csma`, `profile=hf-modem,delay=1s`).
    pub profile: String,
    /// Default: `serial` for stream profiles, `rfd900` for radio profiles.
    #[serde(default)]
    pub framing: Option<Framing>,
    /// A symlink created here points at the far end's serial port.
    pub peer_device: PathBuf,
    /// Seed of the model's random draws.
    #[serde(default = "default_seed")]
    pub seed: u64,
    #[serde(default)]
    pub name: Option<String>,
    /// RFD900 framing: frames the driver lets wait in the radio (as `rfd900`'s).
    #[serde(default)]
    pub queue_frames: Option<usize>,
}

fn default_seed() -> u64 {
    1
}

impl EmulatedConfig {
    pub fn new(profile: &str, peer_device: impl Into<PathBuf>) -> EmulatedConfig {
        EmulatedConfig {
            profile: profile.into(),
            framing: None,
            peer_device: peer_device.into(),
            seed: default_seed(),
            name: None,
            queue_frames: None,
        }
    }
}

fn expose(link: &Path, target: &Path) -> Result<(), Error> {
    let io = |source| Error::Io {
        what: format!(
            "creating the peer device symlink {} -> {}",
            link.display(),
            target.display()
        ),
        source,
    };
    match std::fs::symlink_metadata(link) {
        Ok(m) if m.file_type().is_symlink() => std::fs::remove_file(link).map_err(io)?,
        Ok(_) => {
            return Err(Error::Invalid {
                field: "peer_device".into(),
                value: link.display().to_string(),
                expected: "a path that is free or an old symlink (it is replaced by one)".into(),
            });
        }
        Err(_) => {}
    }
    std::os::unix::fs::symlink(target, link).map_err(io)
}

fn wrong(field: &str, cfg: &LinkConfig, expected: &str) -> Error {
    Error::Invalid {
        field: field.into(),
        value: format!("{} (kind {})", cfg.name, cfg.kind.as_str()),
        expected: expected.into(),
    }
}

pub fn spawn(cfg: EmulatedConfig) -> Result<LinkHandle, Error> {
    let link = lookup_profile("profile", &cfg.profile)?;
    let framing = cfg.framing.unwrap_or(match link.kind {
        LinkKind::Csma => Framing::Rfd900,
        _ => Framing::Serial,
    });
    let name = cfg
        .name
        .clone()
        .unwrap_or_else(|| format!("emulated:{}", cfg.profile));
    match framing {
        Framing::Serial => {
            let spec = StreamSpec::profile(&link)?;
            let opts = skywave_emulate::Options {
                seed: cfg.seed,
                stats_interval: None,
            };
            let emu =
                skywave_emulate::StreamEmulator::pty(&link, &opts).map_err(|e| Error::Invalid {
                    field: "profile".into(),
                    value: cfg.profile.clone(),
                    expected: format!("a profile the stream emulator can run ({e})"),
                })?;
            let paths = emu.pty_paths().expect("pty mode").clone();
            expose(&cfg.peer_device, &paths.b)?;
            let (shared, handle, frames) = Shared::new(name);
            tokio::spawn(async move {
                let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
                let emulator = tokio::spawn(emu.run(async move {
                    let _ = stop_rx.await;
                }));
                let _ = crate::serial::run(shared, frames, paths.a, 115_200, spec).await;
                let _ = stop_tx.send(());
                let _ = emulator.await;
            });
            Ok(handle)
        }
        Framing::Rfd900 => {
            let medium_cfg = MediumConfig {
                seed: cfg.seed,
                ..MediumConfig::from_profile(&link, 2).map_err(|e| wrong("profile", &link, &e))?
            };
            let air_rate = medium_cfg.air_rate;
            let medium = Rfd900Medium::start(medium_cfg).map_err(|source| Error::Io {
                what: "starting the emulated radios".into(),
                source,
            })?;
            expose(&cfg.peer_device, medium.path(1))?;
            let mut rc = Rfd900Config::new(medium.path(0));
            rc.air_rate = air_rate;
            rc.name = Some(name);
            rc.queue_frames = cfg.queue_frames;
            crate::rfd900::spawn_with(rc, Box::new(medium))
        }
        Framing::HfModem => {
            let hc = HfConfig::from_profile(&link).map_err(|e| wrong("profile", &link, &e))?;
            let modems = HfModems::start(hc, ["LOCAL", "PEER"]).map_err(|source| Error::Io {
                what: "starting the emulated HF modems".into(),
                source,
            })?;
            expose(&cfg.peer_device, modems.path(1))?;
            let mut mc = HfModemConfig::new(modems.path(0));
            mc.station = Some("PEER".into());
            mc.self_id = Some("LOCAL".into());
            mc.profile = cfg.profile.clone();
            mc.name = Some(name);
            crate::hf::spawn_with(mc, Box::new(modems))
        }
    }
}
