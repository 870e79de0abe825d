//! The named link profiles of the design's table.

use std::time::Duration;

use super::{
    BufferSize, ConfigError, CsmaConfig, DirConfig, Duplex, IP_UDP_HEADER, LinkConfig, LinkKind,
    LoraPhy, LossModel, TxQueue,
};

/// A profile name and a one-line description, for `lab list`.
#[derive(Clone, Copy, Debug)]
pub struct ProfileInfo {
    pub name: &'static str,
    pub summary: &'static str,
}

/// Every named profile. `formant-RTT-LOSS` is a family: RTT in ms, LOSS in percent.
pub const PROFILES: &[ProfileInfo] = &[
    ProfileInfo {
        name: "hf-modem",
        summary: "HF data modem: 1475 bit/s byte stream, 4 s one-way, half duplex, 2 s turnaround, 1024 B TX buffer (overrun drops the call, redial 60 s)",
    },
    ProfileInfo {
        name: "hf-modem-slow",
        summary: "hf-modem with 8 s one-way (compression on)",
    },
    ProfileInfo {
        name: "uhf-csma",
        summary: "UHF packet radio: 128 kbit/s shared CSMA medium, 223 B frames, 8 B preamble, 4 KiB queue",
    },
    ProfileInfo {
        name: "uhf-csma-lossy",
        summary: "uhf-csma with 10% loss",
    },
    ProfileInfo {
        name: "satellite",
        summary: "2 Mbit/s up (A->B), 20 Mbit/s down (B->A), 300 ms one-way, MTU 1500, 1% loss, 1 BDP",
    },
    ProfileInfo {
        name: "cellular",
        summary: "20 Mbit/s, 50 ms one-way, MTU 1400, 3% loss, 1 BDP",
    },
    ProfileInfo {
        name: "lfn",
        summary: "long fat network: 30 Mbit/s, 115 ms one-way, MTU 1500, 1 BDP",
    },
    ProfileInfo {
        name: "lfn-lossy",
        summary: "lfn with 1% loss",
    },
    ProfileInfo {
        name: "formant-RTT-LOSS",
        summary: "10 Mbit/s, RTT ms round trip, LOSS % loss, MTU 1500, 1 BDP (e.g. formant-180-5)",
    },
    ProfileInfo {
        name: "lora-sfSF-BW",
        summary: "LoRa radio (RNode-like): SF 7-12, BW 125/250/500 kHz, CR 4/5, 8 preamble symbols, 255 B frames timed by Semtech's air-time formula, shared CSMA channel, 200-frame queue (e.g. lora-sf9-125; add duty=1% for an EU 868 MHz sub-band)",
    },
    ProfileInfo {
        name: "lan",
        summary: "1 Gbit/s, 50 us one-way, MTU 1500, 1 BDP",
    },
];

fn accepted() -> String {
    PROFILES
        .iter()
        .map(|p| p.name)
        .collect::<Vec<_>>()
        .join(", ")
}

fn ip_path(name: &str, rate_bps: u64, one_way: Duration, mtu: usize, loss: f64) -> LinkConfig {
    let dir = DirConfig {
        rate_bps,
        delay: one_way,
        mtu,
        // `mtu` is the IP MTU; every datagram carries IPv4 + UDP headers on the wire.
        header: IP_UDP_HEADER,
        loss: if loss > 0.0 {
            LossModel::Bernoulli(loss)
        } else {
            LossModel::None
        },
        buffer: BufferSize::Bdp(1.0),
        ..DirConfig::default()
    };
    LinkConfig {
        name: name.to_string(),
        up: dir.clone(),
        down: dir,
        ..LinkConfig::default()
    }
}

fn hf(name: &str, one_way: Duration) -> LinkConfig {
    let dir = DirConfig {
        rate_bps: 1475,
        delay: one_way,
        mtu: 1024,
        buffer: BufferSize::Bytes(1024),
        ..DirConfig::default()
    };
    LinkConfig {
        name: name.to_string(),
        kind: LinkKind::Stream,
        duplex: Duplex::Half,
        turnaround: Duration::from_secs(2),
        redial: Duration::from_secs(60),
        up: dir.clone(),
        down: dir,
        ..LinkConfig::default()
    }
}

fn uhf(name: &str, loss: f64) -> LinkConfig {
    let dir = DirConfig {
        rate_bps: 128_000,
        mtu: 223,
        overhead: 8,
        buffer: BufferSize::Bytes(4096),
        loss: if loss > 0.0 {
            LossModel::Bernoulli(loss)
        } else {
            LossModel::None
        },
        ..DirConfig::default()
    };
    LinkConfig {
        name: name.to_string(),
        kind: LinkKind::Csma,
        duplex: Duplex::Half,
        up: dir.clone(),
        down: dir,
        ..LinkConfig::default()
    }
}

