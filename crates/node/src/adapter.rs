//! The link adapter layer: the one place that decides what the protocol endpoint is told
//! about a link and how large a frame it is asked for, given only what the socket or
//! device underneath shows.
//!
//! The daemon (`skywave-daemon`'s core, over real sockets and drivers) and the simulator
//! node ([`crate::SimNode`], over the simulator's links) both hold a [`LinkAdapter`] per
//! link and call the same methods, so a lab figure measures the daemon's own link
//! handling. What differs is only the [`Readiness`] each passes in:
//! - **IP paths** ([`Underlay::Datagram`], [`Underlay::Tcp`]): a socket shows whether it
//!   accepts a write now, nothing else. Neither the path's queue, nor its rate, nor its
//!   loss reaches the endpoint: it measures them (its congestion control), or the user's
//!   configuration states them ([`IpLinkConfig`]).
//! - **Radios and modems** ([`Underlay::Device`]): exactly what their drivers report, the
//!   bytes the device can take now, and the link description the user configured (rate,
//!   latency, duplex, buffer of the modem's profile; see [`device_params`]).
//!
//! What this layer does not do: pace (the endpoint does on IP paths; devices pace by the
//! room they report), frame byte streams (see [`crate::framing`]), or own any I/O.

use std::time::Duration;

use skywave_proto::{LinkParams, Turns};
use skywave_sim::config::{Duplex, LinkConfig, LinkKind};

use crate::dutycycle::DutyCycleConfig;
use crate::framing;
use crate::lora::LoraPhy;
use crate::pacer::{HalfDuplex, Pacer, PacerTime};

/// Frames narrower than this are not asked for: the protocol's floor (a frame header and
/// a fragment of a message). The endpoint is asked again once the room has grown.
pub const MIN_FRAME: usize = skywave_proto::wire::MIN_FRAME;

/// Frame size used on byte-stream links (modems): big enough to amortise headers,
/// small enough to keep a modem's 1 KiB buffer from holding a whole over.
pub const STREAM_MTU: usize = 250;

/// Frames kept queued in a radio or modem: enough to keep it busy, few enough that a
/// report or an "I have it" does not wait behind seconds of data.
pub const QUEUED_FRAMES: usize = 2;

/// How much longer than what a half-duplex modem's driver commits ahead of an over's
/// end (the modem's queue and the bytes behind the over-end announcement) an over must
/// be for a change of turn to cost about the turnaround alone: in a shorter over the
/// driver holds too little on the host, when the over ends, to put the announcement a
/// latency ahead of the end. Measured on the HF demo with overs bounded for urgent
/// data (write times 40-290 s): 5 s of latency and a 2 KiB buffer (12 s committed),
/// overs 1.0, 1.17, 1.33 and 1.5 times that cost the bulk 28%, 13%, 8.7% and 3.3% more
/// than 30 s overs; `hf-modem` with a 2 KiB buffer 1.39 times, 4.4%; `hf-modem` 1.46
/// times, 3.6%.
pub const CHEAP_OVER_FACTOR: f64 = 1.35;

/// How often a driver looks at its pacer while the estimate is changing.
pub const MODEM_TICK: Duration = Duration::from_millis(20);

/// Largest UDP payload the daemon sends unless configured (fits a 1500 B Ethernet path).
pub const DEFAULT_UDP_MTU: usize = 1472;

/// Round trip assumed on an IP path until one is measured, unless configured.
pub const DEFAULT_IP_RTT: Duration = Duration::from_millis(100);

/// Largest datagram accepted on a UDP link (a frame larger than this is dropped on
/// receipt, so no MTU is configured above it).
pub const MAX_DATAGRAM: usize = 16_384;

/// What carries a link's frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Underlay {
    /// A datagram socket (UDP): refuses only when its own send buffer is full.
    Datagram,
    /// A TCP connection: the kernel paces and recovers; the writer's queue is the
    /// back-pressure.
    Tcp,
    /// A radio or modem driver that reports the bytes it can take.
    Device,
}

