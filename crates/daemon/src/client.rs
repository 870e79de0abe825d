//! Finding and calling a running daemon (blocking; for the CLI and tests). Every call
//! sends the node's token, reads included.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, bail};

use crate::status::Status;
use crate::{RUNTIME_FILE, RuntimeInfo, TOKEN_FILE};

/// A daemon's HTTP API.
#[derive(Debug, Clone)]
pub struct Client {
    pub base: String,
    token: Option<String>,
    agent: ureq::Agent,
}

/// Whether process `pid` exists.
fn alive(pid: u32) -> bool {
    let Ok(pid) = i32::try_from(pid) else {
        return false;
    };
    // Signal 0 checks existence and permission without sending anything.
    match nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None) {
        Ok(()) => true,
        Err(nix::errno::Errno::EPERM) => true,
        Err(_) => false,
    }
}

impl Client {
    /// A client for the API at `base` (`http://127.0.0.1:7473`).
    pub fn new(base: impl Into<String>, token: Option<String>) -> Client {
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_connect(Some(Duration::from_secs(3)))
            .build();
        Client {
            base: base.into().trim_end_matches('/').to_string(),
            token,
            agent: ureq::Agent::new_with_config(config),
        }
    }

    /// The daemon running on node directory `dir`, if one is.
    pub fn find(dir: &Path) -> Option<Client> {
        let text = std::fs::read_to_string(dir.join(RUNTIME_FILE)).ok()?;
        let info: RuntimeInfo = serde_json::from_str(&text).ok()?;
        if !alive(info.pid) {
            return None;
        }
        Some(Client::for_node(dir, &info))
    }

    /// A client for the daemon `info` describes, with the token from node directory
    /// `dir` (none if it cannot be read: then only what the daemon lets go without works).
    pub fn for_node(dir: &Path, info: &RuntimeInfo) -> Client {
        let token = std::fs::read_to_string(dir.join(TOKEN_FILE))
            .ok()
            .map(|t| t.trim().to_string());
        // Bound to every address: reach it on loopback.
        let mut addr = info.http;
        if addr.ip().is_unspecified() {
            addr.set_ip(match addr {
                std::net::SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
                std::net::SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
            });
        }
        Client::new(format!("http://{addr}"), token)
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// `req` with the node's token, if there is one.
    fn authorized<B>(&self, req: ureq::RequestBuilder<B>) -> ureq::RequestBuilder<B> {
        match &self.token {
            Some(t) => req.header("Authorization", format!("Bearer {t}")),
            None => req,
        }
    }

    fn get(&self, path: &str) -> ureq::RequestBuilder<ureq::typestate::WithoutBody> {
        self.authorized(self.agent.get(self.url(path)))
    }

    fn check(
        &self,
        what: &str,
        r: Result<ureq::http::Response<ureq::Body>, ureq::Error>,
    ) -> anyhow::Result<ureq::http::Response<ureq::Body>> {
        let r = r.with_context(|| format!("{what}: the daemon at {} did not answer", self.base))?;
        if r.status().is_success() {
            return Ok(r);
        }
        let status = r.status();
        let mut body = String::new();
        let _ = r
            .into_body()
            .into_reader()
            .take(64 * 1024)
            .read_to_string(&mut body);
        let msg = serde_json::from_str::<serde_json::Value>(&body)
            .ok()
            .and_then(|v| v["error"].as_str().map(str::to_string))
            .unwrap_or(body);
        // The message may quote what a peer wrote; it ends up on a terminal.
        let msg = skywave_bundle::text::printable(&msg);
        bail!("{what}: {msg} (HTTP {})", status.as_u16())
    }

    /// GET `path`, parsed as JSON.
    pub fn get_json<T: serde::de::DeserializeOwned>(&self, path: &str) -> anyhow::Result<T> {
        let r = self.check(&format!("GET {path}"), self.get(path).call())?;
        serde_json::from_reader(r.into_body().into_reader())
            .with_context(|| format!("GET {path}: the daemon's answer is not the expected JSON"))
    }

    pub fn status(&self) -> anyhow::Result<Status> {
        self.get_json("/v1/status")
    }

    /// POST a body read from `body` to `path` (query included); the answer as JSON.
    pub fn post_reader(
        &self,
        path: &str,
        body: &mut dyn Read,
    ) -> anyhow::Result<serde_json::Value> {
        let req = self.authorized(self.agent.post(self.url(path)));
        let r = self.check(
            &format!("POST {path}"),
            req.send(ureq::SendBody::from_reader(body)),
        )?;
        serde_json::from_reader(r.into_body().into_reader())
            .with_context(|| format!("POST {path}: the daemon's answer is not JSON"))
    }

    /// DELETE `path`; the answer as JSON.
    pub fn delete_json(&self, path: &str) -> anyhow::Result<serde_json::Value> {
        let req = self.authorized(self.agent.delete(self.url(path)));
        let r = self.check(&format!("DELETE {path}"), req.call())?;
        serde_json::from_reader(r.into_body().into_reader())
            .with_context(|| format!("DELETE {path}: the daemon's answer is not JSON"))
    }

    /// Streams a bundle's payload as held (a sealed one sealed) into `out`; returns the
    /// bytes written.
    pub fn payload(&self, id: &str, out: &mut dyn Write) -> anyhow::Result<u64> {
        // As held: a sealed payload comes sealed, and the caller opens it if it may.
        self.get_bytes(&format!("/v1/bundles/{id}/payload?sealed=raw"), &[], out)
    }

    /// GET `path` with `headers`, the body streamed into `out`; returns the bytes written.
    pub fn get_bytes(
        &self,
        path: &str,
        headers: &[(&str, &str)],
        out: &mut dyn Write,
    ) -> anyhow::Result<u64> {
        let mut req = self.get(path);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let r = self.check(&format!("GET {path}"), req.call())?;
        let n = std::io::copy(&mut r.into_body().into_reader(), out)
            .with_context(|| format!("GET {path}: reading the body"))?;
        Ok(n)
    }

    /// Follows `/v1/events` from `since`, calling `f` with each event's JSON until it
    /// returns false or the stream ends.
    pub fn follow_events(
        &self,
        since: Option<u64>,
        mut f: impl FnMut(serde_json::Value) -> bool,
    ) -> anyhow::Result<()> {
        let path = match since {
            Some(s) => format!("/v1/events?since={s}"),
            None => "/v1/events".into(),
        };
        let r = self.check(&format!("GET {path}"), self.get(&path).call())?;
        let rd = BufReader::new(r.into_body().into_reader());
        for line in rd.lines() {
            let line = line.context("reading the event stream")?;
            if let Some(data) = line.strip_prefix("data:")
                && let Ok(v) = serde_json::from_str(data.trim())
                && !f(v)
            {
                return Ok(());
            }
        }
        Ok(())
    }
}