pub(super) fn profile(name: &str) -> Result<LinkConfig, ConfigError> {
    let ms = Duration::from_millis;
    let cfg = match name {
        "hf-modem" => hf(name, Duration::from_secs(4)),
        "hf-modem-slow" => hf(name, Duration::from_secs(8)),
        "uhf-csma" => uhf(name, 0.0),
        "uhf-csma-lossy" => uhf(name, 0.10),
        "satellite" => {
            let mut c = ip_path(name, 2_000_000, ms(300), 1500, 0.01);
            c.down.rate_bps = 20_000_000;
            c
        }
        "cellular" => ip_path(name, 20_000_000, ms(50), 1400, 0.03),
        "lfn" => ip_path(name, 30_000_000, ms(115), 1500, 0.0),
        "lfn-lossy" => ip_path(name, 30_000_000, ms(115), 1500, 0.01),
        "lan" => ip_path(name, 1_000_000_000, Duration::from_micros(50), 1500, 0.0),
        _ => match name.strip_prefix("formant-") {
            Some(rest) => formant(name, rest)?,
            None if name.starts_with("lora-") => lora(name)?,
            None => {
                return Err(ConfigError::UnknownProfile {
                    name: name.to_string(),
                    accepted: accepted(),
                });
            }
        },
    };
    cfg.validate()?;
    Ok(cfg)
}

/// `lora-sfSF-BW`, e.g. `lora-sf9-125`.
fn lora(name: &str) -> Result<LinkConfig, ConfigError> {
    let bad = || ConfigError::UnknownProfile {
        name: name.to_string(),
        accepted: format!(
            "{} (lora-sfSF-BW takes SF 7 to 12 and BW 125, 250 or 500 kHz, e.g. lora-sf9-125)",
            accepted()
        ),
    };
    let rest = name.strip_prefix("lora-sf").ok_or_else(bad)?;
    let (sf, bw) = rest.split_once('-').ok_or_else(bad)?;
    let sf: u8 = sf.parse().map_err(|_| bad())?;
    let bw: u32 = bw.parse().map_err(|_| bad())?;
    let phy = LoraPhy::new(sf, bw * 1000, 5).map_err(|_| bad())?;
    let dir = DirConfig {
        rate_bps: phy.bit_rate().round() as u64,
        mtu: crate::lora::MAX_PAYLOAD,
        overhead: 0,
        // RNode firmware: 200 frames, 6 KiB (docs/sim.md, "Real radios").
        buffer: BufferSize::Bytes(6144),
        ..DirConfig::default()
    };
    Ok(LinkConfig {
        name: name.to_string(),
        kind: LinkKind::Csma,
        duplex: Duplex::Half,
        csma: CsmaConfig {
            // RNode's least CSMA slot (its `CSMA_SLOT_MIN_MS`); never shorter than the
            // preamble (see the medium).
            slot: Duration::from_millis(24),
            cw_min: 16,
            cw_max: 256,
            txqueue: TxQueue::Frames(200),
        },
        lora: Some(phy),
        up: dir.clone(),
        down: dir,
        ..LinkConfig::default()
    })
}

fn formant(name: &str, rest: &str) -> Result<LinkConfig, ConfigError> {
    let bad = || ConfigError::UnknownProfile {
        name: name.to_string(),
        accepted: format!(
            "{} (formant-RTT-LOSS takes RTT in whole ms and LOSS in percent, e.g. formant-180-5)",
            accepted()
        ),
    };
    let (rtt, loss) = rest.split_once('-').ok_or_else(bad)?;
    let rtt_ms: u64 = rtt.parse().map_err(|_| bad())?;
    let loss_pct: f64 = loss.parse().map_err(|_| bad())?;
    if !(0.0..=100.0).contains(&loss_pct) {
        return Err(bad());
    }
    // One-way is half the RTT, in nanoseconds so odd RTTs stay exact.
    let one_way = Duration::from_nanos(rtt_ms * 500_000);
    Ok(ip_path(name, 10_000_000, one_way, 1500, loss_pct / 100.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lora_profiles_time_frames_by_the_formula() {
        let c = profile("lora-sf9-125").unwrap();
        let p = c.lora.unwrap();
        assert_eq!((p.sf, p.bw_hz, p.cr, p.preamble), (9, 125_000, 5, 8));
        assert_eq!(c.up.mtu, 255);
        assert_eq!(c.up.rate_bps, 1758);
        assert!(c.duty.is_none());
        for sf in 7..=12 {
            for bw in [125, 250] {
                profile(&format!("lora-sf{sf}-{bw}")).unwrap();
            }
        }
        for bad in ["lora-sf6-125", "lora-sf9-62", "lora-9-125", "lora-sf9"] {
            let e = profile(bad).unwrap_err().to_string();
            assert!(e.contains("lora-sfSF-BW"), "{bad}: {e}");
        }
        // A spec sets the duty cycle and changes the modulation; it round-trips.
        let c = LinkConfig::parse_spec("profile=lora-sf9-125,duty=1%,sf=10,cr=4/8").unwrap();
        assert_eq!(c.duty.unwrap().fraction, 0.01);
        assert_eq!(c.duty.unwrap().window, Duration::from_secs(3600));
        assert_eq!((c.lora.unwrap().sf, c.lora.unwrap().cr), (10, 8));
        let again = LinkConfig::parse_spec(&c.to_spec()).unwrap();
        assert_eq!((again.lora, again.duty), (c.lora, c.duty));
        assert_eq!(again.up, c.up);
        for (spec, field) in [
            ("profile=lora-sf9-125,duty=0", "duty"),
            ("profile=lora-sf9-125,mtu=300", "mtu"),
            ("profile=lora-sf9-125,sf=13", "sf"),
            ("profile=lora-sf9-125,bw=62kHz", "bw"),
            ("profile=hf-modem,sf=9", "sf"),
            ("profile=lfn,duty=1%", "duty"),
        ] {
            let e = LinkConfig::parse_spec(spec).unwrap_err().to_string();
            assert!(e.contains(&format!("'{field}'")), "{spec}: {e}");
        }
    }
}
