// Headless-Chromium check of the encyclopedia on a phone and in search (issue 33).
//
//   node tests/site/check-phone.mjs path/to/firstfault [SCREENSHOT_DIR]
//
// Generates the site from the built-in KB and checks, over file://:
//  1. the index is paged: a page per category (categories/<slug>.html), linked from the
//     index, together listing every entry once; the index itself is short;
//  2. anchors clear the sticky header: the target of index.html#frameworks, a hub's
//     #compare and an entry's #fix starts below the header, not under it;
//  3. at 390 px with touch (a phone), the navigation folds behind a menu button that a tap
//     opens, and a tap on a link in it goes there;
//  4. search results show the text they matched (the pasted line with the match marked, or
//     the entry's quick answer with the query's words marked), only the good matches are
//     listed and the weaker ones counted, as `firstfault search`'s "relevant" counts them;
//  5. on the phone, typing in the search box and tapping a hit opens that entry, from the
//     index's box and from a page's header box.
// Screenshots go to SCREENSHOT_DIR. Exit: 0 pass, 1 fail, 77 skipped (no Chromium or
// playwright-core: run tools/install-deps).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

import { CHROMIUM, LAUNCH_ARGS, checks, chromiumOrSkip, startWatchdog } from './browser.mjs';

const [binary, shotsArg] = process.argv.slice(2);
if (!binary) {
  console.error('usage: node check-phone.mjs path/to/firstfault [SCREENSHOT_DIR]');
  process.exit(2);
}
const chromium = await chromiumOrSkip();
startWatchdog(120);

const { check, done } = checks();

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ff-site-phone-'));
const out = path.join(tmp, 'site');
const shots = shotsArg || path.join(tmp, 'shots');
fs.mkdirSync(shots, { recursive: true });
const env = { ...process.env };
if (!env.FIRSTFAULT_CACHE_DIR) env.FIRSTFAULT_CACHE_DIR = path.join(tmp, 'cache');
execFileSync(binary, ['site', out], { env, stdio: ['ignore', 'ignore', 'inherit'] });
const url = (rel) => {
  const [file, hash] = rel.split('#');
  return pathToFileURL(path.join(out, file)).href + (hash ? `#${hash}` : '');
};
const cli = (q) => JSON.parse(execFileSync(binary, ['search', '--format', 'json', '--limit', '0', q],
  { env, stdio: ['ignore', 'pipe', 'ignore'] }).toString());

