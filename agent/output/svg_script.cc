// The flame graph's stylesheet and script, kept apart from the layout code
// that writes the frames (output_svg.cc).
#include "agent/output/svg_script.h"

namespace ehprof {

const char kSearchHelp[] =
    "Search frames: text matches as written (case-sensitive), /REGEX/ or /REGEX/i is a regular "
    "expression.";

const char kSvgStyle[] = R"(<style type="text/css"><![CDATA[
text { font-family: monospace; font-size: 12px; fill: #000; }
.title { font-size: 17px; }
.info { fill: #444; }
.button { cursor: pointer; fill: #1a3b8c; }
.button:hover { text-decoration: underline; }
.hidden { opacity: 0; pointer-events: none; }
#legend rect { stroke: #888; stroke-width: 0.5; }
#frames g { cursor: pointer; }
#frames g:hover rect { stroke: #000; stroke-width: 0.5; }
#frames g.ancestor rect { opacity: 0.55; }
#frames text { pointer-events: none; }
]]></style>
)";

// Each frame is <g><title>NAME (N samples, P%)\nWHAT...</title><rect/><text/></g>
// in pre-order: the script reads names and counts back from the titles' first
// lines and the tree from the order and the rects' y, so nothing is stored
// twice. Positions are kept as fractions of the full width, so the graph can
// be laid out again for any window width (W).
const char kSvgScript[] = R"js(
var svg, frames = [], zoomed = null, query = null, H = 0, MINW = 300;
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
function layout() {
  var z = zoomed, span = W - 2 * PAD, scale = span / (z ? z.w : 1), x0 = z ? z.x : 0;
  frames.forEach(function (h, i) {
    var inside = !z || (i >= z.i && i < z.end);
    show(h, inside);
    h.g.classList.remove('ancestor');
    if (inside) place(h, PAD + (h.x - x0) * scale, h.w * scale);
  });
  for (var a = z ? z.parent : null; a; a = a.parent) {
    show(a, true);
    a.g.classList.add('ancestor');
    place(a, PAD, span);
  }
  if (z) byId('unzoom').classList.remove('hidden'); else byId('unzoom').classList.add('hidden');
  if (query) showMatched();
}
function zoom(f) { zoomed = f.parent ? f : null; layout(); }
function unzoom() { zoomed = null; layout(); }
// To the window's width (the viewport without scroll bars), never narrower
// than MINW; the height stays.
function resize() {
  var avail = document.documentElement.clientWidth || window.innerWidth;
  if (!avail) return;
  W = Math.max(avail, MINW);
  svg.setAttribute('width', W);
  svg.setAttribute('viewBox', '0 0 ' + W + ' ' + H);
  byId('background').setAttribute('width', W);
  ['title', 'info'].forEach(function (id) { if (byId(id)) byId(id).setAttribute('x', W / 2); });
  ['search', 'matched'].forEach(function (id) { byId(id).setAttribute('x', W - PAD); });
  layout();
}
// How: 'text' (?s=) matches as written, so "[fio]" or "operator()" find
// themselves; 'regex' (?re=) is a regular expression; 'typed' (the prompt)
// is a regular expression when written /REGEX/ or /REGEX/i, else text.
// Throws on a bad regular expression.
function matcher(term, how) {
  if (how === 'regex') return new RegExp(term);
  var m = how === 'typed' && /^\/(.+)\/(i?)$/.exec(term);
  if (m) return new RegExp(m[1], m[2]);
  return { test: function (s) { return s.indexOf(term) >= 0; } };
}
// Samples under a matching frame among frames [from, to), each counted once
// however many matches its stack has: in pre-order a frame's subtree is
// [i, end), so a match inside one already counted adds nothing.
function matchedIn(from, to) {
  var n = 0, coveredTo = from;
  for (var i = from; i < to; i++) {
    if (query.hits[i] && i >= coveredTo) { n += frames[i].count; coveredTo = frames[i].end; }
  }
  return n;
}
function pct(n, d) { return (d ? 100 * n / d : 0).toFixed(2) + '%'; }
function showMatched() {
  var term = query.term.length > 40 ? query.term.slice(0, 38) + '..' : query.term;
  var all = matchedIn(0, frames.length);
  var text = 'Matched "' + term + '": ' + pct(all, frames[0].count) + ' of all';
  if (zoomed) {
    // Every stack in the zoomed view runs through the zoomed frame's
    // ancestors: one of them matching matches them all.
    var n = matchedIn(zoomed.i, zoomed.end);
    for (var a = zoomed.parent; a; a = a.parent) if (query.hits[a.i]) n = zoomed.count;
    text += ', ' + pct(n, zoomed.count) + ' of zoomed';
  }
  byId('matched').textContent = text;
}
function search(term, how) {
  var re;
  try { re = matcher(term, how); }
  catch (e) { byId('matched').textContent = 'Bad regular expression: ' + term; return; }
  if (!frames.length) return;
  query = { term: term, hits: frames.map(function (f) { return re.test(f.name); }) };
  frames.forEach(function (f, i) {
    f.r.setAttribute('fill', query.hits[i] ? 'rgb(230,0,230)' : f.fill);
  });
  showMatched();
  byId('search').textContent = 'Reset search';
}
function resetSearch() {
  frames.forEach(function (f) { f.r.setAttribute('fill', f.fill); });
  byId('matched').textContent = '';
  byId('search').textContent = 'Search';
  query = null;
}
function askSearch() {
  if (query) { resetSearch(); return; }
  var term = prompt(byId('help').textContent, '');
  if (term) search(term, 'typed');
}
function readFrames() {
  var gs = byId('frames').children, open = [], baseY = 0, span = W - 2 * PAD;
  for (var i = 0; i < gs.length; i++) {
    var g = gs[i], r = g.querySelector('rect');
    var tip = g.querySelector('title').textContent;
    var m = /^(.*) \(([\d.]+) (?:samples?|ms), [\d.]+%\)$/.exec(tip.split('\n')[0]);
    var f = { g: g, r: r, t: g.querySelector('text'), i: i, tip: tip.replace(/\n/g, ' | '),
              name: m ? m[1] : tip, count: m ? Number(m[2]) : 0,
              x: (Number(r.getAttribute('x')) - PAD) / span,
              w: Number(r.getAttribute('width')) / span,
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
}
function init() {
  svg = document.documentElement;
  H = Number(svg.getAttribute('height'));
  readFrames();
  byId('unzoom').addEventListener('click', unzoom);
  byId('search').addEventListener('click', askSearch);
  window.addEventListener('keydown', function (e) {
    if (e.key === 'F3' || ((e.ctrlKey || e.metaKey) && e.key === 'f')) {
      e.preventDefault();
      if (query) resetSearch();
      askSearch();
    } else if (e.key === 'Escape') {
      unzoom();
      resetSearch();
    }
  });
  var pending = false;
  window.addEventListener('resize', function () {
    if (pending) return;
    pending = true;
    window.requestAnimationFrame(function () { pending = false; resize(); });
  });
  resize();
  var q = new URLSearchParams(window.location.search);
  if (q.get('z')) {
    var target = frames.find(function (f) { return f.name === q.get('z'); });
    if (target) zoom(target);
  }
  if (q.get('s')) search(q.get('s'), 'text');
  if (q.get('re')) search(q.get('re'), 'regex');
  // Tests (and anyone curious) can tell the script ran.
  svg.setAttribute('data-ehprof-ready', '1');
}
window.addEventListener('load', init);
)js";

}  // namespace ehprof
