// flowrt viewer: the pages of contexts (the live list, one context's record). Loaded before
// app.js, which holds what every page shares (DOM helpers, the API, the stream, the
// router) and starts the viewer; these only define functions that the router calls once
// all scripts have run.
'use strict';

/* ---------------------------------------------------------------- contexts list */

// Builds the query string of the contexts hash route from a filter object.
function contextsHash(filter, cursor) {
  const q = new URLSearchParams();
  for (const k of ['flow', 'status', 'since']) if (filter[k]) q.set(k, filter[k]);
  if (cursor) q.set('cursor', cursor);
  const s = q.toString();
  return '#/contexts' + (s ? '?' + s : '');
}

// ISO 8601 UTC → value for <input type=datetime-local> (local time), and back.
function isoToLocalInput(iso) {
  const d = new Date(iso);
  if (isNaN(d)) return '';
  return new Date(d.getTime() - d.getTimezoneOffset() * 60000).toISOString().slice(0, 19);
}
function localInputToIso(value) {
  const d = new Date(value);
  return value && !isNaN(d) ? d.toISOString() : '';
}

// One row of the contexts table.
function contextRow(c) {
  const tr = row({ 'data-context-id': c.id, 'data-seq': c.seq }, [
    ctxLink(c.id),
    flowLink(c.flow),
    { cell: badge(c.status), class: 'status' },
    c.trigger && c.trigger.type ? c.trigger.type : '—',
    timeEl(c.started_at),
    { cell: fmtMs(c.runtime_ms), class: 'runtime num' },
  ]);
  return tr;
}

// Updates the status and runtime cells of a row already shown.
function updateContextRow(tr, c) {
  $('td.status', tr).replaceChildren(badge(c.status));
  $('td.runtime', tr).textContent = fmtMs(c.runtime_ms);
}

function matchesFilter(c, filter) {
  if (filter.flow && c.flow !== filter.flow) return false;
  if (filter.status && c.status !== filter.status) return false;
  if (filter.since && Date.parse(c.started_at) < Date.parse(filter.since)) return false;
  return true;
}

// The table of a page of contexts.
function contextsTable(contexts) {
  const rows = contexts.map(contextRow);
  if (!rows.length) rows.push(h('tr', { class: 'empty' }, h('td', { colspan: 6 }, 'No contexts.')));
  return table({ id: 'contexts-table' }, ['Context', 'Flow', 'Status', 'Trigger', 'Started at', ['Runtime', 'num']], rows, 'Contexts, newest first');
}

// The first page of contexts, kept live from the stream: at most PAGE_SIZE rows, newest
// (highest seq) first, each found by its id in a Map, so that an event costs a few row
// operations however many come (a burst of thousands once made the page grow without
// end and freeze). A new context goes in its place by seq and the oldest row past the
// page size goes, the next page then starting below the last row kept. A `reset`, or a
// started context whose seq is more than one past the newest seen (one the stream did
// not announce), reloads the page; events that come meanwhile are applied after it.
// `show(list)` draws a page read from the API and returns its tbody and its pager's
// Next button.
function liveContexts(page, filter, query, list, show) {
  let byId = new Map();
  let tbody = null;
  let nextButton = null;
  let newest = null;   // the highest seq seen, when known: a started one past newest + 1 is a gap
  let pending = null;  // while a reload is in flight: the events that came meanwhile
  let again = false;   // a reset came while reloading: reload once more
  const draw = (l) => {
    ({ tbody, nextButton } = show(l));
    byId = new Map([...tbody.rows].filter((tr) => tr.dataset.contextId).map((tr) => [tr.dataset.contextId, tr]));
    // Without flow or status filters the newest row is the newest context that started.
    const top = l.contexts[0];
    newest = !filter.flow && !filter.status && top && top.seq != null ? Number(top.seq) : null;
  };
  const insert = (c) => {
    const seq = c.seq == null ? Infinity : Number(c.seq);
    const rows = tbody.rows;
    const last = rows[rows.length - 1];
    // Older than every row of a full page: it belongs on a later page.
    if (byId.size >= PAGE_SIZE && last && seq < Number(last.dataset.seq)) return;
    const empty = $('tr.empty', tbody);
    if (empty) empty.remove();
    let before = null;
    for (const r of rows) if (Number(r.dataset.seq) < seq) { before = r; break; }  // mostly the first
    const tr = contextRow(c);
    tr.classList.add('new');
    tbody.insertBefore(tr, before);
    byId.set(c.id, tr);
    while (byId.size > PAGE_SIZE) {
      const gone = tbody.lastElementChild;
      byId.delete(gone.dataset.contextId);
      gone.remove();
      const kept = tbody.lastElementChild;
      nextButton.dataset.next = kept.dataset.seq;  // the next page: below the last row kept
      nextButton.disabled = false;
    }
    setTimeout(() => tr.classList.remove('new'), 2000);
  };
  const reload = async () => {
    if (pending) { again = true; return; }
    pending = [];
    try {
      const l = await api('/api/contexts?' + query);
      if (page.alive) draw(l);
    } catch (e) {
      if (page.alive) showError(e);
    } finally {
      const events = pending;
      pending = null;
      if (page.alive) {
        for (const [c, change] of events) apply(c, change);
        if (again) {
          again = false;
          if (!pending) reload();  // else an event's gap started one, newer than the reset
        }
      }
    }
  };
  const apply = (c, change) => {
    if (!c || !c.id) return;
    if (pending) { pending.push([c, change]); return; }
    if (change === 'started' && c.seq != null) {
      const seq = Number(c.seq);
      if (newest !== null && seq > newest + 1) {  // contexts in between were not announced
        newest = seq;
        reload();
        pending.push([c, change]);
        return;
      }
      if (newest === null || seq > newest) newest = seq;
    }
    const tr = byId.get(c.id);
    if (tr) updateContextRow(tr, c);
    else if (matchesFilter(c, filter)) insert(c);
  };
  draw(list);
  page.on.context = (msg) => apply(msg.context, msg.change);
  page.on.reset = reload;
}

