// Headless-Chromium check of the fleet report's page (`firstfault report --format html`,
// issue 36), as check-report.mjs does for a diagnosis.
//
//   node tests/site/check-fleet.mjs path/to/firstfault SOURCE_DIR [SCREENSHOT_DIR]
//
// Makes a fleet of 600 job folders from the corpus's real logs (tests/gen/fleet.py),
// writes the report for four weeks against the four before with -o, opens it over file://
// with JavaScript off and checks that nothing is requested but the file itself, no console
// error, the chart's bars have a size on the page and its legend names the categories, the
// tables are there (categories, entries, repeated-hardware nodes, recurring failures, what
// changed), and at a 390 px wide viewport nothing scrolls sideways; then saves screenshots
// (light, dark, phone). Exit: 0 pass, 1 fail, 77 skipped (no Chromium, playwright-core,
// python3 or corpus).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

import { CHROMIUM, LAUNCH_ARGS, checks, chromiumOrSkip, startWatchdog } from './browser.mjs';

const [binary, source, shots] = process.argv.slice(2);
if (!binary || !source) {
  console.error('usage: node check-fleet.mjs path/to/firstfault SOURCE_DIR [SCREENSHOT_DIR]');
  process.exit(2);
}
if (!fs.existsSync(path.join(source, '..', 'shared', 'corpus'))) {
  console.log('skip: ../shared/corpus is not beside the checkout');
  process.exit(77);
}
const chromium = await chromiumOrSkip();
startWatchdog(120);

const { check, done } = checks();

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ff-fleet-check-'));
const env = { ...process.env };
if (!env.FIRSTFAULT_CACHE_DIR) env.FIRSTFAULT_CACHE_DIR = path.join(tmp, 'cache');
const gen = spawnSync('python3', [path.join(source, 'tests/gen/fleet.py'), tmp, '--firstfault', binary, '--jobs', '600'],
  { env, stdio: ['ignore', 'pipe', 'inherit'] });
if (gen.error) {
  console.log('skip: python3 is not installed');
  process.exit(77);
}
check(gen.status === 0, 'tests/gen/fleet.py made 600 job folders');
const file = path.join(tmp, 'fleet.html');
const rc = spawnSync(binary, ['report', path.join(tmp, 'jobs'), '--format', 'html', '-o', file, '--since', '2026-10-29',
  '--compare-to', '2026-10-01..2026-10-29'], { env, stdio: 'ignore' }).status;
check(rc === 0 && fs.existsSync(file), 'the report is written, exit 0');

const context = await chromium.launchPersistentContext(path.join(tmp, 'profile'), {
  executablePath: CHROMIUM,
  headless: true,
  javaScriptEnabled: false,
  args: LAUNCH_ARGS,
});
try {
  const page = context.pages()[0] ?? (await context.newPage());
  page.on('console', (m) => { if (m.type() === 'error') check(false, `console error: ${m.text()}`); });
  page.on('pageerror', (e) => check(false, `page error: ${e.message}`));
  const requests = [];
  page.on('request', (r) => requests.push(r.url()));
  await page.setViewportSize({ width: 1100, height: 900 });
  const url = pathToFileURL(file).href;
  await page.goto(url, { waitUntil: 'load' });
  check(requests.every((u) => u === url), `no request but the page itself (${requests.filter((u) => u !== url)})`);
  const bars = await page.$$eval('svg rect', (els) =>
    els.map((e) => { const r = e.getBoundingClientRect(); return r.width > 0 && r.height > 0; }));
  check(bars.length >= 20 && bars.every(Boolean), `the chart renders ${bars.length} bars, each with a size`);
  const legend = await page.$$eval('.legend span', (els) => els.map((e) => e.textContent));
  check(legend.some((t) => t.startsWith('hardware')) && legend.length >= 5, `the legend names ${legend.length} categories`);
  const headings = await page.$$eval('h2', (els) => els.map((e) => e.textContent));
  for (const h of ['By category', 'By entry', 'Nodes with repeated hardware findings', 'Recurring failures', 'What changed'])
    check(headings.includes(h), `the section "${h}" is there`);
  const nodes = await page.$$eval('h2 + table tbody tr', (els) => els.length);
  check(nodes >= 10, `the tables have rows (${nodes})`);
  const cards = await page.textContent('.cards');
  check(/interruptions/.test(cards) && /GPU-hours lost/.test(cards), 'the summary cards');
  if (shots) {
    fs.mkdirSync(shots, { recursive: true });
    await page.screenshot({ path: path.join(shots, 'fleet.light.png'), fullPage: true });
    await page.emulateMedia({ colorScheme: 'dark' });
    await page.screenshot({ path: path.join(shots, 'fleet.dark.png'), fullPage: true });
    await page.emulateMedia({ colorScheme: 'light' });
  }
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(url, { waitUntil: 'load' });
  const wide = await page.evaluate(() => document.documentElement.scrollWidth);
  check(wide <= 390, `fits a 390 px wide viewport (scrollWidth ${wide})`);
  if (shots) await page.screenshot({ path: path.join(shots, 'fleet.phone.png'), fullPage: true });
} finally {
  await context.close();
  fs.rmSync(tmp, { recursive: true, force: true });
}
done();
