//! Who may use the HTTP API: the token, the `Host` a request names, and where a write
//! comes from. Pure checks over a request's method and headers; http.rs applies them to
//! every request before its handler runs. docs/api.md ("Address and token") is the
//! user's view.
//!
//! - Every call that is not a read (GET, HEAD) needs the token, on every address.
//! - Reads need it too, unless the user lets them go without (`open_reads = true`),
//!   which only a loopback bind honours.
//! - The `Host` must name this daemon: the address the connection came in on,
//!   `localhost` on a loopback bind, or a configured name (`http_hosts`). A web page
//!   that rebinds its own DNS name to 127.0.0.1 sends its name and is refused. A request
//!   without a `Host` (HTTP/1.0) is taken only on a loopback bind.
//! - A write that a browser says comes from another origin (`Origin`,
//!   `Sec-Fetch-Site`) is refused even with the token. No CORS headers are ever sent.
//! - The web UI's static files (webui.rs) are read without the token: they hold no
//!   node data, and the page they make asks for the token before it reads any.

use std::net::{IpAddr, SocketAddr};

use axum::http::{HeaderMap, Method, StatusCode, Uri, header};

/// The access rules of one running API.
#[derive(Debug)]
pub struct Access {
    token: String,
    /// Reads go without the token (`open_reads` on a loopback bind).
    open_reads: bool,
    /// Configured names, lowercase, each with the port it must come with (any if none).
    hosts: Vec<(String, Option<u16>)>,
    bound: SocketAddr,
}

/// Why a request was refused: its status and a message saying what to send or set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub status: StatusCode,
    pub message: String,
}

impl Refused {
    fn new(status: StatusCode, message: String) -> Refused {
        Refused { status, message }
    }
}

impl Access {
    /// Rules for an API bound to `bound` with `token`. `open_reads` is honoured only
    /// when `bound` is a loopback address; `hosts` are names as configured (`node.local`
    /// or `node.local:7473`) and were checked by [`check_host_name`].
    pub fn new(token: String, bound: SocketAddr, open_reads: bool, hosts: &[String]) -> Access {
        let hosts = hosts
            .iter()
            .filter_map(|h| split_authority(h))
            .map(|(h, p)| (h.to_ascii_lowercase(), p))
            .collect();
        Access {
            token,
            open_reads: open_reads && bound.ip().is_loopback(),
            hosts,
            bound,
        }
    }

    /// The address the API is bound to.
    pub fn bound(&self) -> SocketAddr {
        self.bound
    }

    /// Whether reads go without the token.
    pub fn open_reads(&self) -> bool {
        self.open_reads
    }

    /// Checks one request that arrived on a connection to `local`. In order: the host it
    /// names (421), where a write comes from (403), the token (401).
    pub fn check(
        &self,
        method: &Method,
        uri: &Uri,
        headers: &HeaderMap,
        local: SocketAddr,
    ) -> Result<(), Refused> {
        self.check_host(uri, headers, local)?;
        let read = matches!(*method, Method::GET | Method::HEAD);
        if !read {
            self.check_origin(headers, local)?;
        }
        let page = read && crate::webui::PAGE_PATHS.contains(&uri.path());
        if page || (read && self.open_reads) || self.token_ok(headers) {
            return Ok(());
        }
        let message = if read {
            "reading needs the node's token: send `Authorization: Bearer TOKEN` with the token from the node directory's http-token file (or set `open_reads = true` to read without it on a loopback address)"
        } else {
            "this call changes the node and needs its token: send `Authorization: Bearer TOKEN` with the token from the node directory's http-token file"
        };
        Err(Refused::new(StatusCode::UNAUTHORIZED, message.into()))
    }

    fn check_host(&self, uri: &Uri, headers: &HeaderMap, local: SocketAddr) -> Result<(), Refused> {
        let mut hosts = headers.get_all(header::HOST).iter();
        let (host, more) = (hosts.next(), hosts.next());
        if more.is_some() {
            return Err(Refused::new(
                StatusCode::BAD_REQUEST,
                "more than one Host header".into(),
            ));
        }
        let host = match host.map(|h| h.to_str()) {
            Some(Ok(h)) => Some(h),
            Some(Err(_)) => Some("(not ASCII)"),
            None => None,
        };
        // An absolute-form request line names its host too; both must be this daemon.
        for named in host.into_iter().chain(uri.authority().map(|a| a.as_str())) {
            if !self.host_allowed(named, 80, local) {
                return Err(Refused::new(
                    StatusCode::MISDIRECTED_REQUEST,
                    format!(
                        "the Host '{named}' does not name this daemon (it answers to http://{local}{}): a web page may be rebinding its name to this address. If the daemon is reached by this name, add it to `http_hosts` in the configuration (or pass --http-host NAME)",
                        if local.ip().is_loopback() {
                            format!(" and http://localhost:{}", local.port())
                        } else {
                            String::new()
                        }
                    ),
                ));
            }
        }
        if host.is_none() && uri.authority().is_none() && !self.bound.ip().is_loopback() {
            return Err(Refused::new(
                StatusCode::MISDIRECTED_REQUEST,
                format!(
                    "a request without a Host header is taken only on a loopback address; send `Host: {local}`"
                ),
            ));
        }
        Ok(())
    }

