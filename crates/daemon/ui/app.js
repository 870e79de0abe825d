// skywave's web UI: calls the daemon's HTTP API (docs/api.md) with the node's token
// and follows its event stream. No framework, no build step.
//
// Safety rules (docs/webui.md): every text that comes from the node or its peers goes
// into the page as text (textContent, attribute values), never as markup; the token
// lives in this tab's sessionStorage and travels only in the Authorization header of
// same-origin calls, never in a URL.
'use strict';

(() => {
  const TOKEN_KEY = 'skywave-token';
  const SHOWN_MAX = 500; // bundles drawn at once; the search narrows the rest
  const POLL_MS = 3000; // status refresh for transfer progress (no event carries it)

  const $ = (id) => document.getElementById(id);

  const state = {
    token: sessionStorage.getItem(TOKEN_KEY) || '',
    bundles: new Map(),
    since: 0,
    status: null,
    stream: null,
    reload: false,
    lastEventId: null,
    poll: null,
    running: false,
  };

  // ---- DOM helpers: text only ----------------------------------------------------

  /** An element with attributes and children (strings become text nodes). */
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'class') e.className = v;
      else e.setAttribute(k, String(v));
    }
    for (const c of children) {
      if (c === undefined || c === null || c === false) continue;
      e.append(typeof c === 'string' ? document.createTextNode(c) : c);
    }
    return e;
  }

  function show(id, on) {
    $(id).hidden = !on;
  }

  function setText(id, text) {
    $(id).textContent = text;
  }

  // ---- formatting ------------------------------------------------------------------

  const short = (id) => (id ? String(id).slice(0, 8) : '');

  function bytes(n) {
    if (n === undefined || n === null) return '';
    const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let i = 0;
    let v = Number(n);
    while (v >= 1024 && i < u.length - 1) {
      v /= 1024;
      i += 1;
    }
    return `${i === 0 ? v : v.toFixed(v < 10 ? 1 : 0)} ${u[i]}`;
  }

  function bits(n) {
    const v = Number(n || 0);
    if (v >= 1e6) return `${(v / 1e6).toFixed(1)} Mbit/s`;
    if (v >= 1e3) return `${(v / 1e3).toFixed(1)} kbit/s`;
    return `${Math.round(v)} bit/s`;
  }

  function duration(s) {
    if (s === undefined || s === null || !isFinite(s)) return '';
    s = Math.max(0, Math.round(s));
    if (s < 60) return `${s} s`;
    if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
    if (s < 86400) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
    return `${Math.floor(s / 86400)} d ${Math.floor((s % 86400) / 3600)} h`;
  }

  const utc = (secs) => new Date(secs * 1000).toISOString().replace('T', ' ').slice(0, 16) + ' UTC';

  function badge(text, kind) {
    return el('span', { class: `badge ${kind}` }, text);
  }

  // ---- the API ---------------------------------------------------------------------

  class ApiError extends Error {
    constructor(status, message) {
      super(message);
      this.status = status;
    }
  }

  /** A same-origin call with the token; throws ApiError with the daemon's message. */
  async function api(path, opts = {}) {
    const headers = new Headers(opts.headers || {});
    if (state.token) headers.set('Authorization', `Bearer ${state.token}`);
    const resp = await fetch(path, { ...opts, headers, cache: 'no-store', credentials: 'omit' });
    if (!resp.ok) {
      let msg = `${resp.status} ${resp.statusText}`;
      try {
        const j = await resp.json();
        if (j && j.error) msg = j.error;
      } catch (_) {
        // not JSON: the status line says enough
      }
      if (resp.status === 401) needToken('The node refused the token: ' + msg);
      throw new ApiError(resp.status, msg);
    }
    return resp;
  }

  // ---- token -----------------------------------------------------------------------

  function needToken(message) {
    stop();
    state.token = '';
    sessionStorage.removeItem(TOKEN_KEY);
    show('app', false);
    show('logout', false);
    show('login', true);
    setText('login-msg', message || '');
    $('token').focus();
  }

  async function login(ev) {
    ev.preventDefault();
    const t = $('token').value.trim();
    if (!t) return;
    state.token = t;
    setText('login-msg', 'Checking…');
    try {
      await api('/v1/status');
    } catch (e) {
      if (e.status !== 401) setText('login-msg', `The node did not answer: ${e.message}`);
      return;
    }
    sessionStorage.setItem(TOKEN_KEY, t);
    $('token').value = '';
    setText('login-msg', '');
    start();
  }

  function logout() {
    needToken('Token forgotten. Enter it again to continue.');
  }

  // ---- status ----------------------------------------------------------------------

  let statusBusy = false;
  async function loadStatus() {
    if (statusBusy) return;
    statusBusy = true;
    try {
      const s = await (await api('/v1/status')).json();
      state.status = s;
      renderStatus(s);
    } catch (e) {
      if (e.status !== 401) setText('summary', `status: ${e.message}`);
    } finally {
      statusBusy = false;
    }
  }

  function renderStatus(s) {
    setText('node', s.node);
    $('node').title = 'this node\'s identity';
    const st = s.store || {};
    const parts = [
      `version ${s.version}`,
      `up ${duration(s.uptime_seconds)}`,
      `${st.bundles} bundle${st.bundles === 1 ? '' : 's'}, ${bytes(st.payload_bytes)}`,
    ];
    if (st.quota) parts.push(`quota ${bytes(st.quota)}`);
    if (st.partials) parts.push(`${st.partials} partial`);
    setText('summary', parts.join(' · '));

    const links = (s.links || []).map((l) => {
      const rates = `↑ ${bits(l.out_bits_per_s)} ↓ ${bits(l.in_bits_per_s)}`;
      const extra = [l.kind, `MTU ${l.mtu}`];
      if (l.rate_bits_per_s) extra.push(`rate ${bits(l.rate_bits_per_s)}`);
      if (l.utilisation !== undefined) extra.push(`${Math.round(l.utilisation * 100)}% used`);
      if (l.encryption) extra.push(l.encryption);
      if (l.trust) extra.push(`trust ${l.trust}`);
      // `state` (up, down, no answer, refusing, waiting) with a reason in words.
      const st = l.state || (l.up ? 'up' : 'down');
      const kind = st === 'up' ? 'ok' : st === 'waiting' ? 'busy' : 'bad';
      return el('li', { 'data-link': l.id },
        el('div', { class: 'line' }, el('strong', {}, l.name), badge(st, kind)),
        reason(l.reason, kind),
        el('div', { class: 'meta' }, `${rates} · ${extra.join(' · ')}`));
    });
    fill('link-list', links, 'No links.');

    const peers = (s.peers || []).map((p) => {
      const kind = p.state === 'synced' ? 'ok' : p.state === 'down' ? 'bad' : 'busy';
      const extra = [`link ${p.link}`];
      if (p.identity) extra.push(p.identity === 'verified' ? 'identity verified' : `identity ${p.identity}`);
      if (p.trust) extra.push(`trust ${p.trust}`);
      if (p.rtt_ms !== undefined) extra.push(`RTT ${Math.round(p.rtt_ms)} ms`);
      if (p.path_mtu !== undefined) extra.push(`MTU ${p.path_mtu}${p.path_mtu_searching ? '?' : ''}`);
      if (p.sending) extra.push(`sending ${p.sending}`);
      if (p.receiving) extra.push(`receiving ${p.receiving}`);
      if (p.silent_seconds >= 5) extra.push(`silent ${duration(p.silent_seconds)}`);
      return el('li', { 'data-peer': p.node },
        el('div', { class: 'line' }, el('code', { class: 'id', title: p.node }, short(p.node)), badge(p.state, kind)),
        reason(p.reason, kind),
        el('div', { class: 'meta' }, extra.join(' · ')));
    });
    fill('peer-list', peers, 'No peers heard yet.');

    const transfers = (s.transfers || []).map((t) => {
      const b = state.bundles.get(t.id);
      const what = b && b.name ? b.name : short(t.id);
      const total = t.total_bytes || 0;
      const pct = total ? Math.floor((100 * t.held_bytes) / total) : 0;
      const extra = [`${bytes(t.held_bytes)} of ${bytes(total)}`];
      if (t.rate_bytes_per_s) extra.push(`${bytes(t.rate_bytes_per_s)}/s`);
      if (t.eta_seconds !== undefined) extra.push(`ETA ${duration(t.eta_seconds)}`);
      const kind = t.state === 'stalled' ? 'bad' : 'busy';
      return el('li', { 'data-transfer': t.id },
        el('div', { class: 'line' },
          el('span', {}, `${t.direction === 'send' ? '↑ to' : '↓ from'} `,
            el('code', { class: 'id', title: t.peer }, short(t.peer)), ' ', el('strong', { title: t.id }, what)),
          badge(t.state, kind)),
        el('progress', { max: 100, value: pct, 'aria-label': `${pct}%` }),
        reason(t.reason, kind),
        el('div', { class: 'meta' }, `${pct}% · ${extra.join(' · ')}`));
    });
    fill('transfer-list', transfers, 'None under way.');
  }

  /** Why a link, peer or transfer is as it is: red when it is a fault. */
  function reason(text, kind) {
    return text ? el('div', { class: kind === 'bad' ? 'reason bad' : 'reason' }, text) : null;
  }

  function fill(id, items, empty) {
    const list = $(id);
    if (items.length === 0) list.replaceChildren(el('li', { class: 'empty' }, empty));
    else list.replaceChildren(...items);
  }

  // ---- bundles ---------------------------------------------------------------------

  let bundlesBusy = false;
  let bundlesAgain = false;
  /**
   * Fetches what was stored since the last call (tombstones too, to drop them); with
   * `full`, everything again (after a break in the event stream, an expiry may have
   * been missed).
   */
  async function loadBundles(full) {
    if (full) state.reload = true;
    if (bundlesBusy) {
      bundlesAgain = true;
      return;
    }
    bundlesBusy = true;
    try {
      do {
        bundlesAgain = false;
        let into = state.bundles;
        if (state.reload) {
          state.reload = false;
          state.since = 0;
          into = new Map();
        }
        for (;;) {
          const j = await (await api(`/v1/bundles?deleted=true&limit=1000&since=${state.since}`)).json();
          for (const b of j.bundles) {
            if (b.deleted) into.delete(b.id);
            else into.set(b.id, b);
          }
          if (j.next_since === null || j.next_since === undefined) break;
          state.since = j.next_since;
          if (j.bundles.length < 1000) break;
        }
        state.bundles = into;
      } while (bundlesAgain);
      renderBundles();
    } catch (e) {
      state.reload = true; // a partial pass: start again next time
      if (e.status !== 401) setText('bundle-more', `bundles: ${e.message}`);
    } finally {
      bundlesBusy = false;
    }
  }

  function matches(b, q) {
    if (!q) return true;
    return (b.name || '').toLowerCase().includes(q)
      || (b.service || '').toLowerCase().includes(q)
      || b.id.startsWith(q);
  }

  function renderBundles() {
    const q = $('search').value.trim().toLowerCase();
    const all = [...state.bundles.values()];
    const found = all.filter((b) => matches(b, q)).sort((a, b) => b.date - a.date || b.token - a.token);
    setText('bundle-count', q ? `${found.length} of ${all.length}` : `${all.length}`);
    const items = found.slice(0, SHOWN_MAX).map(bundleItem);
    fill('bundle-list', items, q ? 'Nothing matches.' : 'No bundles yet.');
    setText('bundle-more', found.length > SHOWN_MAX
      ? `${found.length - SHOWN_MAX} more: narrow the search.` : '');
  }

  function bundleItem(b) {
    const tags = [];
    if (b.own) tags.push(badge('own', 'ok'));
    if (b.priority && b.priority !== 'normal') tags.push(badge(b.priority, b.priority === 'high' ? 'busy' : 'off'));
    if (b.sealed) tags.push(badge('sealed', 'off'));
    if (b.journal) tags.push(badge('journal', 'off'));
    const meta = [b.service || 'no service', bytes(b.length), b.date_utc ? utc(b.date) : ''];
    if (b.version > 1 && !b.journal) meta.push(`version ${b.version}`);
    if (b.expires) meta.push(`expires ${utc(b.expires)}`);
    const actions = el('div', { class: 'actions' });
    if (!b.sealed) {
      const dl = el('button', { type: 'button', class: 'download' }, 'Download');
      dl.addEventListener('click', () => download(b, dl));
      actions.append(dl);
    }
    if (b.own) {
      const del = el('button', { type: 'button', class: 'delete danger' }, 'Delete');
      del.addEventListener('click', () => remove(b, del));
      actions.append(del);
    }
    return el('li', { 'data-id': b.id, class: 'bundle' },
      el('div', { class: 'line' }, el('strong', { class: 'name' }, b.name || '(no name)'), el('span', { class: 'tags' }, ...tags)),
      el('div', { class: 'meta' }, meta.filter(Boolean).join(' · ')),
      el('div', { class: 'line' }, el('code', { class: 'id', title: b.id }, short(b.id)), actions));
  }

  /** Fetched with the token, then handed to the browser as a file. */
  async function download(b, button) {
    button.disabled = true;
    button.textContent = 'Downloading…';
    try {
      const blob = await (await api(`/v1/bundles/${b.id}/payload`)).blob();
      const url = URL.createObjectURL(blob);
      const a = el('a', { href: url, download: b.name || `${short(b.id)}.bin` });
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 60000);
      button.textContent = 'Download';
    } catch (e) {
      button.textContent = 'Failed';
      button.title = e.message;
    } finally {
      button.disabled = false;
    }
  }

  /** Two clicks: the first asks, the second publishes the tombstone. */
  async function remove(b, button) {
    if (!state.token) {
      logout();
      return;
    }
    if (button.dataset.armed !== '1') {
      button.dataset.armed = '1';
      button.textContent = 'Delete everywhere?';
      setTimeout(() => {
        if (button.isConnected && button.dataset.armed === '1') {
          button.dataset.armed = '';
          button.textContent = 'Delete';
        }
      }, 5000);
      return;
    }
    button.disabled = true;
    try {
      await api(`/v1/bundles/${b.id}`, { method: 'DELETE' });
      state.bundles.delete(b.id);
      renderBundles();
    } catch (e) {
      button.disabled = false;
      button.textContent = 'Delete failed';
      button.title = e.message;
    }
  }

  // ---- upload ----------------------------------------------------------------------

  /** XMLHttpRequest rather than fetch: it reports upload progress. */
  function upload(ev) {
    ev.preventDefault();
    if (!state.token) {
      needToken('Uploading needs the token.');
      return;
    }
    const file = $('file').files[0];
    if (!file) {
      setText('upload-msg', 'Choose a file first.');
      return;
    }
    const form = new FormData();
    for (const k of ['service', 'name', 'priority', 'lifetime']) {
      const v = $(k).value.trim();
      if (v) form.append(k, v);
    }
    form.append('file', file, file.name);
    const xhr = new XMLHttpRequest();
    const bar = $('upload-progress');
    xhr.open('POST', '/v1/bundles');
    xhr.setRequestHeader('Authorization', `Bearer ${state.token}`);
    xhr.upload.addEventListener('progress', (e) => {
      if (e.lengthComputable) bar.value = e.loaded / e.total;
    });
    xhr.addEventListener('load', () => {
      bar.hidden = true;
      $('upload-button').disabled = false;
      let j = {};
      try {
        j = JSON.parse(xhr.responseText);
      } catch (_) {
        // reported below with the status
      }
      if (xhr.status === 201 || xhr.status === 200) {
        state.bundles.set(j.id, j);
        renderBundles();
        setText('upload-msg', xhr.status === 201
          ? `Stored “${j.name || short(j.id)}” as ${short(j.id)}; peers are offered it now.`
          : `Already held, unchanged: ${short(j.id)} has this name and content.`);
        $('upload-form').reset();
      } else if (xhr.status === 401) {
        needToken(`The node refused the token: ${j.error || xhr.statusText}`);
      } else {
        setText('upload-msg', `Upload refused (${xhr.status}): ${j.error || xhr.statusText}`);
      }
    });
    xhr.addEventListener('error', () => {
      bar.hidden = true;
      $('upload-button').disabled = false;
      setText('upload-msg', 'Upload failed: the node could not be reached.');
    });
    bar.value = 0;
    bar.hidden = false;
    $('upload-button').disabled = true;
    setText('upload-msg', `Uploading ${file.name} (${bytes(file.size)})…`);
    xhr.send(form);
  }

  // ---- events ----------------------------------------------------------------------

  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

  function setLive(on, text) {
    const b = $('live');
    b.textContent = text || (on ? 'live' : 'reconnecting');
    b.className = `badge ${on ? 'ok' : 'bad'}`;
  }

  let soon = null;
  /** Coalesces the refreshes a burst of events asks for. */
  function refreshSoon(what) {
    soon = soon || { status: false, bundles: false };
    soon[what] = true;
    if (soon.timer) return;
    soon.timer = setTimeout(() => {
      const s = soon;
      soon = null;
      if (s.bundles) loadBundles();
      if (s.status) loadStatus();
    }, 150);
  }

  function activity(ev) {
    const d = ev.data || {};
    let text;
    switch (ev.kind) {
      case 'bundle': {
        const b = state.bundles.get(d.id);
        const name = b && b.name ? ` “${b.name}”` : '';
        text = d.deleted ? `deleted ${short(d.id)}${name}`
          : d.source === 'peer' ? `received ${short(d.id)}${name} from ${short(d.from)}`
            : `stored ${short(d.id)}${name}`;
        break;
      }
      case 'expired': text = `expired ${short(d.id)}`; break;
      case 'delivered': text = `${short(d.to)} now holds ${short(d.id)}`; break;
      case 'peer': text = `peer ${short(d.node)} ${d.state}${d.reason ? `: ${d.reason}` : ''}`; break;
      case 'link': text = `link ${d.name} ${d.state || (d.up ? 'up' : 'down')}${d.reason ? `: ${d.reason}` : ''}`; break;
      case 'reconciled': text = `reconciled with ${short(d.node)}: they lack ${d.they_lack}, we lack ${d.we_lack}`; break;
      default: text = ev.kind;
    }
    const time = new Date(ev.at_ms).toISOString().slice(11, 19);
    const list = $('activity');
    const empty = list.querySelector('.empty');
    if (empty) empty.remove();
    list.prepend(el('li', {}, el('span', { class: 'meta' }, time), ' ', text));
    while (list.children.length > 12) list.lastChild.remove();
  }

  function dispatch(ev) {
    activity(ev);
    switch (ev.kind) {
      case 'bundle':
        refreshSoon('bundles');
        refreshSoon('status');
        break;
      case 'expired':
        state.bundles.delete(ev.data.id);
        renderBundles();
        break;
      default:
        refreshSoon('status');
    }
  }

  /** One block of `field: value` lines (text/event-stream). */
  function handleBlock(block) {
    let data = '';
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) continue; // keep-alive comment
      const i = line.indexOf(':');
      const field = i < 0 ? line : line.slice(0, i);
      const value = i < 0 ? '' : line.slice(i + 1).replace(/^ /, '');
      if (field === 'id') state.lastEventId = value;
      else if (field === 'data') data += (data ? '\n' : '') + value;
    }
    if (!data) return;
    try {
      dispatch(JSON.parse(data));
    } catch (e) {
      console.warn('skywave: an event that is not JSON', e);
    }
  }

  /**
   * Follows /v1/events with fetch (not EventSource, which cannot send the token in a
   * header), resuming from the last event id after a break, with backoff.
   */
  async function follow(ctrl) {
    let backoff = 1000;
    let first = true;
    while (!ctrl.signal.aborted) {
      try {
        const headers = { Accept: 'text/event-stream' };
        if (state.lastEventId) headers['Last-Event-ID'] = state.lastEventId;
        const resp = await api('/v1/events', { headers, signal: ctrl.signal });
        setLive(true);
        backoff = 1000;
        if (!first) {
          // What happened while away and is no longer among the events held.
          loadBundles(true);
          loadStatus();
        }
        first = false;
        const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
        let buf = '';
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += value.replace(/\r\n?/g, '\n');
          let i;
          while ((i = buf.indexOf('\n\n')) >= 0) {
            handleBlock(buf.slice(0, i));
            buf = buf.slice(i + 2);
          }
        }
      } catch (e) {
        if (ctrl.signal.aborted || e.status === 401) return;
      }
      setLive(false, 'reconnecting');
      await sleep(backoff + Math.random() * backoff * 0.5);
      backoff = Math.min(backoff * 2, 30000);
    }
  }

  // ---- start and stop --------------------------------------------------------------

  function start() {
    stop();
    state.running = true;
    show('login', false);
    show('app', true);
    show('logout', !!state.token);
    show('readonly', !state.token);
    setLive(false, 'connecting');
    state.bundles = new Map();
    state.since = 0;
    loadStatus();
    loadBundles(true);
    state.stream = new AbortController();
    follow(state.stream);
    state.poll = setInterval(() => {
      if (!document.hidden) loadStatus();
    }, POLL_MS);
  }

  function stop() {
    state.running = false;
    if (state.stream) state.stream.abort();
    state.stream = null;
    if (state.poll) clearInterval(state.poll);
    state.poll = null;
    state.lastEventId = null;
  }

  /** With a token kept in this tab, or reads open without one, straight in. */
  async function boot() {
    $('login-form').addEventListener('submit', login);
    $('logout').addEventListener('click', logout);
    $('enter-token').addEventListener('click', () => needToken(''));
    $('upload-form').addEventListener('submit', upload);
    $('search').addEventListener('input', renderBundles);
    if (state.token) {
      start();
      return;
    }
    try {
      const resp = await fetch('/v1/status', { cache: 'no-store', credentials: 'omit' });
      if (resp.ok) {
        start();
        return;
      }
    } catch (_) {
      // fall through to the prompt
    }
    needToken('');
  }

  boot();
})();
