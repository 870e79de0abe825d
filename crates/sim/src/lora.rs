//! LoRa air time: how long one LoRa packet of a given payload occupies the channel.
//!
//! Semtech's formula (SX1276/77/78/79 datasheet, "Time on air"; AN1200.13, "LoRa Modem
//! Designer's Guide"), with `Ts = 2^SF / BW`:
//!
//! ```text
//! T_packet  = (n_preamble + 4.25) * Ts + n_payload * Ts
//! n_payload = 8 + max(ceil((8 PL - 4 SF + 28 + 16 CRC - 20 IH) / (4 (SF - 2 DE))) * (CR + 4), 0)
//! ```
//!
//! `PL` payload bytes (at most 255), `CRC` 1 with the payload CRC on, `IH` 1 with an
//! implicit header, `DE` 1 with low data rate optimisation (required when a symbol lasts
//! more than 16 ms: SF11 and SF12 at 125 kHz, SF12 at 250 kHz), `CR` 1..4 for coding
//! rates 4/5..4/8. Air time is not linear in the payload: it grows in steps of
//! `4 (SF - 2 DE)` bits, and every packet pays the preamble and header, so a link's
//! figures come from this formula, not from a bit rate.
//!
//! Computed exactly in nanoseconds (a quarter symbol is a whole number of nanoseconds
//! for 125, 250 and 500 kHz), so the simulator and the budget in `skywave-node` agree to
//! the nanosecond. Sans-IO and pure.

use std::fmt;
use std::time::Duration;

/// Largest LoRa payload (the length field is one byte).
pub const MAX_PAYLOAD: usize = 255;

/// Bandwidths accepted (Hz): the ones EU 868 MHz LoRa uses, and 500 kHz.
pub const BANDWIDTHS: [u32; 3] = [125_000, 250_000, 500_000];

/// A symbol longer than this needs low data rate optimisation (Semtech).
const LDRO_SYMBOL: Duration = Duration::from_millis(16);

/// The radio settings that decide air time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LoraPhy {
    /// Spreading factor, 7..=12.
    pub sf: u8,
    /// Bandwidth in Hz (125000, 250000 or 500000).
    pub bw_hz: u32,
    /// Coding rate denominator: 5..=8 for 4/5..4/8 (the value RNode's `CR` command takes).
    pub cr: u8,
    /// Preamble symbols as programmed (the radio adds 4.25 for the sync word).
    pub preamble: u16,
    /// Explicit header (variable length packets): on unless a fixed length is agreed.
    pub explicit_header: bool,
    /// Payload CRC.
    pub crc: bool,
}

impl Default for LoraPhy {
    /// SF9, 125 kHz, 4/5, 8 preamble symbols, explicit header, CRC on.
    fn default() -> Self {
        LoraPhy {
            sf: 9,
            bw_hz: 125_000,
            cr: 5,
            preamble: 8,
            explicit_header: true,
            crc: true,
        }
    }
}

/// A setting out of range: names it and what is accepted.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid LoRa setting '{field}' = {value}: expected {expected}")]
pub struct LoraError {
    pub field: &'static str,
    pub value: String,
    pub expected: &'static str,
}

impl LoraPhy {
    /// `SF`, bandwidth in Hz, coding rate 5..=8; 8 preamble symbols, explicit header, CRC.
    pub fn new(sf: u8, bw_hz: u32, cr: u8) -> Result<LoraPhy, LoraError> {
        let p = LoraPhy {
            sf,
            bw_hz,
            cr,
            ..LoraPhy::default()
        };
        p.check()?;
        Ok(p)
    }

    pub fn with_preamble(self, symbols: u16) -> LoraPhy {
        LoraPhy {
            preamble: symbols,
            ..self
        }
    }

