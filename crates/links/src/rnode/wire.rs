//! RNode's host protocol: KISS frames whose first byte is a whole command (not KISS's
//! port and command nibbles), as the RNode firmware (markqvist/RNode_Firmware,
//! `Framing.h`, `serial_callback()`) and Reticulum's `RNodeInterface` speak it.
//!
//! Settings are sent as commands with big-endian values; the device answers each with
//! the same command and the value it now uses. What this does not do: firmware update,
//! the display and Bluetooth commands, or anything the driver does not use.

use crate::kiss::wire::{self as kiss, Decoder};
pub use crate::kiss::wire::{FEND, FESC};

/// Command bytes (`Framing.h`).
pub mod cmd {
    pub const DATA: u8 = 0x00;
    /// 4 bytes, Hz.
    pub const FREQUENCY: u8 = 0x01;
    /// 4 bytes, Hz.
    pub const BANDWIDTH: u8 = 0x02;
    /// 1 byte, dBm.
    pub const TXPOWER: u8 = 0x03;
    /// 1 byte, 5..=12.
    pub const SF: u8 = 0x04;
    /// 1 byte, 5..=8 (4/5..4/8).
    pub const CR: u8 = 0x05;
    /// 1 byte: 0 off, 1 on, 0xFF ask.
    pub const RADIO_STATE: u8 = 0x06;
    pub const DETECT: u8 = 0x08;
    /// Airtime locks (short and long term), 2 bytes, percent x 100.
    pub const ST_ALOCK: u8 = 0x0B;
    pub const LT_ALOCK: u8 = 0x0C;
    /// Host to device: "may I send?"; device to host: 1 ready (its queue has room), 0 not.
    pub const READY: u8 = 0x0F;
    pub const STAT_RX: u8 = 0x21;
    pub const STAT_TX: u8 = 0x22;
    pub const STAT_RSSI: u8 = 0x23;
    pub const STAT_SNR: u8 = 0x24;
    /// Channel time: air time and channel load, short and long term, current RSSI, noise
    /// floor, interference (11 bytes).
    pub const STAT_CHTM: u8 = 0x25;
    /// Symbol time, symbol rate, preamble symbols and time, CSMA slot, DIFS (12 bytes).
    pub const STAT_PHYPRM: u8 = 0x26;
    pub const STAT_BAT: u8 = 0x27;
    pub const STAT_CSMA: u8 = 0x28;
    pub const STAT_TEMP: u8 = 0x29;
    /// The last channel-statistics command the firmware may send.
    pub const STAT_LAST: u8 = 0x2C;
    pub const FW_VERSION: u8 = 0x50;
    pub const PLATFORM: u8 = 0x48;
    pub const MCU: u8 = 0x49;
    pub const RESET: u8 = 0x55;
    pub const ERROR: u8 = 0x90;
}

/// Error codes after [`cmd::ERROR`].
pub mod error {
    pub const INIT_RADIO: u8 = 0x01;
    pub const TX_FAILED: u8 = 0x02;
    pub const EEPROM_LOCKED: u8 = 0x03;
    pub const QUEUE_FULL: u8 = 0x04;
    pub const MEMORY_LOW: u8 = 0x05;
    pub const MODEM_TIMEOUT: u8 = 0x06;

    /// What an error code means, for logs.
    pub fn describe(code: u8) -> &'static str {
        match code {
            INIT_RADIO => "the radio failed to initialise",
            TX_FAILED => "a transmission failed",
            EEPROM_LOCKED => "the EEPROM is locked (the device is not provisioned)",
            QUEUE_FULL => "its transmit queue is full",
            MEMORY_LOW => "its memory is exhausted",
            MODEM_TIMEOUT => "its radio chip stopped answering",
            _ => "an unknown error",
        }
    }
}

/// The firmware's offset of reported RSSI values (`RSSI_OFFSET`).
pub const RSSI_OFFSET: i32 = 157;

/// Largest frame the firmware takes (`MTU`); beyond [`SINGLE_MTU`] less its one-byte
/// header it sends a frame as two LoRa packets.
pub const MTU: usize = 508;
pub const SINGLE_MTU: usize = 255;
pub const HEADER: usize = 1;