const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: LAUNCH_ARGS });
try {
  const desk = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await desk.newPage();
  page.on('pageerror', (e) => check(false, `page error: ${e.message}`));
  page.on('console', (m) => { if (m.type() === 'error') check(false, `console error: ${m.text()}`); });

  // 1. A paged index.
  await page.goto(url('index.html'));
  const indexHeight = await page.evaluate(() => document.documentElement.scrollHeight);
  const catLinks = await page.$$eval('#categories a.cat-card', (as) => as.map((a) => a.getAttribute('href')));
  const total = await page.evaluate(() => window.FF_INDEX.entries.length);
  check(indexHeight < 6000, `index: ${indexHeight} px tall, not every entry on one page`);
  check(catLinks.length > 5 && catLinks.every((h) => /^categories\/[a-z-]+\.html$/.test(h)),
    `index: links a page per category (${catLinks.length})`);
  let listed = 0;
  for (const href of catLinks) {
    await page.goto(url(href));
    listed += await page.locator('ul.entry-list li.entry-item').count();
  }
  check(listed === total, `the category pages list every entry once (${listed} of ${total})`);
  await page.screenshot({ path: path.join(shots, 'category-page.png') });
  check(await page.locator('nav.pager a').count() >= 1, 'a category page links the next or previous one');

  // 2. Anchors below the sticky header.
  const entry = 'entries/pytorch.cuda.out-of-memory.html';
  for (const target of ['index.html#frameworks', 'frameworks/pytorch.html#compare', `${entry}#fix`]) {
    await page.goto(url(target));
    await page.waitForTimeout(50);
    const pos = await page.evaluate((id) => ({
      header: document.querySelector('header.top').getBoundingClientRect().bottom,
      top: document.getElementById(id).getBoundingClientRect().top,
      sticky: getComputedStyle(document.querySelector('header.top')).position,
    }), target.split('#')[1]);
    check(pos.top >= pos.header - 1, `${target}: the target starts below the ${pos.sticky} header (${Math.round(pos.top)} >= ${Math.round(pos.header)})`);
  }
  await page.screenshot({ path: path.join(shots, 'anchor-below-header.png') });

  // 4. Snippets and the cut-off, on a desktop.
  await page.goto(url('index.html'));
  for (const q of ['nccl timeout', 'loss nan', 'checkpoint save failed disk',
    'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.']) {
    const want = cli(q).relevant;
    const got = await page.evaluate((t) => window.ffSearch.relevant(window.ffSearch.search(t)), q);
    check(want === got, `"${q.slice(0, 40)}": the page counts ${got} good matches, firstfault search ${want}`);
  }
  await page.fill('#q', 'nccl timeout');
  await page.waitForSelector('#results li.result');
  const shown = await page.$$eval('#results li.result:not(.more)', (lis) => lis.map((li) => ({
    snip: li.querySelector('.r-snip')?.textContent || '', marks: li.querySelectorAll('.r-snip mark').length,
  })));
  const all = await page.evaluate(() => window.ffSearch.search('nccl timeout').length);
  const good = cli('nccl timeout').relevant;
  const status = await page.textContent('#search-status');
  check(shown.length <= good && good < all, `nccl timeout: ${shown.length} shown of ${good} good matches (${all} in all)`);
  check(/good match/.test(status) && new RegExp(`${all - good} weaker`).test(status), `the status says how many more (${status})`);
  check(shown.length > 0 && shown.every((r) => r.snip.length > 20 && r.marks > 0 && !/^keywords:/.test(r.snip)),
    `every hit shows a snippet with the query's words marked (${shown[0] && shown[0].snip.slice(0, 80)})`);
  await page.screenshot({ path: path.join(shots, 'search-snippets.png') });
  await page.fill('#q', '[rank3]:[E1120 10:11:12.345678 140 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600123 milliseconds before timing out.');
  await page.waitForSelector('#results li.by-pattern .r-snip mark');
  const mark = await page.textContent('#results li.by-pattern .r-snip mark');
  check(mark.length > 10, `a pasted line's hit marks what the pattern matched (${mark.slice(0, 60)})`);
  await desk.close();

  // 3 and 5. A phone.
  const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 2 });
  const p = await phone.newPage();
  p.on('pageerror', (e) => check(false, `phone page error: ${e.message}`));
  await p.goto(url(entry));
  check(!(await p.isVisible('#top-nav')) && (await p.isVisible('.menu-btn')), 'phone: the navigation is folded behind a menu button');
  await p.tap('.menu-btn');
  check(await p.isVisible('#top-nav a[href$="#tags"]'), 'phone: a tap on the menu button shows the navigation');
  check((await p.getAttribute('.menu-btn', 'aria-expanded')) === 'true', 'phone: the button says it is expanded');
  await p.screenshot({ path: path.join(shots, 'phone-menu.png') });
  await p.tap('#top-nav a[href$="#tags"]');
  await p.waitForURL(/index\.html#tags$/);
  const tagsTop = await p.evaluate(() => document.getElementById('tags').getBoundingClientRect().top);
  check(tagsTop >= 0 && tagsTop < 844, `phone: a tap on Tags goes there (top at ${Math.round(tagsTop)} px)`);
  const overflow = await p.evaluate(() => document.documentElement.scrollWidth);
  check(overflow <= 390, `phone: the index fits 390 px (${overflow})`);

  for (const from of ['index.html', 'frameworks/pytorch.html']) {
    await p.goto(url(from));
    await p.tap('#q');
    await p.fill('#q', 'cuda out of memory');
    await p.waitForSelector('#results li.result a');
    const href = await p.getAttribute('#results li.result a', 'href');
    const title = (await p.textContent('#results li.result .r-title')).trim();
    await p.screenshot({ path: path.join(shots, `phone-search-${from.replace(/\W+/g, '-')}.png`) });
    await p.tap('#results li.result a');
    await p.waitForURL((u) => u.href.endsWith(href.replace(/^(\.\.\/)+/, '')), { timeout: 5000 }).catch(() => {});
    const h1 = await p.evaluate(() => {
      const h = document.querySelector('article.entry h1');
      return h ? { text: h.textContent.trim(), top: h.getBoundingClientRect().top } : null;
    });
    check(h1 !== null && h1.text === title && h1.top >= 0 && h1.top < 844,
      `phone: from ${from}, a tap on the first hit opens it (${h1 && h1.text})`);
  }
  await p.screenshot({ path: path.join(shots, 'phone-entry.png') });
  await phone.close();
} catch (e) {
  check(false, `check crashed: ${e.stack || e}`);
} finally {
  await browser.close();
  fs.rmSync(tmp, { recursive: true, force: true });
}
console.log(`screenshots: ${shots}`);
done();
