// Headless-Chromium check of the HTML report (`firstfault diagnose --format html`).
//
//   node tests/site/check-report.mjs path/to/firstfault SOURCE_DIR [SCREENSHOT_DIR]
//
// For real runs (a loss-scale run with series, a multi-rank hang, a rank exception):
// writes the report with -o, opens it over file:// and checks that nothing is requested
// but the file itself, no console error, the page needs no script (JavaScript is off),
// the timeline and at least one plot render as SVG (their marks and lines have a size on
// the page), the verdict banner and the decisive line are shown, and at a 390 px wide
// viewport nothing scrolls sideways; then saves screenshots (light, dark, print, phone).
// The charts (issue 33), on real logs: a legend of the lines' colours under every plot,
// every point titled with its step and value (hover), a log axis for a series spanning
// decades (02_nan_loss's loss spikes to 5.4e+28) and for a loss scale, the first
// non-finite value and a loss scale's floor marked, constant series left out and said so,
// never "rank -1" (a series with no rank), the timeline on a time axis with each mark
// titled with its time and file:line, and the collateral table inside a phone's width.
// Exit: 0 pass, 1 fail, 77 skipped (no Chromium or playwright-core: run tools/install-deps).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

import { CHROMIUM, LAUNCH_ARGS, checks, chromiumOrSkip, startWatchdog } from './browser.mjs';

const [binary, source, shots] = process.argv.slice(2);
if (!binary || !source) {
  console.error('usage: node check-report.mjs path/to/firstfault SOURCE_DIR [SCREENSHOT_DIR]');
  process.exit(2);
}
const chromium = await chromiumOrSkip();
startWatchdog(150);

const { check, done } = checks();

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ff-report-check-'));
const env = { ...process.env };
if (!env.FIRSTFAULT_CACHE_DIR) env.FIRSTFAULT_CACHE_DIR = path.join(tmp, 'cache');
const cases = [
  { log: 'tests/data/03_loss_scale_terminal__tee.log', plots: true, axes: { loss_scale: 'log2' }, floor: 'loss_scale' },
  { log: 'tests/data/06_hang.log', plots: false },
  { log: 'tests/data/01_rank_exception__tee.log', plots: false },
  { log: 'tests/data/02_nan_loss.log', axes: { loss: 'log10', grad_norm: 'log10', lr: 'linear' }, nonFinite: 'grad_norm',
    timeAxis: true },
  { log: 'tests/data/megatron-deepspeed-396-nan-grad-norm.log', constant: ['lr', 'loss_scale', 'grad_norm'] },
  { log: 'tests/data/fairseq-512-loss-scale-floor.log', axes: { loss_scale: 'log2' }, floor: 'loss_scale' },
];