/// What the socket or device shows now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Readiness {
    /// A socket: whether it takes a write now.
    Socket { writable: bool },
    /// A driver: frame bytes it takes now without overrunning the device.
    Room(usize),
    /// A radio or modem that reports its transmit buffer: free bytes and bytes it still
    /// holds (unsent).
    DeviceBuffer { free: usize, held: usize },
}

/// What a user configures for an IP link (the daemon's `[[link]] type = "udp"` and
/// `"tcp"`); the lab sets it as a fair user would (see [`ip_config_for`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IpLinkConfig {
    /// Largest datagram payload (UDP) or frame (TCP).
    pub mtu: usize,
    /// Nominal path rate, when the user knows it: pacing starts from it.
    pub rate_bps: Option<u64>,
    /// Expected round trip until one is measured.
    pub rtt: Duration,
    /// Whether the path's MTU is to be discovered (start at 1200 B and probe up to
    /// `mtu`); false when the user set `mtu` to what the path carries.
    pub discover_mtu: bool,
}

impl Default for IpLinkConfig {
    fn default() -> Self {
        IpLinkConfig {
            mtu: DEFAULT_UDP_MTU,
            rate_bps: None,
            rtt: DEFAULT_IP_RTT,
            discover_mtu: true,
        }
    }
}

/// How a byte-stream modem's driver paces what it writes, from the link profile the user
/// configured: the daemon's `serial` and `hf-modem` drivers and the lab's modem ports run
/// the same [`Pacer`]. Most modems say nothing of their buffer (an AT-command HF modem,
/// a pty), so the driver estimates it from what it wrote, the modem's rate and, on half
/// duplex, when the other side was heard.
#[derive(Clone, Copy, Debug)]
pub struct ModemPacing {
    /// Bytes per second the modem drains.
    pub rate: f64,
    pub half: Option<HalfDuplex>,
    /// Largest frame.
    pub mtu: usize,
}

impl ModemPacing {
    /// The pacing of a modem described by the stream profile `cfg`.
    pub fn for_profile(cfg: &LinkConfig) -> ModemPacing {
        let rate_bps = cfg.up.rate_bps.min(cfg.down.rate_bps);
        let jitter = cfg.up.jitter.max(cfg.down.jitter);
        let half = (cfg.duplex == Duplex::Half).then(|| HalfDuplex {
            latency: cfg.up.delay.max(cfg.down.delay) + jitter,
            // The least one-way latency is the shorter delay less its jitter.
            jitter: (cfg.up.delay.max(cfg.down.delay) + jitter
                - cfg.up.delay.min(cfg.down.delay).saturating_sub(jitter))
                / 2,
            turnaround: cfg.turnaround,
            max_over: cfg.max_over,
            buffer: usize::try_from(
                cfg.buffer_bytes(skywave_sim::Side::A)
                    .min(cfg.buffer_bytes(skywave_sim::Side::B)),
            )
            .unwrap_or(usize::MAX),
            chunk: cfg.chunk,
        });
        ModemPacing {
            rate: rate_bps as f64 / 8.0,
            half,
            mtu: STREAM_MTU,
        }
    }

    /// Stream bytes kept queued in the modem: QUEUED_FRAMES framed frames; on a
    /// half-duplex modem, at least what it sends while an announcement of the over's end
    /// crosses the latency, and a frame ([`Pacer::announce_lead`], as far as its buffer
    /// allows): the announcement goes in front of that many bytes, so the other side
    /// hears it before the over ends and has its modem loaded when the turn comes. (A
    /// buffer smaller than that gains nothing from a deeper queue.)
    pub fn limit(&self) -> usize {
        let frame = self.mtu + framing::overhead(self.mtu);
        let shallow = QUEUED_FRAMES * frame;
        match (self.half, self.lead()) {
            (Some(h), Some(lead)) => {
                shallow.max((lead + frame).min(h.buffer.saturating_sub(h.chunk)))
            }
            _ => shallow,
        }
    }

    /// Half duplex: the bytes an announcement of the over's end goes in front of, so
    /// that the other side hears of the end before it comes, where the modem's buffer
    /// takes that many (`None` else, and on full duplex).
    fn lead(&self) -> Option<usize> {
        let h = self.half?;
        crate::pacer::lead_fitting(self.rate, &h, h.buffer.saturating_sub(h.chunk))
    }