    /// A write a browser sends for a page must come from the daemon's own origin. Pages
    /// cannot read the token, but a page the user opened could otherwise post to any
    /// address the user's machine reaches; this holds even if the token leaked.
    fn check_origin(&self, headers: &HeaderMap, local: SocketAddr) -> Result<(), Refused> {
        let refuse = |what: String| {
            Refused::new(
                StatusCode::FORBIDDEN,
                format!(
                    "{what}: a web page elsewhere may not change this node, with or without the token. Call the API from a program (curl, the skywave CLI) or from the daemon's own origin; a name it is reached by goes in `http_hosts`"
                ),
            )
        };
        if let Some(site) = headers.get("sec-fetch-site") {
            let site = site.to_str().unwrap_or("");
            if !matches!(site, "same-origin" | "none") {
                return Err(refuse(format!(
                    "the request comes from another site (Sec-Fetch-Site: {site})"
                )));
            }
        }
        if let Some(origin) = headers.get(header::ORIGIN) {
            let o = origin.to_str().unwrap_or("(not ASCII)");
            let own = match o.split_once("://") {
                Some(("http", a)) => self.host_allowed(a, 80, local),
                Some(("https", a)) => self.host_allowed(a, 443, local),
                _ => false,
            };
            if !own {
                return Err(refuse(format!(
                    "the request comes from another origin (Origin: {o})"
                )));
            }
        }
        Ok(())
    }

    /// Whether `authority` (`host[:port]`, the port `default_port` when absent) names
    /// this daemon on a connection to `local`.
    fn host_allowed(&self, authority: &str, default_port: u16, local: SocketAddr) -> bool {
        let Some((host, port)) = split_authority(authority) else {
            return false;
        };
        let host = host.to_ascii_lowercase();
        let port_ok = port.unwrap_or(default_port) == local.port();
        if let Ok(ip) = host.parse::<IpAddr>() {
            let ip = ip.to_canonical();
            if port_ok && (ip == local.ip().to_canonical() || ip == self.bound.ip().to_canonical())
            {
                return true;
            }
        } else if host == "localhost" && port_ok && local.ip().to_canonical().is_loopback() {
            return true;
        }
        self.hosts
            .iter()
            .any(|(h, p)| *h == host && p.is_none_or(|p| p == port.unwrap_or(default_port)))
    }

    /// Whether the request carries the token (`Authorization: Bearer TOKEN`, the scheme
    /// in any case).
    fn token_ok(&self, headers: &HeaderMap) -> bool {
        headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .is_some_and(|(_, t)| constant_time_eq(t.trim().as_bytes(), self.token.as_bytes()))
    }
}

/// `host`, `host:port`, `[v6]` or `[v6]:port` split into the host (brackets removed)
/// and the port; `None` if it is none of these.
fn split_authority(a: &str) -> Option<(&str, Option<u16>)> {
    let (host, port) = if let Some(rest) = a.strip_prefix('[') {
        let (h, after) = rest.split_once(']')?;
        h.parse::<std::net::Ipv6Addr>().ok()?;
        match after {
            "" => (h, None),
            p => (h, Some(p.strip_prefix(':')?)),
        }
    } else {
        match a.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (a, None),
        }
    };
    let port = match port {
        Some(p) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => Some(p.parse().ok()?),
        Some(_) => return None,
        None => None,
    };
    let name_ok = a.starts_with('[')
        || (!host.is_empty()
            && host
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-._".contains(&b)));
    name_ok.then_some((host, port))
}

