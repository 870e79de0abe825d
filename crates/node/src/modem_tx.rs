//! The transmit side of a byte-stream modem's driver, shared by the daemon's `serial`
//! and `hf-modem` drivers and the lab's modem ports: frames taken from the endpoint are
//! framed, held on the host, and written into the modem as its [`Pacer`] allows.
//!
//! On a half-duplex modem that keeps the turn while it has data, the two drivers also
//! pass the turn to each other explicitly. Without that, a side learns that the turn
//! came to it only once the other side's stream has been silent for a while, a latency
//! after the turn changed: a modem whose buffer drains faster than that (256 B at
//! 1475 bit/s and 4 s of latency) runs dry first, the turn goes back, and each over
//! carries one buffer. So when the endpoint has nothing more to send, the driver writes
//! an over-end announcement ([`OverEnd`]) saying how many stream bytes follow it, writes
//! exactly those, and then nothing until the other side announces the end of its own
//! over. The side that hears an announcement knows when its modem takes the turn, and
//! that it keeps it whenever it has data (the other side is silent), so it feeds its
//! modem at the modem's rate however small the buffer ([`Pacer::over_end`]). While it
//! holds the turn it takes frames ahead of the modem (half of what it lets the modem
//! hold, or what the modem sends in a latency where the buffer takes that), and its
//! announcement goes in front of those: it and they are written in one piece, so
//! nothing can come between them, and the other side learns of the end that much
//! earlier; a latency earlier, its modem is loaded when the turn comes, and a change of
//! turn costs only the turnaround. An over ends within [`Pacer::hold_max`]. A side with nothing to send
//! passes the turn straight back, saying so; when both sides have said so, the turn is no
//! one's until either has something to send, so an idle link is silent.
//!
//! Until an announcement is heard (the start of a call, or after one was lost and the
//! wait for an answer ran out), either side writes when it likes, the estimate alone
//! rules, and each over ends with an announcement.
//!
//! The announcement is drawn up when it is written into the modem, not when the over's
//! end is decided: until then (it waits on the host for room) up to
//! [`CLOSING_STRETCH_FRAMES`] more frames the endpoint gives still join the over, in
//! order, the announcement moved behind them. A message written as the over closes then
//! leaves in it, instead of waiting out the other side's whole over (the endpoint gives
//! only urgent data and reports once its over is full).

use std::collections::VecDeque;

use crate::adapter::ModemPacing;
use crate::framing::{self, OverEnd};
use crate::pacer::{Pacer, PacerTime};

/// Largest frames that may still join an over whose announcement waits on the host.
pub const CLOSING_STRETCH_FRAMES: usize = 4;

/// A framed announcement's length (a fixed 8-byte frame, see [`OverEnd::encode`]).
const ANNOUNCEMENT_LEN: usize = 8 + framing::overhead(8);

/// An over's end decided, its announcement not yet written (a placeholder marks its
/// place in the queue).
#[derive(Debug, Clone, Copy)]
struct Closing {
    /// The over carried nothing.
    idle: bool,
    /// Stream bytes taken in front of it since.
    ahead: usize,
}

/// See the module docs.
#[derive(Debug)]
pub struct ModemTx<T: PacerTime> {
    pub pacer: Pacer<T>,
    mtu: usize,
    /// Framed frames taken from the endpoint, not yet written into the modem (and
    /// whether each is an over-end announcement).
    queue: VecDeque<(Vec<u8>, bool)>,
    /// Bytes waiting on the host (those of the front frame already written excluded).
    queued: usize,
    /// Bytes of the front frame already written into the modem: a frame larger than
    /// the modem's room goes in parts, as a byte stream allows.
    started: usize,
    /// A frame was cut short (the modem lost its tail): the next write starts with a
    /// delimiter, so that the receiver drops the broken frame alone.
    resync: bool,
    /// An announcement is written or queued: the bytes it counted are still being
    /// written.
    closing: bool,
    /// The announcement queued as a placeholder, drawn up when written.
    pending: Option<Closing>,
    /// The endpoint gave frames since our last announcement.
    took: bool,
    /// When the endpoint last gave a frame (or the turn came to us).
    active_at: Option<T>,
    /// The endpoint had nothing more while the other side's over was still arriving:
    /// the over ends once it has (unless the endpoint gives frames meanwhile).
    idle_pending: bool,
    /// Over ends announced, and announcements heard.
    pub announced: u64,
    pub heard: u64,
}