    /// Half duplex: what a change of turn costs. The turnaround where the other side
    /// hears of an over's end ahead of it and has its modem loaded when the turn
    /// comes; else it learns of the end only when the stream stops, a latency after
    /// it, and its first bytes take a latency more to arrive. That holds for overs
    /// well longer than what the driver commits ahead of an over's end (the modem's
    /// queue and the bytes behind the announcement): `CHEAP_OVER_FACTOR` times it.
    pub fn turns(&self) -> Option<Turns> {
        let h = self.half?;
        let lead = self.lead();
        let committed = (self.limit() + lead.unwrap_or(0)) as f64 / self.rate.max(1.0);
        Some(Turns {
            cost: match lead {
                Some(_) => h.turnaround,
                None => h.turnaround + h.latency * 2,
            },
            min_over: Duration::from_secs_f64(committed * CHEAP_OVER_FACTOR),
        })
    }

    /// Frame bytes the driver offers the endpoint while the estimate gives the modem
    /// `room` stream bytes (a whole framed frame must fit; no runts).
    pub fn frame_room(room: usize, mtu: usize) -> usize {
        let r = room.saturating_sub(framing::overhead(mtu)).min(mtu);
        if r < MIN_FRAME.min(mtu) { 0 } else { r }
    }

    /// Stream bytes worth a write of their own: a whole framed frame, or half of what
    /// the modem can safely hold when that is less (so that the next write fits while the
    /// last one drains), never a runt. Smaller writes wait for room unless the modem
    /// would run dry meanwhile.
    pub fn unit(&self) -> usize {
        let frame = self.mtu + framing::overhead(self.mtu);
        let runt = MIN_FRAME.min(self.mtu) + framing::overhead(self.mtu);
        let half_buffer = self
            .half
            .map_or(usize::MAX, |h| h.buffer.saturating_sub(h.chunk) / 2);
        frame.min(half_buffer).min(self.limit() / 2).max(runt)
    }

    /// A fresh estimate, at `now`.
    pub fn pacer<T: PacerTime>(&self, now: T) -> Pacer<T> {
        match self.half {
            Some(h) => Pacer::half(now, self.rate, self.limit(), h).with_unit(self.unit()),
            None => Pacer::full(now, self.rate, 0, self.limit()),
        }
    }
}

/// One link as the endpoint sees it. See the module docs.
#[derive(Clone, Copy, Debug)]
pub struct LinkAdapter {
    underlay: Underlay,
    params: LinkParams,
    /// A modem that reports nothing of its buffer: how its driver paces writes.
    pacing: Option<ModemPacing>,
    /// Frames are framed ([`crate::framing`]) before they reach the device: a byte
    /// stream.
    framed: bool,
    /// The radio neither senses the carrier nor backs off: the driver takes turns on the
    /// channel for it ([`crate::mac::SoftMac`]).
    driver_mac: bool,
    /// A LoRa radio: frames cost air time by Semtech's formula.
    lora: Option<LoraPhy>,
    /// The driver holds frames to keep the radio within a duty-cycle budget.
    duty: Option<DutyCycleConfig>,
    /// Bytes each frame carries below the protocol (a network-key tag,
    /// [`crate::netkey`]): counted in the device's room, not in the endpoint's frames.
    tag: usize,
}

impl LinkAdapter {
    /// A UDP path: the endpoint paces and controls congestion itself, from what it
    /// measures; it knows the path's rate only if the user said so.
    pub fn udp(cfg: IpLinkConfig) -> LinkAdapter {
        LinkAdapter {
            underlay: Underlay::Datagram,
            framed: false,
            pacing: None,
            driver_mac: false,
            lora: None,
            duty: None,
            tag: 0,
            params: LinkParams {
                mtu: cfg.mtu.clamp(MIN_FRAME, MAX_DATAGRAM),
                shared: false,
                paced: true,
                half_duplex: false,
                rate_bps: cfg.rate_bps,
                rtt_hint: cfg.rtt.max(Duration::from_micros(100)),
                loss_hint: 0.0,
                discover_mtu: cfg.discover_mtu,
                frame_overhead: 0,
                handoff: Duration::ZERO,
                duty: None,
                reliable: false,
                turns: None,
            },
        }
    }