// The filter form: flow, status and since.
function contextFilters(filter, flows) {
  const flowIds = flows.map((f) => f.id);
  if (filter.flow && !flowIds.includes(filter.flow)) flowIds.push(filter.flow);
  const opt = (value, text, sel) => h('option', { value, selected: sel }, text);
  const flowSel = h('select', { id: 'filter-flow', name: 'flow' },
    opt('', 'any', !filter.flow), flowIds.map((id) => opt(id, id, id === filter.flow)));
  const statusSel = h('select', { id: 'filter-status', name: 'status' },
    opt('', 'any', !filter.status), STATUSES.map((s) => opt(s, s, s === filter.status)));
  const since = h('input', { id: 'filter-since', name: 'since', type: 'datetime-local', step: 1 });
  since.value = filter.since ? isoToLocalInput(filter.since) : '';
  const form = h('form', { class: 'filters', id: 'contexts-filters' },
    h('div', { class: 'field' }, h('label', { for: 'filter-flow' }, 'Flow'), flowSel),
    h('div', { class: 'field' }, h('label', { for: 'filter-status' }, 'Status'), statusSel),
    h('div', { class: 'field' }, h('label', { for: 'filter-since' }, 'Since (local time)'), since),
    h('div', { class: 'field buttons' },
      h('button', { type: 'submit' }, 'Apply'),
      h('a', { href: '#/contexts', class: 'button secondary' }, 'Clear')));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    location.hash = contextsHash({ flow: flowSel.value, status: statusSel.value, since: localInputToIso(since.value) });
  });
  return form;
}

// Next page / First page buttons driven by a cursor kept in the hash. The Next button
// keeps its cursor in data-next, which a live page moves as it drops rows.
function pager(next, cursor, hashFor) {
  return h('div', { class: 'pager' },
    h('button', { type: 'button', id: 'first-page', disabled: !cursor, onclick: () => { location.hash = hashFor(''); } }, 'First page'),
    h('button', { type: 'button', id: 'next-page', 'data-next': next || null, disabled: !next,
      onclick: (ev) => { location.hash = hashFor(ev.currentTarget.dataset.next); } }, 'Next page'));
}