    /// Checks every setting.
    pub fn check(&self) -> Result<(), LoraError> {
        let bad = |field, value: String, expected| {
            Err(LoraError {
                field,
                value,
                expected,
            })
        };
        if !(7..=12).contains(&self.sf) {
            return bad("sf", self.sf.to_string(), "a spreading factor from 7 to 12");
        }
        if !BANDWIDTHS.contains(&self.bw_hz) {
            return bad(
                "bw",
                format!("{} Hz", self.bw_hz),
                "125 kHz, 250 kHz or 500 kHz",
            );
        }
        if !(5..=8).contains(&self.cr) {
            return bad(
                "cr",
                self.cr.to_string(),
                "a coding rate 4/5, 4/6, 4/7 or 4/8 (5 to 8)",
            );
        }
        if !(6..=1000).contains(&self.preamble) {
            return bad(
                "preamble",
                self.preamble.to_string(),
                "6 to 1000 preamble symbols",
            );
        }
        Ok(())
    }

    /// One symbol, `2^SF / BW`.
    pub fn symbol_time(&self) -> Duration {
        Duration::from_nanos(self.symbol_nanos())
    }

    fn symbol_nanos(&self) -> u64 {
        (1u64 << self.sf) * 1_000_000_000 / u64::from(self.bw_hz.max(1))
    }

    /// Whether low data rate optimisation is on (a symbol longer than 16 ms).
    pub fn low_data_rate(&self) -> bool {
        self.symbol_time() > LDRO_SYMBOL
    }

    /// Payload symbols (header and CRC included) for `len` payload bytes.
    pub fn payload_symbols(&self, len: usize) -> u64 {
        let sf = i64::from(self.sf);
        let de = i64::from(self.low_data_rate());
        let ih = i64::from(!self.explicit_header);
        let crc = i64::from(self.crc);
        let num = 8 * len as i64 - 4 * sf + 28 + 16 * crc - 20 * ih;
        let den = 4 * (sf - 2 * de);
        let blocks = if num > 0 { (num + den - 1) / den } else { 0 };
        8 + (blocks * (i64::from(self.cr - 4) + 4)) as u64
    }

    /// Air time of one packet of `len` payload bytes (`len` at most [`MAX_PAYLOAD`]; a
    /// longer one is costed as if the radio took it, which none does).
    pub fn airtime(&self, len: usize) -> Duration {
        Duration::from_nanos(self.airtime_nanos(len))
    }

    pub fn airtime_nanos(&self, len: usize) -> u64 {
        // In quarter symbols: the preamble's 4.25 is then whole.
        let quarters = 4 * u64::from(self.preamble) + 17 + 4 * self.payload_symbols(len);
        quarters * self.symbol_nanos() / 4
    }

    /// The preamble and sync word, `(n_preamble + 4.25) * Ts`: what a receiver needs to
    /// hear before it knows a packet is on the air.
    pub fn preamble_nanos(&self) -> u64 {
        (4 * u64::from(self.preamble) + 17) * self.symbol_nanos() / 4
    }

    /// The nominal bit rate, `SF * BW / 2^SF * 4 / CR` (what LoRa tables quote; it
    /// ignores the preamble and header, which cost each packet much more).
    pub fn bit_rate(&self) -> f64 {
        f64::from(self.sf) * f64::from(self.bw_hz) / (1u64 << self.sf) as f64 * 4.0
            / f64::from(self.cr)
    }

    /// Payload bytes per second of air with packets of `len` bytes back to back.
    pub fn payload_rate(&self, len: usize) -> f64 {
        len as f64 / self.airtime(len).as_secs_f64()
    }
}

