// Opens a Pyroscope UI page in headless Chromium (through playwright-core,
// no browser download: Debian's chromium) and saves a screenshot once the
// flame graph is drawn and its table names `expect`.
//   node pyroscope_screenshot.mjs NPM_DIR URL OUT.png EXPECT
// (NPM_DIR: where playwright-core is installed, its package.json beside
// node_modules)
import { createRequire } from 'node:module';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const [npmDir, url, out, expect] = process.argv.slice(2);
const { chromium } = createRequire(join(npmDir, 'package.json'))('playwright-core');

// A fresh profile: nothing from an earlier run (cache, local storage)
// shapes the page.
const profile = mkdtempSync(join(tmpdir(), 'ehprof-chromium-'));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: '/usr/bin/chromium',
  headless: true,
  viewport: { width: 1600, height: 1000 },
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
         '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
try {
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(url, { waitUntil: 'networkidle', timeout: 60000 });
  await shoot(page, errors).catch(async (e) => {
    // What the page showed instead, for whoever reads the failure.
    await page.screenshot({ path: `${out}.failed.png`, fullPage: true });
    console.log(`page text: ${(await page.innerText('body')).slice(0, 2000)}`);
    throw e;
  });
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}

async function shoot(page, errors) {
  // Grafana's flame graph component (@grafana/flamegraph): a canvas, and
  // a top table beside it.
  const canvas = page.locator('canvas[data-testid="flameGraph"]');
  await canvas.waitFor({ state: 'visible', timeout: 60000 });
  // The table beside the graph lists the functions once the render
  // request has answered: the graph is drawn from the same data.
  await page.getByTestId('topTable').getByText(expect, { exact: true }).first()
    .waitFor({ timeout: 60000 });
  const box = await canvas.boundingBox();
  if (!box || box.height < 100) throw new Error(`flame graph canvas is ${JSON.stringify(box)}`);
  await page.waitForTimeout(1000);  // the canvas is painted after layout settles
  await page.screenshot({ path: out, fullPage: true });
  console.log(`screenshot: ${out} (flame graph ${Math.round(box.width)}x${Math.round(box.height)})`);
  if (errors.length) console.log(`page errors: ${errors.join('; ')}`);
}