// Page: the list of contexts, newest first, live on the first page.
async function renderContexts(page, view, params) {
  document.title = 'Contexts — flowrt';
  const filter = { flow: params.get('flow') || '', status: params.get('status') || '', since: params.get('since') || '' };
  const cursor = params.get('cursor') || '';
  const q = new URLSearchParams();
  for (const k of ['flow', 'status', 'since']) if (filter[k]) q.set(k, filter[k]);
  q.set('limit', PAGE_SIZE);
  if (cursor) q.set('cursor', cursor);
  const [list, flows] = await Promise.all([
    api('/api/contexts?' + q),
    api('/api/flows').catch((e) => { showError(e); return { flows: [] }; }),
  ]);
  if (!page.alive) return;
  const hashFor = (c) => contextsHash(filter, c);
  const live = cursor
    ? 'Showing a later page: live updates are paused. Go to the first page to follow new contexts.'
    : 'Live: new contexts appear at the top as they start.';
  let wrap = contextsTable(list.contexts);
  let pagerEl = pager(list.next, cursor, hashFor);
  replaceView(view, [
    h('h1', {}, 'Contexts'),
    contextFilters(filter, flows.flows || []),
    h('p', { class: 'hint', id: 'live-note' }, live),
    wrap,
    pagerEl,
  ]);
  if (cursor) return;
  // A page read again (a reset, a gap) takes the place of the table and the pager.
  const show = (l) => {
    if (l !== list) {
      const key = focusKey(wrap, pagerEl);
      const w = contextsTable(l.contexts);
      const p = pager(l.next, '', hashFor);
      wrap.replaceWith(w);
      pagerEl.replaceWith(p);
      wrap = w;
      pagerEl = p;
      refocus(view, key);
    }
    return { tbody: $('tbody', wrap), nextButton: $('#next-page', pagerEl) };
  };
  liveContexts(page, filter, q.toString(), list, show);
}

/* ---------------------------------------------------------------- one context */

// Nests steps by path prefix: the parent of "3.then.1" is "3", of "5.do.2#3.then.1" is "5.do.2#3".
function buildStepTree(steps) {
  const byPath = new Map();
  const roots = [];
  for (const s of steps) {
    const node = { step: s, children: [], rel: '' };
    let parent = null;
    let p = String(s.path || '');
    for (let i = p.lastIndexOf('.'); i > 0 && !parent; i = p.lastIndexOf('.')) {
      p = p.slice(0, i);
      parent = byPath.get(p) || null;
    }
    if (parent) {
      node.rel = String(s.path).slice(parent.step.path.length + 1);
      parent.children.push(node);
    } else {
      roots.push(node);
    }
    if (!byPath.has(s.path)) byPath.set(s.path, node);
  }
  return roots;
}

// "then.1" → "then"; "do.2#3" → "do · iteration 3"; "else_if.2.then.1" → "else_if.2.then".
function branchLabel(rel) {
  if (!rel) return null;
  const parts = rel.split('.');
  const last = parts.pop();
  const iter = last.includes('#') ? last.split('#')[1] : null;
  return (parts.join('.') || 'child') + (iter ? ` · iteration ${iter}` : '');
}

// A <details> block holding JSON (or text), remembered across refreshes by data-key.
function detailsBlock(key, summary, value, open) {
  const body = typeof value === 'string' ? h('pre', { class: 'text' }, value) : jsonPre(value);
  return h('details', { 'data-key': key, open: open || null }, h('summary', {}, summary), body);
}

// One step of the tree, with its children nested below it.
function stepNode(node) {
  const s = node.step;
  const label = branchLabel(node.rel);
  const key = 'step:' + s.path;
  return h('li', {},
    h('div', { class: 'step', 'data-path': s.path, 'data-step-id': s.id },
      h('div', { class: 'step-head' },
        h('code', { class: 'path' }, s.path),
        label ? h('span', { class: 'branch' }, label) : null,
        h('strong', { class: 'step-id' }, s.id || '(no id)'),
        h('span', { class: 'action' }, s.action),
        badge(s.status),
        h('span', { class: 'times' }, timeEl(s.started_at), ' → ', timeEl(s.ended_at))),
      h('div', { class: 'step-body' },
        detailsBlock(key + ':inputs', 'Inputs', s.inputs),
        detailsBlock(key + ':outputs', 'Outputs', s.outputs),
        s.error != null ? detailsBlock(key + ':error', 'Error', s.error, true) : null)),
    node.children.length ? h('ul', { class: 'step-tree' }, node.children.map(stepNode)) : null);
}

const lockKey = (s) => (s.inputs ? s.inputs.key ?? s.inputs.name : undefined);

// Bars for the timeline: one per started step, plus a lock-hold bar after each acquired lock.
function timelineBars(ctx, ctxEnd) {
  const steps = ctx.steps || [];
  const heldUntil = new Map(); // lock key → index of the unlock that ends the current hold
  const bars = [];
  steps.forEach((s, i) => {
    const start = Date.parse(s.started_at);
    if (isNaN(start)) return;
    const end = s.ended_at ? Date.parse(s.ended_at) : ctxEnd;
    const action = String(s.action || '');
    const kind = action === 'lock' ? 'lock-wait' : action.startsWith('wait') ? 'wait' : 'step';
    bars.push({ label: s.id || s.path, kind, start, end, path: s.path });
    const key = lockKey(s);
    const acquired = action === 'lock' && s.ended_at && s.status === 'completed' &&
      !(s.outputs && s.outputs.result === 'failure');
    if (!acquired || (heldUntil.has(key) && heldUntil.get(key) > i)) return; // re-entrant lock: same hold
    let j = steps.findIndex((u, k) => k > i && u.action === 'unlock' && lockKey(u) === key);
    const unlock = j >= 0 ? steps[j] : null;
    if (j < 0) j = Infinity;
    heldUntil.set(key, j);
    const holdEnd = unlock && unlock.ended_at ? Date.parse(unlock.ended_at) : ctxEnd;
    bars.push({ label: String(key), note: `, taken by step ${s.id || s.path}`, kind: 'lock-hold', start: end, end: Math.max(end, holdEnd), path: s.path });
  });
  return bars;
}

