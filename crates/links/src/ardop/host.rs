//! ardopcf's host protocol, without I/O: command-port lines in and out, data-port
//! messages in and out, and what the modem has said about itself.
//!
//! Command port: CR-terminated ASCII lines both ways. Data port: host to modem, a
//! 2-byte big-endian length and the bytes; modem to host, a 2-byte big-endian length
//! (counting the tag), a 3-byte tag (`ARQ`, `FEC`, `IDF`, `ERR`) and the bytes.

/// Longest command-port line taken (ardopcf's own are under 300 bytes): a longer run
/// without a CR is garbage.
pub const MAX_LINE: usize = 1024;

/// Largest message written to the data port: ardopcf reads into an 8192-byte buffer.
pub const MAX_DATA_WRITE: usize = 8000;

/// What one command-port line from ardopcf said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// `BUFFER n`: bytes waiting in its transmit buffer.
    Buffer(usize),
    /// `BUSY TRUE|FALSE`: the busy detector's view of the channel.
    Busy(bool),
    /// `NEWSTATE s`: the protocol state changed.
    State(String),
    /// `STATE s`: the answer to a `STATE` query. ardopcf handles commands in order, so
    /// every command sent before the query has been handled.
    StateAnswer(String),
    /// `CONNECTED call bw`: an ARQ session is up.
    Connected { call: String, bandwidth: u32 },
    /// `DISCONNECTED`: the ARQ session ended.
    Disconnected,
    /// A call that failed (`STATUS CONNECT TO x FAILED!`, `STATUS END ARQ CALL`,
    /// `REJECTEDBW`, `REJECTEDBUSY`, a connect-request timeout).
    CallFailed(String),
    /// `FAULT text`: a command it refused.
    Fault(String),
    /// `PTT TRUE|FALSE`: it keys or unkeys the transmitter.
    Ptt(bool),
    /// `STATUS BREAK received from Protocol State ISS`: the far station took the turn
    /// while we sent, and ardopcf discarded all it held for us, unsent (the `BUFFER 0`
    /// it sends just before says how much that was). Its source leaves restoring those
    /// bytes to the host (`SaveQueueOnBreak`).
    BrokenIn,
    /// Any other well-formed message (an echo of a command, `PENDING`, other `STATUS`).
    Other(String),
    /// Not a message ardopcf sends: counted as garbage.
    Garbage(usize),
}

/// Splits the command port's bytes into lines.
#[derive(Debug, Default)]
pub struct LineReader {
    buf: Vec<u8>,
    /// Bytes of a line too long to be one, being skipped up to the next CR.
    skipping: bool,
}

impl LineReader {
    pub fn push(&mut self, data: &[u8]) -> Vec<Notice> {
        let mut out = Vec::new();
        for &b in data {
            if b == b'\r' || b == b'\n' {
                if self.skipping {
                    self.skipping = false;
                    self.buf.clear();
                    continue;
                }
                if !self.buf.is_empty() {
                    out.push(parse_line(&self.buf));
                    self.buf.clear();
                }
                continue;
            }
            if self.skipping {
                continue;
            }
            if self.buf.len() >= MAX_LINE {
                out.push(Notice::Garbage(self.buf.len()));
                self.buf.clear();
                self.skipping = true;
                continue;
            }
            self.buf.push(b);
        }
        out
    }
}

fn flag(s: &str) -> Option<bool> {
    match s {
        "TRUE" => Some(true),
        "FALSE" => Some(false),
        _ => None,
    }
}

