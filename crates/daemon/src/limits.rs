//! Caps on what sync peers and API clients may hold at once (TCP sync connections, in
//! total and per address; HTTP connections; uploads), and a count of every time one of
//! the `[limits]` refused or cut off something (`skywave_limit_hits_total`).
//!
//! A cap is taken as a [`Permit`] that gives its place back when dropped, so a
//! connection's task holds its place for exactly as long as it runs. The timeouts are
//! applied where the waiting happens (ip.rs, serve.rs, http.rs); they only count here.
//!
//! Refusals are logged once per episode, not per attempt: a warning when a cap starts
//! refusing, a line when it has room again (half of it free), with how many were
//! refused in between. A flood costs a counter increment, not a log line.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::config::LimitsConfig;

/// One limit of `[limits]`; its name is its key there and its `limit` label in
/// `/metrics`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    TcpConnections,
    TcpConnectionsPerAddress,
    TcpFirstFrameTimeout,
    HttpConnections,
    HttpHeaderTimeout,
    HttpBodyTimeout,
    HttpSendTimeout,
    MultipartTextMax,
    Uploads,
    /// A peer not on a trust list reached its hourly budget of bundles, or of bytes.
    UntrustedBundlesPerHour,
    UntrustedBytesPerHour,
}

impl Limit {
    pub const ALL: [Limit; 11] = [
        Limit::TcpConnections,
        Limit::TcpConnectionsPerAddress,
        Limit::TcpFirstFrameTimeout,
        Limit::HttpConnections,
        Limit::HttpHeaderTimeout,
        Limit::HttpBodyTimeout,
        Limit::HttpSendTimeout,
        Limit::MultipartTextMax,
        Limit::Uploads,
        Limit::UntrustedBundlesPerHour,
        Limit::UntrustedBytesPerHour,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Limit::TcpConnections => "tcp_connections",
            Limit::TcpConnectionsPerAddress => "tcp_connections_per_address",
            Limit::TcpFirstFrameTimeout => "tcp_first_frame_timeout",
            Limit::HttpConnections => "http_connections",
            Limit::HttpHeaderTimeout => "http_header_timeout",
            Limit::HttpBodyTimeout => "http_body_timeout",
            Limit::HttpSendTimeout => "http_send_timeout",
            Limit::MultipartTextMax => "multipart_text_max",
            Limit::Uploads => "uploads",
            Limit::UntrustedBundlesPerHour => "untrusted_bundles_per_hour",
            Limit::UntrustedBytesPerHour => "untrusted_bytes_per_hour",
        }
    }
}

/// What a cap holds, and whether it is refusing (for logging once per episode).
#[derive(Debug, Default)]
struct Slots {
    held: usize,
    refusing: bool,
    /// Refused since `refusing` turned true.
    refused: u64,
}

impl Slots {
    /// Takes a place if fewer than `max` are held. `Err(true)` when this refusal starts
    /// an episode (the caller logs it).
    fn take(&mut self, max: usize) -> Result<(), bool> {
        if self.held < max {
            self.held += 1;
            return Ok(());
        }
        self.refused += 1;
        Err(!std::mem::replace(&mut self.refusing, true))
    }

    /// Gives a place back. `Some(refused)` when this ends an episode: half the cap is
    /// free again (hysteresis, so a peer hovering at the cap does not log each turn).
    fn put(&mut self, max: usize) -> Option<u64> {
        self.held = self.held.saturating_sub(1);
        if self.refusing && self.held <= max / 2 {
            self.refusing = false;
            return Some(std::mem::take(&mut self.refused));
        }
        None
    }
}

#[derive(Debug, Default)]
struct Held {
    tcp: Slots,
    /// Only addresses holding a connection (or refused while at the cap) have an entry,
    /// so the map is no larger than `tcp_connections`.
    tcp_by_addr: HashMap<IpAddr, Slots>,
    http: Slots,
    uploads: Slots,
}

/// The daemon's limits: settings, what is held against each cap, and the hit counters.
#[derive(Debug)]
pub struct Limits {
    pub cfg: LimitsConfig,
    hits: [AtomicU64; Limit::ALL.len()],
    held: Mutex<Held>,
}

/// A place under a cap, given back when dropped.
#[derive(Debug)]
pub struct Permit {
    limits: Arc<Limits>,
    kind: Kind,
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    Tcp(IpAddr),
    Http,
    Upload,
}

/// A cap that refused: which one and its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refused {
    pub limit: Limit,
    pub max: usize,
}

/// The key a remote address is counted under: IPv4 as is, IPv6 by its /64 (one host
/// usually has a whole /64 to pick addresses from).
pub fn address_key(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V6(v6) => {
            let s = v6.segments();
            IpAddr::V6(std::net::Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
        }
        v4 => v4,
    }
}

impl Limits {
    pub fn new(cfg: LimitsConfig) -> Arc<Limits> {
        Arc::new(Limits {
            cfg,
            hits: Default::default(),
            held: Mutex::default(),
        })
    }