    /// A TCP connection carrying length-prefixed frames of at most `mtu` bytes.
    pub fn tcp(mtu: usize) -> LinkAdapter {
        LinkAdapter {
            underlay: Underlay::Tcp,
            framed: false,
            pacing: None,
            driver_mac: false,
            lora: None,
            duty: None,
            tag: 0,
            params: LinkParams {
                mtu: mtu.clamp(MIN_FRAME, u16::MAX as usize),
                shared: false,
                paced: false,
                half_duplex: false,
                rate_bps: None,
                rtt_hint: DEFAULT_IP_RTT,
                loss_hint: 0.0,
                discover_mtu: false,
                frame_overhead: 0,
                handoff: Duration::ZERO,
                duty: None,
                // TCP delivers every frame or closes the connection.
                reliable: true,
                turns: None,
            },
        }
    }

    /// A radio whose driver described it with `params` (see [`device_params`]).
    pub fn device(params: LinkParams) -> LinkAdapter {
        LinkAdapter {
            underlay: Underlay::Device,
            params,
            framed: false,
            pacing: None,
            driver_mac: false,
            lora: None,
            duty: None,
            tag: 0,
        }
    }

    /// A byte-stream modem described by `params`: frames are framed before they are
    /// written, so a frame takes a few bytes more of the modem's buffer.
    pub fn modem(params: LinkParams) -> LinkAdapter {
        LinkAdapter {
            underlay: Underlay::Device,
            params,
            framed: true,
            pacing: None,
            driver_mac: false,
            lora: None,
            duty: None,
            tag: 0,
        }
    }

    /// A byte-stream modem that reports nothing of its buffer, driven as the daemon's
    /// `serial` and `hf-modem` drivers drive it: by the estimate of a [`Pacer`].
    pub fn paced_modem(params: LinkParams, pacing: ModemPacing) -> LinkAdapter {
        LinkAdapter {
            pacing: Some(pacing),
            ..LinkAdapter::modem(params)
        }
    }

    /// The same radio, one that puts every frame on the air at once, without carrier
    /// sense or backoff: the driver keeps one frame in it at a time and takes turns on the
    /// channel itself ([`crate::mac::SoftMac`]).
    pub fn without_channel_access(self) -> LinkAdapter {
        LinkAdapter {
            driver_mac: true,
            ..self
        }
    }

    /// A LoRa radio with these settings: frames are costed by Semtech's formula.
    pub fn with_lora(self, phy: LoraPhy) -> LinkAdapter {
        LinkAdapter {
            lora: Some(phy),
            ..self
        }
    }

    /// The driver keeps the radio within this duty-cycle budget
    /// ([`crate::dutycycle::DutyCycle`]).
    pub fn with_duty_cycle(self, duty: DutyCycleConfig) -> LinkAdapter {
        LinkAdapter {
            duty: Some(duty),
            params: LinkParams {
                duty: Some(duty.fraction),
                ..self.params
            },
            ..self
        }
    }

    /// Every frame carries `len` more bytes below the protocol (a network-key tag): the
    /// endpoint's frames shrink by as much, so the frame on the wire stays within the
    /// device's MTU and room. Applied once to an adapter.
    pub fn with_frame_tag(self, len: usize) -> LinkAdapter {
        let mut a = self;
        a.params.mtu = a.params.mtu.saturating_sub(len);
        a.tag = len;
        a
    }

    pub fn lora(&self) -> Option<LoraPhy> {
        self.lora
    }

    pub fn duty_cycle(&self) -> Option<DutyCycleConfig> {
        self.duty
    }

    /// Air time of a frame of `len` bytes as the radio sends it, if the driver knows it
    /// (LoRa) or can estimate it from the rate.
    pub fn airtime(&self, len: usize) -> Duration {
        crate::lora::frame_airtime(
            self.lora,
            len,
            self.params.frame_overhead,
            self.params.rate_bps.unwrap_or(9600),
        )
    }

