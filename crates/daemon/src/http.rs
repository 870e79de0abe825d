//! The HTTP API (JSON under `/v1`, Prometheus text at `/metrics`); docs/api.md and
//! docs/openapi.yaml describe it. Handlers touch the store under its mutex for single
//! operations only; anything that streams runs on the blocking pool.

use std::convert::Infallible;
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::connect_info::ConnectInfo;
use axum::extract::{DefaultBodyLimit, Multipart, Path, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use futures_util::{Stream, StreamExt};
use serde::Deserialize;
use serde_json::json;
use skywave_bundle::sealed::{self, OpenReader};
use skywave_bundle::{BundleId, Identity};
use skywave_store::unix_now as now_secs;
use skywave_store::{NewBundle, StoreError, StoredBundle};
use tokio::sync::{mpsc, oneshot};

use crate::core::{Cmd, Shared};
use crate::limits::Limit;
use crate::status::Status;

/// The API's routes over `shared`.
pub fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/v1/bundles", get(list).post(insert))
        .route("/v1/bundles/{id}", get(show).delete(delete))
        .route("/v1/bundles/{id}/payload", get(payload))
        .route("/v1/bundles/{id}/append", post(append))
        .route("/v1/status", get(status))
        .route("/v1/peers", get(peers))
        .route("/v1/links", get(links))
        .route("/v1/transfers", get(transfers))
        .route("/v1/events", get(events))
        .route("/v1/openapi.yaml", get(openapi))
        .route("/metrics", get(metrics))
        .merge(crate::webui::routes())
        // Every POST is an upload (inside `auth`: a refused client takes no place).
        .route_layer(middleware::from_fn_with_state(shared.clone(), one_upload))
        .layer(middleware::from_fn_with_state(shared.clone(), body_timeout))
        .layer(middleware::from_fn_with_state(shared.clone(), auth))
        .layer(middleware::from_fn(json_errors))
        // Uploads are bounded by the store quota and the disk, not by a body limit.
        .layer(DefaultBodyLimit::disable())
        .with_state(shared)
}

/// An API error: a status and a message naming what failed and what to do.
#[derive(Debug)]
pub struct ApiError(StatusCode, String);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (
            self.0,
            Json(json!({"error": self.1, "status": self.0.as_u16()})),
        )
            .into_response()
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        let code = match &e {
            StoreError::NotFound(_) => StatusCode::NOT_FOUND,
            StoreError::QuotaExceeded { .. } | StoreError::DiskFull { .. } => {
                StatusCode::INSUFFICIENT_STORAGE
            }
            StoreError::NoKey(_) => StatusCode::FORBIDDEN,
            StoreError::NotJournal(_)
            | StoreError::Manifest(_)
            | StoreError::Seal(_)
            | StoreError::Expired { .. } => StatusCode::BAD_REQUEST,
            StoreError::Stale { .. } | StoreError::JournalFork { .. } => StatusCode::CONFLICT,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        ApiError(code, e.to_string())
    }
}

fn bad(msg: impl Into<String>) -> ApiError {
    ApiError(StatusCode::BAD_REQUEST, msg.into())
}

type ApiResult<T> = Result<T, ApiError>;

/// A call's query parameters, refused as the API's other errors are (JSON, with what
/// each parameter takes) rather than with the deserializer's bare message.
#[derive(Debug)]
struct Params<T>(T);

impl<S: Send + Sync, T: serde::de::DeserializeOwned> axum::extract::FromRequestParts<S>
    for Params<T>
{
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &S,
    ) -> Result<Self, ApiError> {
        match Query::<T>::from_request_parts(parts, state).await {
            Ok(Query(v)) => Ok(Params(v)),
            Err(e) => Err(bad(query_error(&e.body_text()))),
        }
    }
}

/// `since: invalid digit found in string` -> what `since` takes.
fn query_error(text: &str) -> String {
    let text = text
        .strip_prefix("Failed to deserialize query string: ")
        .unwrap_or(text);
    let expected = match text.split_once(':').map(|(k, _)| k) {
        Some("since") => {
            ": `since` takes a whole number: the `next_since` of a previous page of /v1/bundles, or an event id for /v1/events"
        }
        Some("limit") => ": `limit` takes a whole number of bundles (at most 10000)",
        _ => "",
    };
    format!("invalid query parameter: {text}{expected} (docs/api.md lists each call's parameters)")
}

/// The address a connection came in on (the bound one, or with a wildcard bind the
/// interface's): what a request's `Host` must name. `None` if the socket could not say;
/// the bound address stands in.
#[derive(Debug, Clone, Copy)]
pub struct Conn(pub Option<SocketAddr>);

