/* report.js - draws `alloctrace report --html` from the JSON in #atr-data.
 *
 * Plain JS, no libraries, no network.  Everything is drawn synchronously
 * while the page loads; afterwards <body> carries
 *   data-status      "ok", or "error: MESSAGE" (also uncaught errors)
 *   data-render-ms   time spent in this script
 *   data-load-ms     performance.now() when drawing ended (since navigation)
 * and every chart element a data-drawn attribute: the points, bars or
 * boxes it drew (tests/html checks both with headless Chromium).
 */
(function () {
  'use strict';
  var T0 = performance.now();
  var statusEl = document.getElementById('atr-status');
  function setStatus(s) {
    document.body.setAttribute('data-status', s);
    if (statusEl) statusEl.textContent = s;
  }
  window.addEventListener('error', function (e) {
    setStatus('error: ' + (e && e.message ? e.message : String(e)));
  });

  /* ---- helpers ------------------------------------------------------------ */
  var SVGNS = 'http://www.w3.org/2000/svg';
  var PALETTE = ['#2f6fdf', '#e8590c', '#2b8a3e', '#c2255c', '#7048e8', '#0c8599', '#e67700',
    '#5c940d', '#862e9c', '#495057'];

  function el(tag, attrs, kids) {
    var e = document.createElement(tag);
    if (attrs) for (var k in attrs) {
      if (k === 'text') e.textContent = attrs[k];
      else if (k === 'html') e.innerHTML = attrs[k];
      else if (k === 'cls') e.className = attrs[k];
      else e.setAttribute(k, attrs[k]);
    }
    if (kids) kids.forEach(function (c) { if (c) e.appendChild(c); });
    return e;
  }
  function esc(s) {
    return String(s).replace(/[&<>"']/g, function (c) {
      return { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c];
    });
  }
  function num(n) { return Math.round(n).toLocaleString('en-US'); }
  function bytes(n) {
    var u = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'], i = 0;
    n = Number(n);
    while (Math.abs(n) >= 1024 && i < u.length - 1) { n /= 1024; i++; }
    return (i === 0 ? String(Math.round(n)) : n.toFixed(n < 10 ? 2 : n < 100 ? 1 : 0)) + ' ' + u[i];
  }
  function dur(ns) {
    ns = Number(ns);
    if (ns < 1e3) return ns.toFixed(0) + ' ns';
    if (ns < 1e6) return (ns / 1e3).toFixed(ns < 1e4 ? 2 : 1) + ' µs';
    if (ns < 1e9) return (ns / 1e6).toFixed(ns < 1e7 ? 2 : 1) + ' ms';
    if (ns < 600e9) return (ns / 1e9).toFixed(ns < 1e10 ? 3 : 2) + ' s';
    return (ns / 60e9).toFixed(1) + ' min';
  }
  function rate(v) {
    if (v >= 1e9) return (v / 1e9).toFixed(2) + ' G/s';
    if (v >= 1e6) return (v / 1e6).toFixed(2) + ' M/s';
    if (v >= 1e3) return (v / 1e3).toFixed(1) + ' k/s';
    return v.toFixed(v < 10 ? 1 : 0) + ' /s';
  }
  /* round tick positions covering [0, max] */
  function ticks(max, count, base2) {
    if (!(max > 0)) return [0];
    var raw = max / count, step;
    if (base2 && raw >= 1024) {
      var p = Math.pow(1024, Math.floor(Math.log(raw) / Math.log(1024)));
      var m = raw / p, c2 = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024];
      step = p * c2.filter(function (x) { return x >= m; })[0];
    } else {
      var p10 = Math.pow(10, Math.floor(Math.log10(raw))), f = raw / p10;
      step = p10 * (f <= 1 ? 1 : f <= 2 ? 2 : f <= 2.5 ? 2.5 : f <= 5 ? 5 : 10);
    }
    var out = [];
    for (var v = 0; v <= max * 1.0001; v += step) out.push(v);
    return out;
  }
  function hashHue(s) {
    var h = 2166136261;
    for (var i = 0; i < s.length; i++) { h ^= s.charCodeAt(i); h = Math.imul(h, 16777619); }
    return (h >>> 0);
  }
  function flameColor(name) {
    var h = hashHue(name);
    var hue = 8 + (h % 44), sat = 70 + ((h >>> 8) % 20), light = 58 + ((h >>> 16) % 14);
    return 'hsl(' + hue + ',' + sat + '%,' + light + '%)';
  }
  var tip = el('div', { cls: 'tip' });
  document.body.appendChild(tip);
  function showTip(ev, text) {
    tip.textContent = text;
    tip.style.display = 'block';
    var x = ev.clientX + 14, y = ev.clientY + 14;
    var r = tip.getBoundingClientRect();
    if (x + r.width > window.innerWidth - 4) x = ev.clientX - r.width - 14;
    if (y + r.height > window.innerHeight - 4) y = ev.clientY - r.height - 14;
    tip.style.left = Math.max(0, x) + 'px';
    tip.style.top = Math.max(0, y) + 'px';
  }
  function hideTip() { tip.style.display = 'none'; }

  /* ---- time charts -------------------------------------------------------- */
  var M = { l: 72, r: 16, t: 30, b: 28 };

  /* The frame shared by the time charts: axes, grid, markers.  Returns
   * { svg: string parts, x: ns -> px, y: v -> px, drawn } */
  function timeFrame(W, H, xmax, ymax, yfmt, base2, marks) {
    var pw = W - M.l - M.r, ph = H - M.t - M.b;
    var fx = function (ns) { return M.l + Math.min(Math.max(ns / xmax, 0), 1) * pw; };
    var fy = function (v) { return M.t + ph - (ymax > 0 ? v / ymax : 0) * ph; };
    var s = [];
    ticks(ymax, 5, base2).forEach(function (v) {
      var y = fy(v).toFixed(1);
      s.push('<line class="grid" x1="' + M.l + '" x2="' + (W - M.r) + '" y1="' + y + '" y2="' + y + '"/>');
      s.push('<text x="' + (M.l - 6) + '" y="' + y + '" dy="0.32em" text-anchor="end">' + esc(yfmt(v)) + '</text>');
    });
    ticks(xmax, 8, false).forEach(function (t) {
      var x = fx(t).toFixed(1);
      s.push('<line class="axis" x1="' + x + '" x2="' + x + '" y1="' + (M.t + ph) + '" y2="' + (M.t + ph + 4) + '"/>');
      s.push('<text x="' + x + '" y="' + (M.t + ph + 16) + '" text-anchor="middle">' + esc(dur(t)) + '</text>');
    });
    s.push('<line class="axis" x1="' + M.l + '" x2="' + (W - M.r) + '" y1="' + (M.t + ph) + '" y2="' + (M.t + ph) + '"/>');
    s.push('<line class="axis" x1="' + M.l + '" x2="' + M.l + '" y1="' + M.t + '" y2="' + (M.t + ph) + '"/>');
    var lastLabelX = -1e9, row = 0, labels = marks.length <= 60;
    marks.forEach(function (m) {
      var x = fx(m.ns);
      s.push('<line class="mline" x1="' + x.toFixed(1) + '" x2="' + x.toFixed(1) + '" y1="' + (M.t - 4) + '" y2="' + (M.t + ph) + '"><title>' +
        esc(m.kind + ': ' + m.label + ' at ' + dur(m.ns)) + '</title></line>');
      if (labels) {
        var text = m.label.length > 22 ? m.label.slice(0, 21) + '…' : m.label;
        row = x - lastLabelX < 90 ? (row + 1) % 2 : 0;
        if (row === 0) lastLabelX = x;
        var right = x > W - M.r - 120;
        s.push('<text class="mlabel" x="' + (x + (right ? -2 : 2)).toFixed(1) + '" y="' + (M.t - 16 + row * 10) + '"' +
          (right ? ' text-anchor="end"' : '') + '>' + esc(text) + '</text>');
      }
    });
    return { s: s, x: fx, y: fy, pw: pw, ph: ph };
  }

  /* step-shaped path through per-bucket values (null = gap) */
  function stepPath(vals, bw, fx, fy, xmax) {
    var d = [], pen = false, drawn = 0;
    for (var k = 0; k < vals.length; k++) {
      var v = vals[k];
      if (v === null || v === undefined || v < 0) { pen = false; continue; }
      var x0 = fx(k * bw), x1 = fx(Math.min((k + 1) * bw, xmax)), y = fy(v);
      d.push((pen ? 'L' : 'M') + x0.toFixed(1) + ' ' + y.toFixed(1) + 'H' + x1.toFixed(1));
      pen = true;
      drawn++;
    }
    return { d: d.join(''), drawn: drawn };
  }

  function hoverable(box, svgEl, W, frame, xmax, describe) {
    var cursor = document.createElementNS(SVGNS, 'line');
    cursor.setAttribute('class', 'cursor');
    cursor.setAttribute('y1', M.t);
    cursor.setAttribute('y2', M.t + frame.ph);
    cursor.style.display = 'none';
    svgEl.appendChild(cursor);
    svgEl.addEventListener('mousemove', function (ev) {
      var r = svgEl.getBoundingClientRect();
      var vx = (ev.clientX - r.left) * W / r.width;
      if (vx < M.l || vx > W - M.r) { cursor.style.display = 'none'; hideTip(); return; }
      var ns = (vx - M.l) / frame.pw * xmax;
      cursor.setAttribute('x1', vx);
      cursor.setAttribute('x2', vx);
      cursor.style.display = '';
      showTip(ev, describe(ns));
    });
    svgEl.addEventListener('mouseleave', function () { cursor.style.display = 'none'; hideTip(); });
  }

  /* samples are ~10 ms apart, buckets may be narrower: a value holds until
   * the next sample */
  function carry(vals) {
    var out = vals.slice(), prev = -1, lastSet = -1;
    for (var k = 0; k < vals.length; k++) if (vals[k] >= 0) lastSet = k;
    for (var j = 0; j <= lastSet; j++) {
      if (out[j] >= 0) prev = out[j]; else out[j] = prev;
    }
    return out;
  }

  function heapChart(p, W) {
    var tl = p.timeline, bw = tl.bucket_ns, rss = p.rss;
    if (rss) { rss.rss_max = carry(rss.rss_max); rss.vmsize_max = carry(rss.vmsize_max); }
    var box = el('div', { cls: 'chart', id: 'heap-' + p.pid });
    var xmax = Math.max(p.end_ns, 1);
    if (rss) for (var q = rss.rss_max.length - 1; q >= 0; q--) {
      if (rss.rss_max[q] >= 0) { xmax = Math.max(xmax, (q + 1) * bw); break; }
    }
    var showVm = false, showRss = !!rss, maps = tl.mapped_last, showMaps = !!maps;
    var H = 300;
    var legend = el('div', { cls: 'legend' });
    function sw(color) { return '<span class="sw" style="background:' + color + '"></span>'; }
    legend.innerHTML = '<span>' + sw('var(--heapband)') + 'live heap bytes (min–max per ' + esc(dur(bw)) + ')</span>' +
      '<span>' + sw('var(--heap)') + 'live heap at bucket end</span>' +
      '<span>' + sw('var(--peak)') + 'peak ' + esc(bytes(p.peak_live_bytes)) + ' at ' + esc(dur(p.peak_live_ns)) + '</span>';
    if (rss) {
      var l1 = el('label', { html: '<input type="checkbox" checked> ' + sw('var(--rss)') + 'RSS (the program\'s, the tracer\'s own memory left out; max per bucket; peak ' + esc(bytes(rss.peak_rss)) + ')' });
      var l2 = el('label', { html: '<input type="checkbox"> ' + sw('var(--vm)') + 'VmSize (peak ' + esc(bytes(rss.peak_vmsize)) + ')' });
      l1.firstChild.addEventListener('change', function (e) { showRss = e.target.checked; draw(); });
      l2.firstChild.addEventListener('change', function (e) { showVm = e.target.checked; draw(); });
      legend.appendChild(l1);
      legend.appendChild(l2);
    }
    if (maps) {
      var l3 = el('label', { html: '<input type="checkbox" checked> ' + sw('var(--mapped)') + 'heap + the program\'s own mappings (mmap, brk; peak mapped ' + esc(bytes(tl.mapped_peak)) + ')' });
      l3.firstChild.addEventListener('change', function (e) { showMaps = e.target.checked; draw(); });
      legend.appendChild(l3);
    }
    var heapMaps = maps ? tl.last.map(function (v, k) { return v + maps[k]; }) : null;
    var heapMapsPeak = heapMaps ? Math.max.apply(null, heapMaps.concat([0])) : 0;
    var svgHost = el('div');
    box.appendChild(legend);
    box.appendChild(svgHost);
    function draw() {
      var ymax = p.peak_live_bytes;
      if (rss && showRss) ymax = Math.max(ymax, rss.peak_rss);
      if (rss && showVm) ymax = Math.max(ymax, rss.peak_vmsize);
      if (heapMaps && showMaps) ymax = Math.max(ymax, heapMapsPeak);
      ymax = ymax > 0 ? ymax * 1.08 : 1;
      var f = timeFrame(W, H, xmax, ymax, bytes, true, tl.marks);
      var s = f.s, drawn = 0;
      /* min-max band */
      var up = [], lo = [];
      for (var k = 0; k < tl.n; k++) {
        var x0 = f.x(k * bw).toFixed(1), x1 = f.x(Math.min((k + 1) * bw, xmax)).toFixed(1);
        up.push(x0 + ',' + f.y(tl.max[k]).toFixed(1), x1 + ',' + f.y(tl.max[k]).toFixed(1));
        lo.push(x1 + ',' + f.y(tl.min[k]).toFixed(1), x0 + ',' + f.y(tl.min[k]).toFixed(1));
        drawn++;
      }
      if (tl.n) s.push('<polygon fill="var(--heapband)" stroke="none" points="' + up.concat(lo.reverse()).join(' ') + '"/>');
      var last = stepPath(tl.last, bw, f.x, f.y, xmax);
      s.push('<path fill="none" stroke="var(--heap)" stroke-width="1.3" d="' + last.d + '"/>');
      if (rss && showVm) {
        var vp = stepPath(rss.vmsize_max, bw, f.x, f.y, xmax);
        s.push('<path fill="none" stroke="var(--vm)" stroke-width="1.2" stroke-dasharray="4 2" d="' + vp.d + '"/>');
        drawn += vp.drawn;
      }
      if (heapMaps && showMaps) {
        var mp = stepPath(heapMaps, bw, f.x, f.y, xmax);
        s.push('<path fill="none" stroke="var(--mapped)" stroke-width="1.3" stroke-dasharray="2 2" d="' + mp.d + '"/>');
        drawn += mp.drawn;
      }
      if (rss && showRss) {
        var rp = stepPath(rss.rss_max, bw, f.x, f.y, xmax);
        s.push('<path fill="none" stroke="var(--rss)" stroke-width="1.4" d="' + rp.d + '"/>');
        drawn += rp.drawn;
      }
      var px = f.x(p.peak_live_ns), py = f.y(p.peak_live_bytes);
      s.push('<circle cx="' + px.toFixed(1) + '" cy="' + py.toFixed(1) + '" r="4.5" fill="var(--peak)"><title>peak ' +
        esc(bytes(p.peak_live_bytes)) + ' at ' + esc(dur(p.peak_live_ns)) + '</title></circle>');
      var anchor = px > W - 200 ? 'end' : 'start', dx = px > W - 200 ? -8 : 8;
      s.push('<text x="' + (px + dx).toFixed(1) + '" y="' + (py + 4).toFixed(1) + '" text-anchor="' + anchor +
        '" style="fill:var(--peak);font-weight:600">peak ' + esc(bytes(p.peak_live_bytes)) + '</text>');
      svgHost.innerHTML = '<svg xmlns="' + SVGNS + '" viewBox="0 0 ' + W + ' ' + H + '" width="' + W + '" height="' + H + '">' + s.join('') + '</svg>';
      box.setAttribute('data-drawn', String(drawn + last.drawn));
      hoverable(box, svgHost.firstChild, W, f, xmax, function (ns) {
        var k = Math.min(Math.floor(ns / bw), Math.max(tl.n - 1, 0));
        var t = dur(ns) + '  (bucket ' + dur(k * bw) + ' – ' + dur((k + 1) * bw) + ')';
        if (k < tl.n) t += '\nheap  min ' + bytes(tl.min[k]) + '  max ' + bytes(tl.max[k]) + '  end ' + bytes(tl.last[k]) +
          '\ncalls ' + num(tl.calls[k]) + (maps ? '\nmapped ' + bytes(maps[k]) + ' (program mmap/brk, at bucket end)' : '');
        if (rss && k < rss.rss_max.length && rss.rss_max[k] >= 0) t += '\nRSS   ' + bytes(rss.rss_max[k]) + '  VmSize ' + bytes(rss.vmsize_max[k]);
        tl.marks.forEach(function (m) { if (Math.abs(m.ns - ns) <= xmax / 200) t += '\n' + m.kind + ': ' + m.label; });
        return t;
      });
    }
    draw();
    return box;
  }

  function callsChart(p, W) {
    var tl = p.timeline, bw = tl.bucket_ns, H = 240;
    var box = el('div', { cls: 'chart', id: 'calls-' + p.pid });
    var xmax = Math.max(p.end_ns, 1);
    var series = tl.thread_series.map(function (t, i) {
      var r = t.counts.map(function (c, k) {
        var w = bw; /* the last bucket ends with the trace */
        if (p.end_ns > k * bw && p.end_ns < (k + 1) * bw) w = Math.max(p.end_ns - k * bw, bw / 10);
        return c / (w / 1e9);
      });
      return { name: t.name, calls: t.calls, rates: r, color: PALETTE[i % PALETTE.length] };
    });
    var ymax = 1;
    series.forEach(function (s) { s.rates.forEach(function (v) { if (v > ymax) ymax = v; }); });
    ymax *= 1.08;
    var legend = el('div', { cls: 'legend' });
    legend.innerHTML = series.map(function (s) {
      return '<span><span class="sw" style="background:' + s.color + '"></span>' + esc(s.name) + ': ' + esc(num(s.calls)) + ' calls</span>';
    }).join('');
    box.appendChild(legend);
    var f = timeFrame(W, H, xmax, ymax, rate, false, tl.marks);
    var s = f.s, drawn = 0;
    series.forEach(function (se) {
      var sp = stepPath(se.rates, bw, f.x, f.y, xmax);
      s.push('<path fill="none" stroke="' + se.color + '" stroke-width="1.3" d="' + sp.d + '"/>');
      drawn += sp.drawn;
    });
    var host = el('div');
    host.innerHTML = '<svg xmlns="' + SVGNS + '" viewBox="0 0 ' + W + ' ' + H + '" width="' + W + '" height="' + H + '">' + s.join('') + '</svg>';
    box.appendChild(host);
    box.setAttribute('data-drawn', String(drawn));
    hoverable(box, host.firstChild, W, f, xmax, function (ns) {
      var k = Math.floor(ns / bw), t = dur(ns);
      series.forEach(function (se) { if (k < se.rates.length) t += '\n' + se.name + ': ' + rate(se.rates[k]); });
      return t;
    });
    return box;
  }

  /* ---- histograms --------------------------------------------------------- */
  function histChart(hist, kind, W) {
    var box = el('div', { cls: 'chart' });
    var H = 220, m = { l: 64, r: 8, t: 12, b: 46 };
    if (!hist.length) {
      box.appendChild(el('div', { cls: 'note', text: kind === 'size' ? 'no allocations' : 'no block was freed' }));
      box.setAttribute('data-drawn', '0');
      return box;
    }
    var lo = hist[0][0], hi = hist[hist.length - 1][0], counts = {};
    hist.forEach(function (h) { counts[h[0]] = h[1]; });
    var n = hi - lo + 1, cmax = 0;
    hist.forEach(function (h) { if (h[1] > cmax) cmax = h[1]; });
    var pw = W - m.l - m.r, ph = H - m.t - m.b, bwid = pw / n;
    var s = [], drawn = 0;
    ticks(cmax, 4, false).forEach(function (v) {
      var y = (m.t + ph - v / cmax * ph).toFixed(1);
      s.push('<line class="grid" x1="' + m.l + '" x2="' + (W - m.r) + '" y1="' + y + '" y2="' + y + '"/>');
      s.push('<text x="' + (m.l - 6) + '" y="' + y + '" dy="0.32em" text-anchor="end">' + esc(num(v)) + '</text>');
    });
    function label(b) {
      if (b === 0) return kind === 'size' ? '0' : '0';
      var v = Math.pow(2, b - 1);
      return kind === 'size' ? bytes(v).replace(' ', '').replace('iB', '') : dur(v).replace(' ', '');
    }
    var every = Math.max(1, Math.ceil(n / (pw / 34)));
    for (var b = lo; b <= hi; b++) {
      var c = counts[b] || 0, x = m.l + (b - lo) * bwid, h = c / cmax * ph;
      var range = b === 0 ? '0' : (kind === 'size' ? bytes(Math.pow(2, b - 1)) + ' – ' + bytes(Math.pow(2, b) - 1)
        : dur(Math.pow(2, b - 1)) + ' – ' + dur(Math.pow(2, b) - 1));
      if (c > 0) {
        s.push('<rect x="' + (x + 1).toFixed(1) + '" y="' + (m.t + ph - h).toFixed(1) + '" width="' + Math.max(bwid - 2, 1).toFixed(1) +
          '" height="' + Math.max(h, 1).toFixed(1) + '" fill="' + (kind === 'size' ? '#2f6fdf' : '#2b8a3e') + '"><title>' +
          esc(range + ': ' + num(c)) + '</title></rect>');
        drawn++;
      }
      if ((b - lo) % every === 0) {
        var tx = (x + bwid / 2).toFixed(1), ty = m.t + ph + 10;
        s.push('<text x="' + tx + '" y="' + ty + '" text-anchor="end" transform="rotate(-40 ' + tx + ' ' + ty + ')">' + esc(label(b)) + '</text>');
      }
    }
    s.push('<line class="axis" x1="' + m.l + '" x2="' + (W - m.r) + '" y1="' + (m.t + ph) + '" y2="' + (m.t + ph) + '"/>');
    box.innerHTML = '<svg xmlns="' + SVGNS + '" viewBox="0 0 ' + W + ' ' + H + '" width="' + W + '" height="' + H + '">' + s.join('') + '</svg>';
    box.setAttribute('data-drawn', String(drawn));
    return box;
  }

  /* ---- flame graph -------------------------------------------------------- */
  var METRICS = [['calls', 0, num, 'calls'], ['bytes', 1, bytes, 'bytes allocated'],
    ['peak', 2, bytes, 'live at the peak'], ['leaked', 3, bytes, 'leaked (live at exit)']];

  function buildTree(p, col) {
    var exe = (p.exe || '').split('/').pop() || 'process';
    var root = { name: exe, v: 0, kids: new Map(), parent: null, depth: 0 };
    p.stacks.forEach(function (st) {
      var v = st[col];
      if (!v) return;
      root.v += v;
      var node = root, fr = st[4];
      var path = fr.length ? fr : [-1];
      for (var i = 0; i < path.length; i++) {
        var key = path[i], ch = node.kids.get(key);
        if (!ch) {
          ch = { name: key < 0 ? '[no stack]' : p.names[key], v: 0, kids: new Map(), parent: node, depth: node.depth + 1 };
          node.kids.set(key, ch);
        }
        ch.v += v;
        node = ch;
      }
    });
    return root;
  }

  /* Page state from the URL: #search=REGEX&zoom=FUNCTION&sort=COLUMN[-asc]
   * (shareable links; the headless test drives the page with it). */
  function hashParam(k) {
    var m = (location.hash || '').slice(1).split('&');
    for (var i = 0; i < m.length; i++) {
      var kv = m[i].split('=');
      if (kv[0] === k && kv.length > 1) return decodeURIComponent(kv.slice(1).join('='));
    }
    return null;
  }

  function flameGraph(p, W) {
    var box = el('div', { cls: 'chart' });
    var tabs = el('div', { cls: 'tabs' });
    var search = el('input', { type: 'search', placeholder: 'search function (regex)…', 'aria-label': 'search' });
    var reset = el('button', { text: 'reset zoom' });
    var info = el('div', { cls: 'fginfo' });
    var fg = el('div', { cls: 'fg' });
    box.id = 'flame-' + p.pid;
    var metric = 1, root = null, zoom = null, nodes = [], query = null;
    var ROW = 17;
    METRICS.forEach(function (mt, i) {
      var b = el('button', { text: 'by ' + mt[0], 'data-metric': mt[0] });
      b.addEventListener('click', function () {
        metric = i;
        Array.prototype.forEach.call(tabs.querySelectorAll('button[data-metric]'), function (x) { x.classList.remove('on'); });
        b.classList.add('on');
        root = null;
        render();
      });
      if (i === metric) b.classList.add('on');
      tabs.appendChild(b);
    });
    tabs.appendChild(search);
    tabs.appendChild(reset);
    reset.addEventListener('click', function () { zoom = null; render(); });
    search.addEventListener('input', function () {
      var q = search.value.trim();
      query = null;
      if (q) { try { query = new RegExp(q, 'i'); } catch (e) { var lq = q.toLowerCase(); query = { test: function (s) { return s.toLowerCase().indexOf(lq) >= 0; } }; } }
      render();
    });
    fg.addEventListener('click', function (ev) {
      var t = ev.target.closest('div[data-i]');
      if (!t) return;
      var n = nodes[+t.getAttribute('data-i')];
      zoom = n === root ? null : n;
      render();
    });
    fg.addEventListener('mousemove', function (ev) {
      var t = ev.target.closest('div[data-i]');
      if (!t) { hideTip(); return; }
      var n = nodes[+t.getAttribute('data-i')], mt = METRICS[metric];
      showTip(ev, n.name + '\n' + mt[2](n.v) + ' ' + mt[3] + ' (' + (100 * n.v / root.v).toFixed(2) + '% of all, ' +
        (n.parent ? (100 * n.v / n.parent.v).toFixed(1) + '% of its caller' : 'root') + ')');
    });
    fg.addEventListener('mouseleave', hideTip);

    function render() {
      var mt = METRICS[metric];
      if (!root) { root = buildTree(p, mt[1]); zoom = null; }
      nodes = [];
      var z = zoom || root, items = [], maxDepth = 0;
      /* ancestors of the zoomed node: full width */
      for (var a = z.parent; a; a = a.parent) items.push({ n: a, x: 0, w: 1, anc: true });
      var minW = 0.5 / W; /* fraction of the width under half a pixel: not drawn */
      (function walk(n, x, scale) {
        var w = n.v * scale;
        if (w < minW) return;
        items.push({ n: n, x: x, w: w });
        if (n.depth > maxDepth) maxDepth = n.depth;
        var kids = Array.from(n.kids.values()).sort(function (a2, b2) { return b2.v - a2.v || (a2.name < b2.name ? -1 : 1); });
        var cx = x;
        kids.forEach(function (k) { walk(k, cx, scale); cx += k.v * scale; });
      })(z, 0, z.v ? 1 / z.v : 0);
      if (maxDepth < z.depth) maxDepth = z.depth;
      var matched = 0;
      if (query) {
        (function m(n) { if (query.test(n.name)) { matched += n.v; return; } n.kids.forEach(m); })(root);
      }
      var html = [];
      items.forEach(function (it) {
        var n = it.n, i = nodes.length;
        nodes.push(n);
        var top = (maxDepth - n.depth) * ROW, hit = query && query.test(n.name);
        var px = it.w * W;
        html.push('<div data-i="' + i + '" class="' + (it.anc ? 'anc' : '') + (hit ? ' hit' : '') + '" style="left:' + (it.x * 100).toFixed(4) +
          '%;width:' + (it.w * 100).toFixed(4) + '%;top:' + top + 'px;background:' + flameColor(n.name) + '">' +
          (px > 28 ? esc(n.name) : '') + '</div>');
      });
      fg.style.height = ((maxDepth + 1) * ROW + 2) + 'px';
      fg.innerHTML = html.join('');
      box.setAttribute('data-drawn', String(items.length));
      var t = 'total ' + mt[2](root.v) + ' ' + mt[3];
      if (zoom) t += ' · zoomed to ' + zoom.name + ': ' + mt[2](zoom.v) + ' (' + (100 * zoom.v / root.v).toFixed(2) + '%) — click the bottom bar or "reset zoom" to go back';
      else t += ' · click a frame to zoom';
      if (query) t += ' · search matched ' + mt[2](matched) + ' (' + (root.v ? 100 * matched / root.v : 0).toFixed(2) + '%)';
      if (!root.v) t = 'nothing to show by ' + mt[0];
      info.textContent = t;
    }
    box.appendChild(tabs);
    box.appendChild(info);
    box.appendChild(fg);
    var hq = hashParam('search');
    if (hq) { search.value = hq; search.dispatchEvent(new Event('input')); } else render();
    var hz = hashParam('zoom');
    if (hz && root) {
      /* the heaviest frame of that name */
      var best = null;
      (function f(n) { if (n.name === hz && (!best || n.v > best.v)) best = n; n.kids.forEach(f); })(root);
      if (best) { zoom = best; render(); }
    }
    return box;
  }

  /* ---- allocating functions: a table sorted by any column ---------------- */
  var FCOLS = [['function', 'function', 0], ['self_calls', 'self calls', 3], ['self_bytes', 'self bytes', 4],
    ['self_peak', 'self at peak', 5], ['self_leaked', 'self leaked', 6], ['total_calls', 'total calls', 7],
    ['total_bytes', 'total bytes', 8], ['total_leaked', 'total leaked', 9]];

  function functionTable(p) {
    var f = p.functions || { total: 0, rows: [] };
    var box = el('div');
    box.id = 'functions-' + p.pid;
    var col = 1, asc = false;
    var hs = hashParam('sort');
    if (hs) {
      asc = /-asc$/.test(hs);
      var name = hs.replace(/-asc$/, '');
      FCOLS.forEach(function (c, i) { if (c[0] === name) col = i; });
    }
    function show() {
      var k = FCOLS[col][2];
      var rows = f.rows.slice().sort(function (a, b) {
        var x = a[k], y = b[k], d = typeof x === 'string' ? (x < y ? -1 : x > y ? 1 : 0) : x - y;
        if (!asc) d = -d;
        return d || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0);
      });
      var h = ['<table class="top fn"><thead><tr>'];
      FCOLS.forEach(function (c, i) {
        h.push('<th class="' + (i ? 'num' : 'stack') + ' sortable' + (i === col ? ' sorted' : '') + '" data-col="' + c[0] +
          '" title="click to sort">' + esc(c[1]) + (i === col ? (asc ? ' ▲' : ' ▼') : '') + '</th>');
      });
      h.push('</tr></thead><tbody>');
      rows.forEach(function (r) {
        h.push('<tr><td class="stack">' + esc(r[0]) + ' <span class="note">' + esc((r[2] ? r[2] + '  ' : '') + '[' + r[1] + ']') +
          '</span></td><td class="num">' + num(r[3]) + '</td><td class="num">' + bytes(r[4]) + '</td><td class="num">' + bytes(r[5]) +
          '</td><td class="num">' + bytes(r[6]) + '</td><td class="num">' + num(r[7]) + '</td><td class="num">' + bytes(r[8]) +
          '</td><td class="num">' + bytes(r[9]) + '</td></tr>');
      });
      if (!rows.length) h.push('<tr><td colspan="8" class="stack">none</td></tr>');
      h.push('</tbody></table>');
      if (f.total > f.rows.length) h.push('<div class="note">' + num(f.rows.length) + ' of ' + num(f.total) + ' functions (the most self calls; report --html --top N, 0 = all)</div>');
      box.innerHTML = h.join('');
      box.setAttribute('data-sort', FCOLS[col][0] + (asc ? '-asc' : ''));
    }
    box.addEventListener('click', function (ev) {
      var th = ev.target.closest('th[data-col]');
      if (!th) return;
      var i = FCOLS.findIndex(function (c) { return c[0] === th.getAttribute('data-col'); });
      if (i === col) asc = !asc; else { col = i; asc = i === 0; }
      show();
    });
    show();
    return box;
  }

  /* ---- tables ------------------------------------------------------------- */
  var TOPS = [['calls', 'hottest call paths by calls'], ['bytes', 'hottest call paths by bytes'],
    ['leaked', 'leaks (live at exit)'], ['peak', 'live at the peak'], ['temporary', 'temporary allocations']];

  function topTables(p) {
    var box = el('div');
    var tabs = el('div', { cls: 'tabs' });
    var host = el('div');
    function show(key) {
      var t = p.top[key];
      Array.prototype.forEach.call(tabs.children, function (b) { b.classList.toggle('on', b.getAttribute('data-k') === key); });
      var h = ['<table class="top"><thead><tr><th class="num">#</th><th class="num">calls</th><th class="num">bytes</th><th class="num">at peak</th>' +
        '<th class="num">leaked</th><th class="num">temporary</th><th class="stack">call stack (innermost first)</th></tr></thead><tbody>'];
      t.rows.forEach(function (r, i) {
        var first = r.frames.length ? r.frames[0] : '';
        h.push('<tr><td class="num">' + (i + 1) + '</td><td class="num">' + num(r.calls) + '</td><td class="num">' + bytes(r.bytes) +
          '</td><td class="num">' + bytes(r.peak) + '</td><td class="num">' + bytes(r.leaked) + (r.leaked_blocks ? ' in ' + num(r.leaked_blocks) : '') +
          '</td><td class="num">' + num(r.temporary) + '</td><td class="stack"><details' + (i < 3 ? ' open' : '') + '><summary>' + esc(first) +
          '</summary><ol>' + r.frames.map(function (f) { return '<li>' + esc(f) + '</li>'; }).join('') + '</ol></details></td></tr>');
      });
      if (!t.rows.length) h.push('<tr><td colspan="7" class="stack">none</td></tr>');
      h.push('</tbody></table>');
      if (t.total > t.rows.length) h.push('<div class="note">' + num(t.rows.length) + ' of ' + num(t.total) + ' stacks shown (report --html --top N; 0 = all)</div>');
      host.innerHTML = h.join('');
    }
    TOPS.forEach(function (k) {
      var b = el('button', { text: k[1] + ' (' + num(p.top[k[0]].total) + ')', 'data-k': k[0] });
      b.addEventListener('click', function () { show(k[0]); });
      tabs.appendChild(b);
    });
    box.appendChild(tabs);
    box.appendChild(host);
    show('calls');
    return box;
  }

  function threadTable(p) {
    var h = ['<table><thead><tr><th class="num">thread</th><th class="num">tid</th><th class="num">calls</th><th class="num">bytes</th>' +
      '<th class="num">run time</th><th class="num">in allocator</th></tr></thead><tbody>'];
    p.thread_stats.slice(0, 200).forEach(function (t) {
      h.push('<tr><td class="num">T' + t[0] + '</td><td class="num">' + t[1] + '</td><td class="num">' + num(t[2]) + '</td><td class="num">' +
        bytes(t[3]) + '</td><td class="num">' + dur(t[4]) + '</td><td class="num">' +
        (t[5] === null ? '–' : dur(t[5]) + (t[4] > 0 ? ' (' + (100 * t[5] / t[4]).toFixed(1) + '%)' : '')) + '</td></tr>');
    });
    h.push('</tbody></table>');
    if (p.thread_stats.length > 200) h.push('<div class="note">first 200 of ' + p.thread_stats.length + ' threads</div>');
    return el('div', { html: h.join('') });
  }

  /* ---- a process ---------------------------------------------------------- */
  function card(k, v, s) {
    return el('div', { cls: 'card' }, [el('div', { cls: 'k', text: k }), el('div', { cls: 'v', text: v }), s ? el('div', { cls: 's', text: s }) : null]);
  }

  function renderProcess(app, p, W) {
    var sec = el('section', { cls: 'proc', id: 'proc-' + p.pid });
    var exe = (p.exe || '?').split('/').pop();
    sec.appendChild(el('h1', { text: exe + ' — pid ' + p.pid }));
    sec.appendChild(el('div', { cls: 'sub mono', text: p.cmdline || p.exe }));
    sec.appendChild(el('div', { cls: 'sub', text: p.path + (p.start_realtime_ns ? ' · started ' + new Date(p.start_realtime_ns / 1e6).toISOString() : '') }));
    var calls = Object.keys(p.calls).filter(function (k) { return p.calls[k]; }).map(function (k) { return k + ' ' + num(p.calls[k]); }).join(', ');
    var cards = el('div', { cls: 'cards' }, [
      card('duration', dur(Math.max(p.end_ns - p.first_ns, 0))),
      card('calls', num(p.total_calls), calls),
      card('bytes requested', bytes(p.bytes_requested), num(p.bytes_requested) + ' B'),
      card('peak live heap', bytes(p.peak_live_bytes), 'at ' + dur(p.peak_live_ns)),
      p.rss ? card('peak RSS', bytes(p.rss.peak_rss), num(p.rss.samples) + ' samples') : null,
      card('leaked at exit', bytes(p.leaked_bytes), num(p.leaked_blocks) + ' blocks'),
      card('temporary', num(p.temporary), 'freed right after'),
      card('failed allocs', num(p.failed_allocations)),
      card('threads', num(p.threads)),
      card('distinct stacks', num(p.distinct_stacks), p.stacks_recorded ? '' : 'recorded without --stacks')
    ]);
    sec.appendChild(cards);
    if (p.sample_rate) sec.appendChild(el('div', { cls: 'note', id: 'sampled-' + p.pid, text: 'Sampled trace (record --sample ' + num(p.sample_rate) + '): on average one allocation per ' + num(p.sample_rate) + ' bytes was recorded; every count, byte total and chart is an ESTIMATE scaled by the sampling weights (relative error about sqrt(' + num(p.sample_rate) + ' / bytes); docs/SAMPLING.md).' }));
    if (p.lost_records) sec.appendChild(el('div', { cls: 'note err', text: num(p.lost_records) + ' records were lost while recording: numbers are incomplete' }));

    sec.appendChild(el('h2', { text: 'Live heap over time' }));
    sec.appendChild(heapChart(p, W));
    var notes = [];
    notes.push('Each of the ' + num(p.timeline.n) + ' time buckets (' + dur(p.timeline.bucket_ns) + ' each) shows the minimum and maximum of the live heap bytes inside it, so no spike is lost whatever the trace length.');
    if (!p.rss) notes.push('No RSS samples (DIR/' + p.pid + '.rss): this trace was recorded without them (record --no-rss, or a process that lived less than the 20 ms between record\'s looks for new processes).');
    var nm = p.timeline.marks.length;
    if (nm) notes.push('Dashed lines: ' + num(nm) + (nm === 1 ? ' marker or control call' : ' markers and control calls') +
      ' (alloctrace_marker(), start/stop/pause/resume, exit).' + (p.timeline.dropped_marks ? ' ' + num(p.timeline.dropped_marks) + ' more not shown.' : ''));
    sec.appendChild(el('div', { cls: 'note', text: notes.join(' ') }));

    sec.appendChild(el('h2', { text: 'Calls per second per thread' }));
    sec.appendChild(callsChart(p, W));

    var row = el('div', { cls: 'row2' });
    var hw = W > 900 ? Math.floor((W - 24) / 2) : W;
    row.appendChild(el('div', null, [el('h2', { text: 'Requested sizes' }), histChart(p.size_hist, 'size', hw)]));
    row.appendChild(el('div', null, [el('h2', { text: 'Lifetimes of freed blocks' }), histChart(p.life_hist, 'life', hw)]));
    row.firstChild.lastChild.id = 'sizes-' + p.pid;
    row.lastChild.lastChild.id = 'lifetimes-' + p.pid;
    sec.appendChild(row);

    sec.appendChild(el('h2', { text: 'Flame graph' }));
    sec.appendChild(flameGraph(p, W));
    if (!p.stacks_recorded) sec.appendChild(el('div', { cls: 'note', text: 'Recorded without --stacks: every allocation is one stack.' }));

    sec.appendChild(el('h2', { text: 'Allocating functions (self: allocated there; total: there or in what it calls)' }));
    sec.appendChild(functionTable(p));
    sec.appendChild(el('h2', { text: 'Top call stacks' }));
    sec.appendChild(topTables(p));
    sec.appendChild(el('h2', { text: 'Threads' }));
    sec.appendChild(threadTable(p));
    app.appendChild(sec);
  }

  try {
    var data = JSON.parse(document.getElementById('atr-data').textContent);
    var app = document.getElementById('app');
    var W = Math.max(Math.floor(app.clientWidth || document.documentElement.clientWidth || 1200), 600);
    if (data.processes.length > 1) {
      var nav = el('div', { cls: 'sub', html: data.processes.length + ' processes: ' + data.processes.map(function (p) {
        return '<a href="#proc-' + p.pid + '">' + esc((p.exe || '?').split('/').pop() + ' ' + p.pid) + '</a>';
      }).join(' · ') });
      app.appendChild(nav);
    }
    data.processes.forEach(function (p) { renderProcess(app, p, W); });
    var t1 = performance.now();
    document.body.setAttribute('data-render-ms', (t1 - T0).toFixed(1));
    document.body.setAttribute('data-load-ms', t1.toFixed(1));
    if (document.body.getAttribute('data-status') === 'loading') setStatus('ok');
  } catch (e) {
    setStatus('error: ' + (e && e.stack ? e.stack : String(e)));
    var a2 = document.getElementById('app');
    if (a2) a2.appendChild(el('div', { cls: 'err', text: 'report failed to render: ' + e }));
  }
})();
