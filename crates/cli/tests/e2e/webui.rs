//! The web UI in a real browser: headless Chromium, driven over the DevTools Protocol,
//! against two real daemons syncing over UDP loopback (through a 2 Mbit/s emulated
//! path). A's page takes the token, uploads a file through its form, lists and finds
//! it; both pages show its transfer with progress and ETA; B's page, open meanwhile,
//! shows it arrive from the event stream; a deletion on A's page leaves both.
//! Screenshots at desktop and phone width, taken during the transfer, are written to
//! `target/webui-screenshots/` (or `$SKYWAVE_SCREENSHOTS`); docs/webui.md shows them.
//!
//! Without Chromium (`chromium`, `chromium-browser`, `google-chrome` on the PATH, or
//! `$CHROME`) the test says so and passes: `apt-get install -y chromium` runs it.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::support::*;
use headless_chrome::protocol::cdp::{Browser as Cdp, Emulation, Page};
use headless_chrome::{Browser, LaunchOptions, Tab};

/// The browser to drive: `$CHROME`, else the first known name on the `PATH`; or why
/// there is none.
fn chromium() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("CHROME") {
        let p = PathBuf::from(p);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(format!("CHROME={} is not a file", p.display()))
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    let names = [
        "chromium",
        "chromium-browser",
        "google-chrome",
        "google-chrome-stable",
    ];
    names
        .iter()
        .flat_map(|name| std::env::split_paths(&path).map(move |d| d.join(name)))
        .find(|p| p.is_file())
        .ok_or_else(|| format!("none of {names:?} is on the PATH"))
}

/// Where the screenshots go: `$SKYWAVE_SCREENSHOTS`, else `webui-screenshots` in the
/// build's target directory.
fn screenshot_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("SKYWAVE_SCREENSHOTS") {
        return d.into();
    }
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"),
        PathBuf::from,
    );
    target.join("webui-screenshots")
}

/// The page's URL for a daemon (its bound API address).
fn url(d: &Daemon) -> String {
    format!("http://{}/", d.info.http)
}

fn token(d: &Daemon) -> String {
    std::fs::read_to_string(d.dir.join("http-token"))
        .unwrap()
        .trim()
        .to_string()
}

/// Evaluates `expr` in the page; its JSON value (`null` for undefined).
fn js(tab: &Tab, expr: &str) -> serde_json::Value {
    let r = tab
        .evaluate(expr, false)
        .unwrap_or_else(|e| panic!("evaluating {expr}: {e}"));
    r.value.unwrap_or(serde_json::Value::Null)
}