/// A refusal sent before the request's body was read ends the connection, and says so:
/// the unread body cannot be told apart from a next request, so the server closes the
/// connection after the answer, and a client that kept it for its next request (as
/// HTTP/1.1 clients do) would see that request fail with the connection reset.
fn close_if_unread(req_has_body: bool, resp: &mut Response) {
    if req_has_body {
        resp.headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
}

/// Applies [`crate::access::Access`] before any handler, so a refused upload is never
/// read.
async fn auth(State(s): State<Arc<Shared>>, req: Request, next: Next) -> Response {
    use axum::body::HttpBody;
    let has_body = !req.body().is_end_stream();
    let local = req
        .extensions()
        .get::<ConnectInfo<Conn>>()
        .and_then(|c| c.0.0)
        .unwrap_or(s.bound);
    if let Err(r) = s
        .access
        .check(req.method(), req.uri(), req.headers(), local)
    {
        let mut resp = ApiError(r.status, r.message).into_response();
        if r.status == StatusCode::UNAUTHORIZED {
            resp.headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        close_if_unread(has_body, &mut resp);
        return resp;
    }
    next.run(req).await
}

/// Holds a place under `limits.uploads` for the whole of a POST (the body is read and
/// the bundle committed before the handler returns); past the cap, a 503 with
/// `Retry-After`.
async fn one_upload(State(s): State<Arc<Shared>>, req: Request, next: Next) -> Response {
    use axum::body::HttpBody;
    if req.method() != axum::http::Method::POST {
        return next.run(req).await;
    }
    let has_body = !req.body().is_end_stream();
    match s.limits.admit_upload() {
        Ok(_place) => next.run(req).await,
        Err(r) => {
            let mut resp = ApiError(
                StatusCode::SERVICE_UNAVAILABLE,
                format!(
                    "{} uploads are under way, the most the daemon takes at once (limits.uploads); retry when one has finished",
                    r.max
                ),
            )
            .into_response();
            resp.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            close_if_unread(has_body, &mut resp);
            resp
        }
    }
}

/// A request body that pauses longer than `limits.http_body_timeout` ends in an error
/// for the handler reading it, and the answer is a 408 whatever the handler made of it.
async fn body_timeout(State(s): State<Arc<Shared>>, req: Request, next: Next) -> Response {
    use axum::body::HttpBody;
    if req.body().is_end_stream() {
        return next.run(req).await;
    }
    let limit = s.limits.cfg.http_body_timeout;
    let stalled = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = stalled.clone();
    let req = req.map(|b| {
        let stream = futures_util::stream::unfold(Some(b.into_data_stream()), move |st| {
            let flag = flag.clone();
            async move {
                let mut st = st?;
                match tokio::time::timeout(limit, st.next()).await {
                    Ok(Some(Ok(chunk))) => Some((Ok(chunk), Some(st))),
                    Ok(Some(Err(e))) => Some((Err(e.into_inner()), None)),
                    Ok(None) => None,
                    Err(_) => {
                        flag.store(true, std::sync::atomic::Ordering::Relaxed);
                        let e: axum::BoxError =
                            format!("the body paused for {limit:?} (limits.http_body_timeout)")
                                .into();
                        Some((Err(e), None))
                    }
                }
            }
        });
        Body::from_stream(stream)
    });
    let resp = next.run(req).await;
    if !stalled.load(std::sync::atomic::Ordering::Relaxed) {
        return resp;
    }
    s.limits.hit(Limit::HttpBodyTimeout);
    let mut resp = ApiError(
        StatusCode::REQUEST_TIMEOUT,
        format!(
            "the request body paused for {limit:?}, longer than the daemon waits (limits.http_body_timeout); nothing was stored: send the body without pauses"
        ),
    )
    .into_response();
    resp.headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    resp
}

/// Every error is JSON: rejections by axum's extractors (bad query strings, bad paths)
/// and unknown routes or methods come as plain text or empty, and are wrapped here.
async fn json_errors(req: Request, next: Next) -> Response {
    let (method, path) = (req.method().clone(), req.uri().path().to_string());
    // A request refused before its body was read leaves the connection unusable (the
    // rest of the body would be read as the next request), so the server closes it. It
    // says so: a client that put the connection back in its pool would send the next
    // request into a closed socket ("peer disconnected").
    let has_body = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .is_some_and(|v| v.as_bytes() != b"0")
        || req.headers().contains_key(header::TRANSFER_ENCODING);
    let mut resp = json_error_body(method, path, next.run(req).await).await;
    if has_body && (resp.status().is_client_error() || resp.status().is_server_error()) {
        resp.headers_mut().insert(
            header::CONNECTION,
            header::HeaderValue::from_static("close"),
        );
    }
    resp
}

/// An error response without a JSON body gets one naming the problem.
async fn json_error_body(method: axum::http::Method, path: String, resp: Response) -> Response {
    let status = resp.status();
    let is_json = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return resp;
    }
    let text = axum::body::to_bytes(resp.into_body(), 64 * 1024)
        .await
        .map(|b| String::from_utf8_lossy(&b).trim().to_string())
        .unwrap_or_default();
    let msg = match status {
        StatusCode::NOT_FOUND if text.is_empty() => {
            format!("no endpoint {method} {path}; the API is described at /v1/openapi.yaml")
        }
        StatusCode::METHOD_NOT_ALLOWED => format!(
            "{method} is not allowed on {path}; the Allow header lists the methods it takes"
        ),
        _ if text.is_empty() => status
            .canonical_reason()
            .unwrap_or("request failed")
            .to_string(),
        _ => text,
    };
    ApiError(status, msg).into_response()
}

fn bundle_json(b: &StoredBundle) -> serde_json::Value {
    let mut v = serde_json::to_value(b.manifest.to_json()).unwrap_or_default();
    v["token"] = b.token.into();
    v["own"] = b.own.into();
    v
}

fn resolve(s: &Shared, id: &str) -> ApiResult<BundleId> {
    use skywave_store::{Store, UnresolvedId};
    // The same words as the CLI offline (`Store::unresolved`).
    if let UnresolvedId::Invalid(m) = Store::unresolved(id) {
        return Err(bad(m));
    }
    let store = s.store();
    store
        .store
        .resolve_prefix(id)?
        .ok_or_else(|| ApiError(StatusCode::NOT_FOUND, Store::unresolved(id).to_string()))
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> ApiResult<T> + Send + 'static,
) -> ApiResult<T> {
    tokio::task::spawn_blocking(f).await.map_err(|e| {
        ApiError(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("worker failed: {e}"),
        )
    })?
}

// ---- bundles ------------------------------------------------------------------------

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ListParams {
    service: Option<String>,
    recipient: Option<String>,
    since: Option<u64>,
    limit: Option<u64>,
    /// Tombstones of deleted bundles too.
    #[serde(default)]
    deleted: bool,
}

async fn list(
    State(s): State<Arc<Shared>>,
    Params(p): Params<ListParams>,
) -> ApiResult<Json<serde_json::Value>> {
    let recipient = p
        .recipient
        .as_deref()
        .map(|r| {
            r.parse::<Identity>()
                .map_err(|e| bad(format!("invalid recipient '{r}': {e}")))
        })
        .transpose()?;
    let limit = p.limit.unwrap_or(1000).min(10_000);
    let q = skywave_store::Query {
        service: p.service,
        recipient,
        since: p.since,
        limit: Some(limit),
        include_deleted: p.deleted,
    };
    let bundles = blocking(move || Ok(s.store().store.list(&q)?)).await?;
    let next = bundles.last().map(|b| b.token);
    Ok(Json(json!({
        "bundles": bundles.iter().map(bundle_json).collect::<Vec<_>>(),
        // Pass as `since` for the next page (tokens only grow).
        "next_since": next,
    })))
}

async fn show(
    State(s): State<Arc<Shared>>,
    Path(id): Path<String>,
) -> ApiResult<Json<serde_json::Value>> {
    let id = resolve(&s, &id)?;
    let b = s.store().store.get(&id)?.ok_or(StoreError::NotFound(id))?;
    Ok(Json(bundle_json(&b)))
}

/// Deletes a bundle authored here: a signed tombstone replaces it on every node.
async fn delete(
    State(s): State<Arc<Shared>>,
    Path(id): Path<String>,
) -> ApiResult<Json<serde_json::Value>> {
    let id = resolve(&s, &id)?;
    let s2 = s.clone();
    let b = blocking(move || Ok(s2.store().store.delete(&id, now_secs())?)).await?;
    committed(&s, &b, "local");
    Ok(Json(bundle_json(&b)))
}

/// Options of a new bundle, from the query string or multipart fields.
#[derive(Debug, Default)]
struct NewParams {
    opts: NewBundle,
    /// Publish as a new version of this bundle (authored here).
    replace: Option<String>,
    /// Seconds from now, resolved against the clock when the bundle is made.
    lifetime: Option<u64>,
    /// Make a second bundle even if one authored here has this name and content.
    force: bool,
}

impl NewParams {
    fn set(&mut self, k: &str, v: &str) -> ApiResult<()> {
        let o = &mut self.opts;
        match k {
            "service" => o.service = Some(v.into()),
            "name" => o.name = Some(v.into()),
            "journal" => o.journal = parse_bool(k, v)?,
            "sign_sender" => o.sign_sender = parse_bool(k, v)?,
            // `to` also seals the payload to the recipient (docs/bundle-format.md).
            "recipient" | "to" => {
                let r = v
                    .parse::<Identity>()
                    .map_err(|e| bad(format!("invalid {k} '{v}': {e}")))?;
                if o.recipient.is_some_and(|old| old != r) {
                    return Err(bad(
                        "'to' and 'recipient' name different nodes; give one ('to' seals the payload to its recipient)",
                    ));
                }
                o.recipient = Some(r);
                o.seal |= k == "to";
            }
            "replace" => self.replace = Some(v.into()),
            "expires" => {
                o.expires = Some(v.parse().map_err(|_| {
                    bad(format!(
                        "invalid expires '{v}': Unix seconds (or give lifetime, e.g. 7d)"
                    ))
                })?);
            }
            "lifetime" => {
                self.lifetime = Some(crate::config::parse_lifetime(v).map_err(bad)?);
            }
            "force" => self.force = parse_bool(k, v)?,
            "priority" => o.priority = Some(v.parse().map_err(bad)?),
            "field" => {
                let (fk, fv) = v
                    .split_once('=')
                    .ok_or_else(|| bad(format!("invalid field '{v}': expected KEY=VALUE")))?;
                o.fields.insert(fk.into(), fv.into());
            }
            _ => {
                return Err(bad(format!(
                    "unknown parameter '{k}'; accepted: service, name, journal, sign_sender, recipient, to, field=KEY=VALUE, replace, expires, lifetime, force, priority"
                )));
            }
        }
        Ok(())
    }
}

fn parse_bool(k: &str, v: &str) -> ApiResult<bool> {
    match v {
        "true" | "1" | "yes" | "" => Ok(true),
        "false" | "0" | "no" => Ok(false),
        _ => Err(bad(format!(
            "invalid value '{v}' for '{k}': expected true or false"
        ))),
    }
}

/// A temporary file in the node directory that an upload is spooled into.
fn spool(s: &Shared) -> ApiResult<tempfile::NamedTempFile> {
    let dir = s.store().store.dir().to_path_buf();
    tempfile::Builder::new()
        .prefix(".upload-")
        .tempfile_in(&dir)
        .map_err(|e| {
            ApiError(
                StatusCode::INSUFFICIENT_STORAGE,
                format!("creating an upload file in {}: {e}", dir.display()),
            )
        })
}

/// Spools a request body to a file (so a large upload never sits in memory).
async fn spool_body(
    s: &Shared,
    mut stream: impl Stream<Item = Result<bytes::Bytes, String>> + Unpin,
) -> ApiResult<tempfile::NamedTempFile> {
    let mut f = spool(s)?;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| bad(format!("reading the request body: {e}")))?;
        f.write_all(&chunk).map_err(|e| {
            ApiError(
                StatusCode::INSUFFICIENT_STORAGE,
                format!("spooling the upload: {e}"),
            )
        })?;
    }
    Ok(f)
}