/// The most air time in any window of `window_ns`, over transmissions `(start, air)` in
/// nanoseconds sorted by start and not overlapping (one radio's): what a duty-cycle
/// limit bounds, measured rather than taken from the sender.
///
/// The overlap of a sliding window with the transmissions is piecewise linear in the
/// window's position, so its maximum is at a window that starts where a transmission
/// starts or ends where one ends: those are the windows tried.
pub fn max_window_air(log: &[(u64, u64)], window_ns: u64) -> u64 {
    let mut prefix = Vec::with_capacity(log.len() + 1);
    prefix.push(0u64);
    for &(_, air) in log {
        prefix.push(prefix.last().copied().unwrap_or(0) + air);
    }
    // Air time in [a, b).
    let within = |a: u64, b: u64| -> u64 {
        // First transmission ending after a, first starting at or after b.
        let i = log.partition_point(|&(s, air)| s + air <= a);
        let j = log.partition_point(|&(s, _)| s < b);
        if i >= j {
            return 0;
        }
        let mut sum = prefix[j] - prefix[i];
        let (s0, _) = log[i];
        sum -= a.saturating_sub(s0).min(log[i].1);
        let (s1, air1) = log[j - 1];
        sum -= (s1 + air1).saturating_sub(b).min(air1);
        sum
    };
    log.iter()
        .flat_map(|&(s, air)| {
            [
                within(s, s.saturating_add(window_ns)),
                within((s + air).saturating_sub(window_ns), s + air),
            ]
        })
        .max()
        .unwrap_or(0)
}

