/* flowrt execution viewer.
 * A small hash-routed single-page app: no framework, no build step, no external fetches.
 * Every piece of API data is inserted with textContent / text nodes, never innerHTML. */
'use strict';

const TOKEN_KEY = 'flowrt.token';
const PAGE_SIZE = 50;
const STATUSES = ['in_progress', 'waiting', 'completed', 'cancelled', 'error'];
const ACTIVE = new Set(['queued', 'in_progress', 'waiting']);
const ENDED = new Set(['completed', 'cancelled', 'error']);
const KIND_TEXT = { 'lock-wait': 'lock wait', 'lock-hold': 'lock hold', wait: 'wait', step: 'step' };

const state = { token: sessionStorage.getItem(TOKEN_KEY) || '', page: null, lastPath: null };

/* ---------------------------------------------------------------- DOM helpers */

// h('a', {href, class, onclick, ...}, children...): builds an element; strings become text nodes.
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c !== null && c !== undefined && c !== false) el.append(c instanceof Node ? c : String(c));
  }
  return el;
}

const $ = (sel, root = document) => root.querySelector(sel);

// A link to a context page.
const ctxLink = (id) => (id ? h('a', { href: '#/contexts/' + encodeURIComponent(id) }, id) : dash());
// A link to a flow page.
const flowLink = (id) => (id ? h('a', { href: '#/flows/' + encodeURIComponent(id) }, id) : dash());
const dash = () => h('span', { class: 'muted' }, '—');

// A status badge: coloured, but always carrying its text.
function badge(status, prefix = 'status') {
  const s = status == null ? 'unknown' : String(status);
  return h('span', { class: `badge ${prefix}-${s.replace(/[^a-z0-9_-]/gi, '_')}` }, s);
}

// A <time> element showing the ISO text as sent, with the local time as a tooltip.
function timeEl(iso) {
  if (!iso) return dash();
  const d = new Date(iso);
  return h('time', { datetime: iso, title: isNaN(d) ? null : d.toLocaleString() }, iso);
}

// Milliseconds as text, with precision that suits the size.
function fmtMs(v) {
  if (v === null || v === undefined || v === '') return '—';
  const n = Number(v);
  if (!isFinite(n)) return String(v);
  const abs = Math.abs(n);
  const r = abs < 10 ? Number(n.toFixed(3)) : abs < 1000 ? Number(n.toFixed(1)) : Math.round(n);
  return (abs < 10000 ? String(r) : r.toLocaleString('en-US')) + ' ms';
}

const jsonPre = (v) => h('pre', { class: 'json' }, JSON.stringify(v === undefined ? null : v, null, 2));

// A table inside a horizontally scrolling, keyboard-focusable region; a header may be [text, class].
function table(attrs, headers, rows, caption) {
  return h('div', { class: 'table-wrap', tabindex: 0, role: 'region', 'aria-label': caption || 'table' },
    h('table', attrs,
      caption ? h('caption', { class: 'sr-only' }, caption) : null,
      h('thead', {}, h('tr', {}, headers.map((t) => (Array.isArray(t)
        ? h('th', { scope: 'col', class: t[1] }, t[0]) : h('th', { scope: 'col' }, t))))),
      h('tbody', {}, rows)));
}

// A row of cells; each cell is a node, a string or {node, class}.
const row = (attrs, cells) => h('tr', attrs, cells.map((c) =>
  c && c.cell ? h('td', { class: c.class }, c.cell) : h('td', {}, c)));

// What names the focused link/button inside one of `roots` (its href or id), or null.
function focusKey(...roots) {
  const active = document.activeElement;
  return active && roots.some((r) => r.contains(active)) ? active.getAttribute('href') || active.id : null;
}

// Focuses the link/button in `root` that `key` (from focusKey) names, if it still exists.
function refocus(root, key) {
  if (!key) return;
  const again = [...root.querySelectorAll('[href],[id]')].find((e) => (e.getAttribute('href') || e.id) === key);
  if (again) again.focus({ preventScroll: true });
}

// Re-render `view` with `nodes`, keeping focus on the same link/button if it still exists.
function replaceView(view, nodes) {
  const key = focusKey(view);
  view.replaceChildren(...nodes.filter((n) => n !== null && n !== undefined));
  refocus(view, key);
}