/// What a multipart body may hold besides file data and its text parts: part headers,
/// boundaries, and what the parser reads ahead of the file bytes it has handed over
/// (a chunk or two).
const MULTIPART_FRAMING: u64 = 1 << 20;

/// Counts the bytes of a multipart body that are not file data. The parser holds part
/// headers and a preamble in memory until it finds their end; past `max` such bytes the
/// body is cut off instead (413), so no part of an upload but the file, which is
/// spooled, grows memory without bound.
#[derive(Debug)]
struct NonFile {
    max: u64,
    read: std::sync::atomic::AtomicU64,
    file: std::sync::atomic::AtomicU64,
    over: std::sync::atomic::AtomicBool,
}

impl NonFile {
    fn new(max: u64) -> NonFile {
        NonFile {
            max,
            read: Default::default(),
            file: Default::default(),
            over: Default::default(),
        }
    }

    /// A chunk of the body on its way to the parser.
    fn pass(&self, c: Result<bytes::Bytes, axum::Error>) -> Result<bytes::Bytes, axum::BoxError> {
        use std::sync::atomic::Ordering::Relaxed;
        let c = c.map_err(axum::Error::into_inner)?;
        let read = self.read.fetch_add(c.len() as u64, Relaxed) + c.len() as u64;
        if read.saturating_sub(self.file.load(Relaxed)) > self.max {
            self.over.store(true, Relaxed);
            return Err("the multipart body outside its file part is too large".into());
        }
        Ok(c)
    }