/// What one line said (see [`Notice`]).
pub fn parse_line(line: &[u8]) -> Notice {
    let garbage = Notice::Garbage(line.len() + 1);
    let Ok(text) = std::str::from_utf8(line) else {
        return garbage;
    };
    let text = text.trim();
    if text.is_empty()
        || !text
            .bytes()
            .all(|b| b.is_ascii_graphic() || b == b' ' || b == b'\t')
    {
        return garbage;
    }
    let (word, rest) = text.split_once(' ').unwrap_or((text, ""));
    let rest = rest.trim();
    // Messages start with an upper-case word (ardopcf's own replies and notices).
    if !word
        .bytes()
        .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_' || b == b':')
        || !word.bytes().next().is_some_and(|b| b.is_ascii_uppercase())
    {
        return garbage;
    }
    match word {
        "BUFFER" => match rest.parse::<usize>() {
            Ok(n) => Notice::Buffer(n),
            Err(_) => garbage,
        },
        "BUSY" => flag(rest).map_or(garbage, Notice::Busy),
        "PTT" => flag(rest).map_or(garbage, Notice::Ptt),
        "NEWSTATE" if !rest.is_empty() => Notice::State(rest.to_string()),
        "STATE" if !rest.is_empty() => Notice::StateAnswer(rest.to_string()),
        "CONNECTED" => {
            let mut it = rest.split_whitespace();
            match (it.next(), it.next().map(str::parse::<u32>)) {
                (Some(call), Some(Ok(bw))) => Notice::Connected {
                    call: call.to_string(),
                    bandwidth: bw,
                },
                (Some(call), None) => Notice::Connected {
                    call: call.to_string(),
                    bandwidth: 0,
                },
                _ => garbage,
            }
        }
        "DISCONNECTED" => Notice::Disconnected,
        "REJECTEDBW" | "REJECTEDBUSY" => Notice::CallFailed(text.to_string()),
        "FAULT" => Notice::Fault(rest.to_string()),
        "STATUS" | "STATUS:" => {
            let up = rest.to_ascii_uppercase();
            if (up.starts_with("CONNECT TO") && up.contains("FAILED"))
                || up.starts_with("END ARQ CALL")
                || up.contains("CONNECT REQUEST TIMEOUT")
                || up.contains("REJECTED")
            {
                Notice::CallFailed(text.to_string())
            } else if up.starts_with("BREAK RECEIVED FROM PROTOCOL STATE ISS") {
                Notice::BrokenIn
            } else {
                Notice::Other(text.to_string())
            }
        }
        _ => Notice::Other(text.to_string()),
    }
}

/// What one data-port message from ardopcf carried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Data {
    /// Bytes of an ARQ session.
    Arq(Vec<u8>),
    /// Bytes of a received FEC frame.
    Fec(Vec<u8>),
    /// A received ID frame (another station identifying).
    Id(Vec<u8>),
    /// A frame received with errors.
    Err(Vec<u8>),
    /// A message with an unknown tag, or too short to have one: counted as garbage.
    Garbage(usize),
}

/// Splits the data port's bytes into messages.
#[derive(Debug, Default)]
pub struct DataReader {
    buf: Vec<u8>,
}

impl DataReader {
    pub fn push(&mut self, data: &[u8]) -> Vec<Data> {
        self.buf.extend_from_slice(data);
        let mut out = Vec::new();
        let mut at = 0;
        while self.buf.len() - at >= 2 {
            let len = usize::from(u16::from_be_bytes([self.buf[at], self.buf[at + 1]]));
            if self.buf.len() - at - 2 < len {
                break;
            }
            let m = &self.buf[at + 2..at + 2 + len];
            at += 2 + len;
            if len < 3 {
                out.push(Data::Garbage(len + 2));
                continue;
            }
            let body = m[3..].to_vec();
            out.push(match &m[..3] {
                b"ARQ" => Data::Arq(body),
                b"FEC" => Data::Fec(body),
                b"IDF" => Data::Id(body),
                b"ERR" => Data::Err(body),
                _ => Data::Garbage(len + 2),
            });
        }
        self.buf.drain(..at);
        out
    }

    /// Forgets a partial message (the connection broke).
    pub fn reset(&mut self) {
        self.buf.clear();
    }
}

/// One data-port message from the host: the length, then the bytes.
pub fn encode_data(payload: &[u8], out: &mut Vec<u8>) {
    debug_assert!(payload.len() <= MAX_DATA_WRITE);
    out.extend_from_slice(&(payload.len() as u16).to_be_bytes());
    out.extend_from_slice(payload);
}

