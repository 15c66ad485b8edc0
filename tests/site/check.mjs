// Headless-Chromium check of the static encyclopedia.
//
//   node tests/site/check.mjs path/to/firstfault
//
// Generates the site into a temporary folder (the built-in KB plus the fixture entry of
// tests/data/site-kb, which has every page field), opens index.html, a framework hub and
// an entry page over file://, and checks: no console errors, no failed requests, nothing
// fetched from the network; every internal link on those pages points to a file (and
// an anchor) that exists; a pasted raw error line ranks its entry first; the browser's
// ranking equals `firstfault search`'s, and the words of tests/data/search-queries.tsv
// rank their entry first in both; every KB example line is won by its own entry in
// the browser as in the engine (the RE2 -> JS regex conversion and the prefix peeling);
// at 390 px (a phone) no page of any kind scrolls sideways, and the fixture's page shows
// its FAQ, symptoms table and verify code block (which scrolls inside itself).
// Exit: 0 pass, 1 fail, 77 skipped (no Chromium or playwright-core: run tools/install-deps).
// FF_SITE_SCREENSHOTS=DIR also saves light and dark screenshots.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { CHROMIUM, LAUNCH_ARGS, chromiumOrSkip, startWatchdog } from './browser.mjs';

const binary = process.argv[2];
if (!binary) {
  console.error('usage: node check.mjs path/to/firstfault');
  process.exit(2);
}
const chromium = await chromiumOrSkip();
startWatchdog(120);

const failures = [];
const fail = (msg) => failures.push(msg);
const t0 = Date.now();
const laps = [];
let tLap = t0;
const lap = (name) => {
  const now = Date.now();
  laps.push(`${name} ${((now - tLap) / 1000).toFixed(1)}s`);
  tLap = now;
};

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const fixtureKb = path.join(repo, 'tests', 'data', 'site-kb');
const FIXTURE = 'entries/fixture.site.every-page-field.html';
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ff-site-check-'));
const out = path.join(tmp, 'site');
const userData = path.join(tmp, 'chromium-profile');
const env = { ...process.env };
if (!env.FIRSTFAULT_CACHE_DIR) env.FIRSTFAULT_CACHE_DIR = path.join(tmp, 'cache');
execFileSync(binary, ['--kb', fixtureKb, 'site', out], { env, stdio: ['ignore', 'ignore', 'inherit'] });
lap('generate');

// tests/data/search-queries.tsv: query, the entry id that must come first.
const QUERIES = fs
  .readFileSync(path.join(repo, 'tests', 'data', 'search-queries.tsv'), 'utf8')
  .split('\n')
  .filter((l) => l.trim() && !l.startsWith('#'))
  .map((l) => l.split('\t'));

const OOM_LINE =
  'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB';
const NCCL_LINE =
  '[rank3]:[E1120 10:11:12.345678 140 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective operation ' +
  'timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600123 ' +
  'milliseconds before timing out.';

function cliSearch(query) {
  try {
    const text = execFileSync(binary, ['--kb', fixtureKb, 'search', '--format', 'json', '--limit', '0', query], {
      env,
      stdio: ['ignore', 'pipe', 'ignore'],
    }).toString();
    return JSON.parse(text).results;
  } catch (e) {
    if (e.status === 1) return [];
    throw e;
  }
}

const unescapeHtml = (s) =>
  s.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&amp;/g, '&');