/// Refuses a configured name that is not `host` or `host:port` (letters, digits, `-`,
/// `.`; an IPv6 address in brackets).
pub fn check_host_name(name: &str) -> Result<(), String> {
    match split_authority(name) {
        Some(_) => Ok(()),
        None => Err("a host name, optionally with :PORT (node.local, node.local:7473)".into()),
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &str = "0123456789abcdef0123456789abcdef0123456789abcdef";

    fn req(
        a: &Access,
        method: Method,
        headers: &[(&str, &str)],
        local: &str,
    ) -> Result<(), StatusCode> {
        let mut h = HeaderMap::new();
        for (k, v) in headers {
            h.append(
                axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        a.check(
            &method,
            &Uri::from_static("/v1/status"),
            &h,
            local.parse().unwrap(),
        )
        .map_err(|r| r.status)
    }

    #[test]
    fn tokens_compare_whole() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
    }

    #[test]
    fn every_write_needs_the_token_and_reads_unless_opened_on_loopback() {
        let bearer = format!("Bearer {TOKEN}");
        let lo = "127.0.0.1:7473";
        let host = [("Host", lo)];
        let a = Access::new(TOKEN.into(), lo.parse().unwrap(), false, &[]);
        assert_eq!(
            req(&a, Method::POST, &host, lo),
            Err(StatusCode::UNAUTHORIZED)
        );
        assert_eq!(
            req(&a, Method::GET, &host, lo),
            Err(StatusCode::UNAUTHORIZED)
        );
        assert_eq!(
            req(&a, Method::DELETE, &host, lo),
            Err(StatusCode::UNAUTHORIZED)
        );
        let ok = [("Host", lo), ("Authorization", bearer.as_str())];
        assert_eq!(req(&a, Method::POST, &ok, lo), Ok(()));
        assert_eq!(req(&a, Method::GET, &ok, lo), Ok(()));
        for scheme in ["bearer", "BEARER", "BeArEr"] {
            let v = format!("{scheme} {TOKEN}");
            let h = [("Host", lo), ("Authorization", v.as_str())];
            assert_eq!(req(&a, Method::POST, &h, lo), Ok(()), "{scheme}");
        }
        for bad in [
            "Bearer",
            "Bearer x",
            "Basic dXNlcjpwYXNz",
            TOKEN,
            "Token abc",
        ] {
            let h = [("Host", lo), ("Authorization", bad)];
            assert_eq!(
                req(&a, Method::POST, &h, lo),
                Err(StatusCode::UNAUTHORIZED),
                "{bad}"
            );
        }
        let open = Access::new(TOKEN.into(), lo.parse().unwrap(), true, &[]);
        assert!(open.open_reads());
        assert_eq!(req(&open, Method::GET, &host, lo), Ok(()));
        assert_eq!(req(&open, Method::HEAD, &host, lo), Ok(()));
        assert_eq!(
            req(&open, Method::POST, &host, lo),
            Err(StatusCode::UNAUTHORIZED)
        );
        // Not honoured off loopback.
        let lan = "192.0.2.1:7473";
        let wide = Access::new(TOKEN.into(), lan.parse().unwrap(), true, &[]);
        assert!(!wide.open_reads());
        assert_eq!(
            req(&wide, Method::GET, &[("Host", lan)], lan),
            Err(StatusCode::UNAUTHORIZED)
        );
    }

    #[test]
    fn the_web_ui_files_are_read_without_the_token_and_nothing_else_is() {
        let lo = "127.0.0.1:7473";
        let a = Access::new(TOKEN.into(), lo.parse().unwrap(), false, &[]);
        let check = |method: Method, path: &str, host: &str| {
            let mut h = HeaderMap::new();
            h.insert(header::HOST, host.parse().unwrap());
            a.check(&method, &path.parse().unwrap(), &h, lo.parse().unwrap())
                .map_err(|r| r.status)
        };
        for path in crate::webui::PAGE_PATHS {
            assert_eq!(check(Method::GET, path, lo), Ok(()), "{path}");
            assert_eq!(check(Method::HEAD, path, lo), Ok(()), "{path}");
            // Still this daemon's page only, and never a write.
            assert_eq!(
                check(Method::GET, path, "evil.example:7473"),
                Err(StatusCode::MISDIRECTED_REQUEST),
                "{path}"
            );
            assert_eq!(
                check(Method::POST, path, lo),
                Err(StatusCode::UNAUTHORIZED),
                "{path}"
            );
        }
        for path in [
            "/v1/status",
            "/v1/bundles",
            "/v1/events",
            "/metrics",
            "/ui/",
            "/ui/other.js",
            "/index.html",
        ] {
            assert_eq!(
                check(Method::GET, path, lo),
                Err(StatusCode::UNAUTHORIZED),
                "{path}"
            );
        }
    }

    #[test]
    fn the_host_must_name_this_daemon() {
        let bearer = format!("Bearer {TOKEN}");
        let auth = ("Authorization", bearer.as_str());
        let a = Access::new(
            TOKEN.into(),
            "0.0.0.0:7473".parse().unwrap(),
            false,
            &["Node.Local".into(), "proxy.example:8080".into()],
        );
        let lo = "127.0.0.1:7473";
        let lan = "192.0.2.1:7473";
        for (host, local) in [
            ("127.0.0.1:7473", lo),
            ("localhost:7473", lo),
            ("LOCALHOST:7473", lo),
            ("192.0.2.1:7473", lan),
            ("0.0.0.0:7473", lan),
            ("node.local", lan),
            ("node.local:9999", lan),
            ("proxy.example:8080", lan),
        ] {
            assert_eq!(
                req(&a, Method::GET, &[("Host", host), auth], local),
                Ok(()),
                "{host}"
            );
        }
        for (host, local) in [
            ("evil.example:7473", lo),
            ("127.0.0.1:7474", lo),
            ("127.0.0.1", lo),
            ("localhost:7473", lan),
            ("192.0.2.1:7473", lo),
            ("proxy.example", lan),
            ("proxy.example:80", lan),
            ("node.local.evil.example", lan),
            ("127.0.0.1:7473:1", lo),
            ("", lo),
        ] {
            assert_eq!(
                req(&a, Method::GET, &[("Host", host), auth], local),
                Err(StatusCode::MISDIRECTED_REQUEST),
                "{host} on {local}"
            );
        }
        // No Host: only on a loopback bind.
        assert_eq!(
            req(&a, Method::GET, &[auth], lo),
            Err(StatusCode::MISDIRECTED_REQUEST)
        );
        let l = Access::new(TOKEN.into(), lo.parse().unwrap(), false, &[]);
        assert_eq!(req(&l, Method::GET, &[auth], lo), Ok(()));
        // IPv6, and an IPv4 client of a dual-stack socket.
        let v6 = Access::new(TOKEN.into(), "[::]:7473".parse().unwrap(), false, &[]);
        let h = [("Host", "[::1]:7473"), auth];
        assert_eq!(req(&v6, Method::GET, &h, "[::1]:7473"), Ok(()));
        let h = [("Host", "127.0.0.1:7473"), auth];
        assert_eq!(req(&v6, Method::GET, &h, "[::ffff:127.0.0.1]:7473"), Ok(()));
        let h = [("Host", "[::1]:7473"), ("Host", "[::1]:7473"), auth];
        assert_eq!(
            req(&v6, Method::GET, &h, "[::1]:7473"),
            Err(StatusCode::BAD_REQUEST)
        );
    }

    #[test]
    fn writes_from_another_origin_are_refused_with_the_token() {
        let bearer = format!("Bearer {TOKEN}");
        let lo = "127.0.0.1:7473";
        let a = Access::new(
            TOKEN.into(),
            lo.parse().unwrap(),
            true,
            &["node.local".into()],
        );
        let with = |extra: &[(&'static str, &'static str)]| {
            let mut h = vec![("Host", lo), ("Authorization", bearer.as_str())];
            h.extend_from_slice(extra);
            h
        };
        for extra in [
            &[("Origin", "http://evil.example")][..],
            &[("Origin", "null")],
            &[("Origin", "http://127.0.0.1:8000")],
            &[("Origin", "http://localhost:3000")],
            &[("Origin", "file://")],
            &[("Sec-Fetch-Site", "cross-site")],
            &[("Sec-Fetch-Site", "same-site")],
            &[
                ("Origin", "http://127.0.0.1:7473"),
                ("Sec-Fetch-Site", "cross-site"),
            ],
        ] {
            assert_eq!(
                req(&a, Method::POST, &with(extra), lo),
                Err(StatusCode::FORBIDDEN),
                "{extra:?}"
            );
            // Reads are not writes: the token (or open_reads) decides.
            assert_eq!(req(&a, Method::GET, &with(extra), lo), Ok(()), "{extra:?}");
        }
        for extra in [
            &[("Origin", "http://127.0.0.1:7473")][..],
            &[("Origin", "http://localhost:7473")],
            &[("Origin", "http://node.local")],
            &[("Sec-Fetch-Site", "same-origin")],
            &[("Sec-Fetch-Site", "none")],
        ] {
            assert_eq!(req(&a, Method::POST, &with(extra), lo), Ok(()), "{extra:?}");
        }
    }

    #[test]
    fn configured_names_are_checked() {
        for ok in [
            "node.local",
            "node.local:7473",
            "10.0.0.1",
            "[fe80::1]:80",
            "n-1",
        ] {
            assert!(check_host_name(ok).is_ok(), "{ok}");
        }
        for bad in [
            "http://node.local",
            "node.local/",
            "",
            "a:b",
            "node.local:99999",
            "fe80::1",
            "a b",
        ] {
            assert!(check_host_name(bad).is_err(), "{bad}");
        }
    }
}