    /// File bytes the handler took.
    fn file(&self, n: usize) {
        self.file
            .fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
    }

    /// The error for a failed read: 413 if this guard cut the body off, else 400.
    fn failed(&self, s: &Shared, what: String) -> ApiError {
        if !self.over.load(std::sync::atomic::Ordering::Relaxed) {
            return bad(what);
        }
        s.limits.hit(Limit::MultipartTextMax);
        ApiError(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "the multipart body has more than {} bytes outside its file part (part headers, framing and text parts: limits.multipart_text_max plus 1 MiB for headers); nothing was stored",
                self.max
            ),
        )
    }
}

async fn insert(
    State(s): State<Arc<Shared>>,
    Query(q): Query<Vec<(String, String)>>,
    headers: HeaderMap,
    req: Request,
) -> ApiResult<(StatusCode, Json<serde_json::Value>)> {
    let mut p = NewParams::default();
    for (k, v) in &q {
        p.set(k, v)?;
    }
    let multipart = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("multipart/form-data"));
    let file = if multipart {
        use axum::extract::FromRequest;
        let text_max = s.limits.cfg.multipart_text_max;
        let rest = Arc::new(NonFile::new(text_max.saturating_add(MULTIPART_FRAMING)));
        let guard = rest.clone();
        let req = req.map(|b| Body::from_stream(b.into_data_stream().map(move |c| guard.pass(c))));
        let mut mp = Multipart::from_request(req, &s)
            .await
            .map_err(|e| bad(format!("malformed multipart request: {e}")))?;
        let failed = |what: String| rest.failed(&s, what);
        let mut file = None;
        let mut text_left = text_max;
        while let Some(mut field) = mp
            .next_field()
            .await
            .map_err(|e| failed(format!("malformed multipart body: {e}")))?
        {
            let name = field.name().unwrap_or("").to_string();
            if name == "file" || name == "payload" {
                if p.opts.name.is_none() {
                    p.opts.name = field.file_name().map(str::to_string);
                }
                let credit = rest.clone();
                let stream = field.map(move |c| {
                    if let Ok(b) = &c {
                        credit.file(b.len());
                    }
                    c.map_err(|e| e.to_string())
                });
                file = Some(spool_body(&s, stream).await?);
            } else {
                // Read with a bound: a text part is held in memory.
                let mut v = Vec::new();
                while let Some(chunk) = field
                    .chunk()
                    .await
                    .map_err(|e| failed(format!("malformed multipart field '{name}': {e}")))?
                {
                    if chunk.len() as u64 > text_left {
                        s.limits.hit(Limit::MultipartTextMax);
                        return Err(ApiError(
                            StatusCode::PAYLOAD_TOO_LARGE,
                            format!(
                                "multipart field '{name}' takes the upload's text parts past {text_max} bytes (limits.multipart_text_max); nothing was stored: send the payload as the part named file"
                            ),
                        ));
                    }
                    text_left -= chunk.len() as u64;
                    v.extend_from_slice(&chunk);
                }
                p.set(&name, &String::from_utf8_lossy(&v))?;
            }
        }
        file.ok_or_else(|| {
            bad("multipart body has no 'file' part; send the payload as a part named file")
        })?
    } else {
        let stream = req
            .into_body()
            .into_data_stream()
            .map(|c| c.map_err(|e| e.to_string()));
        spool_body(&s, stream).await?
    };
    p.opts.date = now_secs();
    if let Some(l) = p.lifetime {
        p.opts.expires = Some(p.opts.date.saturating_add(l));
    }
    let replace = p.replace.as_deref().map(|r| resolve(&s, r)).transpose()?;
    let s2 = s.clone();
    // The spooled file itself becomes the payload (moved, not copied): an upload needs
    // its size free once, and a refused one leaves nothing behind.
    let path = file.into_temp_path();
    let (b, existing) = blocking(move || {
        // Hashed before the store is locked: sync carries on meanwhile.
        let path = path.keep().map_err(|e| {
            ApiError(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("keeping the spooled upload: {}", e.error),
            )
        })?;
        let f = skywave_store::HashedFile::hash(&path).inspect_err(|_| {
            let _ = std::fs::remove_file(&path);
        })?;
        let mut store = s2.store();
        if let Some(id) = replace {
            let res = std::fs::File::open(&f.path)
                .map_err(|e| {
                    ApiError(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        format!("reading the spooled upload: {e}"),
                    )
                })
                .and_then(|src| {
                    Ok(store
                        .store
                        .replace(&id, std::io::BufReader::new(src), &p.opts)?)
                });
            let _ = std::fs::remove_file(&f.path);
            return Ok((res?, false));
        }
        // The same content under the same name, authored here: the bundle that exists
        // is the answer (a second copy would sync twice).
        // Only under a name: an unnamed upload (a reading, a status line) may repeat its
        // content on purpose.
        if !p.force && !p.opts.seal && !p.opts.journal && p.opts.name.is_some() {
            let hash = f.hash;
            if let Some(b) = store
                .store
                .find_own(p.opts.name.as_deref(), f.len, || Ok(hash))?
            {
                let _ = std::fs::remove_file(&f.path);
                return Ok((b, true));
            }
        }
        Ok((store.store.create_from_file(f, &p.opts)?, false))
    })
    .await?;
    if existing {
        let mut v = bundle_json(&b);
        v["existing"] = true.into();
        return Ok((StatusCode::OK, Json(v)));
    }
    committed(&s, &b, "local");
    Ok((StatusCode::CREATED, Json(bundle_json(&b))))
}