// Every id="..." of a file, cached.
const anchorCache = new Map();
function anchors(file) {
  if (!anchorCache.has(file)) {
    const html = fs.readFileSync(file, 'utf8');
    anchorCache.set(file, new Set([...html.matchAll(/\sid="([^"]*)"/g)].map((m) => m[1])));
  }
  return anchorCache.get(file);
}

const context = await chromium.launchPersistentContext(userData, {
  executablePath: CHROMIUM,
  headless: true,
  args: LAUNCH_ARGS,
});

lap('launch');

function watch(page, label) {
  page.on('console', (m) => {
    if (m.type() === 'error') fail(`${label}: console error: ${m.text()}`);
  });
  page.on('pageerror', (e) => fail(`${label}: page error: ${e.message}`));
  page.on('requestfailed', (r) => fail(`${label}: request failed: ${r.url()} (${r.failure()?.errorText})`));
  page.on('request', (r) => {
    const u = r.url();
    if (!u.startsWith('file:') && !u.startsWith('data:')) fail(`${label}: network request: ${u}`);
  });
}

const pages = ['index.html', 'frameworks/pytorch.html', 'entries/pytorch.cuda.out-of-memory.html', FIXTURE, 'tags/oom.html',
  'categories/gpu-memory.html'];
let linksChecked = 0;
try {
  const page = context.pages()[0] ?? (await context.newPage());
  for (const rel of pages) {
    const file = path.join(out, rel);
    if (!fs.existsSync(file)) {
      fail(`${rel} was not generated`);
      continue;
    }
    watch(page, rel);
    await page.goto(pathToFileURL(file).href, { waitUntil: 'load' });
    await page.waitForFunction(() => window.ffSearch && window.FF_INDEX);
    const hrefs = await page.$$eval('a[href], link[href], script[src]', (els) =>
      els.map((e) => e.href || e.src),
    );
    for (const href of hrefs) {
      if (!href.startsWith('file:')) continue;
      const url = new URL(href);
      const target = fileURLToPath(url);
      linksChecked++;
      if (!target.startsWith(out + path.sep)) fail(`${rel}: link outside the site: ${href}`);
      else if (!fs.existsSync(target) || !fs.statSync(target).isFile()) fail(`${rel}: broken link: ${href}`);
      else if (url.hash && target.endsWith('.html') && !anchors(target).has(decodeURIComponent(url.hash.slice(1))))
        fail(`${rel}: missing anchor: ${href}`);
    }
    page.removeAllListeners();
  }

  lap('pages+links');

  // The search box: a pasted raw line ranks its entry first, on the index and on a page
  // one level down (relative links), and Enter opens it.
  const page2 = context.pages()[0];
  watch(page2, 'search');
  await page2.goto(pathToFileURL(path.join(out, 'index.html')).href);
  await page2.fill('#q', OOM_LINE);
  await page2.waitForSelector('#results li a');
  const first = await page2.$eval('#results li a', (a) => a.getAttribute('href'));
  if (first !== 'entries/pytorch.cuda.out-of-memory.html') fail(`index search: first result is ${first}`);

  await page2.goto(pathToFileURL(path.join(out, 'frameworks/pytorch.html')).href);
  await page2.fill('#q', OOM_LINE);
  await page2.waitForSelector('#results li a');
  const first2 = await page2.$eval('#results li a', (a) => a.href);
  if (!first2.endsWith('/entries/pytorch.cuda.out-of-memory.html') || !fs.existsSync(fileURLToPath(first2)))
    fail(`hub search: first result is ${first2}`);
  await page2.press('#q', 'Enter');
  await page2.waitForURL('**/entries/pytorch.cuda.out-of-memory.html');

  const bad = await page2.evaluate(() => window.ffSearch.badPatterns());
  for (const b of bad) fail(`a pattern does not compile as a JS RegExp: ${b}`);

  lap('search box');

  // The browser ranks as the command line does.
  const queries = [OOM_LINE, NCCL_LINE, 'nccl timeout', 'loss nan', 'checkpoint save failed disk', 'segfault worker'];
  for (const q of queries) {
    const cli = cliSearch(q).slice(0, 8).map((r) => r.id);
    const web = (await page2.evaluate((t) => window.ffSearch.search(t), q)).slice(0, 8).map((r) => r.id);
    if (JSON.stringify(cli) !== JSON.stringify(web))
      fail(`ranking differs for "${q.slice(0, 50)}":\n  cli: ${cli.join(' ')}\n  web: ${web.join(' ')}`);
  }
  // The words people type: the expected entry first, in the browser and on the command line.
  for (const [q, want] of QUERIES) {
    const cli = cliSearch(q).slice(0, 3).map((r) => r.id);
    const web = (await page2.evaluate((t) => window.ffSearch.search(t), q)).slice(0, 3).map((r) => r.id);
    if (web[0] !== want) fail(`site search "${q}": first is ${web[0]}, want ${want} (then ${web.slice(1).join(' ')})`);
    if (JSON.stringify(cli) !== JSON.stringify(web))
      fail(`ranking differs for "${q}":\n  cli: ${cli.join(' ')}\n  web: ${web.join(' ')}`);
  }
  const nccl = cliSearch(NCCL_LINE);
  if (!nccl.length || nccl[0].match !== 'pattern') fail('the NCCL watchdog line does not match a pattern in the CLI');

  lap('cli parity');

  // Every example of every entry is won by its entry on one of its lines, as `kb check`
  // requires of the engine.
  const examples = [];
  for (const f of fs.readdirSync(path.join(out, 'entries'))) {
    const html = fs.readFileSync(path.join(out, 'entries', f), 'utf8');
    const id = f.replace(/\.html$/, '');
    for (const m of html.matchAll(/<pre class="log"><code>([\s\S]*?)<\/code><\/pre>/g))
      examples.push([id, unescapeHtml(m[1])]);
  }
  const misses = await page2.evaluate((list) => {
    const missed = [];
    for (const [id, text] of list) {
      const won = text.split('\n').some((line) => {
        const r = window.ffSearch.search(line);
        return r.length > 0 && r[0].kind === 'pattern' && r[0].id === id;
      });
      if (!won) missed.push(`${id}: ${text.slice(0, 120)} -> ${(window.ffSearch.search(text)[0] || {}).id}`);
    }
    return missed;
  }, examples);
  for (const m of misses) fail(`example not won by its entry in the browser: ${m}`);
  if (examples.length < 100) fail(`only ${examples.length} examples found in the entry pages`);

  lap(`${examples.length} examples`);

  // A phone, 390 px wide: no page of any kind scrolls sideways (code blocks and tables
  // scroll inside themselves). Every hub, some tag pages, the index, the fixture and the
  // largest entry pages (the likeliest to overflow) plus a sample of the others.
  await page2.setViewportSize({ width: 390, height: 844 });
  const entryFiles = fs.readdirSync(path.join(out, 'entries')).map((f) => ['entries/' + f, fs.statSync(path.join(out, 'entries', f)).size]);
  entryFiles.sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
  const narrow = new Set(['index.html', FIXTURE]);
  entryFiles.slice(0, 12).forEach(([f]) => narrow.add(f));
  entryFiles.forEach(([f], i) => { if (i % 40 === 0) narrow.add(f); });
  fs.readdirSync(path.join(out, 'frameworks')).forEach((f) => narrow.add('frameworks/' + f));
  fs.readdirSync(path.join(out, 'categories')).forEach((f) => narrow.add('categories/' + f));
  fs.readdirSync(path.join(out, 'tags')).sort().forEach((f, i) => { if (i % 50 === 0 || f === 'oom.html') narrow.add('tags/' + f); });
  for (const rel of narrow) {
    await page2.goto(pathToFileURL(path.join(out, rel)).href);
    const wide = await page2.evaluate(() => {
      const w = document.documentElement.scrollWidth;
      if (w <= 390) return null;
      // The widest culprits, for the message.
      const bad = [];
      for (const el of document.querySelectorAll('body *')) {
        const r = el.getBoundingClientRect();
        if (r.right > 391 && !el.closest('pre, .table-wrap')) bad.push(`${el.tagName.toLowerCase()}.${el.className} (${Math.round(r.right)} px)`);
      }
      return `${w} px; ${bad.slice(-3).join(', ')}`;
    });
    if (wide) fail(`${rel} scrolls sideways at 390 px: ${wide}`);
  }
  lap(`390 px: ${narrow.size} pages`);

  // The fixture's page at 390 px shows the FAQ, the symptoms table and the verify block;
  // the verify command's long line scrolls inside its block; the copy button works.
  await page2.goto(pathToFileURL(path.join(out, FIXTURE)).href);
  for (const sel of ['#faq dl.faq dt', '#symptoms table.symptoms td', '#verify pre.cmd code', '#verify .expect',
                     '#transience dl.rule', '#code figure.code figcaption', '#related .by-tag a']) {
    if (!(await page2.isVisible(sel))) fail(`${FIXTURE} at 390 px: ${sel} is not visible`);
  }
  const faq = await page2.$$eval('#faq dt', (els) => els.length);
  if (faq !== 7) fail(`${FIXTURE}: the FAQ has ${faq} questions, want 7`);
  const pre = await page2.$eval('#verify pre.cmd', (el) => [el.scrollWidth, el.clientWidth]);
  if (!(pre[0] > pre[1])) fail(`${FIXTURE}: the verify block does not scroll inside itself (${pre})`);
  await page2.click('#verify button.copy');
  await page2.waitForFunction(() => /Copied|Selected/.test(document.querySelector('#verify button.copy').textContent));
  lap('fixture page');

  await page2.setViewportSize({ width: 1280, height: 900 });

  // Both themes apply.
  await page2.emulateMedia({ colorScheme: 'light' });
  const light = await page2.evaluate(() => getComputedStyle(document.body).backgroundColor);
  await page2.emulateMedia({ colorScheme: 'dark' });
  const dark = await page2.evaluate(() => getComputedStyle(document.body).backgroundColor);
  if (light === dark) fail(`the dark theme does not apply (background ${light})`);

  if (process.env.FF_SITE_SCREENSHOTS) {
    const dir = process.env.FF_SITE_SCREENSHOTS;
    fs.mkdirSync(dir, { recursive: true });
    await page2.setViewportSize({ width: 1280, height: 900 });
    for (const [name, rel, scheme, query] of [
      ['index-light', 'index.html', 'light', NCCL_LINE],
      ['index-dark', 'index.html', 'dark', ''],
      ['entry-light', 'entries/pytorch.cuda.out-of-memory.html', 'light', ''],
      ['entry-dark', 'entries/pytorch.cuda.out-of-memory.html', 'dark', ''],
      ['hub-light', 'frameworks/pytorch.html', 'light', ''],
    ]) {
      await page2.emulateMedia({ colorScheme: scheme });
      await page2.goto(pathToFileURL(path.join(out, rel)).href);
      if (query) {
        await page2.fill('#q', query);
        await page2.waitForSelector('#results li a');
      }
      await page2.screenshot({ path: path.join(dir, `${name}.png`), fullPage: false });
    }
  }
} catch (e) {
  fail(`check crashed: ${e.stack || e}`);
} finally {
  await context.close();
  fs.rmSync(tmp, { recursive: true, force: true });
}

const secs = ((Date.now() - t0) / 1000).toFixed(1);
if (failures.length) {
  for (const f of failures) console.error(`FAIL: ${f}`);
  console.error(`${failures.length} failure(s) in ${secs} s`);
  process.exit(1);
}
console.log(`site check passed in ${secs} s: ${pages.length} pages, ${linksChecked} links, search ranks as the CLI, ` +
  `${QUERIES.length} common queries first, no sideways scroll at 390 px`);
console.log(`  (${laps.join(', ')})`);
process.exit(0);