impl<T: PacerTime> ModemTx<T> {
    pub fn new(pacer: Pacer<T>, mtu: usize) -> ModemTx<T> {
        ModemTx {
            pacer,
            mtu,
            queue: VecDeque::new(),
            queued: 0,
            started: 0,
            resync: false,
            closing: false,
            pending: None,
            took: false,
            active_at: None,
            idle_pending: false,
            announced: 0,
            heard: 0,
        }
    }

    /// Brings the estimate up to `now`, and ends an over that has lasted its longest
    /// ([`Pacer::hold_max`]).
    pub fn advance(&mut self, now: T) {
        self.pacer.advance(now);
        if !self.closing
            && self.queue.is_empty()
            && let Some(m) = self
                .pacer
                .repeat_due(now)
                .or_else(|| self.pacer.reanswer_due())
        {
            // Our announcement or its answer was lost (see `Pacer::repeat_due`,
            // `Pacer::reanswer_due`).
            let mut out = Vec::new();
            m.encode(&mut out);
            self.queued += out.len();
            self.queue.push_back((out, true));
            self.closing = true;
            self.announced += 1;
        }
        if let Some(since) = self.pacer.held()
            && now >= since + self.pacer.hold_max()
        {
            self.end_over(false);
        }
        if self.idle_pending && !self.pacer.hearing(now) {
            self.idle_pending = false;
            if self.pacer.holding() {
                self.end_over(true);
            }
        }
        // A driver whose user never says it is idle (the daemon does, at once): a turn
        // passed to us goes back once nothing has come to send for a turnaround and the
        // modem has sent all it had.
        if self.pacer.holding() && !self.closing {
            let since = *self.active_at.get_or_insert(now);
            if self.queue.is_empty()
                && self.pacer.queued() == 0
                && !self.pacer.hearing(now)
                && now >= since + self.pacer.turnaround()
            {
                self.end_over(true);
            }
        } else {
            self.active_at = None;
        }
    }

    /// Frame bytes the endpoint may be asked for now (0: none; never a runt).
    pub fn frame_room(&self) -> usize {
        if !self.pacer.may_take() {
            return 0;
        }
        // Closing: only in front of an announcement not yet written, and a few frames.
        let stretch = match (self.closing, self.pending) {
            (false, _) => usize::MAX,
            (true, Some(c)) => (CLOSING_STRETCH_FRAMES * (self.mtu + framing::overhead(self.mtu)))
                .saturating_sub(c.ahead),
            (true, None) => return 0,
        };
        // Holding the turn, frames are taken a little ahead (they wait on the host): the
        // end of the over can then be announced that far ahead.
        let ahead = if self.pacer.holding() {
            (self.pacer.max_write() / 2).max(self.pacer.lead_in_one_write())
        } else {
            0
        };
        let room = (self.pacer.room() + ahead)
            .saturating_sub(self.queued)
            .min(stretch);
        let mtu = self.mtu;
        // While frames wait on the host, the modem is fed from them: wait for room for a
        // whole frame rather than take a small one (each pays a frame's header). When
        // nothing waits, room a frame may start in will do, and the frame is a whole
        // one even where the modem's buffer is smaller: what does not fit waits on the
        // host and is written as room opens (`take`). A frame sized to the room would pay
        // a frame's header (and split manifests) for every half buffer.
        let enough = if self.queue.is_empty() {
            ModemPacing::frame_room(room, mtu) > 0
        } else {
            room >= mtu + framing::overhead(mtu)
        };
        if !enough {
            return 0;
        }
        if self.pacer.announces()
            && self.pacer.announced_nothing()
            && !self.pacer.waits_for_turn()
            && !self.closing
            && !self.took
            && self.queue.is_empty()
        {
            // The call's first over (no agreement on the turn yet) ends with an
            // announcement right after its first frame (`take`): the frame leaves room
            // for it in the same window of the estimate, or the announcement waits for
            // the estimate to confirm drain (a latency and a turnaround). On a 256 B
            // modem the greeting left 10 B, the announcement needed 12 and went 18 s
            // later: the turn was agreed 16 s late. (A greeting fits its sketch to the
            // frame.) Only then: later overs without agreement (after a lost
            // announcement) keep whole frames, which cost fewer headers; sized to the
            // room they made lossy HF slower (9600 bit/s, 4 s, 256 B, 15%: 8.7 -> 10.9 x).
            // (And the delimiter the write may begin with.)
            let fitting = ModemPacing::frame_room(room.saturating_sub(ANNOUNCEMENT_LEN + 1), mtu);
            if fitting > 0 {
                return fitting.min(ModemPacing::frame_room(stretch, mtu));
            }
        }
        ModemPacing::frame_room(stretch, mtu)
    }