/// Waits until `expr` is true in the page; on a timeout, names `what` and shows the
/// page's visible text.
fn wait_js(tab: &Tab, what: &str, timeout: Duration, expr: &str) {
    let start = Instant::now();
    while js(tab, expr) != serde_json::Value::Bool(true) {
        if start.elapsed() > timeout {
            let text = js(tab, "document.body.innerText");
            panic!(
                "timed out after {timeout:?} waiting for {what} ({expr}); the page shows:\n{text}"
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Clicks the element `sel` names (a real click event, as a finger or mouse makes).
fn click(tab: &Tab, sel: &str) {
    let found = js(
        tab,
        &format!(
            "(() => {{ const e = document.querySelector({}); if (!e) return false; e.click(); return true; }})()",
            lit(sel)
        ),
    );
    assert_eq!(found, true, "no {sel} on the page to click");
}

/// Types `text` into the field `sel` names: focused, then inserted as keyboard input.
fn type_into(tab: &Tab, sel: &str, text: &str) {
    let found = js(
        tab,
        &format!(
            "(() => {{ const e = document.querySelector({}); if (!e) return false; e.focus(); return document.activeElement === e; }})()",
            lit(sel)
        ),
    );
    assert_eq!(found, true, "no {sel} on the page to type into");
    tab.send_character(text)
        .unwrap_or_else(|e| panic!("typing into {sel}: {e}"));
}

/// A JS string literal for `s`.
fn lit(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

/// The bundle list's entry for `id`, as a selector.
fn entry(id: &str) -> String {
    format!("#bundle-list li[data-id=\"{id}\"]")
}

/// Sets the viewport (CSS pixels; `mobile` as a phone would) and saves a PNG of it.
fn screenshot(tab: &Tab, dir: &Path, name: &str, size: (u32, u32), mobile: bool) -> PathBuf {
    viewport(tab, size, mobile);
    let png = tab
        .capture_screenshot(Page::CaptureScreenshotFormatOption::Png, None, None, true)
        .unwrap_or_else(|e| panic!("screenshot {name}: {e}"));
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, png).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
    path
}

/// Sets the viewport (CSS pixels; `mobile` as a phone would), scrolled to the top.
fn viewport(tab: &Tab, (w, h): (u32, u32), mobile: bool) {
    tab.call_method(Emulation::SetDeviceMetricsOverride {
        width: w,
        height: h,
        device_scale_factor: 1.0,
        mobile,
        scale: None,
        screen_width: None,
        screen_height: None,
        position_x: None,
        position_y: None,
        dont_set_visible_size: None,
        screen_orientation: None,
        viewport: None,
        display_feature: None,
        device_posture: None,
    })
    .unwrap_or_else(|e| panic!("setting a {w}x{h} viewport: {e}"));
    js(
        tab,
        "document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0)",
    );
    // Let the layout settle at the new width.
    std::thread::sleep(Duration::from_millis(300));
}

/// Opens a daemon's page in a new tab and signs in with its token.
fn open_page(browser: &Browser, d: &Daemon) -> std::sync::Arc<Tab> {
    let tab = browser.new_tab().expect("a new tab");
    tab.set_default_timeout(Duration::from_secs(20));
    tab.navigate_to(&url(d))
        .and_then(|t| t.wait_until_navigated())
        .unwrap_or_else(|e| panic!("loading {}: {e}", url(d)));
    wait_js(
        &tab,
        "the token prompt",
        SHORT,
        "!document.getElementById('login').hidden && document.getElementById('app').hidden",
    );
    type_into(&tab, "#token", &token(d));
    click(&tab, "#login-form button[type=submit]");
    wait_js(
        &tab,
        &format!("{}'s page open with its node id", d.name),
        SHORT,
        &format!(
            "document.getElementById('node').textContent === {}",
            lit(&d.info.node)
        ),
    );
    tab
}

#[test]
fn a_file_uploaded_on_one_nodes_page_appears_live_on_the_others() {
    let chrome = match chromium() {
        Ok(c) => c,
        Err(why) => {
            eprintln!(
                "skipping the web UI browser test: no Chromium ({why}); install it (apt-get install -y chromium) or set CHROME to its path"
            );
            return;
        }
    };
    let started = Instant::now();
    let tmp = tempfile::tempdir().unwrap();
    let a = Daemon::start(tmp.path(), "a", &["--listen", "udp://127.0.0.1:0"]);
    // B reaches A through a 2 Mbit/s emulated path: the upload takes seconds to arrive,
    // long enough to see its transfer on both pages.
    let emu = Emulator::udp(
        tmp.path(),
        "rate=2Mbps,delay=10ms,mtu=1500,buffer=128KiB",
        a.udp(),
    );
    let peer = format!("udp://{}", emu.listen);
    let b = Daemon::start(
        tmp.path(),
        "b",
        &["--listen", "udp://127.0.0.1:0", "--peer", &peer],
    );
    let downloads = tmp.path().join("downloads");
    std::fs::create_dir_all(&downloads).unwrap();

    // Chromium refuses its sandbox as root (CI containers); the pages are our own.
    let browser = Browser::new(LaunchOptions {
        path: Some(chrome.clone()),
        headless: true,
        sandbox: false,
        window_size: Some((1280, 800)),
        idle_browser_timeout: Duration::from_secs(120),
        args: vec![OsStr::new("--disable-dev-shm-usage")],
        ..LaunchOptions::default()
    })
    .unwrap_or_else(|e| panic!("starting {}: {e}", chrome.display()));

    eprintln!("step 1 at {:?}", started.elapsed());
    // 1. A wrong token is refused with the daemon's message; the page keeps asking.
    let tab_a = browser.new_tab().unwrap();
    tab_a.set_default_timeout(Duration::from_secs(20));
    tab_a
        .navigate_to(&url(&a))
        .and_then(|t| t.wait_until_navigated())
        .unwrap();
    wait_js(
        &tab_a,
        "the token prompt",
        SHORT,
        "!document.getElementById('login').hidden",
    );
    type_into(&tab_a, "#token", "0123456789abcdef0123456789abcdef");
    click(&tab_a, "#login-form button[type=submit]");
    wait_js(
        &tab_a,
        "the refusal of a wrong token",
        SHORT,
        "document.getElementById('login-msg').textContent.includes('refused')",
    );
    assert_eq!(
        js(&tab_a, "sessionStorage.getItem('skywave-token')"),
        serde_json::Value::Null
    );
    let _ = tab_a.close(false);

    eprintln!("step 2 at {:?}", started.elapsed());
    // 2. Both pages open with their tokens; A's shows B as a synced peer.
    let tab_a = open_page(&browser, &a);
    let tab_b = open_page(&browser, &b);
    wait_js(
        &tab_a,
        "B among A's peers, synced",
        LONG,
        &format!(
            "[...document.querySelectorAll('#peer-list li[data-peer=\"{}\"] .badge')].some(e => e.textContent === 'synced')",
            b.info.node
        ),
    );
    wait_js(
        &tab_a,
        "the event stream",
        SHORT,
        "document.getElementById('live').textContent === 'live'",
    );
    wait_js(
        &tab_b,
        "the event stream",
        SHORT,
        "document.getElementById('live').textContent === 'live'",
    );
    assert_eq!(
        js(&tab_a, "sessionStorage.getItem('skywave-token')"),
        token(&a).as_str()
    );

    eprintln!("step 3 at {:?}", started.elapsed());
    // 3. Upload through A's form: a name that is markup must stay text.
    let file = tmp.path().join("field-report.txt");
    let content = payload(2_000_000, 7);
    std::fs::write(&file, &content).unwrap();
    let name = "report <img src=x id=injected> & \"notes\".txt";
    tab_a
        .find_element("#file")
        .expect("the file field")
        .set_input_files(&[file.to_str().unwrap()])
        .expect("choosing the file");
    type_into(&tab_a, "#service", "photos");
    type_into(&tab_a, "#name", name);
    type_into(&tab_a, "#lifetime", "7d");
    js(&tab_a, "document.getElementById('priority').value = 'high'");
    click(&tab_a, "#upload-button");
    wait_js(
        &tab_a,
        "the upload's confirmation",
        SHORT,
        "document.getElementById('upload-msg').textContent.startsWith('Stored')",
    );
    let listed = a
        .client
        .get_json::<serde_json::Value>("/v1/bundles?service=photos")
        .unwrap();
    let bundle = &listed["bundles"][0];
    let id = bundle["id"]
        .as_str()
        .expect("the upload stored at A")
        .to_string();
    assert_eq!(bundle["name"], name);
    assert_eq!(bundle["length"], content.len());
    assert_eq!(bundle["priority"], "high");
    let expires = bundle["expires"].as_u64().unwrap() - bundle["date"].as_u64().unwrap();
    assert_eq!(expires, 7 * 86_400);
    assert_eq!(a.payload(&id).as_deref(), Some(&content[..]));

    eprintln!("step 4 at {:?}", started.elapsed());
    // 4. While it travels, both pages show its transfer with a progress bar (and the
    // receiver its ETA). The screenshots are taken then (desktop: A sending; phone: B
    // receiving); at a phone's width nothing scrolls sideways.
    let moving = |dir: &str, eta: bool| {
        format!(
            "(() => {{ const t = document.querySelector('#transfer-list li[data-transfer=\"{id}\"]'); if (!t) return false; const p = t.querySelector('progress'); return !!p && p.value < 100 && t.textContent.includes('{dir}') && {}; }})()",
            if eta {
                "t.textContent.includes('ETA')"
            } else {
                "true"
            }
        )
    };
    wait_js(
        &tab_a,
        "the transfer on A's page",
        LONG,
        &moving("↑ to", false),
    );
    let shots = screenshot_dir();
    let desktop = screenshot(&tab_a, &shots, "desktop.png", (1280, 800), false);
    wait_js(
        &tab_b,
        "the transfer, with its ETA, on B's page",
        SHORT,
        &moving("↓ from", true),
    );
    let phone = screenshot(&tab_b, &shots, "phone.png", (390, 844), true);
    eprintln!("screenshots: {} {}", desktop.display(), phone.display());
    for w in [390, 360] {
        viewport(&tab_b, (w, 800), true);
        // A phone widens its layout viewport to fit wide content (and zooms out), so
        // the page's width is compared with the screen's, not with innerWidth.
        let width = js(&tab_b, "document.documentElement.scrollWidth");
        assert!(
            width.as_u64().is_some_and(|px| px <= u64::from(w)),
            "at {w} px the page is {width} px wide"
        );
    }

    eprintln!("step 5 at {:?}", started.elapsed());
    // 5. A's list shows it, as text, with download and delete.
    wait_js(
        &tab_a,
        "the upload in A's list",
        SHORT,
        &format!("!!document.querySelector('{}')", entry(&id)),
    );
    assert_eq!(
        js(
            &tab_a,
            &format!("document.querySelector('{} .name').textContent", entry(&id))
        ),
        name
    );
    assert_eq!(
        js(&tab_a, "document.getElementById('injected') === null"),
        true
    );
    assert_eq!(
        js(
            &tab_a,
            &format!("!!document.querySelector('{} button.delete')", entry(&id))
        ),
        true
    );

    eprintln!("step 6 at {:?}", started.elapsed());
    // 6. The search box: by name, by service, by id prefix, and nothing.
    for (q, want) in [
        ("REPORT <img", 1),
        ("photos", 1),
        (&id[..6], 1),
        ("no-such-bundle", 0),
    ] {
        js(
            &tab_a,
            &format!(
                "(() => {{ const s = document.getElementById('search'); s.value = {}; s.dispatchEvent(new Event('input')); }})()",
                lit(q)
            ),
        );
        let n = js(
            &tab_a,
            "document.querySelectorAll('#bundle-list li[data-id]').length",
        );
        assert_eq!(n, want, "search {q:?}");
    }
    js(
        &tab_a,
        "(() => { const s = document.getElementById('search'); s.value = ''; s.dispatchEvent(new Event('input')); })()",
    );

    eprintln!("step 7 at {:?}", started.elapsed());
    // 7. B's page, open all along, shows the bundle arrive: no reload, the event stream.
    wait_js(
        &tab_b,
        "the bundle at B's page",
        LONG,
        &format!("!!document.querySelector('{}')", entry(&id)),
    );
    assert_eq!(
        js(
            &tab_b,
            &format!("document.querySelector('{} .name').textContent", entry(&id))
        ),
        name
    );
    assert_eq!(
        js(
            &tab_b,
            &format!("!!document.querySelector('{} button.delete')", entry(&id))
        ),
        false,
        "B did not author it"
    );
    wait_js(
        &tab_b,
        "a 'received' line in B's activity",
        SHORT,
        &format!(
            "document.getElementById('activity').textContent.includes('received {}')",
            &id[..8]
        ),
    );
    assert_eq!(b.wait_bundle(&id, SHORT), content);

    eprintln!("step 8 at {:?}", started.elapsed());
    // 8. Download from B's page: the payload, byte for byte.
    tab_b
        .call_method(Cdp::SetDownloadBehavior {
            behavior: Cdp::SetDownloadBehaviorBehaviorOption::Allow,
            browser_context_id: None,
            download_path: Some(downloads.to_str().unwrap().to_string()),
            events_enabled: None,
        })
        .expect("allowing downloads");
    click(&tab_b, &format!("{} button.download", entry(&id)));
    let got = wait_for("the download from B's page", SHORT, || {
        let f = std::fs::read_dir(&downloads)
            .ok()?
            .flatten()
            .find(|e| !e.file_name().to_string_lossy().ends_with(".crdownload"))?;
        let data = std::fs::read(f.path()).ok()?;
        (data.len() == content.len()).then_some(data)
    });
    assert!(
        got == content,
        "the downloaded file differs from the upload"
    );

    eprintln!("step 9 at {:?}", started.elapsed());
    // 9. Delete from A's page (two clicks): gone from both pages.
    let del = format!("{} button.delete", entry(&id));
    click(&tab_a, &del);
    assert_eq!(
        js(
            &tab_a,
            &format!("document.querySelector('{del}').textContent")
        ),
        "Delete everywhere?"
    );
    click(&tab_a, &del);
    wait_js(
        &tab_a,
        "the deletion at A's page",
        SHORT,
        &format!("!document.querySelector('{}')", entry(&id)),
    );
    wait_js(
        &tab_b,
        "the deletion at B's page",
        LONG,
        &format!("!document.querySelector('{}')", entry(&id)),
    );
    let v: serde_json::Value = b.client.get_json(&format!("/v1/bundles/{id}")).unwrap();
    assert_eq!(v["deleted"], true);

    eprintln!("step 10 at {:?}", started.elapsed());
    // 10. Forgetting the token leaves the tab without it.
    click(&tab_a, "#logout");
    wait_js(
        &tab_a,
        "the prompt after forgetting",
        SHORT,
        "!document.getElementById('login').hidden",
    );
    assert_eq!(
        js(&tab_a, "sessionStorage.getItem('skywave-token')"),
        serde_json::Value::Null
    );

    eprintln!("step 11 at {:?}", started.elapsed());
    // 11. With `open_reads` (loopback), the page reads without the token and says that
    // uploads and deletes need it; trying to upload brings the prompt.
    let c = Daemon::start(tmp.path(), "c", &["--open-reads"]);
    let tab_c = browser.new_tab().unwrap();
    tab_c.set_default_timeout(Duration::from_secs(20));
    tab_c
        .navigate_to(&url(&c))
        .and_then(|t| t.wait_until_navigated())
        .unwrap();
    wait_js(
        &tab_c,
        "C's page open without a token",
        SHORT,
        &format!(
            "document.getElementById('node').textContent === {} && !document.getElementById('readonly').hidden && document.getElementById('login').hidden",
            lit(&c.info.node)
        ),
    );
    wait_js(
        &tab_c,
        "C's event stream without a token",
        SHORT,
        "document.getElementById('live').textContent === 'live'",
    );
    tab_c
        .find_element("#file")
        .expect("the file field")
        .set_input_files(&[file.to_str().unwrap()])
        .expect("choosing the file");
    click(&tab_c, "#upload-button");
    wait_js(
        &tab_c,
        "the token prompt on upload",
        SHORT,
        "!document.getElementById('login').hidden && document.getElementById('login-msg').textContent.includes('needs the token')",
    );
    let held: serde_json::Value = c.client.get_json("/v1/bundles").unwrap();
    assert_eq!(held["bundles"].as_array().map(Vec::len), Some(0), "{held}");
    eprintln!("web UI test took {:?}", started.elapsed());
}
