/* view.js - the page of `memhist view` (built into the page by
 * cmake/embed_text.cmake). It reads the JSON block the command wrote
 * (viz/view: the answers of report, layers, oom and growth, the timeline's
 * buckets, kept raw events and the trees of precomputed moments) and draws
 * it: every number shown is one of those, formatted; nothing is computed
 * here but layout. No network, no library. */
'use strict';
(function () {
  const DATA = JSON.parse(document.getElementById('mh-data').textContent);
  const CATS = DATA.categories;
  const KINDS = DATA.event_kinds;
  const GROUP_COLORS = DATA.group_colors;
  const api = window.mhView = { ready: false, errors: [] };
  const st = { file: 0, dev: 0, by: 'module', query: '', lo: 0, hi: 1, moment: -1, clicked: null,
               focus: 0, stepsShown: 200 };

  /* ---- helpers ---------------------------------------------------------- */
  function el(tag, attrs, kids) {
    const e = document.createElement(tag);
    for (const k in attrs || {}) {
      const v = attrs[k];
      if (v === undefined || v === null || v === false) continue;
      if (k === 'text') e.textContent = v;
      else if (k === 'cls') e.className = v;
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? '' : v);
    }
    for (const c of [].concat(kids || [])) if (c !== null && c !== undefined) e.append(c);
    return e;
  }
  function bytes(b) { /* as memhist prints them (units.h) */
    const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let v = b, i = 0;
    while (v >= 1024 && i < 4) { v /= 1024; i++; }
    return i === 0 ? b + ' B' : v.toFixed(2) + ' ' + u[i];
  }
  function secs(ns) {
    const s = ns / 1e9;
    return s >= 100 ? s.toFixed(1) + ' s' : s >= 1 ? s.toFixed(2) + ' s' : (s * 1000).toFixed(1) + ' ms';
  }
  function stepText(s) { return s < 0 ? 'set-up' : 'step ' + s; }
  function pct(x) { return (x * 100).toFixed(1) + ' %'; }
  function num(x) { return x.toLocaleString('en-US'); }
  function file() { return DATA.files[st.file]; }
  function dev() { return file().devices[st.dev]; }
  function str(i) { return i < 0 ? null : file().strings[i]; }
  function matches(...texts) {
    const q = st.query.toLowerCase();
    return !q || texts.some(t => t && t.toLowerCase().includes(q));
  }
  function td(text, cls, title) { return el('td', { text: text, cls: cls, title: title }); }
  function bytesTd(b) { return el('td', { text: bytes(b), cls: 'n', title: num(b) + ' bytes', 'data-bytes': b }); }
  function table(head, rows, attrs) {
    return el('table', attrs, [el('thead', {}, el('tr', {}, head.map(h =>
      el('th', { text: h.replace(/^#/, ''), cls: h.startsWith('#') ? 'n' : null })))),
    el('tbody', {}, rows)]);
  }
  function framesText(frames) { /* [display, line, func, full] innermost first */
    return frames.map(f => str(f[2]) + '  ' + str(f[0]) + (f[1] ? ':' + f[1] : ''));
  }
  function framesTitle(frames) {
    return frames.map(f => str(f[2]) + '  ' + str(f[3]) + (f[1] ? ':' + f[1] : '')).join('\n');
  }
  const tip = el('div', { cls: 'tip' });
  function showTip(ev, text) {
    tip.textContent = text;
    tip.style.display = 'block';
    tip.style.left = Math.min(ev.clientX + 14, innerWidth - 660) + 'px';
    tip.style.top = Math.min(ev.clientY + 14, innerHeight - 160) + 'px';
  }
  function hideTip() { tip.style.display = 'none'; }
  function catLegend() {
    return el('div', { cls: 'legend' }, CATS.map(c => el('span', {}, [el('i', { style: 'background:' + c[1] }), c[0]])));
  }

  /* ---- what the page shows and what it left out ------------------------ */
  function notes() {
    const f = file(), d = f.devices.length ? dev() : null, out = [];
    if (f.damaged)
      out.push(['bad', 'This recording is damaged: it was read up to byte ' + num(f.damage_offset) +
        (f.damage ? ' (' + f.damage + ')' : '') + '. Everything after that is missing; the answers cover what was read.']);
    else if (!f.complete)
      out.push(['bad', 'This recording was cut short: it has no trailer (the recording did not close). ' +
        'The answers cover the ' + num(f.events) + ' events it holds; whatever came after is missing.']);
    if (f.dropped)
      out.push(['', 'The recorder dropped ' + num(f.dropped) + ' events (its buffers were full); they are missing from every answer.']);
    for (const k in f.anomalies)
      out.push(['', num(f.anomalies[k]) + ' events the model could not apply: ' + k + '.']);
    if (!f.devices.length)
      out.push(['bad', 'No device has allocator events in this recording: nothing to show.']);
    if (d) {
      const ev = d.events;
      if (ev.dropped)
        out.push(['', 'Raw events are kept for ' + keptText(d) + ' only (' + num(ev.list.length) + ' events, limit ' +
          num(ev.limit) + ' per device, ' + num(ev.step_limit) + ' per step); ' + num(ev.dropped) +
          ' events of those steps were left out. Elsewhere the timeline shows the lowest and highest memory per column.']);
      if (d.step_moments_dropped)
        out.push(['', 'What is live is kept at ' + d.moments.length + ' moments; the peaks of ' + d.step_moments_dropped +
          ' steps were left out (limit ' + f.moments_limit + ' moments per device).']);
      if (d.oom_error)
        out.push(['bad', 'The OOMs of this device could not be explained (' + d.oom_error + '): no OOM card is shown.']);
      if (d.layers_error)
        out.push(['', 'The layers analysis could not be made for this device (' + d.layers_error + ').']);
      if (d.timeline.phases_dropped)
        out.push(['', 'The phase strip shows the first ' + num(d.timeline.phases.length / 2) + ' phases; ' + num(d.timeline.phases_dropped) + ' later ones were left out.']);
      if (d.step_count > d.steps.length)
        out.push(['', 'The step table lists the first ' + num(d.steps.length) + ' of ' + num(d.step_count) + ' steps.']);
    }
    return el('div', { cls: 'notes', 'data-testid': 'notes' }, out.map(n => el('div', { cls: 'note ' + n[0], text: n[1] })));
  }
  function keptText(d) {
    if (!d.events.by_step) return 'the events around the allocated peak';
    const s = [...new Set(d.events.list.map(e => e[6]))];
    return s.length > 6 ? s.length + ' steps (' + s.slice(0, 6).map(stepText).join(', ') + ', …)' : s.map(stepText).join(', ');
  }

  /* ---- header, cards ---------------------------------------------------- */
  function header() {
    const f = file();
    const kids = [el('h1', { text: 'memhist view' }),
      el('span', { cls: 'sub', text: f.path + (f.source ? ' · ' + f.source : '') + ' · ' + num(f.events) + ' events' })];
    if (DATA.files.length > 1)
      kids.push(el('select', { 'data-testid': 'file', onchange: e => openFile(+e.target.value) },
        DATA.files.map((g, i) => el('option', { value: i, text: g.path, selected: i === st.file }))));
    if (f.devices.length > 1)
      kids.push(el('select', { 'data-testid': 'device', onchange: e => { st.dev = +e.target.value; resetView(); render(); } },
        f.devices.map((g, i) => el('option', { value: i, text: 'device ' + g.device, selected: i === st.dev }))));
    const q = el('input', { type: 'search', placeholder: 'search module, file or function', value: st.query,
      'data-testid': 'search', 'aria-label': 'search' });
    q.addEventListener('input', () => { st.query = q.value; renderFiltered(); });
    kids.push(q);
    return el('header', {}, kids);
  }
  function card(k, v, d, attrs) {
    return el('div', Object.assign({ cls: 'card' }, attrs || {}), [el('div', { cls: 'k', text: k }), el('div', { cls: 'v', text: v }),
      el('div', { cls: 'd', text: d })]);
  }
  function cards() {
    const d = dev(), f = file(), t0 = f.t0_ns;
    const pa = d.peak_allocated, pr = d.peak_reserved;
    const ooms = d.oom_cases.length, tr = d.fragmentation_trend;
    return el('section', {}, el('div', { cls: 'cards' }, [
      card('peak allocated', bytes(pa.value), 'at ' + secs(pa.time_ns - t0) + ', ' + stepText(pa.step),
        { 'data-testid': 'peak-allocated', 'data-bytes': pa.value, title: num(pa.value) + ' bytes' }),
      card('peak reserved', bytes(pr.value), 'at ' + secs(pr.time_ns - t0) + ', ' + stepText(pr.step),
        { 'data-testid': 'peak-reserved', 'data-bytes': pr.value, title: num(pr.value) + ' bytes' }),
      card('device', d.name || 'device ' + d.device, d.total_bytes ? bytes(d.total_bytes) + ' total' : 'capacity not recorded'),
      card('steps', num(d.step_count), tr ? (tr.fragmentation ? 'reserved memory fragments' : 'no fragmentation trend') : 'too few steps for a trend'),
      card('OOMs', String(ooms), ooms ? 'see the OOM cards below' : 'none on this device', { 'data-testid': 'oom-count' }),
    ]));
  }

  /* ---- the timeline ------------------------------------------------------ */
  let cv, cvInfo, evBox;
  function resetView() {
    const d = dev();
    st.lo = 0; st.hi = Math.max(1, d.timeline.events); st.focus = 0; st.clicked = null;
    st.moment = d.moments.findIndex(m => m.kind === 'peak');
  }
  function keptSteps(d) { /* step -> whether every event of it was kept */
    if (d._kept) return d._kept;
    const kept = new Map(), full = new Map();
    for (const e of d.events.list) kept.set(e[6], (kept.get(e[6]) || 0) + 1);
    for (const s of d.timeline.spans) full.set(s[0], kept.get(s[0]) === s[3]);
    return (d._kept = full);
  }
  function rawWindow(d, lo, hi) { /* every event of the device in [lo, hi] was kept */
    if (!d.events.by_step) {
      const w = d.events.window;
      return !d.events.dropped || (lo >= w[0] - 0.5 && hi <= w[1] + 1.5);
    }
    const spans = d.timeline.spans.filter(s => s[2] >= lo && s[1] <= hi), full = keptSteps(d);
    return spans.length > 0 && spans.every(s => full.get(s[0]));
  }
  function eventsIn(d, lo, hi) {
    const ev = d.events.list;
    let a = 0, b = ev.length;
    while (a < b) { const m = (a + b) >> 1; if (ev[m][0] < lo) a = m + 1; else b = m; }
    const out = [];
    for (let i = a; i < ev.length && ev[i][0] <= hi; i++) out.push(ev[i]);
    return { first: a, list: out };
  }
  function pickLevel(d, W) {
    const lv = d.timeline.levels, N = d.timeline.events, span = st.hi - st.lo;
    for (const l of lv) if (l.buckets * span / N >= W) return l;
    return lv[lv.length - 1];
  }
  function niceStep(max, n) {
    const raw = max / n, p = Math.pow(1024, Math.floor(Math.log(raw) / Math.log(1024)));
    for (const m of [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]) if (p * m >= raw) return p * m;
    return raw;
  }
  function drawTimeline() {
    const d = dev(), tl = d.timeline, N = tl.events;
    const dpr = window.devicePixelRatio || 1, Wc = cv.clientWidth, Hc = cv.clientHeight;
    cv.width = Wc * dpr; cv.height = Hc * dpr;
    const g = cv.getContext('2d');
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, Wc, Hc);
    const L = 70, R = 10, T = 18, B = 26, W = Wc - L - R, H = Hc - T - B;
    const lo = st.lo, hi = st.hi, span = hi - lo;
    const X = i => L + (i - lo) / span * W;
    const raw = rawWindow(d, lo, hi) && span <= W * 3;
    let cols = null, top = 0;
    const win = raw ? eventsIn(d, lo - 1, hi + 1) : null;
    if (!raw) {
      const lv = pickLevel(d, W), nb = lv.buckets, K = 1024, ng = lv.groups ? lv.groups.length + 1 : 0;
      cols = [];
      for (let c = 0; c < W; c++) {
        let b0 = Math.floor((lo + span * c / W) * nb / N), b1 = Math.ceil((lo + span * (c + 1) / W) * nb / N);
        b0 = Math.max(0, Math.min(nb - 1, b0)); b1 = Math.max(b0 + 1, Math.min(nb, b1));
        let amin = Infinity, amax = 0, rmin = Infinity, rmax = 0, at = b0;
        for (let b = b0; b < b1; b++) {
          if (lv.amax[b] > amax) at = b;
          amin = Math.min(amin, lv.amin[b]); amax = Math.max(amax, lv.amax[b]);
          rmin = Math.min(rmin, lv.rmin[b]); rmax = Math.max(rmax, lv.rmax[b]);
        }
        cols.push([amin * K, amax * K, rmin * K, rmax * K, ng ? lv.group_bytes.slice(at * ng, at * ng + ng).map(v => v * K) : null]);
        top = Math.max(top, rmax * K, amax * K);
      }
      cvInfo.stacked = !!ng;
      cvInfo.mode = (ng ? 'stacked by the sites largest at the peak · ' : '') + 'columns of ' + num(Math.max(1, Math.round(N / nb))) + ' events (level ' + nb + ' buckets)' +
        (span / W < N / nb ? '; zoomed past this level: each column repeats its bucket' : '');
    } else {
      for (const e of win.list) top = Math.max(top, e[4], e[3]);
      cvInfo.mode = 'single events (' + num(win.list.length) + ' in view)';
    }
    top = Math.max(top, 1) * 1.08;
    const Y = v => T + H - v / top * H;
    /* grid and y axis */
    g.font = '11px system-ui, sans-serif'; g.fillStyle = '#666'; g.strokeStyle = '#eee'; g.lineWidth = 1;
    const ys = niceStep(top, 5);
    for (let v = 0; v <= top; v += ys) {
      g.beginPath(); g.moveTo(L, Y(v) + .5); g.lineTo(L + W, Y(v) + .5); g.stroke();
      g.textAlign = 'right'; g.fillText(bytes(v), L - 6, Y(v) + 4);
    }
    /* steps */
    const spans = tl.spans.filter(s => s[2] >= lo && s[1] <= hi);
    g.strokeStyle = '#ccc'; g.textAlign = 'left';
    let lastLabel = -1e9;
    for (const s of spans) {
      const x = X(s[1]);
      if (x >= L) { g.beginPath(); g.moveTo(x + .5, T); g.lineTo(x + .5, T + H); g.stroke(); }
      if (x - lastLabel > 44 && s[0] >= 0) { g.fillStyle = '#888'; g.fillText(String(s[0]), Math.max(L, x) + 2, T - 5); lastLabel = x; }
    }
    /* memory */
    if (cols) {
      g.fillStyle = 'rgba(170,51,119,.18)';
      cols.forEach((c, i) => g.fillRect(L + i, Y(c[3]), 1, Y(0) - Y(c[3])));
      g.fillStyle = '#aa3377';
      cols.forEach((c, i) => g.fillRect(L + i, Y(c[3]), 1, Math.max(1, Y(c[2]) - Y(c[3]))));
      if (cols[0][4]) /* the sites at each column's allocated maximum, stacked */
        cols.forEach((c, i) => {
          let y = 0;
          c[4].forEach((v, k) => { g.fillStyle = GROUP_COLORS[k === c[4].length - 1 ? GROUP_COLORS.length - 1 : k % (GROUP_COLORS.length - 1)];
            g.fillRect(L + i, Y(y + v), 1, Y(y) - Y(y + v)); y += v; });
        });
      else {
        g.fillStyle = 'rgba(34,34,34,.28)';
        cols.forEach((c, i) => g.fillRect(L + i, Y(c[1]), 1, Y(0) - Y(c[1])));
      }
      g.fillStyle = cols[0][4] ? 'rgba(34,34,34,.35)' : '#222';
      cols.forEach((c, i) => g.fillRect(L + i, Y(c[1]), 1, Math.max(1, Y(c[0]) - Y(c[1]))));
      g.fillStyle = '#222';
      cols.forEach((c, i) => g.fillRect(L + i, Y(c[1]), 1, 1.5));
    } else {
      for (const [k, col, fill] of [[4, '#aa3377', 'rgba(170,51,119,.18)'], [3, '#222', 'rgba(34,34,34,.28)']]) {
        g.beginPath(); g.moveTo(L, Y(0));
        let prev = win.list.length ? win.list[0][k] : 0;
        g.lineTo(L, Y(prev));
        for (const e of win.list) { const x = Math.max(L, Math.min(L + W, X(e[0]))); g.lineTo(x, Y(prev)); g.lineTo(x, Y(e[k])); prev = e[k]; }
        g.lineTo(L + W, Y(prev)); g.lineTo(L + W, Y(0)); g.closePath();
        g.fillStyle = fill; g.fill(); g.strokeStyle = col; g.stroke();
      }
      if (span < W / 6) for (const e of win.list) {
        g.fillStyle = KINDS[e[1]] === 'alloc' ? '#222' : '#999';
        g.fillRect(X(e[0]) - 1.5, Y(e[3]) - 1.5, 3, 3);
      }
    }
    /* phases: a strip under the plot */
    const PH = [null, ['forward', '#88ccee'], ['backward', '#cc6677'], ['optimizer', '#999933']], ph = tl.phases;
    for (let k = 0; k < ph.length; k += 2) {
      const a = ph[k], b = k + 2 < ph.length ? ph[k + 2] : N, p = PH[ph[k + 1]];
      if (!p || b < lo || a > hi) continue;
      const x0 = Math.max(L, X(a)), x1 = Math.min(L + W, X(b));
      g.fillStyle = p[1]; g.fillRect(x0, T + H + 1, Math.max(1, x1 - x0), 3);
    }
    /* OOMs, the peak, the moments */
    g.strokeStyle = '#cc3311'; g.fillStyle = '#cc3311';
    for (const o of d.oom_cases) {
      const x = X(o.event_index);
      if (x < L || x > L + W) continue;
      g.beginPath(); g.moveTo(x + .5, T); g.lineTo(x + .5, T + H); g.stroke(); g.fillText('OOM', x + 3, T + 12);
    }
    const p = d.peak_allocated, px = X(p.index);
    if (px >= L && px <= L + W) {
      g.fillStyle = '#111'; g.beginPath(); g.arc(px, Y(p.value), 4, 0, 7); g.fill();
      g.textAlign = px > L + W - 160 ? 'right' : 'left';
      g.fillText('peak ' + bytes(p.value), px + (g.textAlign === 'left' ? 7 : -7), Y(p.value) - 6);
      g.textAlign = 'left';
    }
    d.moments.forEach((m, i) => {
      const x = X(m.index);
      if (x < L || x > L + W) return;
      g.fillStyle = i === st.moment ? '#0077bb' : '#9bbcd6';
      g.beginPath(); g.moveTo(x, T + H); g.lineTo(x - 4, T + H + 7); g.lineTo(x + 4, T + H + 7); g.fill();
    });
    g.fillStyle = '#666'; g.textAlign = 'center';
    for (let k = 0; k <= 4; k++) g.fillText('event ' + num(Math.round(lo + span * k / 4)), Math.min(L + W - 40, Math.max(L + 40, L + W * k / 4)), Hc - 4);
    g.strokeStyle = '#999'; g.strokeRect(L + .5, T + .5, W, H);
    cvInfo.textContent = 'events ' + num(Math.round(lo)) + '–' + num(Math.round(hi)) + ' of ' + num(N) + ' · ' + cvInfo.mode;
    cv.dataset.mode = raw ? 'events' : 'columns';
    renderEvents(raw ? win.list : null);
  }
  function renderEvents(list) {
    evBox.replaceChildren();
    if (!list) {
      evBox.append(el('p', { cls: 'muted', text: 'Zoom into a step whose events were kept (' + keptText(dev()) +
        ') to list its events; double-click a step to zoom to it.' }));
      return;
    }
    const shown = list.filter(e => matches(str(e[5])));
    const rows = shown.slice(0, 4000).map(e => el('tr', {}, [td(num(e[0]), 'n'), td(KINDS[e[1]]), bytesTd(e[2]),
      bytesTd(e[3]), bytesTd(e[4]), td(stepText(e[6])), td(str(e[5]), 'frame')]));
    evBox.append(el('div', { cls: 'muted', text: num(shown.length) + ' events in view' + (shown.length > 400 ? ', the first 400 listed' : '') +
      (st.query ? ' matching “' + st.query + '”' : '') }),
    el('div', { cls: 'scroll' }, table(['#event', 'kind', '#size', '#allocated', '#reserved', 'step', 'site'], rows, { 'data-testid': 'events-table' })));
  }
  function groupLegend() { /* the sites the whole-run level is stacked by */
    const lv = dev().timeline.levels[0], n = GROUP_COLORS.length - 1;
    if (!lv.groups || !lv.groups.length) return null;
    const names = lv.groups.map(str).concat(['everything else']);
    return el('div', { cls: 'legend', 'data-testid': 'group-legend' }, [el('span', { text: 'At the whole-run level the allocated memory is stacked by site:' })].concat(
      names.map((t, k) => el('span', { cls: 'mono' }, [el('i', { style: 'background:' + GROUP_COLORS[k === names.length - 1 ? n : k % n] }), t]))));
  }
  function zoomAt(x, factor) {
    const d = dev(), N = d.timeline.events, r = cv.getBoundingClientRect(), L = 70, W = r.width - 80;
    const at = st.lo + (st.hi - st.lo) * Math.max(0, Math.min(1, (x - L) / W));
    let span = Math.max(8, Math.min(N, (st.hi - st.lo) * factor));
    st.lo = Math.max(0, Math.min(N - span, at - (at - st.lo) * span / (st.hi - st.lo)));
    st.hi = st.lo + span;
    drawTimeline();
  }
  function pan(dx) {
    const d = dev(), N = d.timeline.events, span = st.hi - st.lo;
    st.lo = Math.max(0, Math.min(N - span, st.lo + dx)); st.hi = st.lo + span;
    drawTimeline();
  }
  function indexAt(clientX) {
    const r = cv.getBoundingClientRect(), W = r.width - 80;
    return st.lo + (st.hi - st.lo) * Math.max(0, Math.min(1, (clientX - r.left - 70) / W));
  }
  function zoomToStep(step) {
    const s = dev().timeline.spans.find(x => x[0] === step);
    if (!s) return false;
    st.lo = Math.max(0, s[1] - 0.5); st.hi = Math.min(dev().timeline.events, s[2] + 1.5);
    drawTimeline();
    return true;
  }
  function clickMoment(index) {
    const ms = dev().moments;
    if (!ms.length) return;
    let best = 0;
    ms.forEach((m, i) => { if (Math.abs(m.index - index) < Math.abs(ms[best].index - index)) best = i; });
    st.moment = best; st.clicked = Math.round(index); st.focus = 0;
    drawTimeline(); renderMoment();
  }
  function timeline() {
    cv = el('canvas', { id: 'tl', tabindex: 0, 'data-testid': 'timeline', 'aria-label': 'memory timeline' });
    cvInfo = el('span', { 'data-testid': 'timeline-info' });
    evBox = el('div', { 'data-testid': 'events' });
    let drag = null;
    cv.addEventListener('wheel', e => { e.preventDefault(); zoomAt(e.clientX - cv.getBoundingClientRect().left, e.deltaY > 0 ? 1.25 : 0.8); }, { passive: false });
    cv.addEventListener('mousedown', e => { drag = { x: e.clientX, lo: st.lo, moved: false }; });
    window.addEventListener('mousemove', e => {
      if (!drag) return;
      const dx = e.clientX - drag.x;
      if (Math.abs(dx) > 3) drag.moved = true;
      if (drag.moved) { const span = st.hi - st.lo; st.lo = drag.lo; pan(-dx / (cv.clientWidth - 80) * span); }
    });
    window.addEventListener('mouseup', e => { if (drag && !drag.moved && e.target === cv) clickMoment(indexAt(e.clientX)); drag = null; });
    cv.addEventListener('dblclick', e => {
      const i = indexAt(e.clientX), s = dev().timeline.spans.find(x => x[1] <= i && x[2] >= i);
      if (s) zoomToStep(s[0]);
    });
    cv.addEventListener('keydown', e => {
      const span = st.hi - st.lo, mid = cv.clientWidth / 2;
      if (e.key === '+' || e.key === '=') zoomAt(mid, 0.8);
      else if (e.key === '-') zoomAt(mid, 1.25);
      else if (e.key === 'ArrowLeft') pan(-span * 0.1);
      else if (e.key === 'ArrowRight') pan(span * 0.1);
      else if (e.key === '0' || e.key === 'Home') { st.lo = 0; st.hi = dev().timeline.events; drawTimeline(); }
      else return;
      e.preventDefault();
    });
    const reset = el('button', { text: 'whole run', onclick: () => { st.lo = 0; st.hi = dev().timeline.events; drawTimeline(); } });
    const peak = el('button', { text: 'zoom to the peak step', onclick: () => zoomToStep(dev().peak_allocated.step) || reset.click() });
    return el('section', { id: 'timeline' }, [el('h2', { text: 'Timeline' }),
      el('div', { cls: 'legend' }, [el('span', {}, [el('i', { style: 'background:#222' }), 'allocated']),
        el('span', {}, [el('i', { style: 'background:#aa3377' }), 'reserved']),
        el('span', {}, [el('i', { style: 'background:#cc3311' }), 'OOM']),
        el('span', {}, [el('i', { style: 'background:#0077bb' }), 'moments with what is live (click near one)']),
        el('span', {}, [el('i', { style: 'background:#88ccee' }), 'forward']), el('span', {}, [el('i', { style: 'background:#cc6677' }), 'backward']),
        el('span', {}, [el('i', { style: 'background:#999933' }), 'optimizer (phases, under the plot)']),
        el('span', { text: 'wheel or +/− zoom · drag or ←/→ pan · double-click a step to zoom to it · 0 whole run' })]),
      el('div', { id: 'tl-wrap' }, cv), el('div', { id: 'tl-info' }, [cvInfo, el('span', {}, [reset, ' ', peak])]), groupLegend(), evBox]);
  }

  /* ---- what is live at a moment ----------------------------------------- */
  let momBox;
  function momentTitle(m) {
    const f = file(), k = { peak: 'the allocated peak', oom: 'an OOM (request ' + bytes(m.value) + ')', step_peak: 'the peak of ' + stepText(m.step), sample: 'a sample' }[m.kind];
    return k + ' · event ' + num(m.index) + (m.step >= 0 && m.kind !== 'step_peak' ? ' · ' + stepText(m.step) : '') +
      (m.time_ns ? ' · ' + secs(m.time_ns - f.t0_ns) : '');
  }
  function tree(m) {
    const t = m.trees[st.by] || m.trees.stack;
    if (!t._kids) {
      t._kids = t.nodes.map(() => []);
      t.nodes.forEach((n, i) => { if (n[1] >= 0) t._kids[n[1]].push(i); });
      t._kids.forEach(k => k.sort((a, b) => t.nodes[b][2] - t.nodes[a][2]));
    }
    return t;
  }
  function nodeTitle(t, i, total) {
    const n = t.nodes[i], cats = [];
    for (let k = 0; k < n[7].length; k += 2) cats.push('  ' + CATS[n[7][k]][0] + ': ' + bytes(n[7][k + 1]));
    return (str(n[5]) || str(n[0])) + '\n' + bytes(n[2]) + ' (' + num(n[2]) + ' bytes, ' + pct(n[2] / Math.max(1, total)) + ' of the live bytes), ' +
      num(n[3]) + ' allocations\n' + cats.join('\n');
  }
  function pathOf(t, i) {
    const p = [];
    for (let k = i; k > 0; k = t.nodes[k][1]) p.unshift(str(t.nodes[k][0]));
    return p.join(' › ');
  }
  function icicle(t) {
    const box = el('div', { id: 'icicle', 'data-testid': 'icicle' }), total = t.nodes[0][2];
    const W = Math.max(300, (momBox.clientWidth || 1200) - 2), rows = [];
    const anc = [];
    for (let k = st.focus; k > 0; k = t.nodes[k][1]) anc.unshift(t.nodes[k][1]);
    let depth = 0, count = 0;
    const place = (i, x, w, dpt) => {
      rows.push([i, x, w, dpt]);
      depth = Math.max(depth, dpt);
      let cx = x;
      for (const c of t._kids[i]) {
        const cw = w * t.nodes[c][2] / Math.max(1, t.nodes[i][2]);
        if (cw >= 2 && count++ < 3000) place(c, cx, cw, dpt + 1);
        cx += cw;
      }
    };
    anc.forEach((a, k) => rows.push([a, 0, W, k]));
    place(st.focus, 0, W, anc.length);
    const q = st.query;
    for (const [i, x, w, dpt] of rows) {
      const n = t.nodes[i], name = str(n[0]);
      const hit = q && matches(name, str(n[5]));
      const dv = el('div', { cls: q ? (hit ? 'match' : 'dim') : null, style: 'left:' + x + 'px;width:' + w + 'px;top:' + dpt * 20 +
        'px;background:' + (i === 0 ? '#ddd' : CATS[n[4]][1]), text: w > 30 ? name + ' ' + bytes(n[2]) : '', 'data-node': i });
      dv.addEventListener('mousemove', e => showTip(e, nodeTitle(t, i, total)));
      dv.addEventListener('mouseleave', hideTip);
      dv.addEventListener('click', () => { st.focus = i === st.focus ? Math.max(0, n[1]) : i; hideTip(); renderMoment(); });
      box.append(dv);
    }
    box.style.height = (depth + 1) * 20 + 2 + 'px';
    return box;
  }
  function momentList(t) {
    const total = t.nodes[0][2];
    let ids;
    if (st.query) ids = t.nodes.map((n, i) => i).filter(i => i > 0 && matches(str(t.nodes[i][0]), str(t.nodes[i][5])));
    else ids = t._kids[st.focus].slice();
    ids.sort((a, b) => t.nodes[b][2] - t.nodes[a][2]);
    const rows = ids.slice(0, 200).map(i => {
      const n = t.nodes[i];
      const tr = el('tr', { cls: 'clickable', 'data-name': str(n[0]), 'data-path': str(n[5]) || pathOf(t, i), onclick: () => { st.focus = i; renderMoment(); } },
        [td(pathOf(t, i), 'frame', str(n[5]) || undefined), bytesTd(n[2]), td(pct(n[2] / Math.max(1, total)), 'n'), td(num(n[3]), 'n'), td(CATS[n[4]][0])]);
      return tr;
    });
    const kept = t._kids[st.focus].reduce((s, c) => s + t.nodes[c][2], 0) + t.nodes[st.focus][6];
    const hidden = t.nodes[st.focus][2] - kept;
    return el('div', {}, [
      el('div', { cls: 'muted', text: (st.query ? num(ids.length) + ' frames match “' + st.query + '”' : 'under ' + (st.focus ? pathOf(t, st.focus) : 'everything live')) +
        (hidden > 0 && !st.query ? ' · smaller frames left out of the page: ' + bytes(hidden) : '') + (t.dropped_nodes ? ' · ' + num(t.dropped_nodes) + ' small frames of this tree left out' : '') }),
      el('div', { cls: 'scroll' }, table(['frame', '#bytes', '#share', '#allocations', 'main category'], rows, { 'data-testid': 'moment-list' }))]);
  }
  function peakLayers() {
    const la = dev().layers;
    if (!la || !la.layers.length) return null;
    const rows = la.layers.filter(l => matches(l.name)).slice(0, 12).map(l => el('tr', { 'data-name': l.name }, [td(l.name, 'frame'), bytesTd(l.live_at_peak)]));
    return el('div', { style: 'flex:0 0 340px' }, [el('h3', { text: 'Layers at the peak (memhist layers)' }),
      table(['layer', '#live at the peak'], rows, { 'data-testid': 'peak-layers' })]);
  }
  function renderMoment() {
    if (!momBox) return;
    momBox.replaceChildren();
    const d = dev(), m = d.moments[st.moment];
    if (!m) { momBox.append(el('p', { cls: 'muted', text: 'No moment with live allocations was kept.' })); return; }
    const t = tree(m), hasModule = !!m.trees.module;
    const by = el('span', {}, [hasModule ? el('button', { text: 'by module', cls: st.by === 'module' ? 'on' : null, onclick: () => { st.by = 'module'; st.focus = 0; renderMoment(); } }) : null, ' ',
      el('button', { text: 'by stack', cls: st.by === 'stack' || !hasModule ? 'on' : null, onclick: () => { st.by = 'stack'; st.focus = 0; renderMoment(); } })]);
    const shows = el('div', { 'data-testid': 'moment-title', 'data-index': m.index, 'data-kind': m.kind },
      [el('b', { text: 'Showing what is live at ' + momentTitle(m) }), ': ' + bytes(t.nodes[0][2]) + ' in ' + num(t.nodes[0][3]) + ' allocations. ']);
    if (st.clicked !== null && st.clicked !== m.index)
      shows.append(el('span', { cls: 'muted', text: 'You clicked event ' + num(st.clicked) + '; this is the nearest of the ' + d.moments.length + ' moments kept.' }));
    const sel = el('select', { 'data-testid': 'moment-select', onchange: e => { st.moment = +e.target.value; st.focus = 0; st.clicked = null; drawTimeline(); renderMoment(); } },
      d.moments.map((x, i) => ({ x, i })).sort((a, b) => a.x.index - b.x.index).map(({ x, i }) => el('option', { value: i, text: momentTitle(x), selected: i === st.moment })));
    momBox.append(shows, el('div', { cls: 'row', style: 'margin:6px 0' }, [by, sel]), catLegend());
    momBox.append(icicle(t));
    momBox.append(el('div', { cls: 'row', style: 'margin-top:10px' }, [el('div', { cls: 'grow' }, momentList(t)), m.kind === 'peak' ? peakLayers() : null]));
  }
  function moments() {
    momBox = el('div', { 'data-testid': 'moment' });
    return el('section', { id: 'moment' }, [el('h2', { text: 'What is live' }),
      el('p', { cls: 'muted', text: 'Click the timeline near a moment (the marks under it) or pick one; click a frame to zoom into it, again to go back up.' }), momBox]);
  }

  /* ---- steps, trend ------------------------------------------------------- */
  let stepsBox;
  function stepsSection() {
    stepsBox = el('div');
    renderSteps();
    return el('section', { id: 'steps' }, [el('h2', { text: 'Steps and fragmentation' }), stepsBox]);
  }
  function trendText(tr) {
    if (!tr) return 'Fewer than two steps: no fragmentation trend.';
    let s = 'From step ' + tr.first_step + ' to ' + tr.last_step + ' the step peak of reserved memory changed by ' + bytes(Math.abs(tr.reserved_growth)) +
      (tr.reserved_growth < 0 ? ' (down)' : '') + ' and of allocated memory by ' + bytes(Math.abs(tr.allocated_growth)) + (tr.allocated_growth < 0 ? ' (down)' : '') + '. ';
    s += tr.fragmentation ? 'Reserved memory grows while allocated memory does not: the allocator fragments. ' : 'No fragmentation trend. ';
    if (tr.whatif_expandable_peak_reserved !== null)
      s += 'With expandable_segments:True the peak reserved would be ' + bytes(tr.whatif_expandable_peak_reserved) +
        (tr.whatif_checked === null ? '' : tr.whatif_checked ? ' (checked by replay).' : ' (an estimate: the replay under the recorded settings reproduces ' + tr.baseline_match_percent + ' % of the run).');
    return s;
  }
  function renderSteps() {
    const d = dev(), cols = d.step_columns;
    stepsBox.replaceChildren(el('p', { 'data-testid': 'trend', text: trendText(d.fragmentation_trend) }));
    const all = (d.setup ? [d.setup] : []).concat(d.steps, d.tail ? [d.tail] : []);
    const c = n => cols.indexOf(n);
    const rows = all.slice(0, st.stepsShown).map((s, k) => {
      const isTail = d.tail && s === d.tail;
      return el('tr', { cls: 'clickable' + (s[c('ooms')] ? ' hi' : ''), title: 'zoom the timeline to this step', onclick: () => { if (zoomToStep(s[0])) cv.scrollIntoView({ block: 'center' }); } },
        [td(isTail ? 'tail' : stepText(s[0])), td(secs(s[c('end_ns')] - s[c('begin_ns')]), 'n'), bytesTd(s[c('peak_allocated')]), bytesTd(s[c('peak_reserved')]),
          bytesTd(s[c('end_reserved')]), td(pct(s[c('fragmentation')]), 'n'), bytesTd(s[c('inactive_split')]), bytesTd(s[c('largest_free')]),
          td(num(s[c('segments')]), 'n'), td(num(s[c('segment_allocs')]) + ' / ' + num(s[c('segment_frees')]), 'n'), td(num(s[c('retries')]), 'n'), td(num(s[c('ooms')]), 'n')]);
    });
    stepsBox.append(el('div', { cls: 'scroll' }, table(['step', '#duration', '#peak allocated', '#peak reserved', '#reserved at end', '#fragmentation',
      '#inactive split', '#largest free', '#segments', '#seg. allocs / frees', '#retries', '#OOMs'], rows, { 'data-testid': 'steps-table' })));
    if (all.length > st.stepsShown)
      stepsBox.append(el('button', { text: 'show ' + Math.min(1000, all.length - st.stepsShown) + ' more of ' + num(all.length - st.stepsShown), onclick: () => { st.stepsShown += 1000; renderSteps(); } }));
  }

  /* ---- OOM cards --------------------------------------------------------- */
  function oomCard(o, k, n) {
    const t0 = file().t0_ns, verdict = { fragmentation: 'fragmentation: enough memory is reserved but free, not in one block',
      cross_stream: 'cross-stream: free blocks exist on another stream', exhaustion: 'exhaustion: the device holds too much live memory' }[o.verdict] || o.verdict;
    const sugg = o.suggestions.map(s => el('tr', {}, [td(s.setting, 'mono'), td(s.in_effect ? 'already in effect' : s.oom ? 'still runs out of memory' : 'avoids the OOM', s.oom ? 'bad' : 'ok'),
      td(s.checked ? 'checked by replay' : 'estimate'), bytesTd(s.peak_reserved)]));
    const free = o.free_blocks.map(f => el('tr', {}, [td(f.stream === o.stream ? f.stream + ' (request)' : String(f.stream), 'n'), td(f.pool), bytesTd(f.largest), bytesTd(f.total), td(num(f.blocks), 'n')]));
    const live = o.live_by_layer.length ? o.live_by_layer.map(l => el('tr', { 'data-name': l.layer }, [td(l.layer, 'frame'), bytesTd(l.bytes)]))
      : o.live_by_stack.slice(0, 10).map(l => el('tr', {}, [td(str(l.label), 'frame'), bytesTd(l.bytes)]));
    const ck = o.checkpoint;
    return el('div', { cls: 'oom-card', 'data-testid': 'oom-card', 'data-request': o.request }, [
      el('h3', { text: 'OOM ' + (k + 1) + ' of ' + n + ': a request of ' + bytes(o.request) + ' (' + o.pool + ' pool, stream ' + o.stream + ') at ' + secs(o.time_ns - t0) + ', ' + stepText(o.step) }),
      el('p', {}, [el('span', { cls: 'verdict', text: 'Verdict: ' + verdict }), '. Allocated ' + bytes(o.allocated) + ', reserved ' + bytes(o.reserved) +
        ' (' + bytes(o.reserved - o.allocated) + ' reserved but unallocated), free on the device ' + bytes(o.device_free) + ' of ' + bytes(o.capacity) +
        (o.capacity_estimated ? ' (capacity estimated)' : '') + ', outside the allocator ' + bytes(o.outside_allocator) + '; largest free block on the stream ' +
        bytes(o.largest_free_same_stream) + ', on any stream ' + bytes(o.largest_free_any) + '.']),
      el('div', { cls: 'row' }, [
        el('div', {}, [el('h3', { text: 'Free blocks' }), table(['#stream', 'pool', '#largest', '#total', '#blocks'], free)]),
        el('div', {}, [el('h3', { text: 'Live at the OOM (' + bytes(o.live_bytes) + ')' }), table([o.live_by_layer.length ? 'layer' : 'site', '#bytes'], live)]),
        el('div', {}, [el('h3', { text: 'Settings replayed' }), table(['setting', 'result', 'how', '#peak reserved'], sugg),
          el('p', { cls: 'muted', text: 'The replay under the recorded settings reproduces ' + o.replay_match_percent + ' % of the run (checked from ' + o.replay_checked_from_percent + ' %).' }),
          ck.layers.length ? el('p', { text: 'Checkpointing ' + ck.layers.join(', ') + ' frees ' + bytes(ck.freed_at_oom) + ' at the OOM: the request ' + (ck.request_would_fit ? 'would fit.' : 'would still not fit.') }) : null])])]);
  }
  function oomSection() {
    const cs = dev().oom_cases;
    return el('section', { id: 'ooms' }, [el('h2', { text: 'Out of memory' }), cs.length ? null : el('p', { cls: 'muted', text: 'No OOM on this device.' })]
      .concat(cs.map((o, k) => oomCard(o, k, cs.length))));
  }

  /* ---- layers and the checkpointing plan ------------------------------- */
  let layersBox;
  function kCurve(la) {
    const c = el('canvas', { width: 460, height: 200, 'data-testid': 'k-curve', style: 'width:460px;height:200px' });
    const g = c.getContext('2d'), pts = [['(none)', la.peak]].concat(la.k_curve), L = 70, B = 24, W = 380, H = 160;
    const lo = Math.min(...pts.map(p => p[1])) * 0.95, hi = la.peak * 1.02;
    const X = k => L + k / Math.max(1, pts.length - 1) * W, Y = v => 8 + H - (v - lo) / Math.max(1, hi - lo) * H;
    g.font = '11px system-ui, sans-serif'; g.fillStyle = '#666'; g.textAlign = 'right';
    g.fillText(bytes(la.peak), L - 4, Y(la.peak) + 4); g.fillText(bytes(lo / 0.95), L - 4, Y(lo / 0.95) + 4);
    g.textAlign = 'center'; g.fillText('layers checkpointed (ranked)', L + W / 2, 8 + H + B - 4);
    g.strokeStyle = '#0077bb'; g.beginPath();
    pts.forEach((p, k) => k ? g.lineTo(X(k), Y(p[1])) : g.moveTo(X(k), Y(p[1]))); g.stroke();
    pts.forEach((p, k) => { g.fillStyle = k === la.plan_layers ? '#cc3311' : '#0077bb'; g.beginPath(); g.arc(X(k), Y(p[1]), k === la.plan_layers ? 4 : 2.5, 0, 7); g.fill(); });
    g.strokeStyle = '#999'; g.strokeRect(L, 8, W, H);
    return c;
  }
  function layersSection() {
    layersBox = el('div');
    renderLayers();
    return el('section', { id: 'layers' }, [el('h2', { text: 'Layers and activation checkpointing' }), layersBox]);
  }
  function renderLayers() {
    const la = dev().layers;
    layersBox.replaceChildren();
    if (!la) { layersBox.append(el('p', { cls: 'muted', text: 'The layers analysis could not be made for this device.' })); return; }
    const why = { compiled_code: 'the activations were made in code torch.compile generated', saving_under_1_percent: 'the most any plan saves is under 1 % of the peak',
      no_module_scopes: 'the recording has no module scopes', unknown_categories: 'no memory is known to be activations', no_gain: 'no layer\'s recompute lowers the peak',
      no_saved_activations: 'no saved activation is live at the peak' };
    const plan = la.plan_layers ? 'Plan: checkpoint ' + la.k_curve.slice(0, la.plan_layers).map(k => k[0]).join(', ') + ': estimated peak ' + bytes(la.plan_peak) +
      ' instead of ' + bytes(la.peak) + ' (' + bytes(la.peak - la.plan_peak) + ' less), recomputing ' + pct(la.recompute_share) + ' of the forward.'
      : 'No checkpointing plan: ' + (why[la.no_plan] || la.no_plan) + '.';
    const rows = la.layers.filter(l => matches(l.name)).slice(0, 300).map(l => el('tr', { 'data-name': l.name }, [td(l.name, 'frame'), bytesTd(l.live_at_peak),
      td(Object.entries(l.by_category).map(([k, v]) => k + ' ' + bytes(v)).join(', ')), bytesTd(l.saved_at_peak), bytesTd(l.reduction), td(l.candidate ? 'yes' : '')]));
    layersBox.append(el('p', { 'data-testid': 'plan', text: plan }), el('div', { cls: 'row' }, [
      el('div', { cls: 'grow' }, el('div', { cls: 'scroll' }, table(['layer', '#live at the peak', 'categories', '#saved activations', '#checkpointing it alone saves', 'candidate'], rows, { 'data-testid': 'layers-table' }))),
      la.k_curve.length ? el('div', {}, [el('h3', { text: 'Estimated peak as the ranked layers are checkpointed (K-curve)' }), kCurve(la)]) : null]));
  }

  /* ---- growth, top groups ------------------------------------------------ */
  let growthBox, topBox;
  function renderGrowth() {
    const g = dev().growth;
    growthBox.replaceChildren();
    if (!g.window_steps) { growthBox.append(el('p', { cls: 'muted', text: 'Too few complete steps to tell growth from set-up (three are needed).' })); return; }
    if (!g.entries.length) { growthBox.append(el('p', { text: 'Nothing grows: no site holds more at the end of each of the last ' + g.window_steps + ' steps.' })); return; }
    const rows = g.entries.filter(e => matches(e.module, str(e.label), ...framesText(e.frames))).map(e => el('tr', {}, [td(e.module || str(e.label), 'frame', framesTitle(e.frames)),
      bytesTd(e.bytes_per_step), bytesTd(e.live_bytes), td(stepText(e.first_step)), td(e.steps_grown + ' of ' + e.steps, 'n')]));
    growthBox.append(table(['site', '#per step', '#live at the last step', 'grows since', '#steps grown'], rows, { 'data-testid': 'growth-table' }));
  }
  function renderTop() {
    const d = dev();
    topBox.replaceChildren();
    const cats = CATS.map(c => [c[0], d.category_at_peak[c[0]]]).filter(c => c[1]);
    topBox.append(el('p', {}, ['Live at the allocated peak: ' + bytes(d.live_at_peak_bytes) + ' in ' + num(d.live_at_peak_count) + ' allocations — ',
      ...cats.map(c => el('span', { style: 'margin-right:10px' }, [el('i', { style: 'display:inline-block;width:10px;height:10px;margin-right:3px;background:' + CATS.find(x => x[0] === c[0])[1] }), c[0] + ' ' + bytes(c[1])]))]));
    const rows = d.top_at_peak.filter(t => matches(str(t.label), ...framesText(t.frames))).map(t => el('tr', {}, [bytesTd(t.bytes), td(num(t.count), 'n'),
      el('td', { cls: 'frames', title: framesTitle(t.frames) }, framesText(t.frames).slice(0, 8).map(s => el('div', { text: s })))]));
    topBox.append(table(['#bytes', '#allocations', 'stack (innermost first; hover for full paths)'], rows, { 'data-testid': 'top-table' }));
  }

  /* ---- ranks --------------------------------------------------------------- */
  function ranksSection() {
    const R = DATA.ranks;
    if (!R) return null;
    const rows = R.rows.map((r, i) => el('tr', { cls: 'clickable' + (i === st.file ? ' hi' : ''), 'data-testid': 'rank-row', onclick: () => openFile(i) }, [
      td(r.rank >= 0 ? String(r.rank) : '?', 'n'), td(r.host), td(r.path, 'frame'), td(String(r.device), 'n'), bytesTd(r.peak_reserved.value),
      td(stepText(r.peak_reserved.step)), bytesTd(r.peak_allocated.value), td(num(r.steps), 'n'), td(num(r.ooms), 'n'), td(r.fragmentation >= 0 ? pct(r.fragmentation) : '', 'n'),
      td(i === R.worst ? 'worst rank' + (R.tied > 1 ? ' (' + R.tied + ' tied)' : '') : r.helper ? 'helper process' : '')]));
    return el('section', { id: 'ranks' }, [el('h2', { text: 'Ranks' }),
      el('p', { text: 'Peak reserved: median ' + bytes(R.median_peak_reserved) + ', highest on ' + R.rows[R.worst].path + ', lowest on ' + R.rows[R.least].path + '. Click a rank to open it.' }),
      el('div', { cls: 'scroll' }, table(['#rank', 'host', 'file', '#device', '#peak reserved', 'at', '#peak allocated', '#steps', '#OOMs', '#fragmentation', ''], rows, { 'data-testid': 'rank-table' })),
      heatMap(R)]);
  }
  function heatMap(R) { /* peak reserved per rank and step, from each file's step table */
    const steps = DATA.files.map((f, i) => { const d = f.devices.find(x => x.device === R.rows[i].device) || f.devices[0]; return d ? d.steps : []; });
    const n = Math.max(0, ...steps.map(s => s.length));
    if (!n) return null;
    const top = Math.max(1, ...steps.flat().map(s => s[4])), cw = Math.max(1, Math.min(24, 1100 / n)), ch = Math.max(4, Math.min(22, 300 / steps.length));
    const c = el('canvas', { id: 'heat', width: Math.max(620, Math.ceil(cw * n) + 60), height: Math.ceil(ch * steps.length) + 20, 'data-testid': 'heat-map' });
    const g = c.getContext('2d');
    g.font = '10px system-ui, sans-serif';
    steps.forEach((s, r) => {
      g.fillStyle = '#666'; g.fillText(String(R.rows[r].rank >= 0 ? R.rows[r].rank : r), 2, r * ch + ch - 2);
      s.forEach((x, k) => { const v = x[4] / top; g.fillStyle = 'rgb(' + Math.round(255 - 85 * v) + ',' + Math.round(255 - 204 * v) + ',' + Math.round(255 - 136 * v) + ')'; g.fillRect(40 + k * cw, r * ch, Math.ceil(cw), ch - 1); });
    });
    g.fillStyle = '#666'; g.fillText('steps →  (colour: peak reserved of the step, darkest ' + bytes(top) + ')', 40, steps.length * ch + 14);
    c.addEventListener('click', e => {
      const r = Math.floor(e.offsetY / ch), k = Math.floor((e.offsetX - 40) / cw);
      if (r >= 0 && r < steps.length && steps[r][k]) { openFile(r); zoomToStep(steps[r][k][0]); }
    });
    c.addEventListener('mousemove', e => {
      const r = Math.floor(e.offsetY / ch), k = Math.floor((e.offsetX - 40) / cw);
      if (r >= 0 && r < steps.length && steps[r][k]) showTip(e, R.rows[r].path + ', ' + stepText(steps[r][k][0]) + ': peak reserved ' + bytes(steps[r][k][4])); else hideTip();
    });
    c.addEventListener('mouseleave', hideTip);
    return el('div', {}, [el('h3', { text: 'Peak reserved per rank and step' }), c]);
  }

  /* ---- the page -------------------------------------------------------------- */
  function openFile(i) { st.file = i; st.dev = 0; if (file().devices.length) resetView(); render(); }
  function renderFiltered() {
    renderMoment(); renderLayers(); renderGrowth(); renderTop(); drawTimeline();
  }
  function render() {
    const app = document.getElementById('app'), f = file();
    app.replaceChildren(header());
    const main = el('main');
    app.append(main, tip);
    main.append(notes());
    if (!f.devices.length) { main.append(ranksSection() || ''); return; }
    growthBox = el('div', { 'data-testid': 'growth' }); topBox = el('div', { 'data-testid': 'top' });
    main.append(cards(), ranksSection() || '', timeline(), moments(), oomSection(), layersSection(), stepsSection(),
      el('section', { id: 'growth' }, [el('h2', { text: 'Growth across steps' }), growthBox]),
      el('section', { id: 'top' }, [el('h2', { text: 'Live at the peak, by stack (memhist report)' }), topBox]),
      el('footer', { cls: 'muted', text: 'memhist ' + DATA.memhist + ' · every number on this page is one memhist report, layers, oom or growth prints.' }));
    renderGrowth(); renderTop();
    drawTimeline(); renderMoment();
  }

  window.addEventListener('error', e => api.errors.push(String(e.message || e)));
  try {
    if (DATA.files[0].devices.length) resetView();
    render();
    window.addEventListener('resize', () => { if (cv && cv.isConnected) drawTimeline(); });
    Object.assign(api, { zoomTo: (lo, hi) => { st.lo = lo; st.hi = hi; drawTimeline(); return cv.dataset.mode; }, zoomToStep, clickMoment,
      openFile, state: () => ({ file: st.file, dev: st.dev, lo: st.lo, hi: st.hi, moment: st.moment, mode: cv && cv.dataset.mode }) });
    api.readyMs = performance.now();
    api.ready = true;
  } catch (e) {
    api.errors.push(String(e && e.stack || e));
    document.getElementById('app').textContent = 'This report could not be drawn: ' + e;
    throw e;
  }
})();