/// Announces a bundle the API committed: an event at once, and an offer to peers.
fn committed(s: &Shared, b: &StoredBundle, source: &str) {
    let m = b.manifest.manifest();
    s.events.publish(
        "bundle",
        json!({"id": m.id.to_string(), "version": m.version, "length": m.length,
               "journal": m.journal, "deleted": m.deleted, "source": source,
               "service": m.service, "name": m.name}),
    );
    let _ = s.cmds.send(Cmd::Stored(m.id));
}

async fn append(
    State(s): State<Arc<Shared>>,
    Path(id): Path<String>,
    req: Request,
) -> ApiResult<Json<serde_json::Value>> {
    let id = resolve(&s, &id)?;
    let stream = req
        .into_body()
        .into_data_stream()
        .map(|c| c.map_err(|e| e.to_string()));
    let file = spool_body(&s, stream).await?;
    let s2 = s.clone();
    let b = blocking(move || {
        let f = file.reopen().map_err(|e| {
            ApiError(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("reading the spooled upload: {e}"),
            )
        })?;
        Ok(s2
            .store()
            .store
            .append(&id, std::io::BufReader::new(f), now_secs())?)
    })
    .await?;
    committed(&s, &b, "local");
    Ok(Json(bundle_json(&b)))
}

/// `bytes=A-B`, `bytes=A-`, `bytes=-N` against a payload of `len` bytes: `[start, end)`.
fn parse_range(v: &str, len: u64) -> Option<(u64, u64)> {
    let r = v.trim().strip_prefix("bytes=")?;
    if r.contains(',') {
        return None; // one range only
    }
    let (a, b) = r.split_once('-')?;
    let (start, end) = if a.is_empty() {
        let n: u64 = b.parse().ok()?;
        (len.saturating_sub(n), len)
    } else {
        let s: u64 = a.parse().ok()?;
        let e = if b.is_empty() {
            len
        } else {
            b.parse::<u64>().ok()?.saturating_add(1).min(len)
        };
        (s, e)
    };
    (start < end && start < len).then_some((start, end))
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct PayloadParams {
    /// `raw`: a sealed payload as held (the sealed bytes); `open` (the default): opened
    /// on the recipient's node, refused elsewhere.
    sealed: Option<SealedAs>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum SealedAs {
    Raw,
    Open,
}

/// A payload as served: as held, or opened for this node.
enum Source {
    Held(skywave_store::PayloadReader),
    Opened(OpenReader<skywave_store::PayloadReader>),
}

impl Source {
    /// Moves to byte `n` of what is served: a seek in held bytes; opened ones are read
    /// through (each chunk is authenticated before any of it is given out).
    fn skip(&mut self, n: u64) -> std::io::Result<()> {
        match self {
            Source::Held(r) => r.skip(n),
            Source::Opened(r) => {
                let got = std::io::copy(&mut r.take(n), &mut std::io::sink())?;
                if got < n {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        "the opened payload ended early",
                    ));
                }
                Ok(())
            }
        }
    }
}