// obj[key] when obj has that key of its own, else undefined: a key that comes from data
// (a record's field, a status) never reads what Object.prototype holds ("__proto__",
// "constructor").
const own = (obj, key) => (obj != null && Object.hasOwn(obj, key) ? obj[key] : undefined);

/* ---------------------------------------------------------------- messages */

// Shows an error (or other) message in the #message alert element.
function showMessage(text) {
  $('#message').textContent = text;
}

function clearMessages() {
  $('#message').textContent = '';
  $('#notice').textContent = '';
}

// Shows an API error; a 401 asks for the token and focuses the token field.
function showError(err) {
  if (err && err.status === 401) {
    showMessage(`Authentication required: ${err.message}. Enter a bearer token above.`);
    $('#token').focus();
    return;
  }
  const where = err && err.pointer ? ` (at ${err.pointer})` : '';
  const code = err && err.status ? `Error ${err.status}: ` : '';
  showMessage(code + (err && err.message ? err.message : String(err)) + where);
}

/* ---------------------------------------------------------------- API */

class ApiError extends Error {
  constructor(status, message, pointer) {
    super(message);
    this.status = status;
    this.pointer = pointer;
  }
}

// Fetches a JSON API route with the bearer token; throws ApiError with the server's message.
async function api(path, options = {}) {
  const headers = Object.assign({ Accept: 'application/json' }, options.headers);
  if (state.token) headers.Authorization = 'Bearer ' + state.token;
  let res;
  try {
    res = await fetch(path, Object.assign({}, options, { headers, cache: 'no-store' }));
  } catch (e) {
    throw new ApiError(0, `Network error on ${path}: ${e.message}`);
  }
  const text = await res.text();
  let body = null;
  try { body = text ? JSON.parse(text) : null; } catch (e) { body = null; }
  if (!res.ok) {
    const msg = body && typeof body.error === 'string' ? body.error : `${res.status} ${res.statusText}`.trim();
    throw new ApiError(res.status, msg, body && body.pointer);
  }
  if (body === null) throw new ApiError(res.status, `Response from ${path} is not JSON`);
  return body;
}

const enc = encodeURIComponent;

/* ---------------------------------------------------------------- live stream */

// missed: a stream ended and the next is new (no Last-Event-ID): events may have been
// missed meanwhile, so the page reloads what it shows once the new one opens.
const stream = { es: null, retry: null, missed: false };

// Opens /api/stream (token as ?access_token=, since EventSource cannot set headers).
function connectStream() {
  if (stream.es) stream.es.close();
  clearTimeout(stream.retry);
  const url = '/api/stream' + (state.token ? '?access_token=' + enc(state.token) : '');
  const es = new EventSource(url);
  stream.es = es;
  setStreamStatus('connecting');
  es.onopen = () => {
    setStreamStatus('live');
    if (stream.missed) {
      stream.missed = false;
      route();
    }
  };
  es.onerror = () => {
    if (es.readyState === EventSource.CLOSED) {
      stream.missed = true;
      setStreamStatus('offline');
      stream.retry = setTimeout(connectStream, 5000);
    } else {
      setStreamStatus('reconnecting');
    }
  };
  for (const type of ['context', 'lock']) es.addEventListener(type, (ev) => dispatch(type, ev.data));
  // The server could not give all that was missed (docs/API.md, "reset"): the page reloads
  // what it shows, by its own handler when it has one (the live list of contexts), else whole.
  // Contexts that started and were not announced (a burst) concern only what lists or shows
  // contexts: other pages keep what they show, which under a steady burst would otherwise
  // reload at every look.
  es.addEventListener('reset', (ev) => {
    const page = state.page;
    if (!page || !page.alive) return;
    let reason = null;
    try { reason = JSON.parse(ev.data).reason; } catch (e) { /* a reset all the same */ }
    if (page.on.reset) page.on.reset();
    else if (reason === UNANNOUNCED) { if (page.on.unannounced) page.on.unannounced(); }
    else route();
  });
}

function setStreamStatus(s) {
  const el = $('#stream-status');
  el.textContent = 'stream: ' + s;
  el.dataset.state = s;
}

