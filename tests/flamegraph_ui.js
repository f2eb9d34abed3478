// Drives the flame graph SVG as a person would, in headless Chromium through
// playwright-core: what the URL-parameter runs of
// tests/flamegraph_browser_priv_test.cc cannot show. Clicks Search and types
// into its prompt (text, /regex/, Ctrl+F), clicks a frame to zoom and Reset
// zoom, resizes the window, and checks the legend is visible: inside the
// window, above the frames, and the topmost thing where it is drawn.
//   node tests/flamegraph_ui.js PLAYWRIGHT_CORE_DIR CHROMIUM SVG USER_DATA_DIR
// The SVG is that test's SearchProfile: 10 samples, main -> work (6: Foo::
// operator() 2, operator_new 4), main -> [fio] 1, main -> io_submit 3.
// Prints "ok: ..." per check and "all N UI checks passed"; exits 1 at the first
// check that fails.
'use strict';
const assert = require('assert');
const [pwDir, chromiumPath, svgPath, userData] = process.argv.slice(2);
const { chromium } = require(pwDir);

let passed = 0;
function ok(what) {
  passed++;
  console.log('ok: ' + what);
}

// What the page shows: the matched text, the highlighted and the hidden
// frames (by name), the image's width and the root frame's.
function state(page) {
  return page.evaluate(() => {
    const frames = [...document.querySelectorAll('#frames g')];
    const name = (g) => g.querySelector('title').textContent.split('\n')[0]
      .replace(/ \([\d.]+ (samples?|ms), [\d.]+%\)$/, '');
    return {
      matched: document.getElementById('matched').textContent,
      hits: frames.filter((g) => g.querySelector('rect').getAttribute('fill') === 'rgb(230,0,230)').map(name),
      hidden: frames.filter((g) => g.getAttribute('display') === 'none').map(name),
      width: document.documentElement.getAttribute('width'),
      rootWidth: frames[0].querySelector('rect').getAttribute('width'),
      unzoomShown: !document.getElementById('unzoom').classList.contains('hidden'),
    };
  });
}

// Types `term` into the prompt that `open` brings up.
async function typeSearch(page, term, open) {
  page.once('dialog', (d) => d.accept(term));
  await open();
}

// A real mouse click in the middle of the frame called `name`.
async function clickFrame(page, name) {
  const box = await page.evaluate((n) => {
    const g = [...document.querySelectorAll('#frames g')]
      .find((e) => e.querySelector('title').textContent.startsWith(n + ' ('));
    const r = g.querySelector('rect').getBoundingClientRect();
    return { x: r.x + r.width / 2, y: r.y + r.height / 2 };
  }, name);
  await page.mouse.click(box.x, box.y);
}

async function checkLegend(page) {
  const legend = await page.evaluate(() => {
    const tops = [...document.querySelectorAll('#frames rect')].map((r) => r.getBoundingClientRect().top);
    return [...document.querySelectorAll('#legend rect')].map((r) => {
      const b = r.getBoundingClientRect();
      const hit = document.elementFromPoint(b.x + b.width / 2, b.y + b.height / 2);
      return { name: r.nextElementSibling.textContent, top: b.top, bottom: b.bottom, right: b.right,
               onTop: hit === r, framesTop: Math.min(...tops), winWidth: window.innerWidth };
    });
  });
  assert.deepStrictEqual(legend.map((l) => l.name), ['comm', 'user code', 'unresolved']);
  for (const l of legend) {
    assert.ok(l.onTop, l.name + ' swatch is covered');
    assert.ok(l.top > 24 && l.bottom <= l.framesTop && l.right <= l.winWidth, JSON.stringify(l));
  }
  for (const name of ['comm', 'user code', 'unresolved']) {
    assert.ok(await page.locator('#legend text', { hasText: name }).isVisible(), name);
  }
  ok('legend visible: ' + legend.map((l) => l.name).join(', ') + ', above the frames, not covered');
}

async function checkSearch(page) {
  const click = () => page.click('#search');
  await typeSearch(page, '[fio]', click);
  let s = await state(page);
  assert.strictEqual(s.matched, 'Matched "[fio]": 10.00% of all');
  assert.deepStrictEqual(s.hits, ['[fio]']);
  ok('typed [fio] matches literally: ' + s.matched);
  await click();  // now "Reset search"
  s = await state(page);
  assert.strictEqual(s.matched, '');
  assert.deepStrictEqual(s.hits, []);
  await typeSearch(page, 'operator()', click);
  s = await state(page);
  assert.strictEqual(s.matched, 'Matched "operator()": 20.00% of all');
  assert.deepStrictEqual(s.hits, ['Foo::operator()']);
  ok('typed operator() matches literally: ' + s.matched);
  await typeSearch(page, '/^o/', () => page.keyboard.press('Control+f'));
  s = await state(page);
  assert.strictEqual(s.matched, 'Matched "/^o/": 40.00% of all');
  assert.deepStrictEqual(s.hits, ['operator_new']);
  ok('Ctrl+F, typed /^o/ is a regular expression: ' + s.matched);
  await typeSearch(page, '/WORK/i', () => page.keyboard.press('Control+f'));
  s = await state(page);
  assert.deepStrictEqual(s.hits, ['work']);
  ok('typed /WORK/i ignores case: ' + s.matched);
}

async function checkZoom(page) {
  await typeSearch(page, 'operator()', () => page.keyboard.press('Control+f'));
  await clickFrame(page, 'work');
  let s = await state(page);
  assert.strictEqual(s.matched, 'Matched "operator()": 20.00% of all, 33.33% of zoomed');
  assert.deepStrictEqual(s.hidden.sort(), ['[fio]', 'io_submit']);
  assert.ok(s.unzoomShown);
  ok('click on work zooms: ' + s.matched + '; hidden ' + s.hidden.join(', '));
  await page.click('#unzoom');
  s = await state(page);
  assert.strictEqual(s.matched, 'Matched "operator()": 20.00% of all');
  assert.deepStrictEqual(s.hidden, []);
  assert.ok(!s.unzoomShown);
  ok('Reset zoom shows every frame again');
  await clickFrame(page, 'io_submit');
  await page.keyboard.press('Escape');
  s = await state(page);
  assert.deepStrictEqual([s.matched, s.hits, s.hidden], ['', [], []]);
  ok('Escape resets zoom and search');
}

async function main() {
  const context = await chromium.launchPersistentContext(userData, {
    executablePath: chromiumPath,
    headless: true,
    viewport: { width: 1200, height: 600 },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  try {
    const page = context.pages()[0] || await context.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.goto('file://' + svgPath);
    await page.waitForFunction(() => document.documentElement.getAttribute('data-ehprof-ready') === '1');
    let s = await state(page);
    assert.deepStrictEqual([s.width, s.rootWidth], ['1200', '1180.00']);
    ok('laid out to the 1200 px window');
    await checkLegend(page);
    await checkSearch(page);
    await checkZoom(page);
    await page.setViewportSize({ width: 900, height: 600 });
    await page.waitForFunction(() => document.documentElement.getAttribute('width') === '900');
    s = await state(page);
    assert.strictEqual(s.rootWidth, '880.00');
    ok('resized to 900 px: the root frame is 880 px');
    assert.deepStrictEqual(errors, []);
    ok('no script errors');
  } finally {
    await context.close();
  }
  console.log('all ' + passed + ' UI checks passed');
}

main().catch((e) => {
  console.log('FAILED: ' + (e && e.stack ? e.stack : e));
  process.exit(1);
});
