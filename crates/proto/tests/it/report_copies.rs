//! Shared channels: a receiver's report that it holds a bundle whole rides a second time
//! in a later frame unless the channel has shown itself clean: no loss expected by the
//! driver, and none found in data the receiver sent that peer. A hint of 0 may only mean
//! the driver does not know, so a receiver that sends nothing keeps its copies.
//!
//! Reports go by the number the sender gave its offer (`OFFER`, `DONE`), or, to a peer
//! that does not number its offers, as one `HAVE_ALL` each.

use std::collections::HashMap;
use std::time::Duration;

use crate::common::{RadioPair, hide_numbered_offers, shared_radio};
use skywave_proto::LinkParams;
use skywave_proto::fuzzing::Profile;
use skywave_proto::wire::{self, Message};

/// What B, the receiver, said of A's 30 bundles.
#[derive(Debug)]
struct Said {
    /// Reports naming one of A's bundles, in all (`HAVE_ALL`s, or a `DONE`'s numbers
    /// counted once per `DONE` that names them).
    reports: usize,
    /// `DONE` messages.
    dones: usize,
    /// Bytes of `HAVE_ALL` and `DONE` messages.
    bytes: usize,
    /// A sent numbered offers.
    offers_numbered: bool,
    /// Frames B sent.
    frames: usize,
}

/// A holds 30 bundles of 200 B, and B `b_holds` of its own, on a channel that loses
/// nothing but whose driver expects `loss_hint`. `numbered`: B's HELLOs say it takes
/// numbered offers (else A takes it for a node that does not).
fn reports(loss_hint: f64, b_holds: u64, numbered: bool) -> Said {
    reports_on(shared_radio(223, loss_hint), b_holds, numbered)
}

/// [`reports`] on a link of `params`.
fn reports_on(params: LinkParams, b_holds: u64, numbered: bool) -> Said {
    let loss_hint = params.loss_hint;
    let mut pair = RadioPair::new(params, (11, 22));
    let mut ids: Vec<_> = (0..30).map(|k| pair.insert(0, 700 + k, 200)).collect();
    ids.extend((0..b_holds).map(|k| pair.insert(1, 900 + k, 200)));
    let ours: Vec<[u8; 8]> = ids[..30]
        .iter()
        .map(|id| id.as_bytes()[..8].try_into().expect("8 bytes"))
        .collect();
    let mut said: HashMap<[u8; 8], usize> = HashMap::new();
    let mut seq_of: HashMap<u64, [u8; 8]> = HashMap::new();
    let mut s = Said {
        reports: 0,
        dones: 0,
        bytes: 0,
        offers_numbered: false,
        frames: 0,
    };
    pair.run(Duration::from_secs(120), |side, _, f| {
        if side == 1 && !numbered {
            hide_numbered_offers(f);
        }
        let (_, msgs) = wire::parse(f).expect("well formed");
        s.frames += side;
        for (m, (_, size)) in msgs.iter().zip(wire::message_sizes(f)) {
            match m {
                Message::Manifest {
                    seq: Some(n),
                    bytes,
                } if side == 0 => {
                    s.offers_numbered = true;
                    seq_of.insert(*n, bytes[1..9].try_into().expect("8 bytes"));
                }
                Message::HaveAll { r } if side == 1 && ours.contains(&r.prefix) => {
                    *said.entry(r.prefix).or_default() += 1;
                    s.bytes += size;
                }
                Message::Done { seqs, .. } if side == 1 => {
                    s.dones += 1;
                    s.bytes += size;
                    for (a, b) in seqs.iter() {
                        for n in a..b {
                            let p = seq_of.get(&n).expect("a number A gave");
                            *said.entry(*p).or_default() += 1;
                        }
                    }
                }
                _ => {}
            }
        }
        true
    });
    for (i, id) in ids.iter().enumerate() {
        let at = usize::from(i < 30);
        assert!(
            pair.stores[at].held.contains_key(id),
            "hint {loss_hint}, B holds {b_holds}: sync did not finish"
        );
    }
    assert_eq!(said.len(), 30, "hint {loss_hint}, B holds {b_holds}");
    s.reports = said.values().sum();
    s
}

#[test]
fn reports_are_copied_until_the_channel_shows_itself_clean() {
    // To a node that does not number its offers, one HAVE_ALL per bundle and copy.
    // Both send: once B's own data has gone through clean (4 KiB, two thirds of it),
    // its copies stop.
    let clean = reports(0.0, 30, false);
    assert!(!clean.offers_numbered && clean.dones == 0, "{clean:?}");
    assert!(
        clean.reports < 60,
        "copies kept on a clean channel: {clean:?}"
    );
    // B sends nothing: nothing tells it the channel is clean, so every copy rides.
    let mute = reports(0.0, 0, false);
    assert_eq!(
        mute.reports, 60,
        "a receiver that sends nothing keeps its copies"
    );
    // The driver expects loss: every copy rides.
    let lossy = reports(0.1, 30, false);
    assert_eq!(lossy.reports, 60);

    // By number: the same rule, each copy a DONE that names again what the last one
    // did, at a fraction of the bytes.
    let n_clean = reports(0.0, 30, true);
    let n_lossy = reports(0.1, 30, true);
    assert!(n_clean.offers_numbered && n_lossy.offers_numbered);
    assert!(
        n_clean.dones < n_lossy.dones,
        "copies kept on a clean channel: {n_clean:?}, {n_lossy:?}"
    );
    assert!(
        n_lossy.bytes * 2 < lossy.bytes,
        "reports by number cost {n_lossy:?}, one by one {lossy:?}"
    );
    // Every DONE a copy rode in named each report at least twice.
    assert!(n_lossy.reports >= 60, "{n_lossy:?}");
}

#[test]
fn half_duplex_reports_are_copied_where_the_link_loses_frames() {
    // A point-to-point half-duplex modem: a lost report (the first frame of the peer's
    // over) left the sender to send again all it covered once its timers ran out. The
    // copy goes in the over's next frame, by the same rule as on a shared channel.
    let modem = |loss_hint: f64| LinkParams {
        loss_hint,
        ..Profile::pick(3).params
    };
    assert!(modem(0.0).half_duplex && !modem(0.0).shared);
    let lossy = reports_on(modem(0.05), 30, true);
    assert!(lossy.offers_numbered, "{lossy:?}");
    assert!(
        lossy.reports >= 60,
        "each bundle reported twice where the link loses frames: {lossy:?}"
    );
    // The copy shares the over's frames: at most one frame more.
    let clean = reports_on(modem(0.0), 30, true);
    assert!(
        lossy.frames <= clean.frames + 1,
        "the copies cost frames: {lossy:?}, {clean:?}"
    );
    // B sends nothing else: its reports and their copies still go.
    let mute = reports_on(modem(0.05), 0, true);
    assert!(mute.reports >= 60, "{mute:?}");
}
