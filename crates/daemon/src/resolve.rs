//! Host names of configured UDP peers: looked up off the core task, again after a
//! failure (doubling backoff with jitter, up to [`RETRY_MAX`]), every [`REFRESH`]
//! after a success, and at once when the core asks (the peer fell silent), so a peer
//! whose address changes is followed.
//!
//! This task only looks names up; which address a link uses, and what a change does
//! to the link, is the core's (`core::named`). TCP peers need none of this: each
//! connection attempt looks the name up again.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Notify, mpsc};

use crate::core::Input;

/// First wait after a failed look-up; it doubles per failure.
pub const RETRY_MIN: Duration = Duration::from_secs(1);
/// Longest wait between look-ups of a name that does not resolve.
pub const RETRY_MAX: Duration = Duration::from_secs(300);
/// Look-ups of a name that resolves, to follow an address that changes.
pub const REFRESH: Duration = Duration::from_secs(300);
/// A look-up that takes longer (an unreachable DNS server) counts as failed.
const LOOKUP_TIMEOUT: Duration = Duration::from_secs(10);

/// The wait before look-up number `failures + 1` of a name that failed `failures`
/// times: doubling from [`RETRY_MIN`] up to [`RETRY_MAX`], less up to a quarter at
/// random (`jitter` in 0..1), so daemons started together do not ask in step.
pub fn retry_after(failures: u32, jitter: f64) -> Duration {
    let base = RETRY_MIN
        .saturating_mul(1u32 << failures.saturating_sub(1).min(16))
        .min(RETRY_MAX);
    base.mul_f64(1.0 - 0.25 * jitter.clamp(0.0, 1.0))
}

/// The addresses a socket bound at `local` can send to, in the resolver's order: the
/// socket's own family (an IPv6 socket also reaches IPv4 addresses, as mapped ones).
pub fn usable(addrs: &[SocketAddr], local: SocketAddr) -> Vec<SocketAddr> {
    match local {
        SocketAddr::V4(_) => addrs.iter().filter(|a| a.is_ipv4()).copied().collect(),
        SocketAddr::V6(_) => {
            let mapped = |a: &SocketAddr| match a {
                SocketAddr::V4(v4) => SocketAddr::new(v4.ip().to_ipv6_mapped().into(), v4.port()),
                v6 => *v6,
            };
            // Native IPv6 first, then IPv4 through the dual-stack socket.
            let mut v: Vec<SocketAddr> = addrs.iter().filter(|a| a.is_ipv6()).copied().collect();
            v.extend(addrs.iter().filter(|a| a.is_ipv4()).map(mapped));
            v
        }
    }
}

/// One look-up's outcome, as the core is told it.
#[derive(Debug)]
pub struct Resolved {
    /// Index of the name in the core's table.
    pub named: usize,
    /// Usable addresses (never empty), or why there are none.
    pub result: Result<Vec<SocketAddr>, String>,
    /// When the name is looked up again (unless the core asks sooner).
    pub next_in: Duration,
}

/// Looks `host:port` up for a UDP socket bound at `local` until the core stops,
/// telling it each outcome. `kick` asks for a look-up now.
pub async fn run(
    named: usize,
    host: String,
    port: u16,
    local: SocketAddr,
    kick: Arc<Notify>,
    core: mpsc::Sender<Input>,
) {
    let mut failures = 0u32;
    let mut rng = crate::core::jitter_seed();
    loop {
        let looked = tokio::time::timeout(
            LOOKUP_TIMEOUT,
            tokio::net::lookup_host((host.as_str(), port)),
        )
        .await;
        let result = match looked {
            Err(_) => Err(format!("no answer within {LOOKUP_TIMEOUT:?}")),
            Ok(Err(e)) => Err(e.to_string()),
            Ok(Ok(it)) => {
                let all: Vec<SocketAddr> = it.collect();
                let ok = usable(&all, local);
                if ok.is_empty() {
                    Err(if all.is_empty() {
                        "it has no addresses".to_string()
                    } else {
                        format!(
                            "it has only addresses this link's socket ({local}) cannot reach: {}",
                            all.iter()
                                .map(ToString::to_string)
                                .collect::<Vec<_>>()
                                .join(", ")
                        )
                    })
                } else {
                    Ok(ok)
                }
            }
        };
        let next_in = if result.is_ok() {
            failures = 0;
            REFRESH
        } else {
            failures += 1;
            // xorshift64: jitter only, no need for quality.
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            retry_after(failures, (rng >> 11) as f64 / (1u64 << 53) as f64)
        };
        let r = Resolved {
            named,
            result,
            next_in,
        };
        if core.send(Input::Resolved(r)).await.is_err() {
            return;
        }
        tokio::select! {
            () = tokio::time::sleep(next_in) => {}
            () = kick.notified() => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_back_off_to_a_ceiling_with_jitter_below() {
        assert_eq!(retry_after(1, 0.0), RETRY_MIN);
        assert_eq!(retry_after(2, 0.0), RETRY_MIN * 2);
        assert_eq!(retry_after(4, 0.0), RETRY_MIN * 8);
        assert_eq!(retry_after(30, 0.0), RETRY_MAX);
        assert_eq!(retry_after(u32::MAX, 0.0), RETRY_MAX);
        let j = retry_after(4, 1.0);
        assert!(j >= RETRY_MIN * 6 && j < RETRY_MIN * 8, "{j:?}");
        let mut last = Duration::ZERO;
        for f in 1..40 {
            let d = retry_after(f, 0.0);
            assert!(d >= last && d <= RETRY_MAX);
            last = d;
        }
    }

    #[test]
    fn a_socket_sends_to_its_own_family_and_ipv6_reaches_ipv4_mapped() {
        let v4: SocketAddr = "192.0.2.1:7474".parse().unwrap();
        let v6: SocketAddr = "[2001:db8::1]:7474".parse().unwrap();
        let on4: SocketAddr = "0.0.0.0:0".parse().unwrap();
        let on6: SocketAddr = "[::]:0".parse().unwrap();
        assert_eq!(usable(&[v6, v4], on4), vec![v4]);
        assert_eq!(usable(&[v6], on4), vec![]);
        let mapped: SocketAddr = "[::ffff:192.0.2.1]:7474".parse().unwrap();
        assert_eq!(usable(&[v4, v6], on6), vec![v6, mapped]);
    }
}