/// The LoRa packets a frame of `len` bytes goes out as: the firmware prepends a one-byte
/// header and splits at 255 bytes (`transmit()`), each packet repeating the header.
pub fn packets(len: usize) -> [Option<usize>; 2] {
    if len + HEADER <= SINGLE_MTU {
        [Some(len + HEADER), None]
    } else {
        [Some(SINGLE_MTU), Some(len - (SINGLE_MTU - HEADER) + HEADER)]
    }
}

/// Appends a command frame.
pub fn command(c: u8, data: &[u8], out: &mut Vec<u8>) {
    kiss::encode_byte(c, data, out);
}

/// The configuration sequence, as Reticulum sends it: frequency, bandwidth, TX power,
/// spreading factor, coding rate, then the radio on.
pub fn configure(frequency: u32, bandwidth: u32, txpower: u8, sf: u8, cr: u8) -> Vec<u8> {
    let mut out = Vec::new();
    command(cmd::FREQUENCY, &frequency.to_be_bytes(), &mut out);
    command(cmd::BANDWIDTH, &bandwidth.to_be_bytes(), &mut out);
    command(cmd::TXPOWER, &[txpower], &mut out);
    command(cmd::SF, &[sf], &mut out);
    command(cmd::CR, &[cr], &mut out);
    command(cmd::RADIO_STATE, &[1], &mut out);
    out
}

/// Channel-time statistics ([`cmd::STAT_CHTM`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChannelStats {
    /// Our own air time, percent, over the firmware's short and long windows.
    pub airtime_short: f64,
    pub airtime_long: f64,
    /// Channel load (everyone's), percent.
    pub load_short: f64,
    pub load_long: f64,
    pub rssi_dbm: i32,
    pub noise_floor_dbm: i32,
    /// Interference heard, dBm, if any.
    pub interference_dbm: Option<i32>,
}

/// What the device sent.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    Data(Vec<u8>),
    /// The device confirms a setting: (command, value).
    Setting(u8, u32),
    Ready(bool),
    Error(u8),
    Channel(ChannelStats),
    /// Preamble symbols the firmware uses (from [`cmd::STAT_PHYPRM`]).
    Preamble(u16),
    /// Another statistic (0x21-0x2C) or identification: taken, not used.
    Stat(u8),
    /// A frame this driver cannot read: why.
    Bad(&'static str),
}

fn be(d: &[u8]) -> u32 {
    d.iter().fold(0u32, |a, &b| (a << 8) | u32::from(b))
}

/// Reads the device's byte stream.
#[derive(Debug, Default)]
pub struct Reader {
    decoder: Decoder,
}

impl Reader {
    /// Bytes of frames dropped for bad escapes or length.
    pub fn garbage(&self) -> u64 {
        self.decoder.garbage
    }

    pub fn bad_frames(&self) -> u64 {
        self.decoder.bad_frames
    }

    pub fn push(&mut self, data: &[u8]) -> Vec<Event> {
        self.decoder
            .push(data)
            .into_iter()
            .map(|f| parse(f.port << 4 | f.command, &f.data))
            .collect()
    }
}

