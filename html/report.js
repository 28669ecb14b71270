// report.js: draws a kforge.report/1 document (html/report.html inlines it, with Chart.js 3,
// d3 v3 and highlight.js 9, into one page that needs no network). Plain script, run once at
// load. Each section renders inside its own try/catch; afterwards the page appends a JSON
// script element with the id kforge-rendered, holding what was actually drawn (points, nodes,
// bars, rows) and every error seen, so a headless browser test can check the page without
// looking at pixels. The contract: /work/notes/report_schema.md.
(function () {
  'use strict';

  var doc = null;
  var errors = [];
  var threw = false;
  var counts = {progress: {points: 0, failed_points: 0, best_line_points: 0}, lineage: {nodes: 0},
                roofline: {points: 0, ceilings: 0}, failures: {bars: 0}, llm: {rows: 0}, suite: {rows: 0}};
  var highlighted = {source: false, diff: false};

  // ---------------------------------------------------------------- helpers

  function isNum(v) { return typeof v === 'number' && isFinite(v); }
  function arr(v) { return Array.isArray(v) ? v : []; }
  function has(o, k) { return Object.prototype.hasOwnProperty.call(o, k); }
  function unique(list) { return list.filter(function (s, i) { return list.indexOf(s) === i; }); }

  // el('div', {class: 'x', text: 'y'}, [children]): DOM without HTML strings, so no text from
  // the document is ever parsed as markup.
  function el(tag, attrs, children) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      var v = attrs[k];
      if (v === null || v === undefined) return;
      if (k === 'text') e.textContent = v;
      else if (k === 'class') e.className = v;
      else if (k === 'style') e.style.cssText = v;
      else e.setAttribute(k, v);
    });
    arr(children).forEach(function (c) {
      if (c !== null && c !== undefined) e.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
    });
    return e;
  }
  function note(parent, text) { return parent.appendChild(el('p', {class: 'note', text: text})); }

  // A table; cells are strings or nodes; numeric columns align right. Returns its <tbody>.
  function table(parent, head, rows, numeric, cls) {
    var cell = function (tag, v, k) {
      var c = el(tag, {class: numeric.indexOf(k) >= 0 ? 'num' : ''});
      c.appendChild(typeof v === 'string' ? document.createTextNode(v) : v);
      return c;
    };
    var tb = el('tbody', {}, rows.map(function (r) { return el('tr', {}, r.map(function (v, k) { return cell('td', v, k); })); }));
    parent.appendChild(el('table', {class: 'grid ' + (cls || '')}, [
      el('thead', {}, [el('tr', {}, head.map(function (h, k) { return cell('th', h, k); }))]), tb]));
    return tb;
  }
  function defList(parent, cls, pairs) {
    parent.appendChild(el('dl', {class: cls}, [].concat.apply([], pairs.filter(function (p) {
      return p[1] !== null && p[1] !== undefined && p[1] !== '';
    }).map(function (p) { return [el('dt', {text: p[0]}), el('dd', {text: String(p[1])})]; }))));
  }

  var DASH = '\u2014';
  function trimNum(v, digits) { return String(Number(v.toPrecision(digits))); }
  function fmtSeconds(s) {
    if (!isNum(s)) return DASH;
    var a = Math.abs(s);
    if (a === 0) return '0 s';
    if (a < 1e-6) return trimNum(s * 1e9, 3) + ' ns';
    if (a < 1e-3) return trimNum(s * 1e6, 3) + ' \u00b5s';
    if (a < 1) return trimNum(s * 1e3, 4) + ' ms';
    if (a < 120) return s.toFixed(a < 10 ? 2 : 1) + ' s';
    return Math.floor(s / 60) + ' min ' + Math.round(s % 60) + ' s';
  }
  function fmtMs(s) { return isNum(s) ? trimNum(s * 1e3, 4) + ' ms' : DASH; }
  function fmtX(v) { return isNum(v) ? v.toFixed(2) + '\u00d7' : DASH; }
  function fmtPct(v) { return isNum(v) ? trimNum(v * 100, v < 0.1 ? 2 : 3) + ' %' : DASH; }
  function fmtInt(v) { return isNum(v) ? Math.round(v).toLocaleString('en-US') : DASH; }
  function fmtUsd(v) { return isNum(v) ? '$' + (v > 0 && v < 0.01 ? v.toPrecision(2) : v.toFixed(2)) : DASH; }
  function fmtSI(v, unit) {   // 1.5e12, 'FLOP/s' -> '1.5 TFLOP/s'
    if (!isNum(v)) return DASH;
    var p = [[1e15, 'P'], [1e12, 'T'], [1e9, 'G'], [1e6, 'M'], [1e3, 'k']];
    for (var i = 0; i < p.length; i++) if (Math.abs(v) >= p[i][0]) return trimNum(v / p[i][0], 3) + ' ' + p[i][1] + unit;
    return trimNum(v, 3) + ' ' + unit;
  }
  function plural(n, word) { return n === 1 ? word : word + 's'; }
  function shorten(s, n) { s = String(s || ''); return s.length > n ? s.slice(0, n - 1) + '\u2026' : s; }

  // ---------------------------------------------------------------- status colours
  // One colour per status everywhere on the page: passed is green; the common failures keep a
  // fixed colour across reports; any other status takes the next free colour of a palette.
  var FIXED = {
    passed: '#2e9d48', tolerance: '#f28e2b', build_failed: '#d62728', crashed: '#9467bd', timeout: '#1f77b4',
    load_failed: '#8c564b', nonfinite: '#e377c2', malformed: '#7f7f7f', device_error: '#17becf', impossible_time: '#bcbd22'
  };
  var SPARE = ['#393b79', '#ad494a', '#7b4173', '#e7ba52', '#5254a3', '#843c39', '#ce6dbd', '#6b6ecf', '#8c6d31',
               '#de9ed6', '#3182bd', '#636363'];
  // kforge's check order (src/eval/result.hpp): legends list statuses in this order.
  var ORDER = ['passed', 'build_failed', 'load_failed', 'protocol_error', 'resource_limit', 'crashed', 'device_error',
               'timeout', 'exited_early', 'returned_error', 'guard', 'inputs_modified', 'deferred_work', 'unwritten',
               'nonfinite', 'tolerance', 'repeat', 'timed_output', 'impossible_time'];
  var NOT_EVALUATED = '#c4cad3';
  // A candidate the report holds only as an ancestor (a tuned source's template, say).
  function evaluated(status) { return !!status && status !== 'not evaluated'; }
  var assigned = Object.create(null), spareUsed = 0;
  function statusColor(s) {
    if (!evaluated(s)) return NOT_EVALUATED;
    s = String(s).replace(/^answer: /, '');   // a proposal's failure ("answer: malformed") as its status
    if (has(FIXED, s)) return FIXED[s];
    if (!assigned[s]) assigned[s] = SPARE[spareUsed++ % SPARE.length];
    return assigned[s];
  }
  function sortStatuses(list) {
    var rank = function (s) { var i = ORDER.indexOf(s); return i < 0 ? ORDER.length : i; };
    return list.slice().sort(function (a, b) { return rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0); });
  }
  function alpha(hex, a) {
    var n = parseInt(hex.slice(1), 16);
    return 'rgba(' + (n >> 16) + ',' + ((n >> 8) & 255) + ',' + (n & 255) + ',' + a + ')';
  }
  function chip(status) {
    return el('span', {class: 'chip' + (evaluated(status) ? '' : ' pale'), style: 'background:' + statusColor(status),
                       text: status || 'not evaluated'});
  }

  // ---------------------------------------------------------------- page frame and charts

  var SECTIONS = [];   // for the table of contents
  function section(id, title, subtitle) {
    var s = el('section', {id: id, class: 'card'}, [el('h2', {text: title})]);
    if (subtitle) s.appendChild(el('p', {class: 'sub', text: subtitle}));
    document.getElementById('report').appendChild(s);
    SECTIONS.push({id: id, title: title});
    return s;
  }

  // Runs one section; an exception is recorded for the self-test and shown in the section.
  function run(name, fn, body) {
    try {
      fn(body);
    } catch (e) {
      threw = true;
      var msg = name + ': ' + (e && e.message ? e.message : String(e));
      errors.push(msg);
      (body || document.getElementById('report')).appendChild(el('p', {class: 'error', text: 'This section failed to render: ' + msg}));
    }
  }

  function chart(parent, height, config) {
    var wrap = parent.appendChild(el('div', {class: 'chart', style: 'height:' + height + 'px'}));
    var o = config.options = config.options || {};
    o.animation = false;   // draw synchronously: the self-test counts right after
    o.responsive = true;
    o.maintainAspectRatio = false;
    return new Chart(wrap.appendChild(el('canvas')).getContext('2d'), config);
  }
  function axisTitle(text) { return {display: true, text: text, font: {weight: '600'}}; }
  // Log axes: labels at 1, 2 and 5 times a power of ten (or powers only); a darker grid line
  // at each power of ten, faint ones between.
  function logTick(fmt, onlyPow10) {
    return function (v) {
      var r = Math.round(v / Math.pow(10, Math.floor(Math.log10(v) + 1e-9)) * 1000) / 1000;
      return r === 1 || (!onlyPow10 && (r === 2 || r === 5)) ? fmt(v) : '';
    };
  }
  var LOG_GRID = {color: function (ctx) {
    var v = ctx.tick && ctx.tick.value;
    return v > 0 && Math.abs(v / Math.pow(10, Math.round(Math.log10(v))) - 1) < 1e-6 ? '#ced4da' : '#f1f3f5';
  }};

  // ---------------------------------------------------------------- 1. header and tiles

  function renderHeader() {
    var h = document.getElementById('top');
    var m = doc.machine || {}, p = doc.problem, r = doc.run, s = doc.summary || {};
    document.title = doc.title || 'kforge report';
    h.appendChild(el('div', {class: 'kicker'}, [el('span', {class: 'badge', text: doc.kind || 'report'}),
      'kforge report' + (doc.generated_at ? ' \u00b7 generated ' + doc.generated_at : '')]));
    h.appendChild(el('h1', {text: doc.title || 'kforge report'}));
    var facts = [];
    if (m.device) facts.push(m.device + (m.host ? ' on ' + m.host : ''));
    if (p) facts.push(p.name + ' (' + [p.backend, p.dtype].filter(Boolean).join(', ') + ')');
    if (r) facts.push(r.strategy + ' \u00b7 ' + r.status + (r.stop_reason ? ': ' + r.stop_reason : ''));
    h.appendChild(el('p', {class: 'facts', text: facts.join('  \u00b7  ')}));
    var tiles = [
      ['best time', fmtSeconds(s.best_median_s), isNum(s.reference_median_s) ? 'reference ' + fmtSeconds(s.reference_median_s) : 'fastest passing'],
      ['speedup', fmtX(s.best_speedup), 'over the reference'],
      ['roofline', fmtPct(s.best_roofline_fraction), 'of the device\u2019s roof'],
      ['passed', isNum(s.evaluations) ? fmtInt(s.passed) + ' / ' + fmtInt(s.evaluations) : DASH, 'evaluations'],
      ['tokens', fmtInt(s.tokens), 'LLM, in + out'],
      ['cost', fmtUsd(s.cost_usd), 'LLM, USD'],
      ['wall time', fmtSeconds(s.wall_s), r ? 'of the run' : '']
    ];
    h.appendChild(el('div', {class: 'tiles'}, tiles.map(function (t) {
      return el('div', {class: 'tile' + (t[1] === DASH ? ' empty' : '')}, [el('div', {class: 'tile-label', text: t[0]}),
        el('div', {class: 'tile-value', text: t[1]}), el('div', {class: 'tile-sub', text: t[2]})]);
    })));
  }

  // ---------------------------------------------------------------- 2. progress

  var X_MODES = [
    {key: 'index', label: 'evaluations', title: 'evaluation (run order)'},
    {key: 't_s', label: 'wall time', title: 'wall time since start (s)'},
    {key: 'tokens', label: 'tokens', title: 'LLM tokens spent so far (in + out)'},
    {key: 'cost_usd', label: 'cost', title: 'LLM cost so far (USD)'}
  ];
  var Y_MODES = [{key: 'time', label: 'median time'}, {key: 'speedup', label: 'speedup'}];

  // The datasets for one x and one y: one per status (timed points as dots, the rest as
  // crosses in a band above the data, a row per status so colours do not hide each other)
  // and a step line of the best so far.
  function progressData(evs, xKey, yKey) {
    var time = yKey === 'time';
    var yOf = function (e) { return time ? (isNum(e.median_s) ? e.median_s * 1e3 : null) : (isNum(e.speedup) ? e.speedup : null); };
    var ys = evs.map(yOf).filter(isNum);
    var hi = ys.length ? Math.max.apply(null, ys) : 1, lo = ys.length ? Math.min.apply(null, ys) : 1;
    var inBand = function (e) { return yOf(e) === null; };
    var rows = sortStatuses(unique(evs.filter(inBand).map(function (e) { return e.status || 'unknown'; })));
    var k = rows.length, sc, rowY;
    if (time) {
      sc = {min: lo / 1.6, bandLow: hi * 1.4};
      sc.max = sc.bandLow * (1.4 + 0.15 * k);
      rowY = function (i) { return sc.bandLow * Math.pow(sc.max / sc.bandLow, (i + 1) / (k + 1)); };
    } else {
      sc = {min: 0, bandLow: hi * 1.08 + 0.02};
      sc.max = Math.ceil((sc.bandLow + (0.1 + 0.05 * k) * (hi + 0.2)) * 2) / 2;
      rowY = function (i) { return sc.bandLow + (sc.max - sc.bandLow) * (i + 1) / (k + 1); };
    }
    var byStatus = Object.create(null);
    evs.forEach(function (e) {
      if (!isNum(e[xKey])) return;
      var st = e.status || 'unknown';
      (byStatus[st] = byStatus[st] || []).push({x: e[xKey], y: inBand(e) ? rowY(rows.indexOf(st)) : yOf(e), ev: e,
        failed: !isNum(e.median_s)});
    });
    var sets = sortStatuses(Object.keys(byStatus)).map(function (st) {
      var pts = byStatus[st], c = statusColor(st);
      var per = function (a, b) { return pts.map(function (p) { return p.failed ? a : b; }); };
      return {label: st + ' (' + pts.length + ')', data: pts, backgroundColor: alpha(c, 0.75), borderColor: c,
        pointStyle: per('crossRot', 'circle'), pointRadius: per(6, 4.5), pointBorderWidth: per(2.5, 1),
        pointHoverRadius: 8, clip: 10};
    });
    // The best so far: best_so_far_s in run order; over another x, a running best in x order
    // (concurrent evaluations can finish out of run order).
    var line = [], best = null;
    if (xKey === 'index' && time) {
      evs.forEach(function (e) { if (isNum(e.best_so_far_s)) line.push({x: e.index, y: e.best_so_far_s * 1e3}); });
    } else {
      evs.filter(function (e) { return isNum(e[xKey]); }).sort(function (a, b) { return a[xKey] - b[xKey]; }).forEach(function (e) {
        var v = time ? (isNum(e.best_so_far_s) ? e.best_so_far_s * 1e3 : null) : (isNum(e.speedup) ? e.speedup : null);
        if (v !== null && (best === null || (time ? v < best : v > best))) best = v;
        if (best !== null) line.push({x: e[xKey], y: best});
      });
    }
    sets.push({label: 'best so far', type: 'line', data: line, stepped: 'before', showLine: true, isBest: true,
      borderColor: '#1b2733', backgroundColor: '#1b2733', borderWidth: 2, pointRadius: 0, pointHoverRadius: 3, order: -1});
    return {datasets: sets, scale: sc, band: k > 0};
  }

  // Draws the shaded band of unplotted evaluations (and the 1x line for speedup).
  var bandPlugin = {id: 'kforgeBand', beforeDatasetsDraw: function (c) {
    var o = c.options.plugins.kforgeBand, a = c.chartArea, y = c.scales.y, ctx = c.ctx;
    ctx.save();
    ctx.font = '11px system-ui, sans-serif';
    if (o.show) {
      var bottom = y.getPixelForValue(o.bandLow);
      ctx.fillStyle = 'rgba(214,39,40,0.06)';
      ctx.fillRect(a.left, a.top, a.right - a.left, bottom - a.top);
      ctx.strokeStyle = 'rgba(214,39,40,0.35)';
      ctx.setLineDash([4, 4]);
      ctx.beginPath(); ctx.moveTo(a.left, bottom); ctx.lineTo(a.right, bottom); ctx.stroke();
      ctx.fillStyle = '#9a3a3a';
      ctx.fillText(o.label, a.left + 2, a.top - 5);   // above the plot, in layout.padding.top
    }
    if (o.oneX) {
      var y1 = y.getPixelForValue(1);
      ctx.strokeStyle = '#888'; ctx.setLineDash([2, 3]);
      ctx.beginPath(); ctx.moveTo(a.left, y1); ctx.lineTo(a.right, y1); ctx.stroke();
      ctx.fillStyle = '#666';
      ctx.fillText('reference (1\u00d7)', a.right - 90, y1 - 4);
    }
    ctx.restore();
  }};

  function progressOptions(state, built) {
    var time = state.y === 'time';
    var fmtY = time ? logTick(function (v) { return trimNum(v, 3); }) : function (v) { return trimNum(v, 3) + '\u00d7'; };
    return {
      interaction: {mode: 'nearest', intersect: true},
      layout: {padding: {top: 16}},
      scales: {
        x: {type: 'linear', beginAtZero: true, ticks: {precision: state.x === 'cost_usd' || state.x === 't_s' ? undefined : 0},
            title: axisTitle(X_MODES.filter(function (m) { return m.key === state.x; })[0].title)},
        y: {type: time ? 'logarithmic' : 'linear', min: built.scale.min, max: built.scale.max, grid: time ? LOG_GRID : {},
            title: axisTitle(time ? 'candidate median (ms, log scale)' : 'speedup over the reference (\u00d7)'),
            // no value labels inside the band: its rows are statuses, not values
            ticks: {callback: function (v) { return built.band && v > built.scale.bandLow ? '' : fmtY(v); }}}
      },
      plugins: {
        kforgeBand: {show: built.band, bandLow: built.scale.bandLow, oneX: !time,
                     label: time ? 'failed: not timed' : 'no speedup (failed, or not passing)'},
        legend: {position: 'bottom'},
        tooltip: {callbacks: {
          title: function (items) { return items.length && items[0].raw.ev ? items[0].raw.ev.label : ''; },
          label: function (item) {
            if (item.dataset.isBest) return time ? 'best so far: ' + trimNum(item.raw.y, 4) + ' ms' : 'best speedup so far: ' + fmtX(item.raw.y);
            var e = item.raw.ev;
            return ['#' + e.index + '  ' + e.status + (e.reused ? ' (reused result)' : ''),
                    'median ' + fmtMs(e.median_s) + '   speedup ' + fmtX(e.speedup), shorten(e.message, 90)];
          }}}
      }
    };
  }

  function renderProgress(body) {
    var evs = arr(doc.evaluations);
    if (!evs.length) return note(body, 'No evaluations in this report.');
    var state = {x: 'index', y: 'time'};
    var controls = body.appendChild(el('div', {class: 'controls'}));
    var built = progressData(evs, state.x, state.y);
    var c = chart(body, 380, {type: 'scatter', data: {datasets: built.datasets}, plugins: [bandPlugin],
                              options: progressOptions(state, built)});
    // Counted from what the chart holds: dots, crosses and the best line's points.
    c.data.datasets.forEach(function (d) {
      if (d.isBest) counts.progress.best_line_points += d.data.length;
      else d.data.forEach(function (p) { counts.progress[p.failed ? 'failed_points' : 'points']++; });
    });
    function group(label, modes, key) {
      var g = controls.appendChild(el('div', {class: 'btn-group', role: 'group'}, [el('span', {class: 'btn-label', text: label})]));
      modes.forEach(function (m) {
        var some = key === 'y' || m.key === 'index' || evs.some(function (e) { return e[m.key] > 0; });
        var b = g.appendChild(el('button', {type: 'button', text: m.label, class: state[key] === m.key ? 'on' : '',
                                            title: some ? null : 'nothing recorded'}));
        b.disabled = !some;
        b.addEventListener('click', function () {
          state[key] = m.key;
          Array.prototype.forEach.call(g.querySelectorAll('button'), function (x) { x.className = x === b ? 'on' : ''; });
          var nb = progressData(evs, state.x, state.y);
          c.data.datasets = nb.datasets;
          c.options = progressOptions(state, nb);
          c.update('none');
        });
      });
    }
    group('x:', X_MODES, 'x');
    group('y:', Y_MODES, 'y');
  }

  // ---------------------------------------------------------------- 3. lineage

  // The candidates as a d3 hierarchy: parents by parent_id; a candidate whose parent is not in
  // the report (or that sits on a cycle) is a root; the roots hang under an invisible root.
  function lineageForest(cands) {
    var byId = Object.create(null), parent = Object.create(null), list = [];
    cands.forEach(function (c) {
      if (byId[c.candidate_id]) return;   // a duplicate: keep the first
      byId[c.candidate_id] = {c: c, kids: []};
      list.push(c);
    });
    list.forEach(function (c) {
      var p = c.parent_id;
      parent[c.candidate_id] = p !== null && p !== undefined && p !== c.candidate_id && byId[p] ? p : null;
    });
    list.forEach(function (c) {   // cut cycles: a chain of parents that comes back to the start
      for (var p = parent[c.candidate_id], n = 0; p !== null && n <= list.length; p = parent[p], n++) {
        if (p === c.candidate_id) { parent[c.candidate_id] = null; break; }
      }
    });
    var roots = [];
    list.forEach(function (c) {
      var p = parent[c.candidate_id];
      (p === null ? roots : byId[p].kids).push(byId[c.candidate_id]);
    });
    return {virtual: true, kids: roots};
  }

  function renderLineage(body) {
    var cands = arr(doc.candidates);
    if (!cands.length) return note(body, 'No candidates in this report.');
    var ideas = Object.create(null);
    arr(doc.ideas).forEach(function (i) { ideas[i.id] = i; });
    var legend = sortStatuses(unique(cands.map(function (c) { return c.status; }).filter(evaluated)))
      .map(function (s) { return [s, 'background:' + statusColor(s)]; });
    if (cands.some(function (c) { return !evaluated(c.status); })) legend.push(['not evaluated (a template the tuner instantiated)', 'background:' + NOT_EVALUATED]);
    legend.push(['best', '', 'ring']);
    body.appendChild(el('div', {class: 'swatches'}, legend.map(function (l) {
      return el('span', {class: 'swatch'}, [el('i', {style: l[1], class: l[2]}), l[0]]);
    })));
    var info = body.appendChild(el('div', {class: 'node-info'}, [el('span', {class: 'muted', text: 'Hover over a node for its details; click to keep them.'})]));
    var scroller = body.appendChild(el('div', {class: 'tree-scroll'}));

    // Fixed spacing per node: a wide tree scrolls sideways instead of shrinking.
    var DX = 50, DY = 84, M = 28;
    var tree = d3.layout.tree().nodeSize([DX, DY])
      .children(function (d) { return d.kids.length ? d.kids : null; })
      .separation(function (a, b) { return a.parent === b.parent ? 1 : 1.3; });
    var nodes = tree.nodes(lineageForest(cands));
    var shown = nodes.filter(function (n) { return !n.virtual; });
    var links = tree.links(nodes).filter(function (l) { return !l.source.virtual; });
    var xs = shown.map(function (n) { return n.x; });
    var minX = Math.min.apply(null, xs), left = M + 30 - minX;
    var w = Math.max.apply(null, xs) - minX + 2 * M + 60;
    var h = (Math.max.apply(null, shown.map(function (n) { return n.depth; })) - 1) * DY + 2 * M + 40;
    var svg = d3.select(scroller).append('svg').attr('class', 'tree')
      .attr('width', w).attr('height', h).attr('viewBox', '0 0 ' + w + ' ' + h);
    var g = svg.append('g').attr('transform', 'translate(' + left + ',' + (M - DY) + ')');
    // Links leave a node below its labels and reach the child above its dot (or its best tag).
    var diagonal = d3.svg.diagonal()
      .source(function (l) { return {x: l.source.x, y: l.source.y + 42}; })
      .target(function (l) { return {x: l.target.x, y: l.target.y - (l.target.c.best ? 28 : 10)}; });
    g.selectAll('path.link').data(links).enter().append('path').attr('class', 'link').attr('d', diagonal);
    var node = g.selectAll('g.node').data(shown).enter().append('g')
      .attr('class', function (d) { return 'node' + (d.c.best ? ' best' : ''); })
      .attr('transform', function (d) { return 'translate(' + d.x + ',' + d.y + ')'; });
    node.append('title').text(function (d) { return '#' + d.c.candidate_id + ' ' + (d.c.label || ''); });
    node.filter(function (d) { return d.c.best; }).append('circle').attr('class', 'halo').attr('r', 14);
    node.append('circle').attr('class', 'dot').attr('r', 8)
      .attr('fill', function (d) { return statusColor(d.c.status); }).classed('untested', function (d) { return !evaluated(d.c.status); });
    node.append('text').attr('class', 'nid').attr('dy', 24).attr('text-anchor', 'middle')
      .text(function (d) { return '#' + d.c.candidate_id; });
    node.append('text').attr('class', 'nsp').attr('dy', 36).attr('text-anchor', 'middle')
      .text(function (d) { return isNum(d.c.speedup) ? fmtX(d.c.speedup) : ''; });
    node.filter(function (d) { return d.c.best; }).append('text').attr('class', 'best-tag')
      .attr('dy', -16).attr('text-anchor', 'middle').text('best');

    var pinned = null;
    function show(d) {
      var c = d.c, idea = c.idea_id !== null && c.idea_id !== undefined ? ideas[c.idea_id] : null;
      info.textContent = '';
      info.appendChild(el('div', {class: 'ni-head'}, [el('strong', {text: '#' + c.candidate_id + '  ' + (c.label || '')}), ' ',
        chip(c.status), c.best ? el('span', {class: 'chip best-chip', text: 'best'}) : null]));
      info.appendChild(el('div', {class: 'muted', text: ['origin ' + (c.origin || DASH), 'round ' + (isNum(c.round) ? c.round : DASH),
        'parent ' + (c.parent_id !== null && c.parent_id !== undefined ? '#' + c.parent_id : 'none (a root)'),
        'median ' + fmtMs(c.median_s), 'speedup ' + fmtX(c.speedup)].join('  \u00b7  ')}));
      if (idea) info.appendChild(el('div', {class: 'ni-idea'}, [el('strong', {text: 'Idea ' + idea.id + ': ' + (idea.title || '')}),
        el('div', {text: idea.body || ''})]));
    }
    node.on('mouseover', function (d) { if (!pinned) show(d); }).on('click', function (d) {
      pinned = pinned === d ? null : d;
      node.classed('pinned', function (n) { return n === pinned; });
      show(d);
    });
    counts.lineage.nodes = svg.selectAll('g.node').size();
    // A wide tree opens scrolled to its best (else its first root), not at its left edge.
    var focus = shown.filter(function (n) { return n.c.best; })[0] || shown[0];
    scroller.scrollLeft = Math.max(0, focus.x + left - scroller.clientWidth / 2);
  }

  // ---------------------------------------------------------------- 4. roofline

  var PEAK_OF = {f32: 'fp32_flops', fp32: 'fp32_flops', float32: 'fp32_flops', f64: 'fp64_flops', fp64: 'fp64_flops',
                 float64: 'fp64_flops', bf16: 'bf16_flops', f16: 'bf16_flops', fp16: 'bf16_flops', tf32: 'tf32_flops'};

  // Passing evaluations (suite: passing rows, each at its own intensity); null without work counts.
  function rooflinePoints() {
    if (doc.kind === 'suite' || doc.suite) {
      return arr(doc.suite && doc.suite.rows).filter(function (r) {
        return r.status === 'passed' && r.flops > 0 && r.min_bytes > 0 && r.candidate_s > 0;
      }).map(function (r) { return {x: r.flops / r.min_bytes, y: r.flops / r.candidate_s, name: r.problem, dtype: r.dtype}; });
    }
    var p = doc.problem;
    if (!p || !(p.flops > 0) || !(p.min_bytes > 0)) return null;
    var bestId = doc.best ? doc.best.evaluation_id : null;
    return arr(doc.evaluations).filter(function (e) { return e.status === 'passed' && e.median_s > 0; }).map(function (e) {
      return {x: p.flops / p.min_bytes, y: p.flops / e.median_s, name: '#' + e.index + ' ' + e.label, dtype: p.dtype,
              best: e.evaluation_id === bestId};
    });
  }

  function renderRoofline(body) {
    var pts = rooflinePoints(), suite = doc.kind === 'suite';
    if (pts === null) return note(body, 'The problem has no [work] counts (flops and min_bytes), so it has no place on a roofline' +
                                  (doc.problem && doc.problem.note ? ': ' + doc.problem.note + '.' : '.'));
    if (!pts.length) return note(body, suite ? 'No passing row has [work] counts and a time.' : 'No passing evaluation has a time to place on the roofline.');
    var ceil = doc.machine && doc.machine.ceilings;
    // A suite mixes problems: the peak drawn is that of its most common dtype.
    var dtypes = pts.map(function (p) { return String(p.dtype || 'f32').toLowerCase(); });
    var freq = function (d) { return dtypes.filter(function (x) { return x === d; }).length; };
    var dtype = dtypes.slice().sort(function (a, b) { return freq(b) - freq(a); })[0];
    var bw = ceil && ceil.copy_bytes_per_s > 0 ? ceil.copy_bytes_per_s : null;
    var peak = ceil && ceil[PEAK_OF[dtype] || 'fp32_flops'] > 0 ? ceil[PEAK_OF[dtype] || 'fp32_flops'] : null;
    var ridge = bw && peak ? peak / bw : null;
    var xs = pts.map(function (p) { return p.x; }).concat(ridge ? [ridge] : []);
    var ys = pts.map(function (p) { return p.y; });
    var xlo = Math.min.apply(null, xs) / 8, xhi = Math.max.apply(null, xs) * 8;
    var roof = function (x) { return Math.min(bw ? bw * x : Infinity, peak || Infinity); };
    var line = function (label, color, data) {
      return {label: label, type: 'line', isCeiling: true, data: data, borderColor: color, borderWidth: 2, pointRadius: 0, showLine: true};
    };
    var sets = [{label: suite ? 'passing rows' : 'passing evaluations', isPoint: true, data: pts.filter(function (p) { return !p.best; }),
      backgroundColor: alpha(FIXED.passed, 0.7), borderColor: FIXED.passed, pointRadius: 5, pointHoverRadius: 8}];
    var best = pts.filter(function (p) { return p.best; });
    if (best.length) sets.push({label: 'best', data: best, isPoint: true, pointStyle: 'star', pointRadius: 11,
      pointBorderWidth: 2.5, borderColor: '#b8860b', backgroundColor: '#f5c518'});
    if (bw) sets.push(line('memory roof: ' + fmtSI(bw, 'B/s') + ' \u00d7 intensity', '#4c6ef5',
      [{x: xlo, y: bw * xlo}, {x: ridge || xhi, y: bw * (ridge || xhi)}]));
    if (peak) sets.push(line(dtype + ' peak: ' + fmtSI(peak, 'FLOP/s'), '#e8590c', [{x: ridge || xlo, y: peak}, {x: xhi, y: peak}]));
    if (ridge) sets.push({label: 'ridge: ' + trimNum(ridge, 3) + ' FLOP/byte', data: [{x: ridge, y: peak}],
      pointStyle: 'triangle', pointRadius: 7, backgroundColor: '#495057', borderColor: '#495057'});
    var ymax = Math.max.apply(null, ys.concat(peak ? [peak] : bw ? [bw * xhi] : []));
    var ymin = Math.min.apply(null, ys.concat(bw ? [bw * xlo] : []));
    var c = chart(body, 400, {
      type: 'scatter', data: {datasets: sets}, plugins: [pointNames(suite && pts.length <= 30)],
      options: {
        scales: {
          x: {type: 'logarithmic', min: xlo, max: xhi, grid: LOG_GRID, title: axisTitle('arithmetic intensity (FLOP/byte, log scale)'),
              ticks: {maxRotation: 0, callback: logTick(function (v) { return trimNum(v, 3); }, xhi / xlo > 2000)}},
          y: {type: 'logarithmic', grid: LOG_GRID, min: Math.pow(10, Math.floor(Math.log10(ymin))),
              max: Math.pow(10, Math.ceil(Math.log10(ymax * 1.5))), title: axisTitle('achieved FLOP/s (log scale)'),
              ticks: {callback: logTick(function (v) { return fmtSI(v, 'FLOP/s'); }, true)}}
        },
        plugins: {legend: {position: 'bottom'}, tooltip: {callbacks: {label: function (item) {
          var p = item.raw, r = roof(p.x);
          if (!item.dataset.isPoint) return item.dataset.label;
          return [p.name, fmtSI(p.y, 'FLOP/s') + ' at ' + trimNum(p.x, 3) + ' FLOP/byte',
                  isFinite(r) ? fmtPct(p.y / r) + ' of the roof' : 'no roof (not calibrated)'];
        }}}}
      }
    });
    c.data.datasets.forEach(function (d) {
      if (d.isPoint) counts.roofline.points += d.data.length;
      if (d.isCeiling) counts.roofline.ceilings++;
    });
    if (!ceil) note(body, 'Not calibrated on this device: run kforge calibrate to draw its memory and compute ceilings.');
    else if (!peak) note(body, 'The calibration has no peak for ' + dtype + ': only the memory roof is drawn.');
    var p = doc.problem;
    if (p && p.flops > 0) body.appendChild(el('p', {class: 'sub', text: 'Work per call: ' + fmtSI(p.flops, 'FLOP') + ' and at least ' +
      fmtSI(p.min_bytes, 'B') + ' moved, an intensity of ' + trimNum(p.flops / p.min_bytes, 3) + ' FLOP/byte.'}));
  }

  // Writes each point's name beside it (a suite's problems), alternately above and below.
  function pointNames(on) {
    return {id: 'kforgeNames', afterDatasetsDraw: function (c) {
      if (!on) return;
      var ctx = c.ctx;
      ctx.save(); ctx.font = '12px system-ui, sans-serif'; ctx.fillStyle = '#222';
      c.data.datasets.forEach(function (d, i) {
        if (d.isPoint) c.getDatasetMeta(i).data.forEach(function (pt, j) { ctx.fillText(d.data[j].name, pt.x + 8, j % 2 ? pt.y + 16 : pt.y - 7); });
      });
      ctx.restore();
    }};
  }

  // ---------------------------------------------------------------- 5. best kernel

  function copyButton(text) {
    var b = el('button', {type: 'button', class: 'copy', text: 'copy'});
    b.addEventListener('click', function () {
      var done = function (ok) { b.textContent = ok ? 'copied' : 'copy failed: select the text'; setTimeout(function () { b.textContent = 'copy'; }, 1500); };
      if (navigator.clipboard) navigator.clipboard.writeText(text).then(function () { done(true); }, function () { done(false); });
      else done(false);
    });
    return b;
  }

  // A highlighted, scrollable block; returns whether highlight.js marked it up.
  function codeBlock(parent, text, lang) {
    var code = el('code', {class: lang, text: text});
    parent.appendChild(el('pre', {class: 'code'}, [copyButton(text), code]));
    hljs.highlightBlock(code);
    return code.classList.contains('hljs') && code.querySelector('span[class^="hljs-"]') !== null;
  }

  function renderBest(body) {
    var b = doc.best;
    if (!b) return note(body, doc.kind === 'suite' ? 'A suite has no single best kernel: see each row\u2019s evaluation in the table.' : 'No candidate passed.');
    body.appendChild(el('p', {class: 'facts'}, [el('strong', {text: '#' + b.candidate_id + '  ' + (b.label || '')}),
      '  \u00b7  evaluation ' + b.evaluation_id + '  \u00b7  median ' + fmtSeconds(b.median_s) + '  \u00b7  ' + fmtX(b.speedup) +
      ' over the reference' + (isNum(b.roofline_fraction) ? '  \u00b7  ' + fmtPct(b.roofline_fraction) + ' of the roof' : '')]));
    body.appendChild(el('h3', {text: 'Source (' + (b.language || 'cpp') + ')'}));
    // highlight.js 9 has no CUDA grammar: C++ covers it.
    if (typeof b.source === 'string' && b.source) highlighted.source = codeBlock(body, b.source, hljs.getLanguage(b.language) ? b.language : 'cpp');
    else note(body, 'The source is not in the report.');
    body.appendChild(el('h3', {text: b.parent ? 'Diff against its parent #' + b.parent.candidate_id + '  ' + (b.parent.label || '') : 'Diff'}));
    if (!b.parent) note(body, 'The best is a root candidate: it has no parent to compare with.');
    else if (typeof b.diff === 'string' && b.diff) highlighted.diff = codeBlock(body, b.diff, 'diff');
    else note(body, b.diff === '' ? 'The source is identical to its parent\u2019s (it differs only in its parameters).' : 'No diff in the report.');
  }

  // ---------------------------------------------------------------- 6. failures

  function renderFailures(body) {
    var rows = arr(doc.failures).map(function (f) {
      // kforge counts evaluations per failing check, and LLM answers it could not use ("answer: malformed")
      return {name: f.check, count: f.count, cases: f.cases, example: f.example, unit: /^answer: /.test(f.check) ? 'answer' : 'evaluation'};
    });
    var checks = rows.map(function (r) { return r.name; }), st = doc.statuses || {};
    // A failing status with no check row (build_failed, malformed, ...) gets a bar of its evaluations.
    sortStatuses(Object.keys(st)).forEach(function (s) {
      if (s === 'passed' || checks.indexOf(s) >= 0 || !(st[s] > 0)) return;
      var ex = arr(doc.evaluations).filter(function (e) { return e.status === s; })[0];
      rows.push({name: s, count: st[s], cases: null, example: ex ? ex.message : '', unit: 'evaluation'});
    });
    if (!rows.length) return note(body, doc.kind === 'suite' ? 'No failure tally: each problem\u2019s status and message are in the Suite table.'
                                        : arr(doc.evaluations).length ? 'No candidate failed.' : 'No evaluations in this report.');
    var c = chart(body, 60 + 34 * rows.length, {
      type: 'bar',
      data: {labels: rows.map(function (r) { return r.name; }), datasets: [{label: 'count', barThickness: 20,
        data: rows.map(function (r) { return r.count; }), backgroundColor: rows.map(function (r) { return statusColor(r.name); })}]},
      options: {indexAxis: 'y',
        scales: {x: {beginAtZero: true, suggestedMax: 2, ticks: {precision: 0}, title: axisTitle('evaluations (LLM answers, for answer: rows)')}},
        plugins: {legend: {display: false}, tooltip: {callbacks: {label: function (item) {
          return item.raw + ' ' + plural(item.raw, rows[item.dataIndex].unit);
        }}}}}
    });
    counts.failures.bars = c.data.datasets[0].data.length;
    var list = body.appendChild(el('div', {class: 'fail-list'}));
    rows.forEach(function (r) {
      var cases = Object.keys(r.cases || {}).map(function (k) { return k + ' \u00d7' + r.cases[k]; }).join(', ');
      list.appendChild(el('div', {class: 'fail-row'}, [
        el('div', {class: 'fail-head'}, [chip(r.name), ' ' + r.count + ' ' + plural(r.count, r.unit) + (cases ? ' \u00b7 cases: ' + cases : '')]),
        r.example ? el('div', {class: 'example', text: r.example}) : null]));
    });
  }

  // ---------------------------------------------------------------- 7. ideas

  // Outcomes are not statuses: outlined chips, so that "failed" is not read as build_failed.
  var OUTCOME = {passed: FIXED.passed, failed: '#c92a2a', untested: '#868e96'};

  function renderIdeas(body) {
    var ideas = arr(doc.ideas).slice().sort(function (a, b) { return (a.round - b.round) || (a.id - b.id); });
    if (!ideas.length) return note(body, 'The run proposed no ideas.');
    table(body, ['round', 'idea (click for its text)', 'outcome', 'evaluations', 'best speedup'], ideas.map(function (i) {
      return [String(isNum(i.round) ? i.round : DASH),
        el('details', {}, [el('summary', {text: i.title || '(untitled)'}), el('p', {class: 'idea-body', text: i.body || ''})]),
        el('span', {class: 'chip outline', style: 'color:' + (has(OUTCOME, i.outcome) ? OUTCOME[i.outcome] : '#868e96'), text: i.outcome || DASH}),
        fmtInt(i.evaluations), fmtX(i.speedup)];
    }), [0, 3, 4], 'ideas');
  }

  // ---------------------------------------------------------------- 8. LLM usage

  function renderLlm(body) {
    var l = doc.llm;
    if (!l || !(l.calls > 0)) return note(body, 'No LLM calls.');
    defList(body, 'inline', [['calls', fmtInt(l.calls) + (l.failed_calls ? ' (' + fmtInt(l.failed_calls) + ' failed)' : '')],
      ['input tokens', fmtInt(l.input_tokens) + (l.cached_input_tokens ? ' (' + fmtInt(l.cached_input_tokens) + ' cached)' : '')],
      ['output tokens', fmtInt(l.output_tokens)], ['cost', fmtUsd(l.cost_usd)],
      ['estimated', l.estimated_calls ? fmtInt(l.estimated_calls) + ' calls without reported usage' : null]]);
    var rows = arr(l.by_model);
    if (!rows.length) return note(body, 'No breakdown per model and role.');
    var tb = table(body, ['provider', 'model', 'role', 'calls', 'failed', 'input tokens', 'output tokens', 'cost', 'time'],
      rows.map(function (r) {
        return [String(r.provider || DASH), String(r.model || DASH), String(r.role || DASH), fmtInt(r.calls), fmtInt(r.failed_calls),
          fmtInt(r.input_tokens), fmtInt(r.output_tokens), isNum(r.cost_usd) ? fmtUsd(r.cost_usd) : 'unpriced', fmtSeconds(r.duration_s)];
      }), [3, 4, 5, 6, 7, 8]);
    counts.llm.rows = tb.querySelectorAll('tr').length;
    chart(body, 50 + 30 * rows.length, {
      type: 'bar',
      data: {labels: rows.map(function (r) { return r.model + ' \u00b7 ' + r.role; }), datasets: [
        {label: 'input tokens', data: rows.map(function (r) { return r.input_tokens || 0; }), backgroundColor: '#74a9cf'},
        {label: 'output tokens', data: rows.map(function (r) { return r.output_tokens || 0; }), backgroundColor: '#0570b0'}]},
      options: {indexAxis: 'y', scales: {x: {stacked: true, title: axisTitle('tokens')}, y: {stacked: true}},
                plugins: {legend: {position: 'right'}}}
    });
  }

  // ---------------------------------------------------------------- 9. suite

  function renderSuite(body) {
    var s = doc.suite, rows = arr(s && s.rows);
    if (!rows.length) return note(body, 'No suite rows.');
    var tb = table(body, ['problem', 'status', 'candidate', 'reference', 'compile', 'vs reference', 'vs compile', 'evaluation', 'message'],
      rows.map(function (r) {
        return [String(r.problem), chip(r.status), fmtMs(r.candidate_s), fmtMs(r.reference_s), fmtMs(r.compile_s), fmtX(r.speedup),
          fmtX(r.speedup_compile), isNum(r.evaluation_id) ? '#' + r.evaluation_id : DASH,
          el('span', {class: 'msg', title: r.message || '', text: shorten(r.message, 80)})];
      }), [2, 3, 4, 5, 6, 7]);
    counts.suite.rows = tb.querySelectorAll('tr').length;

    var fp = (s && s.fast_p) || {}, levels = [];   // p keys only: kforge.suite/1 also carries n and counts
    Object.keys(fp).forEach(function (b) {
      Object.keys(fp[b] || {}).forEach(function (k) { if (isFinite(parseFloat(k)) && levels.indexOf(k) < 0) levels.push(k); });
    });
    levels.sort(function (a, b) { return parseFloat(a) - parseFloat(b); });
    var colors = {reference: '#2f5fb3', compile: '#8e5cd9'};
    var sets = Object.keys(fp).filter(function (b) { return levels.some(function (k) { return isNum(fp[b][k]); }); }).map(function (b) {
      return {label: 'vs ' + b, data: levels.map(function (k) { return isNum(fp[b][k]) ? fp[b][k] : null; }),
              backgroundColor: has(colors, b) ? colors[b] : '#868e96'};
    });
    body.appendChild(el('h3', {text: 'fast_p: the fraction of problems correct and more than p\u00d7 faster'}));
    if (!sets.length) return note(body, 'No fast_p values.');
    chart(body, 260, {
      type: 'bar', data: {labels: levels.map(function (k) { return 'p = ' + k; }), datasets: sets},
      options: {scales: {y: {min: 0, max: 1, title: axisTitle('fraction of problems'),
                             ticks: {callback: function (v) { return Math.round(v * 100) + ' %'; }}}},
                plugins: {legend: {position: 'bottom'}, tooltip: {callbacks: {label: function (item) {
                  return item.dataset.label + ': ' + fmtPct(item.raw);
                }}}}}
    });
  }

  // ---------------------------------------------------------------- 10. reproduce

  function renderReproduce(body) {
    var m = doc.machine || {}, k = doc.kforge || {}, rp = doc.reproduce || {}, r = doc.run, p = doc.problem, c = m.ceilings;
    defList(body, 'facts-grid', [['device', m.device], ['host', m.host],
      ['kforge', (k.version || DASH) + (k.commit ? ' (commit ' + k.commit + ')' : ' (commit unknown)')],
      ['seed', rp.seed], ['problem', p ? p.path || p.name : null],
      ['run', r ? '#' + r.id + ' \u00b7 ' + r.strategy + ' \u00b7 ' + r.status + ' \u00b7 ' + (r.started_at || '?') + ' \u2192 ' +
        (r.finished_at || '?') + (r.resumes ? ' \u00b7 resumed ' + r.resumes + '\u00d7' : '') : null],
      ['ceilings', c ? 'copy ' + fmtSI(c.copy_bytes_per_s, 'B/s') + ', fp32 ' + fmtSI(c.fp32_flops, 'FLOP/s') +
        (c.bf16_flops ? ', bf16 ' + fmtSI(c.bf16_flops, 'FLOP/s') : '') + (c.measured_at ? ' (measured ' + c.measured_at + ')' : '')
        : 'not calibrated']]);
    var cmds = arr(rp.commands);
    if (cmds.length) body.appendChild(el('h3', {text: 'Commands'}));
    else note(body, 'No commands recorded.');
    cmds.forEach(function (cmd) { body.appendChild(el('pre', {class: 'cmd'}, [copyButton(cmd), el('code', {text: cmd})])); });
    if (arr(rp.notes).length) body.appendChild(el('ul', {class: 'notes'}, rp.notes.map(function (n) { return el('li', {text: n}); })));
    if (r && r.config) body.appendChild(el('details', {class: 'config'}, [el('summary', {text: 'Run configuration (JSON)'}),
      el('pre', {class: 'code'}, [el('code', {text: JSON.stringify(r.config, null, 2)})])]));
  }

  // ---------------------------------------------------------------- main

  function selfTest() {
    var all = errors.concat(window.__kforgeErrors || []);
    var s = document.createElement('script');
    s.type = 'application/json';
    s.id = 'kforge-rendered';
    // '<' escaped so that no message can end the element early
    s.textContent = JSON.stringify({ok: !threw && all.length === 0, errors: all, charts: counts, highlighted: highlighted})
      .replace(/</g, '\\u003c');
    document.body.appendChild(s);
  }

  function main() {
    try {
      doc = JSON.parse(document.getElementById('kforge-data').textContent);
      if (!doc || doc.schema !== 'kforge.report/1') throw new Error('expected schema kforge.report/1, got ' + (doc && doc.schema));
    } catch (e) {
      run('data', function () { throw e; }, document.getElementById('report'));
      return;
    }
    if (window.Chart) {   // without it the chart sections fail on their own; the rest still renders
      Chart.defaults.animation = false;
      Chart.defaults.font.family = 'system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif';
      Chart.defaults.color = '#343a40';
    }
    var kind = doc.kind;
    run('header', renderHeader);
    run('progress', renderProgress, section('progress', 'Progress', 'Each evaluation\u2019s median time (lower is better) or speedup ' +
      'against the chosen x; the line is the best so far. Failed evaluations are not timed: they are the crosses in the band at the top.'));
    run('lineage', renderLineage, section('lineage', 'Lineage', 'Each candidate under the one it was derived from, coloured by the ' +
      'status of its latest evaluation, with its speedup below.'));
    run('roofline', renderRoofline, section('roofline', 'Roofline', 'Achieved FLOP/s against arithmetic intensity, under the ' +
      'device\u2019s measured memory and compute ceilings.'));
    run('best', renderBest, section('best', 'Best kernel'));
    run('failures', renderFailures, section('failures', 'Why candidates failed', 'Evaluations per failing check (a status without ' +
      'a check row counts as one), with the first one\u2019s message; answer: rows are LLM answers kforge could not use.'));
    if (kind === 'run' || arr(doc.ideas).length) run('ideas', renderIdeas, section('ideas', 'Ideas'));
    run('llm', renderLlm, section('llm', 'LLM usage'));
    if (kind === 'suite' || doc.suite) run('suite', renderSuite, section('suite', 'Suite'));
    run('reproduce', renderReproduce, section('reproduce', 'Reproduce'));
    var nav = document.getElementById('toc');
    SECTIONS.forEach(function (s) { nav.appendChild(el('a', {href: '#' + s.id, text: s.title})); });
  }

  // Printing: open collapsed details and let Chart.js refit the charts to the paper.
  function resizeCharts() { if (window.Chart) Object.keys(Chart.instances).forEach(function (k) { Chart.instances[k].resize(); }); }
  window.addEventListener('beforeprint', function () {
    Array.prototype.forEach.call(document.querySelectorAll('details'), function (d) { d.open = true; });
    resizeCharts();
  });
  window.addEventListener('afterprint', resizeCharts);

  try { main(); } catch (e) { threw = true; errors.push('main: ' + (e && e.message ? e.message : e)); }
  selfTest();
})();