    /// Takes a frame from the endpoint (checked by the caller: not empty, within the
    /// MTU).
    pub fn offer(&mut self, frame: &[u8]) {
        let mut out = Vec::with_capacity(frame.len() + framing::overhead(frame.len()));
        framing::encode(frame, &mut out);
        self.queued += out.len();
        let placeholder = self
            .pending
            .is_some()
            .then(|| self.queue.iter().position(is_placeholder))
            .flatten();
        match (&mut self.pending, placeholder) {
            // Part of the over the announcement ends: frames keep their order (the
            // protocol numbers them), and the announcement moves back to stay in front
            // of the over's last frames.
            (Some(c), Some(i)) => {
                c.ahead += out.len();
                c.idle = false;
                let mark = self.queue.remove(i).expect("found");
                self.queue.push_back((out, false));
                let at = self.announcement_at();
                self.queue.insert(at, mark);
            }
            _ => {
                self.queue.push_back((out, false));
                self.took = true;
            }
        }
        self.idle_pending = false;
        self.active_at = None;
    }

    /// A deframed frame: `true` if it was the driver's own (an announcement, taken
    /// here), `false` if it is for the endpoint.
    pub fn control(&mut self, now: T, frame: &[u8]) -> bool {
        if !OverEnd::is_control(frame) {
            return false;
        }
        match OverEnd::parse(frame) {
            Some(m) => {
                self.heard += 1;
                self.pacer.over_end(now, m);
            }
            None => tracing::debug!(
                len = frame.len(),
                "modem: malformed over-end announcement dropped"
            ),
        }
        true
    }

    /// The endpoint has nothing more to send now: if the other side passed us the turn,
    /// our over ends after what is held and the other side is told so (once its own
    /// over has all arrived: what it says may give the endpoint more to send).
    pub fn idle(&mut self, now: T) {
        self.advance(now);
        if self.closing || !self.pacer.announces() {
            return;
        }
        if self.pacer.hearing(now) {
            self.idle_pending = true;
            return;
        }
        // Only a turn passed to us is passed back (saying whether this over carried
        // anything). With no agreement, an over that carried something ended with an
        // announcement already (see `take`), and one that carried nothing needs none:
        // an idle link stays silent.
        if self.pacer.holding() {
            self.end_over(true);
        }
    }

    fn end_over(&mut self, idle: bool) {
        if self.closing {
            return;
        }
        // The announcement goes in front of the last frames on the host
        // (`announcement_at`): it and they are written in one piece (see `take`), so
        // nothing can come between them, and the over ends exactly that many bytes after
        // the announcement leaves the air: the other side hears of the end before it
        // comes.
        let at = self.announcement_at();
        // Idle: this over carried nothing else (the endpoint had nothing at all, not
        // merely nothing more for this over). Drawn up when written (`take`).
        self.pending = Some(Closing {
            idle: idle && !self.took,
            ahead: 0,
        });
        self.took = false;
        self.queued += ANNOUNCEMENT_LEN;
        self.queue.insert(at, (Vec::new(), true));
        self.closing = true;
    }

    /// Where in the host's queue (of frames only) the announcement goes: in front of
    /// the last frames, as many as half of what the modem may hold, or, where one write
    /// takes them, what the modem sends while the announcement crosses the latency
    /// ([`Pacer::lead_in_one_write`]).
    fn announcement_at(&self) -> usize {
        let budget = (self.pacer.max_write() / 2).max(self.pacer.lead_in_one_write());
        let mut after = 0;
        let mut at = self.queue.len();
        // Never in front of a frame partly written.
        let first = usize::from(self.started > 0);
        while at > first && after + self.queue[at - 1].0.len() <= budget {
            at -= 1;
            after += self.queue[at].0.len();
        }
        at
    }