impl fmt::Display for LoraPhy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "SF{}/{} kHz/CR 4/{}/{} preamble symbols",
            self.sf,
            self.bw_hz / 1000,
            self.cr,
            self.preamble
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(p: &LoraPhy, len: usize) -> f64 {
        p.airtime(len).as_secs_f64() * 1000.0
    }

    /// Figures of Semtech's LoRa calculator (8 preamble symbols, explicit header, CRC
    /// on, CR 4/5), to the microsecond the formula gives.
    #[test]
    fn published_figures() {
        let sf7 = LoraPhy::new(7, 125_000, 5).unwrap();
        // 12.25 + 28 symbols of 1.024 ms.
        assert_eq!(sf7.payload_symbols(10), 28);
        assert_eq!(sf7.airtime(10), Duration::from_micros(41_216));
        let sf12 = LoraPhy::new(12, 125_000, 5).unwrap();
        assert!(sf12.low_data_rate());
        // 12.25 + 18 symbols of 32.768 ms.
        assert_eq!(sf12.airtime(10), Duration::from_micros(991_232));
        // SF9/125: 4.096 ms symbols; 255 B: 12.25 + 8 + 57 x 5 symbols.
        let sf9 = LoraPhy::new(9, 125_000, 5).unwrap();
        assert_eq!(sf9.symbol_time(), Duration::from_micros(4096));
        assert!(!sf9.low_data_rate());
        assert_eq!(sf9.payload_symbols(255), 293);
        assert!((ms(&sf9, 255) - 1250.304).abs() < 1e-9);
        // LoRaWAN's EU868 tables (13 B header + payload, same settings): SF7 51 B
        // payload -> 64 B PHY payload, 118.016 ms; SF12 51 B -> 2793.472 ms.
        assert!((ms(&sf7, 64) - 118.016).abs() < 1e-9);
        assert!((ms(&sf12, 64) - 2793.472).abs() < 1e-9);
    }

    #[test]
    fn low_data_rate_optimisation_follows_the_symbol_time() {
        let on = |sf, bw| LoraPhy::new(sf, bw, 5).unwrap().low_data_rate();
        assert!(!on(10, 125_000));
        assert!(on(11, 125_000));
        assert!(on(12, 250_000), "16.384 ms symbols");
        assert!(!on(11, 250_000));
        // With it on, SF12 carries 8 bits less per block of symbols: 26 B take 6
        // blocks (5 without).
        let sf12 = LoraPhy::new(12, 125_000, 5).unwrap();
        assert_eq!(sf12.payload_symbols(26), 8 + 6 * 5);
    }

    #[test]
    fn header_crc_and_coding_rate_change_the_count() {
        let base = LoraPhy::new(7, 125_000, 5).unwrap();
        let implicit = LoraPhy {
            explicit_header: false,
            ..base
        };
        let no_crc = LoraPhy { crc: false, ..base };
        let cr8 = LoraPhy::new(7, 125_000, 8).unwrap();
        assert_eq!(base.payload_symbols(10), 28);
        assert_eq!(implicit.payload_symbols(10), 8 + 3 * 5);
        assert_eq!(no_crc.payload_symbols(10), 8 + 3 * 5);
        assert_eq!(cr8.payload_symbols(10), 8 + 4 * 8);
        // A zero-length packet still has its 8 symbols.
        let tiny = LoraPhy {
            explicit_header: false,
            crc: false,
            ..LoraPhy::new(12, 125_000, 5).unwrap()
        };
        assert_eq!(tiny.payload_symbols(0), 8);
        // Longer preambles add whole symbols.
        assert_eq!(
            base.with_preamble(18).airtime(10) - base.airtime(10),
            base.symbol_time() * 10
        );
    }

    #[test]
    fn air_time_grows_with_payload_and_spreading_factor() {
        for bw in BANDWIDTHS {
            let mut last = Duration::ZERO;
            for sf in 7..=12 {
                let p = LoraPhy::new(sf, bw, 5).unwrap();
                let mut prev = Duration::ZERO;
                for len in 0..=MAX_PAYLOAD {
                    let t = p.airtime(len);
                    assert!(t >= prev, "SF{sf} {bw} Hz {len} B");
                    prev = t;
                }
                assert!(prev > last);
                last = prev;
            }
        }
        // Doubling the bandwidth halves the air time.
        let a = LoraPhy::new(9, 125_000, 5).unwrap();
        let b = LoraPhy::new(9, 250_000, 5).unwrap();
        assert_eq!(a.airtime(100), b.airtime(100) * 2);
    }

    #[test]
    fn bad_settings_are_named() {
        for (p, field) in [
            (LoraPhy::new(6, 125_000, 5), "sf"),
            (LoraPhy::new(13, 125_000, 5), "sf"),
            (LoraPhy::new(9, 62_500, 5), "bw"),
            (LoraPhy::new(9, 125_000, 4), "cr"),
            (LoraPhy::new(9, 125_000, 9), "cr"),
        ] {
            assert_eq!(p.unwrap_err().field, field);
        }
        assert_eq!(
            LoraPhy::default()
                .with_preamble(2)
                .check()
                .unwrap_err()
                .field,
            "preamble"
        );
    }

    #[test]
    fn the_busiest_window_is_found() {
        let s = 1_000_000_000u64;
        // 1 s frames at 0, 10, 20 s: a 15 s window holds at most 2 s.
        let log = [(0, s), (10 * s, s), (20 * s, s)];
        assert_eq!(max_window_air(&log, 15 * s), 2 * s);
        // A 10.5 s window: [0.5, 11) holds 0.5 + 1 s, [10, 20.5) 1 + 0.5 s.
        assert_eq!(max_window_air(&log, 10 * s + s / 2), s + s / 2);
        assert_eq!(max_window_air(&log, 100 * s), 3 * s);
        assert_eq!(max_window_air(&log, s / 2), s / 2);
        assert_eq!(max_window_air(&[], s), 0);
        // Checked against every window position in 1 ms steps.
        let ms = 1_000_000u64;
        let log = [(0, 300 * ms), (700 * ms, 200 * ms), (1500 * ms, 600 * ms)];
        for w in [100 * ms, 800 * ms, 1000 * ms, 1700 * ms] {
            let brute = (0..3000)
                .map(|k| {
                    let a = k * ms;
                    log.iter()
                        .map(|&(st, air)| (st + air).min(a + w).saturating_sub(st.max(a)))
                        .sum::<u64>()
                })
                .max()
                .unwrap();
            assert_eq!(max_window_air(&log, w), brute, "window {w}");
        }
    }

    #[test]
    fn nominal_bit_rates() {
        let r = |sf, bw| LoraPhy::new(sf, bw, 5).unwrap().bit_rate().round();
        assert_eq!(r(7, 125_000), 5469.0);
        assert_eq!(r(9, 125_000), 1758.0);
        assert_eq!(r(12, 125_000), 293.0);
    }
}
