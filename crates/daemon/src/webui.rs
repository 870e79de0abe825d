//! The web UI: one static page, its script, style sheet and icon, compiled into the
//! binary (no build step, nothing fetched at install or run time). The files hold no
//! node data, so they are served without the token (access.rs, [`PAGE_PATHS`]); the
//! script asks for the token and calls the API like any client. docs/webui.md
//! describes the page and its security model.

use axum::Router;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

/// The UI's routes: the only ones served without the token (besides `open_reads`).
pub const PAGE_PATHS: [&str; 4] = ["/", "/ui/app.js", "/ui/app.css", "/ui/icon.svg"];

/// Script only from this origin, no inline script or style, no framing, no plug-ins;
/// `connect-src 'self'` keeps the token from ever being sent anywhere else.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'";

const INDEX: &str = include_str!("../ui/index.html");
const SCRIPT: &str = include_str!("../ui/app.js");
const STYLE: &str = include_str!("../ui/app.css");
const ICON: &str = include_str!("../ui/icon.svg");

/// The UI's routes, merged into the API's router (inside its access checks).
pub fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route(
            "/",
            get(|| async { asset("text/html; charset=utf-8", INDEX) }),
        )
        .route(
            "/ui/app.js",
            get(|| async { asset("text/javascript; charset=utf-8", SCRIPT) }),
        )
        .route(
            "/ui/app.css",
            get(|| async { asset("text/css; charset=utf-8", STYLE) }),
        )
        .route(
            "/ui/icon.svg",
            get(|| async { asset("image/svg+xml", ICON) }),
        )
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    let mut resp = body.into_response();
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    // Revalidated on each load, so a new daemon version's page is never mixed with an
    // old script.
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Peer-authored text (names, services) must never reach the DOM as markup, and
    /// the CSP allows no inline script: the page may not rely on either.
    #[test]
    fn the_page_uses_no_markup_injection_and_no_inline_script() {
        for (name, text) in [("app.js", SCRIPT), ("index.html", INDEX)] {
            for bad in [
                "innerHTML",
                "outerHTML",
                "insertAdjacentHTML",
                "document.write",
                "eval(",
                "new Function",
            ] {
                assert!(!text.contains(bad), "{name} uses {bad}");
            }
        }
        assert!(!INDEX.contains("<script>"), "inline script in index.html");
        assert!(!INDEX.contains(" style="), "inline style in index.html");
        // An inline handler is an attribute ` onNAME=`.
        let handler = INDEX.split(" on").skip(1).find(|rest| {
            let name: String = rest.chars().take_while(char::is_ascii_alphabetic).collect();
            !name.is_empty() && rest[name.len()..].starts_with('=')
        });
        assert!(handler.is_none(), "an inline event handler in index.html");
        assert!(INDEX.contains(r#"<script src="/ui/app.js" defer></script>"#));
    }
}
