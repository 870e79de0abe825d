//! TUN mode: two network namespaces joined through the model, so unmodified kernel TCP
//! (or anything IP) runs over the emulated link. Needs root (CAP_NET_ADMIN) and the
//! `ip` command from iproute2.
//!
//! Layout: namespace A holds device `sw0` with `addrs[0]`, namespace B holds `sw0` with
//! `addrs[1]`, both in one /prefix subnet. Each device is a TUN whose file descriptor the
//! emulator holds; an IP packet written by A's kernel is one frame on port 0 of the model,
//! and what the model delivers to port 1 is written into B's kernel. Device MTUs are the
//! link's MTUs, so the kernel never hands the model a frame it would refuse.

use std::fs::{File, OpenOptions};
use std::future::Future;
use std::io::{self, Read, Write};
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, OwnedFd};
use std::process::Command;

use bytes::Bytes;
use skywave_sim::{LinkConfig, LinkEvent, LinkKind};
use tokio::io::unix::AsyncFd;

use crate::driver::Driver;
use crate::stream::set_nonblocking;
use crate::udp::{side_name, stats_ticker};
use crate::{EmulateError, Options, Summary};

/// Names and addresses of the two namespaces.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TunConfig {
    /// Network namespaces of side A and side B (created; must not exist yet).
    pub netns: [String; 2],
    /// Addresses of `sw0` in A and in B.
    pub addrs: [Ipv4Addr; 2],
    pub prefix_len: u8,
}

impl Default for TunConfig {
    fn default() -> Self {
        TunConfig {
            netns: ["skywave-a".into(), "skywave-b".into()],
            addrs: [Ipv4Addr::new(10, 201, 0, 1), Ipv4Addr::new(10, 201, 0, 2)],
            prefix_len: 24,
        }
    }
}

/// Device name inside each namespace.
pub const TUN_DEVICE: &str = "sw0";

const HINT_ROOT: &str = "; TUN mode needs root (CAP_NET_ADMIN), /dev/net/tun and iproute2's `ip`";

/// Two namespaces joined through the model. Dropping it deletes both namespaces (and
/// with them the devices and any sockets' routes).
#[derive(Debug)]
pub struct TunEmulator {
    driver: Driver,
    devs: Option<[AsyncFd<File>; 2]>,
    created: Vec<String>,
    cfg: TunConfig,
}

#[allow(unsafe_code)]
mod ioctl {
    //! TUNSETIFF: no safe wrapper in nix or std.

    /// `struct ifreq` as TUNSETIFF reads it: the name, then the flags (40 bytes).
    #[repr(C)]
    pub(super) struct IfReq {
        pub name: [u8; 16],
        pub flags: i16,
        pub _pad: [u8; 22],
    }

    pub(super) const IFF_TUN: i16 = 0x0001;
    pub(super) const IFF_NO_PI: i16 = 0x1000;

    // _IOW('T', 202, int)
    nix::ioctl_write_ptr_bad!(tunsetiff_raw, 0x4004_54ca, IfReq);

    pub(super) fn tunsetiff(fd: std::os::fd::RawFd, req: &IfReq) -> nix::Result<()> {
        // SAFETY: `fd` is an open /dev/net/tun descriptor and `req` a valid, live ifreq;
        // the kernel reads (and may write back the name into) exactly this struct.
        unsafe { tunsetiff_raw(fd, req) }.map(|_| ())
    }
}

fn ip(args: &[&str]) -> Result<(), EmulateError> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|source| EmulateError::Tun {
            what: "running `ip`".into(),
            source,
            hint: HINT_ROOT,
        })?;
    if out.status.success() {
        return Ok(());
    }
    Err(EmulateError::Tun {
        what: format!("`ip {}`", args.join(" ")),
        source: io::Error::other(String::from_utf8_lossy(&out.stderr).trim().to_string()),
        hint: HINT_ROOT,
    })
}

fn open_tun(name: &str) -> Result<File, EmulateError> {
    let tun_err = |what: &str, source: io::Error| EmulateError::Tun {
        what: what.into(),
        source,
        hint: HINT_ROOT,
    };
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/net/tun")
        .map_err(|e| tun_err("opening /dev/net/tun", e))?;
    let mut req = ioctl::IfReq {
        name: [0; 16],
        flags: ioctl::IFF_TUN | ioctl::IFF_NO_PI,
        _pad: [0; 22],
    };
    req.name[..name.len()].copy_from_slice(name.as_bytes());
    ioctl::tunsetiff(f.as_raw_fd(), &req)
        .map_err(|e| tun_err(&format!("creating TUN device {name}"), e.into()))?;
    let fd = OwnedFd::from(f);
    set_nonblocking(&fd).map_err(|e| tun_err("setting the TUN device non-blocking", e))?;
    Ok(File::from(fd))
}