    /// Whether the framed frame `f` at the front goes in parts: begun already, or larger
    /// than the modem ever takes at once. (Others go whole, when there is room.)
    fn splits(&self, f: &[u8]) -> bool {
        self.started > 0 || f.len() > self.pacer.max_write()
    }

    /// Bytes of the frame in front already written into the modem (the rest goes as
    /// room opens).
    pub fn partly_written(&self) -> usize {
        self.started
    }

    /// Frames waiting on the host.
    pub fn queued_frames(&self) -> usize {
        self.queue.len()
    }

    /// Whether frames wait on the host for the modem.
    pub fn backlogged(&self) -> bool {
        !self.queue.is_empty()
    }

    /// Bytes to write into the modem now (whole frames, as far as its estimated room
    /// goes), or `None`.
    pub fn take(&mut self, now: T) -> Option<Vec<u8>> {
        self.advance(now);
        let mut out = Vec::new();
        while let Some(&(ref f, marker)) = self.queue.front() {
            // An announcement and the frames after it go in one write, or wait.
            let need = if marker {
                self.queued
            } else {
                f.len() - self.started
            };
            let placeholder = marker && f.is_empty();
            // A frame's bytes cost no more for going in several writes: the modem is
            // topped up with what it takes. An announcement and what follows it go in
            // one write, once there is room for a whole write.
            let splits = !marker && self.splits(f);
            let room = if splits {
                self.pacer.room_for_bytes()
            } else if placeholder && self.queue.len() == 1 {
                // An announcement alone: however little room, it is worth its write
                // (waiting, the turn is agreed that much later).
                self.pacer.room_any()
            } else {
                self.pacer.room()
            };
            if need > room && (!splits || room == 0) {
                break;
            }
            // A write that may start a new burst on the air (half duplex, the modem may
            // have run dry) begins with a delimiter: a chunk lost at the end of the last
            // burst took that frame's delimiter with it, and the receiver, still in the
            // broken frame, would take this burst's first frame (the reports, or a
            // repeated announcement) as the rest of it and drop both. So does the first
            // write after a frame was cut short. Never in the middle of a frame.
            let lead = usize::from(
                out.is_empty()
                    && self.started == 0
                    && (self.resync || (self.pacer.may_be_dry() && need != room)),
            );
            self.resync = false;
            if lead > 0 {
                out.push(0);
            }
            if need > room {
                // The frame goes in parts: what the modem takes now.
                let part = room.saturating_sub(lead).max(1);
                out.extend_from_slice(&f[self.started..self.started + part]);
                self.started += part;
                self.queued -= part;
                self.pacer.wrote(now, part + lead);
                break;
            }
            if placeholder {
                // Our over ends `after` stream bytes past the announcement, written now.
                let c = self.pending.take().unwrap_or(Closing {
                    idle: false,
                    ahead: 0,
                });
                let after = u16::try_from(need - ANNOUNCEMENT_LEN).unwrap_or(0);
                let m = self.pacer.announce(now, after, c.idle);
                let a = &mut self.queue[0].0;
                m.encode(a);
                debug_assert_eq!(a.len(), ANNOUNCEMENT_LEN);
                self.announced += 1;
            }
            let n = if marker { self.queue.len() } else { 1 };
            let skip = std::mem::take(&mut self.started);
            for (i, (f, _)) in self.queue.drain(..n).enumerate() {
                let from = if i == 0 { skip } else { 0 };
                out.extend_from_slice(&f[from..]);
            }
            self.queued -= need;
            self.pacer.wrote(now, need + lead);
        }
        if self.queue.is_empty() {
            self.closing = false;
        }
        if self.took && self.pacer.announces() && !self.pacer.waits_for_turn() {
            // No agreement on the turn yet (the start of a call, a lost announcement):
            // this over ends with what was just written, and the other side is told, so
            // that one side soon knows it holds the turn. Until then the estimate alone
            // rules, and on a small buffer it allows little.
            self.end_over(false);
        }
        tracing::trace!(t = ?now, wrote = out.len(), host = self.queued, room = self.pacer.room(), state = self.pacer.describe(), "modem: take");
        (!out.is_empty()).then_some(out)
    }