/// The modem's side of [`encode_data`]: takes the first whole message off `pending` and
/// returns its bytes, or `None` while it is incomplete.
pub fn take_data(pending: &mut Vec<u8>) -> Option<Vec<u8>> {
    let len = usize::from(u16::from_be_bytes([*pending.first()?, *pending.get(1)?]));
    (pending.len() >= 2 + len).then(|| pending.drain(..2 + len).skip(2).collect())
}

/// One command line to ardopcf.
pub fn command(cmd: &str, out: &mut Vec<u8>) {
    out.extend_from_slice(cmd.as_bytes());
    out.push(b'\r');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_read_as_ardopcf_sends_them() {
        let mut r = LineReader::default();
        let got = r.push(
            b"BUFFER 1234\rBUSY TRUE\rNEWSTATE ISS\rSTATE IRS\rCONNECTED N0CALL-2 2000\rPTT TRUE\rSTATUS CONNECT TO N0CALL-2 FAILED!\rDISCONNECTED\rFAULT Syntax Err: ARQCALL x\rMYCALL now N0CALL-1\rBUF",
        );
        assert_eq!(
            got,
            [
                Notice::Buffer(1234),
                Notice::Busy(true),
                Notice::State("ISS".into()),
                Notice::StateAnswer("IRS".into()),
                Notice::Connected {
                    call: "N0CALL-2".into(),
                    bandwidth: 2000
                },
                Notice::Ptt(true),
                Notice::CallFailed("STATUS CONNECT TO N0CALL-2 FAILED!".into()),
                Notice::Disconnected,
                Notice::Fault("Syntax Err: ARQCALL x".into()),
                Notice::Other("MYCALL now N0CALL-1".into()),
            ]
        );
        // The rest of a line split across reads.
        assert_eq!(r.push(b"FER 0\r"), [Notice::Buffer(0)]);
    }

    #[test]
    fn garbage_lines_are_counted_not_taken() {
        let mut r = LineReader::default();
        let got = r.push(b"\x00\xff\x13\rbuffer x\rBUFFER -3\rBUSY MAYBE\r");
        assert!(
            got.iter().all(|n| matches!(n, Notice::Garbage(_))),
            "{got:?}"
        );
        assert_eq!(got.len(), 4);
        // A line with no end: skipped up to the next CR, once counted.
        let long = vec![b'A'; MAX_LINE + 100];
        let got = r.push(&long);
        assert_eq!(got, [Notice::Garbage(MAX_LINE)]);
        assert_eq!(r.push(b"\rBUFFER 7\r"), [Notice::Buffer(7)]);
    }

    #[test]
    fn data_messages_are_split_by_tag() {
        let mut r = DataReader::default();
        let mut wire = Vec::new();
        for (tag, body) in [
            (&b"ARQ"[..], &b"hello"[..]),
            (b"FEC", b"broadcast"),
            (b"IDF", b"ID:N0CALL"),
            (b"ERR", b"x"),
            (b"XYZ", b"?"),
        ] {
            wire.extend_from_slice(&((body.len() + 3) as u16).to_be_bytes());
            wire.extend_from_slice(tag);
            wire.extend_from_slice(body);
        }
        wire.extend_from_slice(&[0, 1, b'A']);
        // Byte by byte: nothing depends on how reads split the stream.
        let mut got = Vec::new();
        for b in &wire {
            got.extend(r.push(std::slice::from_ref(b)));
        }
        assert_eq!(
            got,
            [
                Data::Arq(b"hello".to_vec()),
                Data::Fec(b"broadcast".to_vec()),
                Data::Id(b"ID:N0CALL".to_vec()),
                Data::Err(b"x".to_vec()),
                Data::Garbage(6),
                Data::Garbage(3),
            ]
        );
        let mut out = Vec::new();
        encode_data(b"abc", &mut out);
        assert_eq!(out, b"\x00\x03abc");
    }
}