    fn held(&self) -> MutexGuard<'_, Held> {
        // Plain counters: still right after a panic elsewhere.
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Counts one firing of `l`.
    pub fn hit(&self, l: Limit) {
        self.hits[l as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// How often `l` fired.
    pub fn hits(&self, l: Limit) -> u64 {
        self.hits[l as usize].load(Ordering::Relaxed)
    }

    /// What is held against each cap now: TCP sync connections, HTTP connections,
    /// uploads.
    pub fn in_use(&self) -> [(Limit, usize); 3] {
        let h = self.held();
        [
            (Limit::TcpConnections, h.tcp.held),
            (Limit::HttpConnections, h.http.held),
            (Limit::Uploads, h.uploads.held),
        ]
    }

    /// A place for a sync connection accepted from `from`, under both the total and the
    /// per-address cap; a refusal is counted and, once per episode, logged.
    pub fn admit_tcp(self: &Arc<Self>, from: IpAddr) -> Result<Permit, Refused> {
        let key = address_key(from);
        let (total, per) = (
            self.cfg.tcp_connections,
            self.cfg.tcp_connections_per_address,
        );
        let mut h = self.held();
        let h = &mut *h;
        let addr = h.tcp_by_addr.entry(key).or_default();
        let refused = match addr.take(per) {
            Err(first) => {
                if first {
                    tracing::warn!(
                        address = %key,
                        "refusing sync connections from {key}: it holds {per}, the most one address may (limits.tcp_connections_per_address); counted in skywave_limit_hits_total"
                    );
                }
                Refused {
                    limit: Limit::TcpConnectionsPerAddress,
                    max: per,
                }
            }
            Ok(()) => match h.tcp.take(total) {
                Ok(()) => {
                    return Ok(Permit {
                        limits: self.clone(),
                        kind: Kind::Tcp(key),
                    });
                }
                Err(first) => {
                    // Not held after all: the address's place goes back.
                    addr.held -= 1;
                    if first {
                        tracing::warn!(
                            "refusing sync connections: {total} are open, the most the daemon holds (limits.tcp_connections); counted in skywave_limit_hits_total"
                        );
                    }
                    Refused {
                        limit: Limit::TcpConnections,
                        max: total,
                    }
                }
            },
        };
        if addr.held == 0 && !addr.refusing {
            h.tcp_by_addr.remove(&key);
        }
        self.hit(refused.limit);
        Err(refused)
    }

    /// A place for an HTTP connection.
    pub fn admit_http(self: &Arc<Self>) -> Result<Permit, Refused> {
        let max = self.cfg.http_connections;
        let r = self.held().http.take(max);
        self.admit(r, Kind::Http, Limit::HttpConnections, max, || {
            tracing::warn!(
                "refusing HTTP connections: {max} are open, the most the API holds (limits.http_connections); counted in skywave_limit_hits_total"
            )
        })
    }

    /// A place for an upload.
    pub fn admit_upload(self: &Arc<Self>) -> Result<Permit, Refused> {
        let max = self.cfg.uploads;
        let r = self.held().uploads.take(max);
        self.admit(r, Kind::Upload, Limit::Uploads, max, || {
            tracing::warn!(
                "refusing uploads: {max} are under way, the most the API takes at once (limits.uploads); counted in skywave_limit_hits_total"
            )
        })
    }

    fn admit(
        self: &Arc<Self>,
        took: Result<(), bool>,
        kind: Kind,
        limit: Limit,
        max: usize,
        log: impl FnOnce(),
    ) -> Result<Permit, Refused> {
        match took {
            Ok(()) => Ok(Permit {
                limits: self.clone(),
                kind,
            }),
            Err(first) => {
                if first {
                    log();
                }
                self.hit(limit);
                Err(Refused { limit, max })
            }
        }
    }
}

impl Permit {
    /// The limits this place was taken under.
    pub fn limits(&self) -> &Arc<Limits> {
        &self.limits
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        let l = &self.limits;
        let mut h = l.held();
        match self.kind {
            Kind::Tcp(key) => {
                if let Some(refused) = h.tcp.put(l.cfg.tcp_connections) {
                    tracing::info!("accepting sync connections again ({refused} refused)");
                }
                if let Some(a) = h.tcp_by_addr.get_mut(&key) {
                    if let Some(refused) = a.put(l.cfg.tcp_connections_per_address) {
                        tracing::info!(
                            address = %key,
                            "accepting sync connections from {key} again ({refused} refused)"
                        );
                    }
                    if a.held == 0 && !a.refusing {
                        h.tcp_by_addr.remove(&key);
                    }
                }
            }
            Kind::Http => {
                if let Some(refused) = h.http.put(l.cfg.http_connections) {
                    tracing::info!("accepting HTTP connections again ({refused} refused)");
                }
            }
            Kind::Upload => {
                if let Some(refused) = h.uploads.put(l.cfg.uploads) {
                    tracing::info!("taking uploads again ({refused} refused)");
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(total: usize, per: usize) -> Arc<Limits> {
        Limits::new(LimitsConfig {
            tcp_connections: total,
            tcp_connections_per_address: per,
            uploads: 1,
            ..LimitsConfig::default()
        })
    }

    #[test]
    fn tcp_caps_per_address_and_in_total_and_give_places_back() {
        let l = limits(3, 2);
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        let b: IpAddr = "192.0.2.2".parse().unwrap();
        let c: IpAddr = "192.0.2.3".parse().unwrap();
        let a1 = l.admit_tcp(a).unwrap();
        let _a2 = l.admit_tcp(a).unwrap();
        let per = Refused {
            limit: Limit::TcpConnectionsPerAddress,
            max: 2,
        };
        assert_eq!(l.admit_tcp(a).unwrap_err(), per);
        assert_eq!(l.admit_tcp(a).unwrap_err(), per);
        // Another address is not held up by the first.
        let _b1 = l.admit_tcp(b).unwrap();
        let total = Refused {
            limit: Limit::TcpConnections,
            max: 3,
        };
        assert_eq!(l.admit_tcp(c).unwrap_err(), total);
        assert_eq!(l.hits(Limit::TcpConnectionsPerAddress), 2);
        assert_eq!(l.hits(Limit::TcpConnections), 1);
        assert_eq!(l.in_use()[0], (Limit::TcpConnections, 3));
        // A refusal by the total does not keep the address's place.
        drop(a1);
        let _c1 = l.admit_tcp(c).unwrap();
        let _a3 = l.admit_tcp(a).unwrap_err();
        assert_eq!(l.in_use()[0], (Limit::TcpConnections, 3));
    }

    #[test]
    fn the_address_table_holds_only_addresses_with_connections() {
        let l = limits(1000, 2);
        let permits: Vec<Permit> = (0..100u8)
            .map(|i| l.admit_tcp(IpAddr::from([10, 0, 0, i])).unwrap())
            .collect();
        assert_eq!(l.held().tcp_by_addr.len(), 100);
        drop(permits);
        assert_eq!(l.held().tcp_by_addr.len(), 0);
        assert_eq!(l.in_use()[0].1, 0);
        // A refused address is forgotten once its connections close.
        let a = IpAddr::from([10, 0, 0, 1]);
        let (p1, p2) = (l.admit_tcp(a).unwrap(), l.admit_tcp(a).unwrap());
        assert!(l.admit_tcp(a).is_err());
        drop((p1, p2));
        assert_eq!(l.held().tcp_by_addr.len(), 0);
    }

    #[test]
    fn ipv6_addresses_count_by_their_64() {
        let l = limits(10, 1);
        let _p = l.admit_tcp("2001:db8:1:2::1".parse().unwrap()).unwrap();
        assert!(
            l.admit_tcp("2001:db8:1:2:ffff::9".parse().unwrap())
                .is_err()
        );
        let _q = l.admit_tcp("2001:db8:1:3::1".parse().unwrap()).unwrap();
        // An IPv4-mapped address is the IPv4 address.
        let _r = l.admit_tcp("192.0.2.7".parse().unwrap()).unwrap();
        assert!(l.admit_tcp("::ffff:192.0.2.7".parse().unwrap()).is_err());
    }

    #[test]
    fn an_episode_of_refusals_starts_once_and_ends_when_half_the_cap_is_free() {
        let mut s = Slots::default();
        assert_eq!(s.take(4), Ok(()));
        for _ in 0..3 {
            s.take(4).unwrap();
        }
        assert_eq!(s.take(4), Err(true));
        assert_eq!(s.take(4), Err(false));
        assert_eq!(s.put(4), None); // 3 held
        s.take(4).unwrap();
        assert_eq!(s.take(4), Err(false)); // still the same episode
        assert_eq!(s.put(4), None);
        assert_eq!(s.put(4), Some(3)); // 2 held: half free
        assert_eq!(s.put(4), None);
    }

    #[test]
    fn every_limit_is_in_the_example_configuration_and_the_docs() {
        let docs = include_str!("../../../docs/daemon.md");
        for l in Limit::ALL {
            let key = l.name();
            assert!(
                crate::config::EXAMPLE.contains(&format!("# {key} = ")),
                "{key} is not in the example configuration"
            );
            assert!(
                docs.contains(&format!("| `{key}` |")),
                "{key} has no row in docs/daemon.md"
            );
        }
    }

    #[test]
    fn uploads_and_http_connections_are_capped() {
        let l = limits(1, 1);
        let u = l.admit_upload().unwrap();
        assert_eq!(
            l.admit_upload().unwrap_err(),
            Refused {
                limit: Limit::Uploads,
                max: 1
            }
        );
        drop(u);
        let _u = l.admit_upload().unwrap();
        assert_eq!(l.hits(Limit::Uploads), 1);
        let _h: Vec<Permit> = (0..128).map(|_| l.admit_http().unwrap()).collect();
        assert!(l.admit_http().is_err());
        assert_eq!(l.hits(Limit::HttpConnections), 1);
    }
}