    /// The modem lost what it held (a dropped call, a reopened port): frames taken stay
    /// queued, announcements not yet written are dropped (their count no longer holds),
    /// and the turn is no one's.
    pub fn reset(&mut self, now: T) {
        self.pacer.reset(now);
        self.idle_pending = false;
        self.queue.retain(|(_, marker)| !marker);
        // A frame partly written goes again whole: its start was lost with the rest.
        self.resync |= self.started > 0;
        self.started = 0;
        self.pending = None;
        self.queued = self.queue.iter().map(|(f, _)| f.len()).sum();
        self.closing = false;
    }

    /// Whether time alone will change what may be written.
    pub fn busy(&self) -> bool {
        self.pacer.busy() || self.backlogged() || self.pacer.waits_for_turn()
    }
}

fn is_placeholder(e: &(Vec<u8>, bool)) -> bool {
    e.1 && e.0.is_empty()
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;
    use crate::pacer::HalfDuplex;

    fn modem(buffer: usize) -> ModemTx<Instant> {
        let h = HalfDuplex {
            latency: Duration::from_secs(4),
            jitter: Duration::ZERO,
            turnaround: Duration::from_secs(2),
            buffer,
            chunk: 64,
            max_over: None,
        };
        ModemTx::new(
            Pacer::half(Instant::now(), 1200.0, 508, h).with_seed(3),
            250,
        )
    }

    /// The other side's first announcement, heard at `t`, answers ours (`heard`): the
    /// turn is ours.
    fn answer(m: &mut ModemTx<Instant>, t: Instant, heard: u8) {
        m.pacer.received(t);
        let answer = OverEnd {
            after: 0,
            seq: 1,
            heard,
            rank: 0,
            idle: false,
        };
        let mut framed = Vec::new();
        answer.encode(&mut framed);
        assert!(m.control(t, &framing::Deframer::new().push(&framed)[0]));
        assert!(m.pacer.holding());
    }

    #[test]
    fn an_announcement_and_the_frames_after_it_go_in_one_write() {
        let mut m = modem(1024);
        let t0 = Instant::now();
        // First over (no agreement yet): it ends with what was written.
        let max = m.frame_room();
        assert!(max >= 48);
        m.offer(&[0x52; 100]);
        let first = m.take(t0).expect("written");
        // The modem was idle: the write starts with a delimiter (see `take`).
        assert_eq!(first[0], 0);
        assert_eq!(first.len(), 1 + 100 + framing::overhead(100));
        // The over's end is decided; its announcement is drawn up when written, and
        // until then a frame may still join the over (see `CLOSING_STRETCH_FRAMES`): it
        // goes last, and the announcement in front of it.
        assert_eq!(m.announced, 0);
        assert!(m.frame_room() >= 50);
        m.offer(&[0x53; 50]);
        let rest = m
            .take(t0 + Duration::from_millis(10))
            .expect("the announcement");
        let frames = framing::Deframer::new().push(&rest);
        assert_eq!(frames.len(), 2, "{frames:?}");
        let ann = OverEnd::parse(&frames[0]).expect("an announcement");
        assert_eq!(frames[1], [0x53; 50]);
        assert_eq!(usize::from(ann.after), 50 + framing::overhead(50));
        assert_eq!(m.announced, 1);
        assert_eq!(m.frame_room(), 0, "nothing new after announcing");
        // The other side answers: the turn is ours; two frames, then nothing more.
        answer(&mut m, t0 + Duration::from_secs(5), ann.seq);
        let t = t0 + Duration::from_secs(8);
        m.advance(t);
        m.offer(&[0x52; 200]);
        m.offer(&[0x52; 60]);
        m.idle(t);
        let mut out = Vec::new();
        let mut at = t;
        while out.len() < 200 + 60 + 8 + 12 {
            at += Duration::from_millis(20);
            if let Some(b) = m.take(at) {
                let frames = framing::Deframer::new().push(&b);
                if let Some(i) = frames.iter().position(|f| OverEnd::is_control(f)) {
                    // Everything after the announcement came in the same write, and its
                    // count is exactly those bytes.
                    let ann = OverEnd::parse(&frames[i]).unwrap();
                    let after: usize = frames[i + 1..]
                        .iter()
                        .map(|f| f.len() + framing::overhead(f.len()))
                        .sum();
                    assert_eq!(usize::from(ann.after), after);
                    assert!(after > 0);
                }
                out.extend(b);
            }
            assert!(at < t + Duration::from_secs(10), "stalled");
        }
        assert!(!m.backlogged());
        assert_eq!(m.frame_room(), 0, "silent until the other side answers");
    }

    #[test]
    fn frames_join_an_over_whose_announcement_is_still_on_the_host_up_to_a_bound() {
        let mut m = modem(1024);
        let t0 = Instant::now();
        // Take the turn: our first over ends, the other side answers.
        m.offer(&[0x52; 100]);
        m.take(t0).expect("written");
        let ann = OverEnd::parse(
            &framing::Deframer::new().push(&m.take(t0 + Duration::from_millis(10)).unwrap())[0],
        )
        .unwrap();
        let t = t0 + Duration::from_secs(5);
        m.pacer.received(t);
        let mut framed = Vec::new();
        OverEnd {
            after: 0,
            seq: 1,
            heard: ann.seq,
            rank: 0,
            idle: false,
        }
        .encode(&mut framed);
        assert!(m.control(t, &framing::Deframer::new().push(&framed)[0]));
        assert!(m.pacer.holding());
        // Fill the modem and the host, then end the over: the announcement waits on the
        // host for room.
        let t = t + Duration::from_secs(3);
        m.advance(t);
        let mut written = Vec::new();
        while m.frame_room() > 0 {
            m.offer(&[0x52; 200]);
            if let Some(b) = m.take(t) {
                written.extend(b);
            }
        }
        m.idle(t);
        assert!(m.backlogged(), "the announcement waits on the host");
        // As the modem drains, frames still join the over, a bounded number.
        let mut ahead = 0;
        let mut at = t;
        let mut all = written;
        loop {
            at += Duration::from_millis(100);
            assert!(at < t + Duration::from_secs(60), "stalled");
            m.advance(at);
            let room = m.frame_room();
            if room > 0 {
                m.offer(&vec![0x54; room.min(200)]);
                ahead += room.min(200) + framing::overhead(room.min(200));
            }
            if let Some(b) = m.take(at) {
                all.extend(b);
            }
            if m.announced == 2 {
                break;
            }
        }
        assert!(
            ahead <= CLOSING_STRETCH_FRAMES * (250 + framing::overhead(250)),
            "{ahead} B taken while closing"
        );
        assert!(ahead > 0, "nothing joined the over");
        // Frames keep the order they were offered in (all 0x52 before any 0x54), the
        // last of them after the announcement, which counts them.
        let frames = framing::Deframer::new().push(&all);
        let data: Vec<u8> = frames
            .iter()
            .filter(|f| !OverEnd::is_control(f))
            .map(|f| f[0])
            .collect();
        assert!(data.windows(2).all(|w| w[0] <= w[1]), "{data:?}");
        assert_eq!(*data.last().unwrap(), 0x54);
        let i = frames.iter().position(|f| OverEnd::is_control(f)).unwrap();
        let after: usize = frames[i + 1..]
            .iter()
            .map(|f| f.len() + framing::overhead(f.len()))
            .sum();
        assert_eq!(
            usize::from(OverEnd::parse(&frames[i]).unwrap().after),
            after
        );
        assert_eq!(m.frame_room(), 0, "silent until the other side answers");
    }

    #[test]
    fn a_burst_after_a_broken_one_is_not_swallowed_by_it() {
        let mut m = modem(1024);
        let t0 = Instant::now();
        m.offer(&[0x52; 100]);
        let first = m.take(t0).expect("written");
        let ann = m
            .take(t0 + Duration::from_millis(10))
            .expect("the announcement");
        // The chunk carrying the end of that burst is lost: the frame's delimiter, and
        // the announcement, with it.
        let mut rx = framing::Deframer::new();
        assert!(rx.push(&first[..first.len() - 20]).is_empty());
        // Nothing answers; the announcement is said again once the wait runs out, onto
        // a modem that has long sent all it had.
        let mut at = t0;
        let again = loop {
            at += Duration::from_secs(1);
            assert!(at < t0 + Duration::from_secs(600), "never said again");
            if let Some(b) = m.take(at) {
                break b;
            }
        };
        assert_eq!(again[0], 0, "a new burst starts with a delimiter");
        let frames = rx.push(&again);
        assert_eq!(frames.len(), 1, "{frames:?}");
        assert_eq!(
            OverEnd::parse(&frames[0]),
            OverEnd::parse(&framing::Deframer::new().push(&ann)[0])
        );
    }

    #[test]
    fn a_malformed_announcement_is_taken_and_dropped() {
        let mut m = modem(256);
        let now = Instant::now();
        assert!(m.control(now, &[framing::OVER_END, 1, 2]));
        assert!(!m.control(now, &[skywave_proto::wire::VERSION, 1, 2]));
        assert_eq!(m.heard, 0);
    }

    #[test]
    fn a_frame_larger_than_a_small_buffer_goes_whole_in_parts() {
        // 256 B buffer: the modem takes at most 192 B at once (a chunk spare).
        let mut m = modem(256);
        let t0 = Instant::now();
        assert!(m.pacer.max_write() < 250);
        // The call's first over (no agreement on the turn) ends with an announcement
        // right after its first frame: that frame leaves room for it in the same window.
        let first = m.frame_room();
        assert!(
            1 + first + framing::overhead(first) + ANNOUNCEMENT_LEN <= m.pacer.room_any(),
            "{first} B offered, {} B of room",
            m.pacer.room_any()
        );
        m.offer(&vec![0x52; first]);
        let ours = m.take(t0).expect("the first frame");
        let ann = match m.take(t0) {
            Some(b) => OverEnd::parse(&framing::Deframer::new().push(&b)[0]).expect("ours"),
            None => panic!("the announcement waited ({} B written)", ours.len()),
        };
        // The other side answers: the turn is ours.
        let t1 = t0 + Duration::from_secs(12);
        answer(&mut m, t1, ann.seq);
        let t0 = t1 + Duration::from_secs(3);
        m.advance(t0);
        // A whole frame is asked for, not one sized to the room.
        assert_eq!(m.frame_room(), 250);
        let frame: Vec<u8> = (0..250u32).map(|i| (i % 251) as u8 + 1).collect();
        m.offer(&frame);
        let mut wire = m.take(t0).expect("the frame's start");
        assert!(wire.len() < frame.len(), "{} B in one write", wire.len());
        assert!(m.partly_written() > 0);
        // No second frame is taken while the first one's rest waits beyond what the
        // modem takes.
        assert_eq!(m.frame_room(), 0);
        let mut at = t0;
        while m.backlogged() {
            at += Duration::from_millis(50);
            assert!(at < t0 + Duration::from_secs(30), "stalled");
            let begun = m.partly_written() > 0;
            if let Some(b) = m.take(at) {
                // The rest of a frame begun never starts with a delimiter.
                assert!(!begun || b[0] != 0, "a delimiter in the middle of a frame");
                wire.extend(b);
            }
        }
        let mut d = framing::Deframer::new();
        let frames = d.push(&wire);
        assert_eq!((d.skipped, d.bad_frames), (0, 0));
        let data: Vec<_> = frames.iter().filter(|f| !OverEnd::is_control(f)).collect();
        assert_eq!(data, [&frame]);
    }

    #[test]
    fn a_frame_cut_short_by_a_reset_goes_again_whole_after_a_delimiter() {
        let mut m = modem(256);
        let t0 = Instant::now();
        let frame = vec![0x52; 250];
        m.offer(&frame);
        let first = m.take(t0).expect("the frame's start");
        assert!(m.partly_written() > 0);
        // The modem loses what it held: the receiver has the frame's start only.
        m.reset(t0 + Duration::from_millis(10));
        assert_eq!(m.partly_written(), 0);
        let mut again = Vec::new();
        let mut at = t0 + Duration::from_millis(10);
        while m.backlogged() {
            at += Duration::from_millis(50);
            assert!(at < t0 + Duration::from_secs(30), "stalled");
            again.extend(m.take(at).unwrap_or_default());
        }
        assert_eq!(again[0], 0, "a delimiter ends the broken frame");
        let mut d = framing::Deframer::new();
        let mut frames = d.push(&first);
        frames.extend(d.push(&again));
        assert!(d.bad_frames + d.skipped > 0, "the start alone is dropped");
        let data: Vec<_> = frames.iter().filter(|f| !OverEnd::is_control(f)).collect();
        assert_eq!(data, [&frame]);
    }
}