impl Read for Source {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Source::Held(r) => r.read(buf),
            Source::Opened(r) => r.read(buf),
        }
    }
}

async fn payload(
    State(s): State<Arc<Shared>>,
    Path(id): Path<String>,
    Params(q): Params<PayloadParams>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let id = resolve(&s, &id)?;
    let (mut reader, len) = {
        let store = s.store();
        let b = store.store.get(&id)?.ok_or(StoreError::NotFound(id))?;
        let m = b.manifest.manifest();
        let held = store.store.open_payload(&id)?;
        let key = store.store.node_key();
        let open = q.sealed != Some(SealedAs::Raw)
            && sealed::must_open(m.sealed, m.recipient, &key.identity()).map_err(|e| {
                let code = match e {
                    sealed::SealError::NotTheRecipient { .. } => StatusCode::FORBIDDEN,
                    _ => StatusCode::UNPROCESSABLE_ENTITY,
                };
                ApiError(
                    code,
                    format!(
                        "{}; ask with ?sealed=raw for the sealed bytes as held",
                        sealed::refusal(&id, &e)
                    ),
                )
            })?;
        if open {
            // The key box is read and opened now, so a payload this node cannot open is
            // an error, not a stream cut short.
            let r = OpenReader::new(held, key, &id).map_err(|e| {
                let why = sealed::SealError::from_io(&e).map_or(e.to_string(), |e| e.to_string());
                ApiError(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    format!("bundle {id}: {why}"),
                )
            })?;
            (Source::Opened(r), sealed::plain_len(m.length).unwrap_or(0))
        } else {
            (Source::Held(held), m.length)
        }
    };
    let range = headers.get(header::RANGE).and_then(|v| v.to_str().ok());
    let (status, start, end) = match range {
        None => (StatusCode::OK, 0, len),
        Some(r) => match parse_range(r, len) {
            Some((a, b)) => (StatusCode::PARTIAL_CONTENT, a, b),
            None => {
                let mut resp = ApiError(
                    StatusCode::RANGE_NOT_SATISFIABLE,
                    format!("range '{r}' is not one satisfiable range of the {len}-byte payload"),
                )
                .into_response();
                if let Ok(v) = HeaderValue::from_str(&format!("bytes */{len}")) {
                    resp.headers_mut().insert(header::CONTENT_RANGE, v);
                }
                return Ok(resp);
            }
        },
    };
    // Read on the blocking pool, a bounded number of chunks ahead of the client.
    let (tx, rx) = mpsc::channel::<Result<bytes::Bytes, std::io::Error>>(4);
    tokio::task::spawn_blocking(move || {
        if let Err(e) = reader.skip(start) {
            let _ = tx.blocking_send(Err(e));
            return;
        }
        let mut left = end - start;
        let mut buf = vec![0u8; 256 * 1024];
        while left > 0 {
            let want = (left as usize).min(buf.len());
            match reader.read(&mut buf[..want]) {
                Ok(0) => break,
                Ok(n) => {
                    left -= n as u64;
                    if tx
                        .blocking_send(Ok(bytes::Bytes::copy_from_slice(&buf[..n])))
                        .is_err()
                    {
                        return;
                    }
                }
                Err(e) => {
                    let _ = tx.blocking_send(Err(e));
                    return;
                }
            }
        }
    });
    let stream =
        futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|c| (c, rx)) });
    let mut resp = Response::new(Body::from_stream(stream));
    *resp.status_mut() = status;
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    h.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(end - start));
    if status == StatusCode::PARTIAL_CONTENT
        && let Ok(v) = HeaderValue::from_str(&format!("bytes {}-{}/{len}", start, end - 1))
    {
        h.insert(header::CONTENT_RANGE, v);
    }
    Ok(resp)
}

