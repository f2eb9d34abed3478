// The flame graph's stylesheet and script, kept apart from the layout code
// that writes the frames (output_svg.cc).
#include "agent/output/svg_script.h"

namespace ehprof {

const char kSvgStyle[] = R"(<style type="text/css"><![CDATA[
text { font-family: monospace; font-size: 12px; fill: #000; }
.title { font-size: 17px; }
.button { cursor: pointer; fill: #1a3b8c; }
.button:hover { text-decoration: underline; }
.hidden { opacity: 0; pointer-events: none; }
#frames g { cursor: pointer; }
#frames g:hover rect { stroke: #000; stroke-width: 0.5; }
#frames g.ancestor rect { opacity: 0.55; }
#frames text { pointer-events: none; }
]]></style>
)";

// Each frame is <g><title>NAME (N samples, P%)</title><rect/><text/></g> in
// pre-order: the script reads names and counts back from the titles and the
// tree from the order and the rects' y, so nothing is stored twice.
const char kSvgScript[] = R"js(
var svg, frames = [], zoomed = null, searching = false;
function byId(id) { return document.getElementById(id); }
function fit(name, w) {
  var n = Math.floor((w - 6) / CW), cs = Array.from(name);
  if (cs.length <= n) return name;
  return n < 4 ? '' : cs.slice(0, n - 2).join('') + '..';
}
function place(f, x, w) {
  f.r.setAttribute('x', x.toFixed(2));
  f.r.setAttribute('width', w.toFixed(2));
  f.t.setAttribute('x', (x + 3).toFixed(2));
  f.t.textContent = fit(f.name, w);
}
function show(f, on) {
  if (on) f.g.removeAttribute('display'); else f.g.setAttribute('display', 'none');
}
function zoom(f) {
  if (!f.parent) { unzoom(); return; }
  zoomed = f;
  var scale = (W - 2 * PAD) / f.w;
  frames.forEach(function (h, i) {
    var inside = i >= f.i && i < f.end;
    show(h, inside);
    h.g.classList.remove('ancestor');
    if (inside) place(h, PAD + (h.x - f.x) * scale, h.w * scale);
  });
  for (var a = f.parent; a; a = a.parent) {
    show(a, true);
    a.g.classList.add('ancestor');
    place(a, PAD, W - 2 * PAD);
  }
  byId('unzoom').classList.remove('hidden');
}
function unzoom() {
  zoomed = null;
  frames.forEach(function (h) {
    show(h, true);
    h.g.classList.remove('ancestor');
    place(h, h.x, h.w);
  });
  byId('unzoom').classList.add('hidden');
}
function search(term) {
  var re;
  try { re = new RegExp(term); }
  catch (e) { re = new RegExp(term.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')); }
  // Pre-order: a match inside an already counted one adds nothing.
  var matched = 0, coveredTo = 0;
  frames.forEach(function (f, i) {
    var hit = re.test(f.name);
    f.r.setAttribute('fill', hit ? 'rgb(230,0,230)' : f.fill);
    if (hit && i >= coveredTo) { matched += f.count; coveredTo = f.end; }
  });
  var total = frames.length ? frames[0].count : 0;
  byId('matched').textContent = 'Matched: ' + (total ? 100 * matched / total : 0).toFixed(2) + '%';
  byId('search').textContent = 'Reset search';
  searching = true;
}
function resetSearch() {
  frames.forEach(function (f) { f.r.setAttribute('fill', f.fill); });
  byId('matched').textContent = '';
  byId('search').textContent = 'Search';
  searching = false;
}
function askSearch() {
  if (searching) { resetSearch(); return; }
  var term = prompt('Search frames (regular expression):', '');
  if (term) search(term);
}
function init() {
  svg = document.documentElement;
  var gs = byId('frames').children, open = [], baseY = 0;
  for (var i = 0; i < gs.length; i++) {
    var g = gs[i], r = g.querySelector('rect');
    var tip = g.querySelector('title').textContent;
    var m = /^([\s\S]*) \((\d+) samples?, [\d.]+%\)$/.exec(tip);
    var f = { g: g, r: r, t: g.querySelector('text'), i: i, tip: tip,
              name: m ? m[1] : tip, count: m ? Number(m[2]) : 0,
              x: Number(r.getAttribute('x')), w: Number(r.getAttribute('width')),
              fill: r.getAttribute('fill') };
    var y = Number(r.getAttribute('y'));
    if (i === 0) baseY = y;
    var depth = Math.round((baseY - y) / FH);
    while (open.length > depth) open.pop().end = i;
    f.parent = open.length ? open[open.length - 1] : null;
    open.push(f);
    frames.push(f);
    g.addEventListener('click', zoom.bind(null, f));
    g.addEventListener('mouseover', function () { byId('details').textContent = this.tip; }.bind(f));
    g.addEventListener('mouseout', function () { byId('details').textContent = ' '; });
  }
  while (open.length) open.pop().end = gs.length;
  byId('unzoom').addEventListener('click', unzoom);
  byId('search').addEventListener('click', askSearch);
  window.addEventListener('keydown', function (e) {
    if (e.key === 'F3' || ((e.ctrlKey || e.metaKey) && e.key === 'f')) {
      e.preventDefault();
      if (searching) resetSearch();
      askSearch();
    } else if (e.key === 'Escape') {
      unzoom();
      resetSearch();
    }
  });
  var q = new URLSearchParams(window.location.search);
  if (q.get('z')) {
    var target = frames.find(function (f) { return f.name === q.get('z'); });
    if (target) zoom(target);
  }
  if (q.get('s')) search(q.get('s'));
  // Tests (and anyone curious) can tell the script ran.
  svg.setAttribute('data-ehprof-ready', '1');
}
window.addEventListener('load', init);
)js";

}  // namespace ehprof
