//! The HTTP API's connection loop: hyper's HTTP/1.1 server under the `[limits]` on
//! connections held (`http_connections`), the time to send a request's headers, which is
//! also the keep-alive idle time (`http_header_timeout`), and responses a client stops
//! taking (`http_send_timeout`). It stands in for `axum::serve`, which takes no settings.
//! Request bodies and uploads are bounded by the router (http.rs), not here.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tower::ServiceExt;

use crate::http::Conn;
use crate::limits::{Limit, Limits, Permit};

/// Serves `app` on `listener` until `stop` turns true (or its sender is dropped); then
/// stops accepting, lets each connection finish the request under way, and returns once
/// every connection has closed.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: Arc<Limits>,
    mut stop: watch::Receiver<bool>,
) {
    // Each connection task holds a receiver: the sender sees when all have ended.
    let (alive_tx, alive_rx) = watch::channel(());
    loop {
        let stream = tokio::select! {
            r = listener.accept() => match r {
                Ok((s, _)) => s,
                Err(e) => {
                    accept_failed(e).await;
                    continue;
                }
            },
            () = stopped(&mut stop) => break,
        };
        match limits.admit_http() {
            Ok(permit) => {
                tokio::spawn(connection(
                    stream,
                    app.clone(),
                    permit,
                    stop.clone(),
                    alive_rx.clone(),
                ));
            }
            Err(r) => refuse(&stream, r.max),
        }
    }
    drop((listener, alive_rx));
    alive_tx.closed().await;
}

/// Resolves once the daemon stops (or the sender is gone, which means the same).
async fn stopped(stop: &mut watch::Receiver<bool>) {
    // The guard `wait_for` returns is not `Send`: dropped here, not held by a caller.
    let _ = stop.wait_for(|s| *s).await;
}

/// Like hyper's own servers: a failed handshake is the client's business; anything else
/// (out of file descriptors) is waited out, so the loop does not spin.
async fn accept_failed(e: io::Error) {
    use io::ErrorKind::*;
    if matches!(
        e.kind(),
        ConnectionRefused | ConnectionAborted | ConnectionReset
    ) {
        return;
    }
    tracing::warn!("accepting an HTTP connection: {e} (retrying in 1 s)");
    tokio::time::sleep(Duration::from_secs(1)).await;
}

/// Answers a connection past `limits.http_connections` with a 503 and closes it. The
/// answer is written only if the socket takes it at once (a new socket's send buffer is
/// empty, so it does): a refused client gets no more of the daemon's time.
fn refuse(stream: &TcpStream, max: usize) {
    let body = format!(
        "{{\"error\":\"the API has {max} connections open, the most it holds (limits.http_connections); retry in a moment\",\"status\":503}}"
    );
    let resp = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.try_write(resp.as_bytes());
}

/// Serves one connection until it closes, holding its place under the cap.
async fn connection(
    stream: TcpStream,
    app: Router,
    permit: Permit,
    mut stop: watch::Receiver<bool>,
    _alive: watch::Receiver<()>,
) {
    let limits = permit.limits().clone();
    let local = stream.local_addr().ok();
    let io = TokioIo::new(SendTimeout::new(stream, limits.clone()));
    let svc = hyper::service::service_fn(move |mut req: hyper::Request<Incoming>| {
        req.extensions_mut().insert(ConnectInfo(Conn(local)));
        app.clone().oneshot(req.map(Body::new))
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.cfg.http_header_timeout);
    let mut conn = std::pin::pin!(builder.serve_connection(io, svc));
    let mut stopping = false;
    let r = loop {
        tokio::select! {
            r = conn.as_mut() => break r,
            () = stopped(&mut stop), if !stopping => {
                stopping = true;
                conn.as_mut().graceful_shutdown();
            }
        }
    };
    match r {
        Err(e) if e.is_timeout() => {
            // Partial headers (a slow or stalled client), or an idle keep-alive.
            limits.hit(Limit::HttpHeaderTimeout);
            tracing::debug!(
                "HTTP connection closed: no complete request within {:?} (limits.http_header_timeout)",
                limits.cfg.http_header_timeout
            );
        }
        Err(e) => tracing::debug!("HTTP connection ended: {e}"),
        Ok(()) => {}
    }
    drop(permit);
}

/// The connection's socket, failing a write that has waited `limits.http_send_timeout`
/// for the client to take bytes (a client that stopped reading a download or an event
/// stream). Reads pass through: headers are timed by hyper, bodies by the router.
struct SendTimeout {
    inner: TcpStream,
    limits: Arc<Limits>,
    stall: Pin<Box<tokio::time::Sleep>>,
    /// `stall` runs: a write is waiting.
    armed: bool,
}

impl SendTimeout {
    fn new(inner: TcpStream, limits: Arc<Limits>) -> SendTimeout {
        SendTimeout {
            inner,
            limits,
            stall: Box::pin(tokio::time::sleep(Duration::ZERO)),
            armed: false,
        }
    }

    /// The write is pending: starts or checks the stall timer.
    fn waiting<T>(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<T>> {
        let t = self.limits.cfg.http_send_timeout;
        if !self.armed {
            self.armed = true;
            self.stall.as_mut().reset(tokio::time::Instant::now() + t);
        }
        match self.stall.as_mut().poll(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(()) => {
                self.armed = false;
                self.limits.hit(Limit::HttpSendTimeout);
                tracing::debug!(
                    "HTTP connection closed: the client took none of the response for {t:?} (limits.http_send_timeout)"
                );
                Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "the client took none of the response for {t:?} (limits.http_send_timeout)"
                    ),
                )))
            }
        }
    }

    fn written<T>(&mut self, r: Poll<io::Result<T>>, cx: &mut Context<'_>) -> Poll<io::Result<T>> {
        match r {
            Poll::Pending => self.waiting(cx),
            done => {
                self.armed = false;
                done
            }
        }
    }
}

impl AsyncRead for SendTimeout {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for SendTimeout {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        let r = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.written(r, cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        let r = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.written(r, cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