// ---- status ---------------------------------------------------------------------------

/// How long an API call waits for the core before it is answered with the last status
/// the core gave (a core taking in a large sync works in wakes of a hundred
/// milliseconds or more; `GET /v1/status` must not wait for them).
const CORE_WAIT: Duration = Duration::from_millis(50);
/// How long a call waits for the core when no status was kept yet.
const CORE_TIMEOUT: Duration = Duration::from_secs(5);

/// A fresh status from the core, or, when the core does not answer within
/// [`CORE_WAIT`], the last one it gave with its age (`age_seconds`).
pub async fn core_status(s: &Shared) -> ApiResult<Status> {
    let (tx, mut rx) = oneshot::channel();
    let gone = || {
        ApiError(
            StatusCode::SERVICE_UNAVAILABLE,
            "the daemon is shutting down".into(),
        )
    };
    s.cmds.send(Cmd::Status(tx)).map_err(|_| gone())?;
    if let Ok(r) = tokio::time::timeout(CORE_WAIT, &mut rx).await {
        return r.map_err(|_| gone());
    }
    let kept = s
        .last_status
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    if let Some((at, mut st)) = kept {
        // The request stays queued: the core answers it when it comes round, which
        // keeps a newer status for the next call.
        st.age_seconds = Some(at.elapsed().as_secs_f64());
        return Ok(st);
    }
    tokio::time::timeout(CORE_TIMEOUT - CORE_WAIT, rx)
        .await
        .map_err(|_| {
            ApiError(
                StatusCode::SERVICE_UNAVAILABLE,
                "the daemon's core did not answer within 5 s".into(),
            )
        })?
        .map_err(|_| gone())
}

async fn status(State(s): State<Arc<Shared>>) -> ApiResult<Json<Status>> {
    Ok(Json(core_status(&s).await?))
}

async fn peers(State(s): State<Arc<Shared>>) -> ApiResult<Json<serde_json::Value>> {
    Ok(Json(json!({"peers": core_status(&s).await?.peers})))
}

async fn links(State(s): State<Arc<Shared>>) -> ApiResult<Json<serde_json::Value>> {
    Ok(Json(json!({"links": core_status(&s).await?.links})))
}

async fn transfers(State(s): State<Arc<Shared>>) -> ApiResult<Json<serde_json::Value>> {
    Ok(Json(json!({"transfers": core_status(&s).await?.transfers})))
}