// Passes a stream event to the current page's handler, if it has one.
// The reason of the stream's reset after a look that left started contexts unannounced.
const UNANNOUNCED = 'contexts started and not announced';

function dispatch(type, data) {
  let msg;
  try { msg = JSON.parse(data); } catch (e) { return; }
  const page = state.page;
  if (page && page.alive && page.on[type]) page.on[type](msg);
}

/* ---------------------------------------------------------------- router */

const routes = [
  [/^\/contexts\/([^/]+)$/, renderContext],
  [/^\/contexts\/?$/, renderContexts],
  [/^\/locks\/?$/, renderLocks],
  [/^\/flows\/([^/]+)$/, renderFlow],
  [/^\/flows\/?$/, renderFlows],
  [/^\/records\/([^/]+)$/, renderRecords],
  [/^\/records\/?$/, renderTables],
  [/^\/cluster\/?$/, renderCluster],
];

function parseHash() {
  const raw = location.hash.replace(/^#/, '');
  const [path, qs] = (raw || '/contexts').split('?', 2);
  return { path, params: new URLSearchParams(qs || '') };
}

// Starts a new page: stops the previous page's timers and stream handlers.
function newPage() {
  if (state.page) {
    state.page.alive = false;
    state.page.cleanups.forEach((f) => f());
  }
  state.page = { alive: true, cleanups: [], on: {} };
  return state.page;
}

function every(page, ms, fn) {
  const t = setInterval(fn, ms);
  page.cleanups.push(() => clearInterval(t));
}

// Renders the page for the current hash.
async function route() {
  const raw = location.hash;
  if (raw && !raw.startsWith('#/')) return; // an in-page anchor, not a route
  const { path, params } = parseHash();
  const page = newPage();
  const view = $('#view');
  const moved = state.lastPath !== null && state.lastPath !== path;
  state.lastPath = path;
  clearMessages();
  document.querySelectorAll('#nav a').forEach((a) => {
    const on = path.startsWith('/' + a.dataset.nav);
    if (on) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
  });
  view.setAttribute('aria-busy', 'true');
  view.replaceChildren(h('p', { class: 'loading' }, 'Loading…'));
  const match = routes.map(([re, fn]) => [path.match(re), fn]).find(([m]) => m);
  try {
    if (!match) {
      document.title = 'Not found — flowrt';
      view.replaceChildren(h('h1', {}, 'Not found'), h('p', {}, 'No page at ', path, '. ', h('a', { href: '#/contexts' }, 'Go to contexts')));
    } else {
      await match[1](page, view, params, ...match[0].slice(1).map(decodeURIComponent));
    }
  } catch (e) {
    if (!page.alive) return;
    view.replaceChildren(h('h1', {}, 'Could not load this page'), h('p', {}, 'See the message above. ', h('button', { type: 'button', onclick: route }, 'Retry')));
    showError(e);
  } finally {
    if (page.alive) view.removeAttribute('aria-busy');
  }
  const h1 = $('h1', view);
  if (moved && page.alive && h1) { h1.tabIndex = -1; h1.focus(); }
}

/* ---------------------------------------------------------------- locks */

// A live countdown element; its text is filled by tickCountdowns.
function countdown(iso, verb, pastVerb) {
  if (!iso) return h('span', { class: 'muted' }, 'never');
  return h('span', {}, timeEl(iso), ' ',
    h('span', { class: 'countdown', 'data-deadline': iso, 'data-verb': verb, 'data-past': pastVerb }));
}

// Updates every countdown using the server's clock (client clock + skew).
function tickCountdowns(root, skew) {
  const now = Date.now() + skew;
  for (const el of root.querySelectorAll('.countdown')) {
    const left = (Date.parse(el.dataset.deadline) - now) / 1000;
    el.textContent = left >= 0 ? `${el.dataset.verb} in ${left.toFixed(1)} s` : `${el.dataset.past} ${(-left).toFixed(1)} s ago`;
    el.classList.toggle('past', left < 0);
  }
}

// One lock: numbers, holders and waiters.
function lockSection(lock) {
  const holders = (lock.holders || []).map((x) => row({ 'data-context-id': x.context }, [
    ctxLink(x.context), { cell: String(x.weight), class: 'num' }, { cell: String(x.token), class: 'num' },
    timeEl(x.acquired_at), countdown(x.expires_at, 'expires', 'expired')]));
  const waiters = (lock.waiters || []).map((x, i) => row({ 'data-context-id': x.context }, [
    { cell: String(i + 1), class: 'num' }, ctxLink(x.context), { cell: String(x.weight), class: 'num' },
    timeEl(x.requested_at), countdown(x.gives_up_at, 'gives up', 'gave up')]));
  return h('section', { class: 'lock', 'data-lock': lock.name },
    h('h2', {}, lock.name),
    h('dl', { class: 'facts inline' },
      dlItem('Limit', String(lock.limit)), dlItem('Held', String(lock.held)), dlItem('Last token', String(lock.last_token ?? '—'))),
    h('h3', {}, `Holders (${holders.length})`),
    holders.length
      ? table({ class: 'holders' }, ['Context', ['Weight', 'num'], ['Token', 'num'], 'Acquired at', 'Expires at'], holders, `Holders of ${lock.name}`)
      : h('p', { class: 'muted' }, 'No holders.'),
    h('h3', {}, `Waiters (${waiters.length}, in queue order)`),
    waiters.length
      ? table({ class: 'waiters' }, [['#', 'num'], 'Context', ['Weight', 'num'], 'Requested at', 'Gives up at'], waiters, `Waiters for ${lock.name}`)
      : h('p', { class: 'muted' }, 'No waiters.'));
}

// Page: locks, refreshed on stream `lock` events and every 2 s; countdowns every 250 ms.
async function renderLocks(page, view) {
  document.title = 'Locks — flowrt';
  let skew = 0;
  let last = null;
  let busy = false;
  const load = async () => {
    if (busy) return;
    busy = true;
    try {
      const data = await api('/api/locks');
      if (!page.alive) return;
      const now = Date.parse(data.now);
      skew = isNaN(now) ? 0 : now - Date.now();
      const key = JSON.stringify(data.locks);
      if (key !== last) {
        last = key;
        const locks = data.locks || [];
        replaceView(view, [h('h1', {}, 'Locks'),
          h('p', { class: 'hint' }, 'Refreshes on lock events and every 2 s. Countdowns use the server clock.'),
          h('div', { id: 'locks' }, locks.length ? locks.map(lockSection) : h('p', { class: 'muted' }, 'No locks.'))]);
      }
      tickCountdowns(view, skew);
    } finally {
      busy = false;
    }
  };
  await load();
  const reload = () => load().catch((e) => { if (page.alive) showError(e); });
  every(page, 2000, reload);
  every(page, 250, () => tickCountdowns(view, skew));
  page.on.lock = reload;
}

/* ---------------------------------------------------------------- cluster */

// What a node runs, as of its last heartbeat: the live leader every context (with its
// counts), any other node none.
function nodeRuns(runs) {
  if (!runs || typeof runs !== 'object') return '—';
  if (runs.contexts !== 'all') return 'none';
  return `every context: ${runs.runnable_contexts} runnable, ${runs.waiting_contexts} waiting, ${runs.queued_events} queued`;
}

// Page: the cluster's nodes (serve --node), every 2 s; lease countdowns every 250 ms.
async function renderCluster(page, view) {
  document.title = 'Cluster — flowrt';
  let skew = 0;
  let last = null;
  const load = async () => {
    let data;
    try {
      data = await api('/api/cluster');
    } catch (e) {
      if (e.status === 404) {
        replaceView(view, [h('h1', {}, 'Cluster'),
          h('p', { class: 'muted', id: 'no-cluster' }, 'This server is not a cluster node (it was started without --node).')]);
        return;
      }
      throw e;
    }
    if (!page.alive) return;
    const newest = Math.max(...data.nodes.map((n) => Date.parse(n.heartbeat) || 0));
    if (newest > 0) skew = newest - Date.now();
    const key = JSON.stringify(data);
    if (key === last) return;
    last = key;
    const rows = data.nodes.map((n) => row({ 'data-node': n.name, 'data-role': n.role }, [
      n.name, { cell: String(n.incarnation), class: 'num' }, badge(n.role, 'role'), n.address || '—',
      `${n.host} (pid ${n.pid})`, timeEl(n.heartbeat), countdown(n.lease_until, 'runs out', 'ran out'),
      { cell: nodeRuns(n.runs), class: 'runs' }]));
    replaceView(view, [h('h1', {}, 'Cluster'),
      h('p', { class: 'hint' }, `This page is served by node ${data.node.name} (${data.node.role}). Refreshes every 2 s.`),
      h('dl', { class: 'facts inline', id: 'lead' },
        dlItem('Leader', data.lead.node ?? 'none'), dlItem('Epoch', String(data.lead.epoch)),
        dlItem('Since', data.lead.since || '—'), dlItem('Applied operation', String(data.lead.applied_operation))),
      table({ class: 'nodes', id: 'nodes' }, ['Node', ['Incarnation', 'num'], 'Role', 'Address', 'Host', 'Heartbeat', 'Lease', 'Runs'],
        rows, 'The cluster\'s nodes, newest first')]);
    tickCountdowns(view, skew);
  };
  await load();
  every(page, 2000, () => load().catch((e) => { if (page.alive) showError(e); }));
  every(page, 250, () => tickCountdowns(view, skew));
}

/* ---------------------------------------------------------------- flows */

// Status columns for flow counts: the usual ones first, then any others seen.
function countColumns(flows) {
  const seen = new Set(flows.flatMap((f) => Object.keys(f.counts || {})));
  return [...STATUSES.filter((s) => seen.has(s)), ...[...seen].filter((s) => !STATUSES.includes(s)).sort()];
}

const pctl = (f, p) => (f.runtime_ms ? fmtMs(own(f.runtime_ms, p)) : '—');

// Page: all flows with counts and runtime percentiles.
async function renderFlows(page, view) {
  document.title = 'Flows — flowrt';
  const { flows = [] } = await api('/api/flows');
  if (!page.alive) return;
  const cols = countColumns(flows);
  const rows = flows.map((f) => row({ 'data-flow-id': f.id }, [
    flowLink(f.id), f.type || '—', badge(f.state, 'state'), { cell: String(f.revision ?? '—'), class: 'num' },
    ...cols.map((s) => ({ cell: String(own(f.counts, s) || 0), class: 'num' })),
    { cell: pctl(f, 'p50'), class: 'num' }, { cell: pctl(f, 'p95'), class: 'num' }, { cell: pctl(f, 'p99'), class: 'num' }]));
  replaceView(view, [h('h1', {}, 'Flows'),
    flows.length
      ? table({ id: 'flows-table' }, ['Flow', 'Type', 'State', ['Revision', 'num'], ...cols.map((c) => [c, 'num']), ['p50', 'num'], ['p95', 'num'], ['p99', 'num']], rows, 'Flows')
      : h('p', { class: 'muted' }, 'No flows.')]);
}

// Page: one flow: definition, plan, counts and percentiles. The figures are the flow's
// own, over its newest contexts (GET /api/flows/ID), not the list's entry, which covers
// the newest contexts of all flows and so shows nothing for a flow that ran before them.
async function renderFlow(page, view, params, id) {
  document.title = `${id} — flowrt`;
  const base = '/api/flows/' + enc(id);
  const [flow, plan] = await Promise.all([
    api(base),
    api(base + '/plan').catch((e) => ({ error: e })),
  ]);
  if (!page.alive) return;
  const cols = countColumns([flow]);
  replaceView(view, [
    h('h1', {}, 'Flow ', h('span', { id: 'flow-id' }, flow.id)),
    h('p', {}, h('a', { href: contextsHash({ flow: flow.id }), id: 'flow-contexts-link' }, 'Contexts of this flow')),
    h('dl', { class: 'facts' },
      dlItem('Type', flow.type || '—'), dlItem('State', badge(flow.state, 'state')), dlItem('Revision', String(flow.revision ?? '—')),
      dlItem('Counts', cols.length ? h('ul', { class: 'counts', id: 'flow-counts' }, cols.map((s) => h('li', { 'data-status': s }, badge(s), ' ', String(own(flow.counts, s))))) : '—'),
      dlItem('Runtime p50 / p95 / p99', h('span', { id: 'flow-runtime' }, flow.runtime_ms ? `${pctl(flow, 'p50')} / ${pctl(flow, 'p95')} / ${pctl(flow, 'p99')}` : '—'))),
    h('section', { 'aria-labelledby': 'h-plan' }, h('h2', { id: 'h-plan' }, 'Plan'),
      plan.error ? h('p', { class: 'error-text' }, 'No plan: ', plan.error.message)
        : h('pre', { id: 'flow-plan', class: 'json' }, JSON.stringify(plan.plan, null, 2))),
    h('section', { 'aria-labelledby': 'h-def' }, h('h2', { id: 'h-def' }, 'Definition'),
      h('pre', { id: 'flow-definition', class: 'json' }, JSON.stringify(flow.definition, null, 2))),
  ]);
  if (plan.error) showError(plan.error);
}

/* ---------------------------------------------------------------- records */

// Page: the list of tables.
async function renderTables(page, view) {
  document.title = 'Records — flowrt';
  const { tables = [] } = await api('/api/tables');
  if (!page.alive) return;
  replaceView(view, [h('h1', {}, 'Records'),
    tables.length
      ? h('ul', { class: 'table-list', id: 'tables' }, tables.map((t) => h('li', {}, h('a', { href: '#/records/' + enc(t) }, t))))
      : h('p', { class: 'muted' }, 'No tables.')]);
}

// A record's cell: strings as text, null muted, anything else as compact JSON; a key the
// record does not have (undefined) is an empty cell.
function valueCell(v) {
  if (v === null || v === undefined) return h('span', { class: 'muted' }, v === null ? 'null' : '');
  return typeof v === 'string' ? v : JSON.stringify(v);
}

// Page: the records of one table, 50 at a time, columns = union of keys with sys_id first.
async function renderRecords(page, view, params, name) {
  document.title = `${name} — flowrt`;
  const cursor = params.get('cursor') || '';
  const q = new URLSearchParams({ limit: PAGE_SIZE });
  if (cursor) q.set('cursor', cursor);
  const data = await api(`/api/tables/${enc(name)}/records?${q}`);
  if (!page.alive) return;
  const records = data.records || [];
  const keys = new Set(['sys_id']);
  records.forEach((r) => Object.keys(r).forEach((k) => keys.add(k)));
  const cols = [...keys];
  const rows = records.map((r) => row({ 'data-sys-id': r.sys_id }, cols.map((k) => valueCell(own(r, k)))));
  const hashFor = (c) => `#/records/${enc(name)}` + (c ? '?cursor=' + enc(c) : '');
  replaceView(view, [
    h('p', { class: 'crumbs' }, h('a', { href: '#/records' }, 'Records'), ' / ', name),
    h('h1', {}, 'Table ', h('span', { id: 'table-name' }, name)),
    records.length ? table({ id: 'records-table' }, cols, rows, `Records of ${name}`) : h('p', { class: 'muted' }, 'No records.'),
    pager(data.next, cursor, hashFor),
  ]);
}

/* ---------------------------------------------------------------- start */

// Shows who the token belongs to. Only the answer to the latest call shows: an earlier
// call's answer (without the token just entered) can come later, through a cluster's
// follower, and must not overwrite it.
let whoamiCalls = 0;
async function loadWhoami() {
  const el = $('#whoami');
  const call = ++whoamiCalls;
  try {
    const me = await api('/api/whoami');
    if (call !== whoamiCalls) return;
    el.textContent = `${me.name} (${me.role})`;
    document.body.dataset.role = me.role;
  } catch (e) {
    if (call !== whoamiCalls) return;
    el.textContent = e.status === 401 ? 'not signed in' : 'unknown user';
    delete document.body.dataset.role;
    showError(e);
  }
}

// Wires the token form, the skip link and the router, then opens the stream.
function start() {
  const input = $('#token');
  input.value = state.token;
  $('#token-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    state.token = input.value.trim();
    if (state.token) sessionStorage.setItem(TOKEN_KEY, state.token); else sessionStorage.removeItem(TOKEN_KEY);
    connectStream();
    route().then(loadWhoami);
  });
  $('#skip-link').addEventListener('click', (ev) => {
    ev.preventDefault();
    $('#main').focus();
  });
  window.addEventListener('hashchange', route);
  connectStream();
  route().then(loadWhoami);
  document.body.dataset.started = 'yes';  // the forms are wired (tests wait for it)
}

document.addEventListener('DOMContentLoaded', start);