// Tick positions (ms from the start) at a 1/2/5 × 10^k spacing, about six of them.
function ticks(span) {
  const raw = span / 6;
  const mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw);
  const out = [];
  for (let t = 0; t <= span * (1 + 1e-9); t += step) out.push(Number(t.toPrecision(6)));
  return out;
}

// The timeline: positioned divs on an axis from started_at to ended_at (or now).
function renderTimeline(ctx) {
  const t0 = Date.parse(ctx.started_at);
  const ended = ctx.ended_at ? Date.parse(ctx.ended_at) : NaN;
  const t1 = isNaN(ended) ? Date.now() : ended;
  const span = Math.max(t1 - t0, 1);
  const pct = (t) => Math.min(100, Math.max(0, ((t - t0) / span) * 100));
  const bars = isNaN(t0) ? [] : timelineBars(ctx, t1);
  const axis = h('div', { class: 'tl-track tl-axis', 'aria-hidden': 'true' });
  for (const t of ticks(span)) {
    const p = (t / span) * 100;
    const tick = h('span', { class: 'tick' + (p > 92 ? ' end' : p === 0 ? ' start' : '') }, fmtMs(t));
    tick.style.left = p + '%';
    axis.append(tick);
  }
  const rows = bars.map((b) => {
    const title = `${b.label} (${KIND_TEXT[b.kind]}${b.note || ''}): start +${fmtMs(b.start - t0)}, ` +
      `end +${fmtMs(b.end - t0)}, duration ${fmtMs(b.end - b.start)}`;
    const bar = h('div', { class: 'bar ' + b.kind, title, 'data-path': b.path }, h('span', { class: 'sr-only' }, title));
    bar.style.left = pct(b.start) + '%';
    bar.style.width = Math.max(0, pct(b.end) - pct(b.start)) + '%';
    return h('div', { class: 'tl-row' },
      h('div', { class: 'tl-label' }, h('span', { class: 'tl-name' }, b.label),
        b.kind !== 'step' ? h('span', { class: 'kind kind-' + b.kind }, KIND_TEXT[b.kind]) : null),
      h('div', { class: 'tl-track' }, bar));
  });
  const legend = h('ul', { class: 'legend', 'aria-label': 'Legend' },
    Object.entries(KIND_TEXT).map(([k, text]) => h('li', {}, h('span', { class: 'swatch bar ' + k }), text)));
  return h('div', { class: 'timeline-wrap', tabindex: 0, role: 'region', 'aria-label': 'Timeline' },
    h('div', { id: 'timeline', class: 'timeline', 'data-span-ms': span },
      h('div', { class: 'tl-row tl-head' }, h('div', { class: 'tl-label' }, isNaN(ended) ? 'ms since start (running)' : 'ms since start'), axis),
      rows.length ? rows : h('p', { class: 'muted' }, 'No steps have started.')),
    legend);
}

// Definition-list item helper.
const dlItem = (term, ...value) => [h('dt', {}, term), h('dd', {}, value)];

// The context header: id, flow, status, plan, times, error, and the Cancel button.
function contextHeader(ctx, onCancel) {
  const err = ctx.error ? [ctx.error.message || JSON.stringify(ctx.error), ctx.error.step ? ` (step ${ctx.error.step})` : ''] : ['—'];
  return [
    h('h1', {}, 'Context ', h('span', { id: 'context-id' }, ctx.id), ' ', h('span', { id: 'context-status' }, badge(ctx.status))),
    ACTIVE.has(ctx.status) ? h('p', {}, h('button', { type: 'button', id: 'cancel-button', class: 'danger', onclick: onCancel }, 'Cancel context')) : null,
    h('dl', { class: 'facts', id: 'context-facts' },
      dlItem('Flow', flowLink(ctx.flow)),
      dlItem('Status', badge(ctx.status)),
      dlItem('Plan version', ctx.plan_version || '—'),
      dlItem('Started at', timeEl(ctx.started_at)),
      dlItem('Ended at', timeEl(ctx.ended_at)),
      dlItem('Runtime', fmtMs(ctx.runtime_ms)),
      dlItem('Error', h('span', { class: ctx.error ? 'error-text' : '' }, err))),
  ];
}

