//! Helpers shared by the integration tests.
#![allow(dead_code)]

use bytes::Bytes;
use skywave_sim::{LinkEvent, LinkModel, SimTime};

/// A delivery observed while driving a model by hand.
#[derive(Debug, Clone)]
pub struct Seen {
    pub time: SimTime,
    pub port: usize,
    pub frame: Bytes,
}

/// Drives `model` through every event up to `until`, collecting deliveries.
pub fn drain(model: &mut dyn LinkModel, until: SimTime) -> Vec<Seen> {
    let mut out = Vec::new();
    collect(model, SimTime::ZERO, &mut out);
    while let Some(t) = model.poll_timeout() {
        if t > until {
            break;
        }
        model.handle_timeout(t);
        collect(model, t, &mut out);
    }
    out
}

pub fn collect(model: &mut dyn LinkModel, t: SimTime, out: &mut Vec<Seen>) {
    while let Some(ev) = model.poll_event() {
        if let LinkEvent::Deliver { port, frame } = ev {
            out.push(Seen {
                time: t,
                port,
                frame,
            });
        }
    }
}

pub fn frame(len: usize, tag: u8) -> Bytes {
    Bytes::from(vec![tag; len])
}

pub fn secs(s: f64) -> SimTime {
    SimTime::from_nanos((s * 1e9).round() as u64)
}