const context = await chromium.launchPersistentContext(path.join(tmp, 'profile'), {
  executablePath: CHROMIUM,
  headless: true,
  javaScriptEnabled: false,
  args: LAUNCH_ARGS,
});
try {
  const page = context.pages()[0] ?? (await context.newPage());
  let label = '';
  page.on('console', (m) => { if (m.type() === 'error') check(false, `${label}: console error: ${m.text()}`); });
  page.on('pageerror', (e) => check(false, `${label}: page error: ${e.message}`));
  const requests = [];
  page.on('request', (r) => requests.push(r.url()));
  for (const c of cases) {
    label = path.basename(c.log);
    const file = path.join(tmp, `${label}.html`);
    const rc = spawnSync(binary, ['diagnose', '--format', 'html', '-o', file, path.join(source, c.log)],
      { env, stdio: 'ignore' }).status;
    check(rc === 1 && fs.existsSync(file), `${label}: report written, exit 1 (failed)`);
    const json = JSON.parse(spawnSync(binary, ['diagnose', '--format', 'json', path.join(source, c.log)],
      { env, stdio: ['ignore', 'pipe', 'ignore'] }).stdout.toString() || '{}');
    requests.length = 0;
    await page.setViewportSize({ width: 1100, height: 900 });
    const url = pathToFileURL(file).href;
    await page.goto(url, { waitUntil: 'load' });
    check(requests.every((u) => u === url), `${label}: no request but the page itself (${requests.filter((u) => u !== url)})`);
    const banner = await page.textContent('header.banner');
    check(banner.includes('FAILED') && banner.includes(json.primary.title), `${label}: the banner names the verdict and the failure`);
    const decisive = await page.textContent('pre.decisive');
    check(decisive === json.primary.evidence[0].text, `${label}: the decisive line is shown as logged`);
    // The timeline: a mark per event and lane, each with a size on the page.
    const marks = await page.$$eval('svg.timeline circle', (els) =>
      els.map((e) => { const r = e.getBoundingClientRect(); return r.width > 0 && r.height > 0; }));
    check(marks.length >= json.timeline.length && marks.every(Boolean),
      `${label}: the timeline renders ${marks.length} marks for ${json.timeline.length} events`);
    const lanes = await page.$$eval('svg.timeline line.lane', (els) => els.length);
    const ranks = new Set(json.timeline.flatMap((t) => t.ranks));
    check(lanes >= Math.min(ranks.size, 16), `${label}: a lane per rank (${lanes} lanes, ${ranks.size} ranks)`);
    if (c.plots) {
      const plots = await page.$$eval('svg.plot-svg polyline.series', (els) =>
        els.map((e) => ({ n: e.getAttribute('points').trim().split(/\s+/).length, w: e.getBoundingClientRect().width })));
      check(plots.length >= 1 && plots.every((p) => p.n >= 2 && p.w > 50), `${label}: ${plots.length} plots render`);
      const perRank = Object.values(json.series.metrics).filter((m) => m.per_rank.length >= 2).length;
      const multi = await page.$$eval('svg.plot-svg', (els) => els.filter((e) => Number(e.dataset.lines) >= 2).length);
      check(perRank === 0 || multi >= 1, `${label}: ${multi} plots draw a line per rank (${perRank} series have several ranks)`);
      const scale = await page.$('svg.plot-svg[data-metric="loss_scale"]');
      check(scale !== null, `${label}: the loss scale is plotted`);
      const marked = await page.$$eval('svg.plot-svg[data-metric="loss_scale"] circle.mark', (els) => els.length);
      check(marked >= 1, `${label}: the loss-scale verdict's step is marked on its plot`);
    }
    // The charts.
    const charts = await page.$$eval('figure.plot', (figs) => figs.map((f) => {
      const svg = f.querySelector('svg.plot-svg');
      return {
        metric: svg.dataset.metric, axis: svg.dataset.axis, lines: Number(svg.dataset.lines),
        legend: [...f.querySelectorAll('ul.legend li')].map((li) => li.textContent),
        swatches: [...f.querySelectorAll('ul.legend .sw')].map((sw) => getComputedStyle(sw).backgroundColor),
        points: svg.querySelectorAll('circle.pt').length,
        titled: [...svg.querySelectorAll('circle.pt')].filter((c) => /· step [0-9.e+-]+: \S+/.test(c.querySelector('title')?.textContent || '')).length,
        nonFinite: svg.querySelector('g.nonfinite title')?.textContent || '',
        floor: svg.querySelector('g.floor title')?.textContent || '',
      };
    }));
    for (const ch of charts) {
      check(ch.legend.length >= ch.lines && ch.legend.slice(0, ch.lines).every((t) => /^(rank \d+|no rank|all ranks)$/.test(t)),
        `${label}: ${ch.metric}: a legend names its ${ch.lines} line(s) (${ch.legend.join(', ')})`);
      check(new Set(ch.swatches.slice(0, ch.lines)).size === ch.lines, `${label}: ${ch.metric}: each line its own colour`);
      check(ch.points > 0 && ch.titled === ch.points, `${label}: ${ch.metric}: ${ch.titled} of ${ch.points} points say their step and value on hover`);
    }
    for (const [metric, axis] of Object.entries(c.axes || {})) {
      const ch = charts.find((x) => x.metric === metric);
      check(ch && ch.axis === axis, `${label}: ${metric} is drawn on a ${axis} axis (${ch && ch.axis})`);
    }
    if (c.nonFinite) {
      const ch = charts.find((x) => x.metric === c.nonFinite);
      check(ch && /first non-finite/.test(ch.nonFinite) && /step \d+/.test(ch.nonFinite),
        `${label}: ${c.nonFinite}'s first non-finite value is marked (${ch && ch.nonFinite})`);
    }
    if (c.floor) {
      const ch = charts.find((x) => x.metric === c.floor);
      check(ch && /lowest/.test(ch.floor), `${label}: ${c.floor}'s floor is marked (${ch && ch.floor})`);
    }
    for (const metric of c.constant || []) {
      check(!charts.some((x) => x.metric === metric), `${label}: the constant series ${metric} is not drawn`);
      check((await page.textContent('#numbers')).includes(metric), `${label}: ... and said to be constant`);
    }
    const html = await page.content();
    check(!/rank -1\b/.test(html), `${label}: no "rank -1" anywhere`);
    if (c.timeAxis) {
      check(await page.$('svg.timeline[data-axis="time"]') !== null, `${label}: the timeline has a time axis`);
      const titles = await page.$$eval('svg.timeline circle title', (ts) => ts.map((t) => t.textContent));
      check(titles.length > 0 && titles.every((t) => /:\d+\b/.test(t) && /(\d\d:\d\d:\d\d|no time written)/.test(t)),
        `${label}: each timeline mark says its time and file:line (${titles[0]})`);
    }
    if (shots) {
      fs.mkdirSync(shots, { recursive: true });
      await page.screenshot({ path: path.join(shots, `${label}.light.png`), fullPage: true });
      await page.emulateMedia({ colorScheme: 'dark' });
      await page.screenshot({ path: path.join(shots, `${label}.dark.png`), fullPage: true });
      await page.emulateMedia({ colorScheme: 'light', media: 'print' });
      await page.screenshot({ path: path.join(shots, `${label}.print.png`), fullPage: true });
      await page.emulateMedia({ media: 'screen' });
    }
    // A phone: nothing wider than the viewport.
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(url, { waitUntil: 'load' });
    const wide = await page.evaluate(() => document.documentElement.scrollWidth);
    check(wide <= 390, `${label}: fits a 390 px wide viewport (scrollWidth ${wide})`);
    const tableRight = await page.evaluate(() => {
      const t = document.querySelector('#collateral table');
      return t ? t.getBoundingClientRect().right : 0;
    });
    check(tableRight <= 390, `${label}: the collateral table stays inside 390 px (right edge ${tableRight})`);
    if (shots) await page.screenshot({ path: path.join(shots, `${label}.phone.png`), fullPage: true });
  }
} finally {
  await context.close();
  fs.rmSync(tmp, { recursive: true, force: true });
}
done();