// The trigger and the cause chain.
function contextCause(ctx) {
  const chain = Array.isArray(ctx.chain) ? ctx.chain : [];
  return h('section', { 'aria-labelledby': 'h-trigger' },
    h('h2', { id: 'h-trigger' }, 'Trigger and cause'),
    h('div', { class: 'trigger' }, jsonPre(ctx.trigger)),
    h('p', { id: 'cause' }, ctx.cause
      ? ['Caused by context ', ctxLink(ctx.cause.context), ' of flow ', flowLink(ctx.cause.flow), '.']
      : 'No cause: not started by another context.'),
    chain.length ? h('div', { class: 'chain-wrap' }, h('span', {}, 'Chain of flows: '), h('ol', { class: 'chain', id: 'chain' }, chain.map((f) => h('li', {}, flowLink(f))))) : null);
}

// Logs and variables.
function contextLogs(ctx) {
  const logs = (ctx.logs || []).map((l) => row({ class: 'log log-' + l.level }, [
    timeEl(l.time), badge(l.level, 'level'), l.step == null ? '—' : h('code', {}, l.step), { cell: l.message, class: 'log-message' }]));
  return [
    h('section', { 'aria-labelledby': 'h-logs' }, h('h2', { id: 'h-logs' }, 'Logs'),
      logs.length ? table({ id: 'logs-table' }, ['Time', 'Level', 'Step', 'Message'], logs, 'Logs') : h('p', { class: 'muted' }, 'No logs.')),
    h('section', { 'aria-labelledby': 'h-vars' }, h('h2', { id: 'h-vars' }, 'Variables'),
      h('div', { id: 'variables' }, jsonPre(ctx.variables || {}))),
  ];
}

// Draws the whole context page, keeping open <details> open.
function drawContext(view, ctx, onCancel) {
  const open = new Set([...view.querySelectorAll('details[data-key]')].filter((d) => d.open).map((d) => d.dataset.key));
  const tree = buildStepTree(ctx.steps || []);
  replaceView(view, [
    ...contextHeader(ctx, onCancel),
    contextCause(ctx),
    h('section', { 'aria-labelledby': 'h-timeline' }, h('h2', { id: 'h-timeline' }, 'Timeline'), renderTimeline(ctx)),
    h('section', { 'aria-labelledby': 'h-steps' }, h('h2', { id: 'h-steps' }, 'Steps'),
      tree.length ? h('ul', { class: 'step-tree root', id: 'steps' }, tree.map(stepNode)) : h('p', { class: 'muted' }, 'No steps yet.')),
    ...contextLogs(ctx),
  ]);
  for (const d of view.querySelectorAll('details[data-key]')) if (open.has(d.dataset.key)) d.open = true;
}

// Page: one context, refreshed on stream events about it until it has ended.
async function renderContext(page, view, params, id) {
  const url = '/api/contexts/' + enc(id);
  let ctx = null;
  let busy = false;
  let again = false;
  const isEnded = (c) => Boolean(c.ended_at) || ENDED.has(c.status);
  const refresh = async () => {
    if (busy) { again = true; return; }
    busy = true;
    try {
      const c = await api(url);
      if (page.alive) { ctx = c; drawContext(view, ctx, cancel); }
    } catch (e) {
      if (page.alive) showError(e);
    } finally {
      busy = false;
      if (again && page.alive) { again = false; refresh(); }
    }
  };
  const cancel = async (ev) => {
    const button = ev.currentTarget;
    button.disabled = true;
    clearMessages();
    try {
      const res = await api(url + '/cancel', { method: 'POST' });
      $('#notice').textContent = `Context ${id}: ${res.status || 'cancel requested'}.`;
      await refresh();
    } catch (e) {
      button.disabled = false;
      showError(e);
    }
  };
  ctx = await api(url);
  if (!page.alive) return;
  document.title = `${ctx.id} — flowrt`;
  drawContext(view, ctx, cancel);
  page.on.context = (msg) => {
    if (msg.context && msg.context.id === id && ctx && !isEnded(ctx)) refresh();
  };
  // It may be one of them: its changes would then not come as events.
  page.on.unannounced = () => { if (ctx && !isEnded(ctx)) refresh(); };
}