async fn openapi() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "application/yaml")],
        include_str!("../../../docs/openapi.yaml"),
    )
}

// ---- events ---------------------------------------------------------------------------

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct EventParams {
    since: Option<u64>,
}

async fn events(
    State(s): State<Arc<Shared>>,
    Params(p): Params<EventParams>,
    headers: HeaderMap,
) -> Sse<impl Stream<Item = Result<SseEvent, Infallible>>> {
    // `Last-Event-ID` (a reconnecting EventSource) wins over `since`; without either,
    // only new events are sent.
    let since = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .or(p.since)
        .unwrap_or_else(|| s.events.next_id().saturating_sub(1));
    let (past, rx) = s.events.follow(since);
    let last = past.last().map_or(since, |e| e.id);
    let past = futures_util::stream::iter(past);
    let live = futures_util::stream::unfold((rx, last), |(mut rx, last)| async move {
        loop {
            match rx.recv().await {
                Ok(e) if e.id > last => return Some((e.clone(), (rx, e.id))),
                Ok(_) => continue,
                Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                    tracing::warn!(missed = n, "an event follower fell behind");
                    continue;
                }
                Err(_) => return None,
            }
        }
    });
    let mut stopping = s.stopping.clone();
    let stop = async move {
        let _ = stopping.wait_for(|s| *s).await;
    };
    let stream = past.chain(live).take_until(stop).map(|e| {
        let data = json!({"id": e.id, "kind": e.kind, "at_ms": e.at_ms, "data": e.data});
        Ok(SseEvent::default()
            .id(e.id.to_string())
            .event(e.kind)
            .data(data.to_string()))
    });
    Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}

// ---- metrics --------------------------------------------------------------------------

async fn metrics(State(s): State<Arc<Shared>>) -> ApiResult<Response> {
    let st = core_status(&s).await?;
    let mut o = String::new();
    crate::metrics::render(&st, &mut o);
    crate::metrics::render_limits(&s.limits, &mut o);
    Ok((
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        o,
    )
        .into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges() {
        assert_eq!(parse_range("bytes=0-99", 1000), Some((0, 100)));
        assert_eq!(parse_range("bytes=900-", 1000), Some((900, 1000)));
        assert_eq!(parse_range("bytes=-10", 1000), Some((990, 1000)));
        assert_eq!(parse_range("bytes=990-5000", 1000), Some((990, 1000)));
        assert_eq!(parse_range("bytes=1000-", 1000), None);
        assert_eq!(parse_range("bytes=5-2", 1000), None);
        assert_eq!(parse_range("bytes=0-1,5-6", 1000), None);
        assert_eq!(parse_range("items=0-1", 1000), None);
        assert_eq!(parse_range("bytes=x-", 1000), None);
    }

    /// A core that answers gives a fresh status; a busy one is answered for, within
    /// [`CORE_WAIT`], by the last status it gave, with that status's age.
    #[test]
    fn a_busy_core_is_answered_for_by_its_last_status() {
        let dir = tempfile::tempdir().unwrap();
        let store = skywave_store::Store::open(dir.path(), Default::default()).unwrap();
        let (cmds, mut core) = mpsc::unbounded_channel();
        let (_stop, stopping) = tokio::sync::watch::channel(false);
        let bound = "127.0.0.1:7473".parse().unwrap();
        let s = Shared::new(
            skywave_node::StoreAdapter::new(store),
            crate::events::EventLog::new(None),
            cmds,
            [1; 32],
            crate::access::Access::new("f".repeat(48), bound, false, &[]),
            stopping,
            crate::limits::Limits::new(Default::default()),
        );
        let status = |node: &str| Status {
            node: node.into(),
            ..Status::default()
        };
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            // Answering.
            let (fresh, _) = tokio::join!(core_status(&s), async {
                if let Some(Cmd::Status(reply)) = core.recv().await {
                    let _ = reply.send(status("fresh"));
                }
            });
            let fresh = fresh.unwrap();
            assert_eq!((fresh.node.as_str(), fresh.age_seconds), ("fresh", None));
            // Busy: the request waits in the queue; the kept status answers.
            let kept_at = std::time::Instant::now() - Duration::from_secs(2);
            *s.last_status.lock().unwrap() = Some((kept_at, status("kept")));
            let t = tokio::time::Instant::now();
            let kept = core_status(&s).await.unwrap();
            assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
            assert_eq!(kept.node, "kept");
            assert!(kept.age_seconds.is_some_and(|a| a >= 2.0), "{kept:?}");
            assert!(
                matches!(core.try_recv(), Ok(Cmd::Status(_))),
                "the request stays queued for the core"
            );
        });
    }
}
