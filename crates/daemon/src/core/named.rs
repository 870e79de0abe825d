//! UDP peers configured by host name: a link that waits, with the reason in status,
//! until the name resolves; then it runs at the address found, and moves when the
//! name comes to point elsewhere (`crate::resolve` looks names up).

use std::net::SocketAddr;
use std::sync::Arc;

use skywave_node::secure::Channel;
use skywave_proto::LinkId;
use tokio::sync::Notify;

use super::{Core, Io, Sec};
use crate::resolve::{self, Resolved};

/// A configured UDP peer known by name.
#[derive(Debug)]
pub(super) struct Named {
    sock: usize,
    host: String,
    port: u16,
    /// Its link: without an address (down, with the reason) until the name resolves.
    link: LinkId,
    addr: Option<SocketAddr>,
    /// Asks the resolver to look the name up now.
    kick: Arc<Notify>,
}

impl Named {
    fn label(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }
}

impl Core {
    /// Adds UDP socket `sock`'s peer `host:port`: its link, and a task that looks the
    /// name up.
    pub(super) fn add_named_udp(&mut self, sock: usize, host: String, port: u16) {
        let adapter = self.udp_adapter(sock, None);
        let link = self.alloc("udp", format!("udp:{host}:{port}"), Io::None, adapter);
        self.ep.withhold_sealed(link, self.udp[sock].amateur);
        if let Some(e) = self.links.get_mut(&link) {
            e.reason = Some(format!("resolving {host}:{port}"));
        }
        let kick = Arc::new(Notify::new());
        let local = self.udp[sock]
            .sock
            .local_addr()
            .unwrap_or_else(|_| self.udp[sock].cfg.bind);
        tokio::spawn(resolve::run(
            self.named.len(),
            host.clone(),
            port,
            local,
            kick.clone(),
            self.inputs.clone(),
        ));
        self.named.push(Named {
            sock,
            host,
            port,
            link,
            addr: None,
            kick,
        });
    }

    /// A look-up's outcome: the link moves to the address found (keeping the one it
    /// has while that is still among them), or says why it has none.
    pub(super) fn on_resolved(&mut self, r: Resolved) {
        let Some(n) = self.named.get(r.named) else {
            return;
        };
        let (sock, link, label) = (n.sock, n.link, n.label());
        let addrs = match r.result {
            Ok(a) => a,
            Err(why) => {
                let again = format!("trying again in {:.0} s", r.next_in.as_secs_f64());
                match n.addr {
                    None => {
                        let reason = format!("cannot resolve {label}: {why}; {again}");
                        tracing::warn!(peer = %label, "{reason}");
                        if let Some(e) = self.links.get_mut(&link) {
                            e.reason = Some(reason);
                        }
                    }
                    Some(a) => {
                        tracing::warn!(peer = %label, "looking the name up again failed ({why}): keeping {a}; {again}");
                    }
                }
                return;
            }
        };
        if n.addr.is_some_and(|a| addrs.contains(&a)) {
            return;
        }
        let to = addrs[0];
        let from = n.addr;
        match from {
            None => tracing::info!(peer = %label, addr = %to, "peer name resolved"),
            Some(old) => {
                tracing::info!(peer = %label, from = %old, addr = %to, "peer moved: its name resolves to a new address");
                if self.udp[sock].peers.get(&old) == Some(&link) {
                    self.udp[sock].peers.remove(&old);
                }
                self.set_down(link, format!("{label} now resolves to {to}"));
            }
        }
        let name = format!("udp:{label} ({to})");
        // The peer may have reached us first from that address: that link becomes this
        // name's, and the one waiting for the name goes.
        let link = match self.udp[sock].peers.get(&to) {
            Some(&other) if other != link => {
                if let Some(e) = self.links.get_mut(&link) {
                    e.ephemeral = true;
                }
                self.set_down(link, format!("{label} is {to}, already a peer"));
                self.links.remove(&link);
                if let Some(e) = self.links.get_mut(&other) {
                    e.learnt = false;
                    e.name = name;
                }
                other
            }
            _ => {
                let trust = self.udp[sock].trust;
                let known = self.known_keys.get(&to).copied();
                let adapter = self.udp_adapter(sock, Some(to));
                if let Some(e) = self.links.get_mut(&link) {
                    e.io = Io::Udp { sock, addr: to };
                    e.name = name;
                    e.sec = trust.map(|trust| Sec {
                        trust,
                        chan: Channel::new(known),
                        host: Some(to.ip()),
                        key_at: Some(to),
                    });
                }
                self.udp[sock].peers.insert(to, link);
                self.set_up(link, adapter);
                link
            }
        };
        if let Some(n) = self.named.get_mut(r.named) {
            n.link = link;
            n.addr = Some(to);
        }
    }

    /// The peer on `link` fell silent: if it is known by name, look the name up again
    /// now (it may have moved).
    pub(super) fn recheck_name(&self, link: LinkId) {
        for n in self.named.iter().filter(|n| n.link == link) {
            tracing::info!(peer = %n.label(), "peer silent: looking its name up again");
            n.kick.notify_one();
        }
    }
}