/// One frame from the device, by its first byte.
pub fn parse(c: u8, d: &[u8]) -> Event {
    match (c, d.len()) {
        (cmd::DATA, 0) => Event::Bad("an empty data frame"),
        (cmd::DATA, _) => Event::Data(d.to_vec()),
        (cmd::FREQUENCY | cmd::BANDWIDTH, 4) => Event::Setting(c, be(d)),
        (cmd::TXPOWER | cmd::SF | cmd::CR | cmd::RADIO_STATE, 1) => {
            Event::Setting(c, u32::from(d[0]))
        }
        (cmd::READY, 1) => Event::Ready(d[0] == 1),
        (cmd::ERROR, 1) => Event::Error(d[0]),
        (cmd::STAT_CHTM, 11) => {
            let pct = |i: usize| f64::from(u16::from_be_bytes([d[i], d[i + 1]])) / 100.0;
            let dbm = |b: u8| i32::from(b) - RSSI_OFFSET;
            Event::Channel(ChannelStats {
                airtime_short: pct(0),
                airtime_long: pct(2),
                load_short: pct(4),
                load_long: pct(6),
                rssi_dbm: dbm(d[8]),
                noise_floor_dbm: dbm(d[9]),
                interference_dbm: (d[10] != 0xFF).then(|| dbm(d[10])),
            })
        }
        (cmd::STAT_PHYPRM, 12) => Event::Preamble(u16::from_be_bytes([d[4], d[5]])),
        (cmd::STAT_RX..=cmd::STAT_LAST, _)
        | (
            cmd::DETECT
            | cmd::ST_ALOCK
            | cmd::LT_ALOCK
            | cmd::FW_VERSION
            | cmd::PLATFORM
            | cmd::MCU
            | cmd::RESET,
            _,
        ) => Event::Stat(c),
        (
            cmd::FREQUENCY
            | cmd::BANDWIDTH
            | cmd::TXPOWER
            | cmd::SF
            | cmd::CR
            | cmd::RADIO_STATE
            | cmd::READY
            | cmd::ERROR,
            _,
        ) => Event::Bad("a command answer of the wrong length"),
        _ => Event::Bad("a command an RNode does not send"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_configuration_bytes_are_reticulums() {
        // 868.1 MHz = 0x33BE_27A0, 125 kHz = 0x0001_E848.
        let b = configure(868_100_000, 125_000, 14, 9, 5);
        assert_eq!(
            b,
            [
                0xC0, 0x01, 0x33, 0xBE, 0x27, 0xA0, 0xC0, // frequency
                0xC0, 0x02, 0x00, 0x01, 0xE8, 0x48, 0xC0, // bandwidth
                0xC0, 0x03, 14, 0xC0, // TX power
                0xC0, 0x04, 9, 0xC0, // SF
                0xC0, 0x05, 5, 0xC0, // CR
                0xC0, 0x06, 0x01, 0xC0, // radio on
            ]
        );
        // A value byte equal to FEND is escaped.
        let mut out = Vec::new();
        command(cmd::FREQUENCY, &0x00C0_0000u32.to_be_bytes(), &mut out);
        assert_eq!(out, [0xC0, 0x01, 0x00, 0xDB, 0xDC, 0x00, 0x00, 0xC0]);
    }

    #[test]
    fn answers_and_statistics_are_read() {
        let mut r = Reader::default();
        let mut bytes = vec![0xC0, 0x01, 0x33, 0xBE, 0x27, 0xA0, 0xC0];
        bytes.extend([0xC0, 0x0F, 0x01, 0xC0, 0xC0, 0x90, 0x04, 0xC0]);
        // 0.52% / 0.10% air time, 3.00% / 1.50% load, -100 dBm, -120 dBm, none.
        bytes.extend([0xC0, 0x25, 0, 52, 0, 10, 1, 44, 0, 150, 57, 37, 0xFF, 0xC0]);
        bytes.extend([0xC0, 0x00, b'h', b'i', 0xC0, 0xC0, 0x77, 1, 0xC0]);
        let ev = r.push(&bytes);
        assert_eq!(ev[0], Event::Setting(cmd::FREQUENCY, 868_100_000));
        assert_eq!(ev[1], Event::Ready(true));
        assert_eq!(ev[2], Event::Error(error::QUEUE_FULL));
        assert_eq!(
            ev[3],
            Event::Channel(ChannelStats {
                airtime_short: 0.52,
                airtime_long: 0.10,
                load_short: 3.0,
                load_long: 1.5,
                rssi_dbm: -100,
                noise_floor_dbm: -120,
                interference_dbm: None,
            })
        );
        assert_eq!(ev[4], Event::Data(b"hi".to_vec()));
        assert!(matches!(ev[5], Event::Bad(_)));
        assert_eq!(
            parse(cmd::SF, &[9, 9]),
            Event::Bad("a command answer of the wrong length")
        );
    }

    #[test]
    fn frames_past_254_bytes_take_two_packets() {
        assert_eq!(packets(10), [Some(11), None]);
        assert_eq!(packets(254), [Some(255), None]);
        assert_eq!(packets(255), [Some(255), Some(2)]);
        assert_eq!(packets(508), [Some(255), Some(255)]);
    }
}
