//! AX.25 (v2.2) UI frames, as far as a `kiss` link uses them: skywave frames travel in
//! the information field of unnumbered-information frames from the station's callsign
//! to a fixed destination, with a protocol id that APRS software leaves alone.
//!
//! A frame as it crosses KISS (the TNC adds flags and the FCS):
//!
//! ```text
//! dest (7) | source (7) | [digipeaters, 7 each, up to 8] | control 0x03 | PID | info
//! ```
//!
//! Each address is six characters (upper-case letters and digits, space-padded), each
//! shifted left one bit, then the SSID byte `C R R S S S S E`: `C` the command/response
//! bit (set in the destination of a command, as a UI frame is), `R R` reserved (1 1),
//! `S` the SSID (0-15), `E` set on the last address. What this does not do: connected
//! mode (I/S frames), digipeating, or the FCS.

use std::fmt;

/// Unnumbered information, poll/final bit clear.
pub const CONTROL_UI: u8 = 0x03;
/// Destination, source, control and PID: the bytes every frame pays.
pub const HEADER: usize = 16;
/// The protocol id skywave sends by default. Dire Wolf treats UI frames with PID 0xF0
/// ("no layer 3") as APRS and silently discards them beyond 100 queued; 0xCF
/// (NET/ROM's) is carried as it is.
pub const DEFAULT_PID: u8 = 0xCF;
/// "No layer 3": APRS.
pub const PID_NO_LAYER3: u8 = 0xF0;
/// Most digipeaters an AX.25 path holds.
pub const MAX_DIGIS: usize = 8;

/// A station address: callsign and SSID.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Callsign {
    call: [u8; 6],
    ssid: u8,
}

impl Callsign {
    /// `N0CALL`, `N0CALL-7`: one to six letters and digits (lower case is raised), and
    /// an SSID of 0-15.
    pub fn parse(s: &str) -> Result<Callsign, String> {
        let bad =
            |why: &str| format!("'{s}' is not a callsign: {why} (e.g. \"N0CALL\" or \"N0CALL-7\")");
        let (call, ssid) = match s.split_once('-') {
            Some((c, n)) => {
                let ssid: u8 = n
                    .parse()
                    .ok()
                    .filter(|&v| v <= 15)
                    .ok_or_else(|| bad("the SSID after '-' must be 0 to 15"))?;
                (c, ssid)
            }
            None => (s, 0),
        };
        if call.is_empty() || call.len() > 6 {
            return Err(bad("one to six characters before the SSID"));
        }
        if !call.chars().all(|c| c.is_ascii_alphanumeric()) {
            return Err(bad("letters and digits only"));
        }
        let mut out = [b' '; 6];
        for (o, c) in out.iter_mut().zip(call.bytes()) {
            *o = c.to_ascii_uppercase();
        }
        Ok(Callsign { call: out, ssid })
    }

    pub fn ssid(&self) -> u8 {
        self.ssid
    }

    fn encode(&self, command: bool, last: bool, out: &mut Vec<u8>) {
        out.extend(self.call.iter().map(|c| c << 1));
        out.push(u8::from(command) << 7 | 0x60 | self.ssid << 1 | u8::from(last));
    }

    /// An address field; `None` if it is not a valid callsign. Returns the extension
    /// bit (the last address).
    fn decode(b: &[u8]) -> Option<(Callsign, bool)> {
        let b: &[u8; 7] = b.try_into().ok()?;
        let mut call = [b' '; 6];
        let mut ended = false;
        for (o, &x) in call.iter_mut().zip(&b[..6]) {
            if x & 1 != 0 {
                return None;
            }
            let c = x >> 1;
            if c == b' ' {
                ended = true;
            } else if ended || !(c.is_ascii_uppercase() || c.is_ascii_digit()) {
                // A character after the padding, or not a callsign character.
                return None;
            }
            *o = c;
        }
        if call[0] == b' ' {
            return None;
        }
        Some((
            Callsign {
                call,
                ssid: (b[6] >> 1) & 0x0F,
            },
            b[6] & 1 == 1,
        ))
    }
}

impl fmt::Display for Callsign {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let call = std::str::from_utf8(&self.call).unwrap_or("?").trim_end();
        if self.ssid == 0 {
            write!(f, "{call}")
        } else {
            write!(f, "{call}-{}", self.ssid)
        }
    }
}

/// Appends the UI frame `source` > `dest` with `pid` and `info` to `out`.
pub fn encode_ui(dest: &Callsign, source: &Callsign, pid: u8, info: &[u8], out: &mut Vec<u8>) {
    out.reserve(HEADER + info.len());
    dest.encode(true, false, out);
    source.encode(false, true, out);
    out.push(CONTROL_UI);
    out.push(pid);
    out.extend_from_slice(info);
}

/// A UI frame received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ui<'a> {
    pub dest: Callsign,
    pub source: Callsign,
    pub pid: u8,
    pub info: &'a [u8],
}

/// Why a received frame is not a UI frame we can read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ax25Error {
    /// Shorter than two addresses, control and PID.
    TooShort,
    /// An address that is not a callsign, or more than eight digipeaters.
    BadAddress,
    /// Another kind of frame (connected mode, a supervisory frame...).
    NotUi,
}