    /// Whether the driver takes turns on the channel for the radio.
    pub fn driver_mac(&self) -> bool {
        self.driver_mac
    }

    /// How the driver paces this modem, if it estimates its buffer.
    pub fn pacing(&self) -> Option<ModemPacing> {
        self.pacing
    }

    /// Whether frames are framed ([`crate::framing`]) before they are written.
    pub fn framed(&self) -> bool {
        self.framed
    }

    /// A driver whose link is not up yet: nothing is asked of it.
    pub fn device_starting() -> LinkAdapter {
        LinkAdapter::device(LinkParams {
            mtu: 0,
            shared: false,
            paced: false,
            half_duplex: false,
            rate_bps: None,
            rtt_hint: Duration::from_secs(1),
            loss_hint: 0.0,
            discover_mtu: false,
            frame_overhead: 0,
            handoff: Duration::ZERO,
            duty: None,
            reliable: false,
            turns: None,
        })
    }

    pub fn underlay(&self) -> Underlay {
        self.underlay
    }

    /// What the endpoint is told (`Endpoint::link_up`).
    pub fn params(&self) -> LinkParams {
        self.params
    }

    /// The largest frame to ask the endpoint for now (`poll_transmit`'s `max_len`), or
    /// `None` if the link takes nothing now. Spurious calls are harmless.
    pub fn frame_budget(&self, now: Readiness) -> Option<usize> {
        let mtu = self.params.mtu;
        let max = match now {
            Readiness::Socket { writable } => {
                if writable {
                    mtu
                } else {
                    0
                }
            }
            Readiness::Room(room) => room.saturating_sub(self.tag).min(mtu),
            Readiness::DeviceBuffer { free, held } => {
                // Keep at most QUEUED_FRAMES frames in the device, and never write past
                // its buffer: ask for a frame that fits whole (once framed).
                let unit = mtu.min(STREAM_MTU);
                if held >= QUEUED_FRAMES * unit {
                    0
                } else if self.framed {
                    free.saturating_sub(framing::overhead(unit) + self.tag)
                        .min(unit)
                } else {
                    free.saturating_sub(self.tag).min(mtu)
                }
            }
        };
        (max >= MIN_FRAME.min(mtu.max(1))).then_some(max)
    }
}

/// What the protocol is told about a radio or modem described by the link profile
/// `cfg` (the driver's configured profile, as seen from the sending side: `cfg.up` is
/// this node's sending direction). Used by the daemon's drivers and by the lab alike.
///
/// IP profiles (kind `frame`) are not devices: use [`ip_config_for`] and
/// [`LinkAdapter::udp`], which is what [`adapter_for`] does.
pub fn device_params(cfg: &LinkConfig) -> LinkParams {
    // The sending direction's rate: pacing starts from it.
    let rate = cfg.up.rate_bps;
    let mtu = match cfg.kind {
        LinkKind::Stream => STREAM_MTU,
        _ => cfg.up.mtu.min(cfg.down.mtu),
    };
    let ser = match cfg.lora {
        Some(p) => p.airtime(mtu),
        None => Duration::from_secs_f64(8.0 * mtu as f64 / rate.max(1) as f64),
    };
    // A LoRa radio's rate: payload bytes per second of air in largest frames (the
    // preamble and header of every packet included), not the nominal bit rate.
    let rate = match cfg.lora {
        Some(p) => (p.payload_rate(mtu) * 8.0).round() as u64,
        None => rate,
    };
    // A CSMA radio cannot hear while it sends, but the medium has no turns to give:
    // carrier sense arbitrates, so it is driven as a full-duplex shared link.
    let half = cfg.duplex == Duplex::Half && cfg.kind != LinkKind::Csma;
    // Radios and modems are kept at most QUEUED_FRAMES frames deep, which adds that much
    // waiting to the first transmission of anything.
    let mut rtt = cfg.up.delay + cfg.down.delay + ser * (2 + 2 * QUEUED_FRAMES as u32);
    if half {
        rtt += cfg.turnaround * 2;
    }
    LinkParams {
        mtu,
        shared: cfg.kind == LinkKind::Csma,
        paced: false,
        half_duplex: half,
        rate_bps: Some(rate),
        rtt_hint: rtt.max(Duration::from_millis(1)),
        loss_hint: cfg.up.loss.mean_loss().max(cfg.down.loss.mean_loss()),
        discover_mtu: false,
        frame_overhead: cfg.up.overhead,
        // A radio with a queue backs off before each frame, even within one station's
        // burst: the gaps a listener must not take for the end of an over. Its driver
        // knows the radio's settings (as a KISS driver sets its TNC's).
        handoff: cfg.csma_first_backoff(),
        duty: None,
        reliable: false,
        turns: match cfg.kind {
            LinkKind::Stream if half => ModemPacing::for_profile(cfg).turns(),
            _ => None,
        },
    }
}