impl TunEmulator {
    /// Creates both namespaces and devices. Call inside a tokio runtime.
    pub fn create(
        link: &LinkConfig,
        opts: &Options,
        cfg: &TunConfig,
    ) -> Result<Self, EmulateError> {
        if link.kind == LinkKind::Stream {
            return Err(EmulateError::WrongKind {
                link: link.name.clone(),
                kind: "stream",
                mode: "TUN",
                need: "frame or csma",
                hint: "IP packets are frames; carry a byte stream with --stream tcp or --stream pty",
            });
        }
        // TUN packets carry their own IP headers: the model must not add them again.
        let mut link = link.clone();
        link.up.header = 0;
        link.down.header = 0;
        let driver = Driver::new(&link, opts)?;
        let mut emu = TunEmulator {
            driver,
            devs: None,
            created: Vec::new(),
            cfg: cfg.clone(),
        };
        let pid = std::process::id();
        let mut devs = Vec::new();
        for (i, ns) in cfg.netns.iter().enumerate() {
            ip(&["netns", "add", ns]).map_err(|e| match e {
                EmulateError::Tun { what, source, .. } => EmulateError::Tun {
                    what,
                    source,
                    hint: "; if it exists from an earlier run, remove it with `ip netns del NAME`, or pick other names with --netns",
                },
                e => e,
            })?;
            emu.created.push(ns.clone());
            // A name unique in the root namespace; renamed to sw0 once moved.
            let tmp = format!("swt{}{}", pid % 1_000_000, side_name(i).to_lowercase());
            let dev = open_tun(&tmp)?;
            let mtu = link
                .dir(if i == 0 {
                    skywave_sim::Side::A
                } else {
                    skywave_sim::Side::B
                })
                .mtu;
            // An IPv4 interface needs at least 68 bytes.
            let mtu = mtu.clamp(68, 65_535).to_string();
            let addr = format!("{}/{}", cfg.addrs[i], cfg.prefix_len);
            ip(&["link", "set", "dev", &tmp, "netns", ns])?;
            ip(&["-n", ns, "link", "set", "dev", &tmp, "name", TUN_DEVICE])?;
            // No IPv6 link-local address: keeps router solicitations and MLD off the link.
            ip(&[
                "-n",
                ns,
                "link",
                "set",
                "dev",
                TUN_DEVICE,
                "addrgenmode",
                "none",
            ])?;
            ip(&["-n", ns, "addr", "add", &addr, "dev", TUN_DEVICE])?;
            ip(&[
                "-n", ns, "link", "set", "dev", TUN_DEVICE, "mtu", &mtu, "up",
            ])?;
            ip(&["-n", ns, "link", "set", "dev", "lo", "up"])?;
            devs.push(
                crate::fd::register_file(dev).map_err(|source| EmulateError::Tun {
                    what: "registering the TUN device with the runtime".into(),
                    source,
                    hint: "",
                })?,
            );
        }
        let b = devs.pop();
        let a = devs.pop();
        emu.devs = a.zip(b).map(|(a, b)| [a, b]);
        Ok(emu)
    }

    pub fn config(&self) -> &TunConfig {
        &self.cfg
    }

    /// Runs until `shutdown` completes; returns the counters. The namespaces are deleted
    /// when the emulator is dropped.
    pub async fn run(
        mut self,
        shutdown: impl Future<Output = ()>,
    ) -> Result<Summary, EmulateError> {
        tokio::pin!(shutdown);
        let Some(devs) = self.devs.take() else {
            return Ok(self.driver.summary());
        };
        let mut bufs = [vec![0u8; 65_536], vec![0u8; 65_536]];
        let mut tick = stats_ticker(self.driver.opts().stats_interval);
        loop {
            let deadline = self.driver.deadline();
            let [ba, bb] = &mut bufs;
            let (read, port) = tokio::select! {
                biased;
                () = &mut shutdown => break,
                r = self.driver.sleep(deadline) => {
                    r?;
                    if let Some((due, _)) = deadline {
                        self.driver.fire(due);
                    }
                    (None, 0)
                }
                r = read_packet(&devs[0], ba) => (Some(r), 0),
                r = read_packet(&devs[1], bb) => (Some(r), 1),
                _ = tick.tick() => { self.driver.log_stats(); (None, 0) }
            };
            match read {
                None => {}
                Some(Ok(n)) => {
                    let pkt = Bytes::copy_from_slice(&bufs[port][..n]);
                    if let Err(e) = self.driver.transmit(port, pkt) {
                        tracing::trace!(side = side_name(port), error = %e, "packet dropped");
                    }
                }
                Some(Err(e)) => {
                    return Err(EmulateError::Tun {
                        what: format!("reading side {}'s TUN device", side_name(port)),
                        source: e,
                        hint: "",
                    });
                }
            }
            while let Some(ev) = self.driver.poll_event() {
                if let LinkEvent::Deliver { port, frame } = ev {
                    // A TUN write hands the packet to the kernel; it does not block.
                    match devs[port].get_ref().write_all(&frame) {
                        Ok(_) => self.driver.delivered(port, frame.len()),
                        Err(e) => {
                            tracing::debug!(to = side_name(port), error = %e, "packet not written");
                            self.driver.unroutable(port);
                        }
                    }
                }
            }
        }
        drop(devs);
        self.driver.log_stats();
        Ok(self.driver.summary())
    }
}

async fn read_packet(dev: &AsyncFd<File>, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        let mut g = dev.readable().await?;
        if let Ok(r) = g.try_io(|f| f.get_ref().read(buf)) {
            return r;
        }
    }
}

impl Drop for TunEmulator {
    fn drop(&mut self) {
        // Close the devices first so the namespaces hold nothing of ours.
        self.devs = None;
        for ns in self.created.drain(..) {
            if let Err(e) = ip(&["netns", "del", &ns]) {
                tracing::warn!(netns = %ns, error = %e, "could not delete the namespace; remove it with `ip netns del`");
            }
        }
    }
}