impl Ax25Error {
    pub fn as_str(self) -> &'static str {
        match self {
            Ax25Error::TooShort => "too short for AX.25",
            Ax25Error::BadAddress => "invalid AX.25 address",
            Ax25Error::NotUi => "not an AX.25 UI frame",
        }
    }
}

/// Reads a frame as a UI frame, checking every length and address.
pub fn parse_ui(frame: &[u8]) -> Result<Ui<'_>, Ax25Error> {
    if frame.len() < HEADER {
        return Err(Ax25Error::TooShort);
    }
    let (dest, last) = Callsign::decode(&frame[..7]).ok_or(Ax25Error::BadAddress)?;
    if last {
        return Err(Ax25Error::BadAddress);
    }
    let (source, mut last) = Callsign::decode(&frame[7..14]).ok_or(Ax25Error::BadAddress)?;
    let mut at = 14;
    let mut digis = 0;
    while !last {
        digis += 1;
        if digis > MAX_DIGIS || frame.len() < at + 7 + 2 {
            return Err(Ax25Error::BadAddress);
        }
        let (_, l) = Callsign::decode(&frame[at..at + 7]).ok_or(Ax25Error::BadAddress)?;
        last = l;
        at += 7;
    }
    if frame.len() < at + 2 {
        return Err(Ax25Error::TooShort);
    }
    // The poll/final bit (0x10) may be either.
    if frame[at] & !0x10 != CONTROL_UI {
        return Err(Ax25Error::NotUi);
    }
    Ok(Ui {
        dest,
        source,
        pid: frame[at + 1],
        info: &frame[at + 2..],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn callsigns_parse_and_are_refused_with_the_reason() {
        let c = Callsign::parse("n0call-7").unwrap();
        assert_eq!(c.to_string(), "N0CALL-7");
        assert_eq!(Callsign::parse("SKYWAV").unwrap().to_string(), "SKYWAV");
        for bad in [
            "",
            "TOOLONG1",
            "N0-CALL",
            "N0CALL-16",
            "N0CALL-x",
            "N0 CAL",
            "N0CALL-",
        ] {
            let e = Callsign::parse(bad).unwrap_err();
            assert!(e.contains("not a callsign"), "{bad}: {e}");
        }
    }

    /// The fixed bytes of one frame, as Dire Wolf's `kissutil` would show them.
    #[test]
    fn a_ui_frame_has_the_standard_bytes() {
        let mut out = Vec::new();
        let dest = Callsign::parse("SKYWAV").unwrap();
        let src = Callsign::parse("N0CALL-1").unwrap();
        encode_ui(&dest, &src, DEFAULT_PID, b"hi", &mut out);
        assert_eq!(
            out,
            [
                b'S' << 1,
                b'K' << 1,
                b'Y' << 1,
                b'W' << 1,
                b'A' << 1,
                b'V' << 1,
                0xE0, // command bit, reserved bits, SSID 0
                b'N' << 1,
                b'0' << 1,
                b'C' << 1,
                b'A' << 1,
                b'L' << 1,
                b'L' << 1,
                0x63, // reserved bits, SSID 1, last address
                0x03,
                0xCF,
                b'h',
                b'i',
            ]
        );
        let ui = parse_ui(&out).unwrap();
        assert_eq!(
            (ui.dest, ui.source, ui.pid, ui.info),
            (dest, src, 0xCF, &b"hi"[..])
        );
    }

    #[test]
    fn digipeated_frames_are_read_and_bad_ones_refused() {
        let dest = Callsign::parse("SKYWAV").unwrap();
        let src = Callsign::parse("N0CALL").unwrap();
        let digi = Callsign::parse("WIDE1-1").unwrap();
        let mut f = Vec::new();
        dest.encode(true, false, &mut f);
        src.encode(false, false, &mut f);
        digi.encode(false, true, &mut f);
        f.extend_from_slice(&[0x03, 0xCF, 1, 2, 3]);
        let ui = parse_ui(&f).unwrap();
        assert_eq!((ui.source, ui.info), (src, &[1u8, 2, 3][..]));

        assert_eq!(parse_ui(&f[..10]), Err(Ax25Error::TooShort));
        // A digipeater list that never ends.
        let mut endless = Vec::new();
        dest.encode(true, false, &mut endless);
        for _ in 0..12 {
            src.encode(false, false, &mut endless);
        }
        endless.extend_from_slice(&[0x03, 0xCF]);
        assert_eq!(parse_ui(&endless), Err(Ax25Error::BadAddress));
        // Lower-case or shifted-out characters are not an address.
        let mut bad = f.clone();
        bad[0] = b's' << 1;
        assert_eq!(parse_ui(&bad), Err(Ax25Error::BadAddress));
        bad[0] = 0x01;
        assert_eq!(parse_ui(&bad), Err(Ax25Error::BadAddress));
        // An I-frame (control 0x00).
        let mut i = f.clone();
        i[21] = 0x00;
        assert_eq!(parse_ui(&i), Err(Ax25Error::NotUi));
    }

    #[test]
    fn any_bytes_parse_without_panicking() {
        let mut x = 0x1234_5678u32;
        for len in 0..200 {
            let f: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    x as u8
                })
                .collect();
            let _ = parse_ui(&f);
        }
    }
}