/// What a fair user configures for a UDP link over the IP path `cfg`, as the daemon
/// runs it: datagrams of the daemon's default size (what an Ethernet route carries,
/// 1472 B; the user does not know what a VPN, a tunnel or a cellular path takes on the
/// way), the path MTU discovered, and the round trip they expect. Not the path's rate or
/// loss: a user rarely knows them, and the daemon does not need them.
pub fn ip_config_for(cfg: &LinkConfig) -> IpLinkConfig {
    IpLinkConfig {
        mtu: DEFAULT_UDP_MTU,
        rate_bps: None,
        rtt: cfg.up.delay + cfg.down.delay,
        discover_mtu: true,
    }
}

/// The adapter for a simulated link `cfg`, as seen from the sending side.
pub fn adapter_for(cfg: &LinkConfig) -> LinkAdapter {
    match cfg.kind {
        LinkKind::Frame => LinkAdapter::udp(ip_config_for(cfg)),
        // An HF modem (and a pty) says nothing of its buffer: as the daemon's driver, the
        // lab's node knows only its own estimate.
        LinkKind::Stream => {
            LinkAdapter::paced_modem(device_params(cfg), ModemPacing::for_profile(cfg))
        }
        // A shared radio: the driver takes turns on the channel (as the daemon's radio
        // drivers do by default), whether or not the radio senses the carrier itself.
        LinkKind::Csma => {
            let mut a = LinkAdapter::device(device_params(cfg)).without_channel_access();
            if let Some(p) = cfg.lora {
                a = a.with_lora(p);
            }
            if let Some(d) = cfg.duty {
                // The user sets the band's limit as the driver's budget.
                a = a.with_duty_cycle(DutyCycleConfig {
                    fraction: d.fraction,
                    window: d.window,
                    ..DutyCycleConfig::hourly(d.fraction)
                });
            }
            a
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A network-key tag's bytes come out of the protocol's frames: the MTU it is told
    /// and every budget shrink by the tag, so tagged frames fit the device as before.
    #[test]
    fn a_frame_tag_shrinks_what_the_protocol_may_send() {
        let params = device_params(&LinkConfig::profile("uhf-csma").unwrap());
        let plain = LinkAdapter::device(params);
        let tagged = plain.with_frame_tag(8);
        assert_eq!(tagged.params().mtu + 8, plain.params().mtu);
        let mtu = plain.params().mtu;
        assert_eq!(
            tagged.frame_budget(Readiness::Room(mtu)),
            Some(mtu - 8),
            "a full MTU of room takes a frame of MTU - tag"
        );
        assert_eq!(tagged.frame_budget(Readiness::Room(100)), Some(92));
        let modem = LinkAdapter::modem(params).with_frame_tag(8);
        let untagged = LinkAdapter::modem(params);
        let free = Readiness::DeviceBuffer { free: 150, held: 0 };
        assert_eq!(
            modem.frame_budget(free).unwrap() + 8,
            untagged.frame_budget(free).unwrap()
        );
    }

    #[test]
    fn ip_paths_show_no_rate_or_loss() {
        let cfg = LinkConfig::profile("lfn-lossy").unwrap();
        let a = adapter_for(&cfg);
        let p = a.params();
        assert_eq!(a.underlay(), Underlay::Datagram);
        assert_eq!(p.rate_bps, None);
        assert_eq!(p.loss_hint, 0.0);
        assert!(p.paced);
        assert_eq!(p.mtu, 1472);
        assert_eq!(p.rtt_hint, Duration::from_millis(230));
    }

    #[test]
    fn a_socket_refuses_only_when_not_writable() {
        let a = LinkAdapter::udp(IpLinkConfig::default());
        assert_eq!(
            a.frame_budget(Readiness::Socket { writable: true }),
            Some(DEFAULT_UDP_MTU)
        );
        assert_eq!(a.frame_budget(Readiness::Socket { writable: false }), None);
    }

    #[test]
    fn devices_get_what_their_driver_reports() {
        let cfg = LinkConfig::profile("uhf-csma").unwrap();
        let a = adapter_for(&cfg);
        assert_eq!(a.underlay(), Underlay::Device);
        assert_eq!(a.params().rate_bps, Some(128_000));
        assert!(a.params().shared);
        assert_eq!(a.frame_budget(Readiness::Room(4096)), Some(223));
        assert_eq!(a.frame_budget(Readiness::Room(100)), Some(100));
        assert_eq!(a.frame_budget(Readiness::Room(MIN_FRAME - 1)), None);
        let buf = |free, held| a.frame_budget(Readiness::DeviceBuffer { free, held });
        assert_eq!(buf(4096, 0), Some(223));
        assert_eq!(buf(150, 0), Some(150));
        assert_eq!(buf(3000, QUEUED_FRAMES * 223), None);
    }

    #[test]
    fn a_modem_is_kept_a_few_frames_deep_and_never_overrun() {
        let cfg = LinkConfig::profile("hf-modem").unwrap();
        let a = adapter_for(&cfg);
        let budget = |free, held| a.frame_budget(Readiness::DeviceBuffer { free, held });
        assert_eq!(budget(1024, 0), Some(STREAM_MTU));
        // Room for a whole framed frame only.
        assert_eq!(budget(200, 0), Some(200 - framing::overhead(STREAM_MTU)));
        assert_eq!(budget(1024, QUEUED_FRAMES * STREAM_MTU), None);
        assert_eq!(budget(30, 0), None);
    }

    #[test]
    fn a_paced_modem_is_written_whole_frames_that_fit_its_buffer_twice() {
        let unit = |spec: &str| {
            let cfg = LinkConfig::parse_spec(spec).unwrap();
            adapter_for(&cfg).pacing().unwrap().unit()
        };
        // A whole framed frame (250 B + 4) when the modem holds two.
        assert_eq!(
            unit("profile=hf-modem"),
            STREAM_MTU + framing::overhead(STREAM_MTU)
        );
        assert_eq!(unit("profile=hf-modem,buffer=8KiB"), 254);
        // Half of what a 256 B modem may hold (less a 64 B chunk): the next write fits
        // while the last one drains.
        assert_eq!(unit("profile=hf-modem,buffer=256B"), 96);
        // Never a runt.
        assert_eq!(unit("profile=hf-modem,buffer=128B"), MIN_FRAME + 4);
    }

    #[test]
    fn a_modems_latency_spread_comes_from_both_directions() {
        let cfg = LinkConfig::parse_spec("profile=hf-modem,up.delay=3s,jitter=500ms").unwrap();
        let h = ModemPacing::for_profile(&cfg).half.unwrap();
        // Longest 4 s + 0.5 s, least 3 s - 0.5 s.
        assert_eq!(h.latency, Duration::from_millis(4500));
        assert_eq!(h.jitter, Duration::from_millis(1000));
        assert_eq!(h.max_over, None);
    }

    #[test]
    fn tiny_frame_budgets_are_not_refused_outright() {
        // A link whose whole MTU is under MIN_FRAME still gets frames of its MTU.
        let mut p = device_params(&LinkConfig::profile("uhf-csma").unwrap());
        p.mtu = 48;
        let a = LinkAdapter::device(p);
        assert_eq!(a.frame_budget(Readiness::Room(4096)), Some(48));
        assert_eq!(a.frame_budget(Readiness::Room(47)), None);
    }
}
