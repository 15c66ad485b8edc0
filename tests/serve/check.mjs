// Headless-Chromium check of `firstfault serve`, the page and the engine behind it.
//
//   node tests/serve/check.mjs path/to/firstfault SOURCE_DIR [SCREENSHOT_DIR [BIG_MB]]
//
// Starts the real server on a free loopback port, then in Chromium:
//  1. pastes a real corpus log (shared/corpus/pytorch-runs) into the box and diagnoses it
//     with Ctrl+Enter: the initiating rank, the decisive line and the fix of its label show
//     in the report, inline (the frame as tall as the report: no second scrollbar); the
//     address becomes /report/ID, a reload shows the same report, an id no longer kept is
//     said so; the downloads answer with the report, the Markdown and the JSON, named after
//     the log; the result links to its encyclopedia entry; the list of diagnoses grows;
//  2. picks a 200 MB log (BIG_MB) (a real run's log repeated): the upload's progress shows, then
//     the diagnosis; a small file dropped on the box (a real drop event) is diagnosed at
//     once, with no click;
//  3. pastes a raw error line from another real log into the encyclopedia's search: the
//     entry of that log's category comes first, as `firstfault search` ranks it;
//  4. at 390 px wide, a sample ("Try one") is diagnosed and nothing scrolls sideways.
// No request leaves the server's origin and no console error (a CSP violation is one).
// Screenshots go to SCREENSHOT_DIR. Exit: 0 pass, 1 fail, 77 skipped (no Chromium or
// playwright-core: run tools/install-deps).
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';

import { CHROMIUM, LAUNCH_ARGS, chromiumOrSkip, startWatchdog } from '../site/browser.mjs';

const [binary, source, shotsArg, bigArg] = process.argv.slice(2);
const BIG_MB = Number(bigArg || 200);
if (!binary || !source) {
  console.error('usage: node check.mjs path/to/firstfault SOURCE_DIR [SCREENSHOT_DIR]');
  process.exit(2);
}
const chromium = await chromiumOrSkip();
startWatchdog(170);

const failures = [];
const check = (ok, what) => {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
  if (!ok) failures.push(what);
};

const corpus = path.join(source, '..', 'shared', 'corpus', 'pytorch-runs');
// The corpus lives beside the checkout (README); a clone without it skips (77).
if (!fs.existsSync(path.join(corpus, 'labels.jsonl'))) {
  console.log(`skip: no corpus at ${corpus}`);
  process.exit(77);
}
const labels = new Map(fs.readFileSync(path.join(corpus, 'labels.jsonl'), 'utf8').trim().split('\n')
  .map((l) => JSON.parse(l)).map((l) => [l.id, l]));
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ff-serve-check-'));
const shots = shotsArg || path.join(tmp, 'shots');
fs.mkdirSync(shots, { recursive: true });
const env = { ...process.env };
if (!env.FIRSTFAULT_CACHE_DIR) env.FIRSTFAULT_CACHE_DIR = path.join(tmp, 'cache');

// The server, on a port it picks; its first line names the URL.
const server = spawn(binary, ['serve', '--port', '0'], { env, stdio: ['ignore', 'pipe', 'inherit'] });
const base = await new Promise((resolve, reject) => {
  const rl = readline.createInterface({ input: server.stdout });
  rl.once('line', (line) => {
    const m = line.match(/(http:\/\/127\.0\.0\.1:\d+\/)/);
    if (m) resolve(m[1]); else reject(new Error(`unexpected first line: ${line}`));
  });
  server.once('exit', (code) => reject(new Error(`firstfault serve exited with ${code}`)));
});
console.log(`server at ${base}`);

const context = await chromium.launchPersistentContext(path.join(tmp, 'profile'), {
  executablePath: CHROMIUM,
  headless: true,
  args: LAUNCH_ARGS,
  viewport: { width: 1280, height: 900 },
});
try {
  const page = context.pages()[0] ?? (await context.newPage());
  let label = '';
  page.on('console', (m) => {
    if (m.type() === 'error' && !(label === 'unknown id' && /status of 404/.test(m.text())))
      check(false, `${label}: console error: ${m.text()}`);
  });
  page.on('pageerror', (e) => check(false, `${label}: page error: ${e.message}`));
  const foreign = [];
  context.on('request', (r) => { if (!r.url().startsWith(base) && !r.url().startsWith('data:')) foreign.push(r.url()); });

  // 1. Paste a real log, diagnosed with Ctrl+Enter.
  label = 'paste';
  const pasteCase = labels.get('01_rank_exception');
  const pasted = fs.readFileSync(path.join(corpus, 'cases', '01_rank_exception.log'), 'utf8');
  const reportText = async (p) => {
    const frame = p.frameLocator('#report');
    await frame.locator('header.banner').waitFor({ timeout: 30000 });
    return frame.locator('body').innerText();
  };
  await page.goto(base);
  await page.fill('#paste', pasted);
  await page.press('#paste', 'Control+Enter');
  await page.waitForURL(/\/report\/[0-9a-f]{32}$/, { timeout: 30000 });
  const permalink = page.url();
  check(/\/report\/[0-9a-f]{32}$/.test(new URL(permalink).pathname), `paste: the address becomes /report/ID (${new URL(permalink).pathname})`);
  const shown = await reportText(page);
  check(shown.includes(pasteCase.decisive), 'paste: the report inline has the decisive line');
  check(shown.includes(`rank ${pasteCase.initiating_rank}`), `paste: the report names the rank ${pasteCase.initiating_rank}`);
  check(/\bFix\b/.test(shown), 'paste: the fix shows');
  const fit = await page.evaluate(() => {
    const f = document.getElementById('report');
    const d = f.contentDocument.documentElement;
    return { frame: f.getBoundingClientRect().height, inner: d.scrollHeight, view: f.contentWindow.innerHeight };
  });
  check(fit.frame >= fit.inner && fit.inner <= fit.view + 2,
    `paste: the report is shown whole, no scrollbar of its own (frame ${fit.frame} px, report ${fit.inner} px)`);
  check(await page.isHidden('#summary').catch(() => true), 'paste: no summary repeating the report');
  for (const [id, ext] of [['dl-html', 'html'], ['dl-md', 'md'], ['dl-json', 'json']]) {
    const href = await page.getAttribute(`#${id}`, 'href');
    const r = await page.request.get(new URL(href, base).toString());
    const body = await r.text();
    const disposition = r.headers()['content-disposition'] || '';
    check(r.ok() && /attachment/.test(disposition) && body.includes(pasteCase.decisive),
      `paste: ${id} downloads the diagnosis`);
    check(disposition.includes(`filename="pasted.firstfault.${ext}"`), `paste: ${id} is named after the log (${disposition})`);
  }
  // The name a browser saves it under, from a real click.
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('#dl-json')]);
  check(download.suggestedFilename() === 'pasted.firstfault.json', `paste: the JSON saves as ${download.suggestedFilename()}`);
  check(await page.isHidden('#progress-box'), 'paste: the progress bar is gone once the diagnosis shows');
  const entryId = JSON.parse(await (await page.request.get(permalink + '.json')).text()).primary.id;
  check((await page.getAttribute('#entry-link', 'href')) === `/#entry=${encodeURIComponent(entryId)}`,
    'paste: the result links to its encyclopedia entry');
  await page.screenshot({ path: path.join(shots, 'paste.png'), fullPage: true });
  // A reload at that address shows the same report; the list keeps the diagnosis.
  await page.reload();
  const again = await reportText(page);
  check(page.url() === permalink && again.includes(pasteCase.decisive), 'reload: the same report shows at its address');
  check((await page.locator('#history li').count()) === 1, 'reload: the list of diagnoses has it');
  await page.screenshot({ path: path.join(shots, 'reload.png'), fullPage: true });
  await page.click('#entry-link');
  await page.waitForSelector('#entry:not([hidden]) h2');
  check((await page.textContent('#entry .muted')).includes(entryId), `paste: the entry link opens ${entryId}`);
  // The report's own encyclopedia line links the entry too, and a click in the frame opens
  // it on the page (the frame's sandbox lets a click navigate the page, nothing else).
  await page.goto(permalink);
  await reportText(page);
  const inFrame = page.frameLocator('#report').locator(`a[href="/#entry=${entryId}"]`);
  check((await inFrame.count()) === 1, 'paste: the report in the page links its entry (not only `firstfault explain`)');
  if ((await inFrame.count()) === 1) {
    await inFrame.click();
    await page.waitForSelector('#entry:not([hidden]) h2', { timeout: 10000 }).catch(() => {});
    check(new URL(page.url()).hash === `#entry=${entryId}` && (await page.textContent('#entry .muted').catch(() => '')).includes(entryId),
      `paste: a click on the report's link opens ${entryId} on the page (${page.url()})`);
  }
  // An id the server no longer keeps (or never had): said so (its 404 is expected).
  label = 'unknown id';
  await page.goto(base + 'report/0123456789abcdef0123456789abcdef');
  await page.waitForSelector('#error:not([hidden])');
  check(/no longer kept/.test(await page.textContent('#error')), 'unknown id: the page says the report is no longer kept');
  await page.screenshot({ path: path.join(shots, 'unknown-id.png') });

  // 2. A 200 MB log, picked; then a small one dropped.
  label = 'big upload';
  const big = path.join(tmp, 'big-rank-exception.log');
  const piece = Buffer.from(pasted);
  const fd = fs.openSync(big, 'w');
  for (let n = 0; n < BIG_MB * 1024 * 1024; n += piece.length) fs.writeSync(fd, piece);
  fs.closeSync(fd);
  await page.goto(base);
  // Every state the progress bar passes through, noted in the page as it changes.
  await page.evaluate(() => {
    window.__progress = [];
    const note = () => {
      const box = document.getElementById('progress-box');
      if (!box.hidden) window.__progress.push(document.getElementById('progress-text').textContent);
    };
    new MutationObserver(note).observe(document.getElementById('progress-box'), { attributes: true, childList: true, subtree: true, characterData: true });
  });
  await page.setInputFiles('#files', big);
  const t0 = Date.now();
  await page.click('#go');
  await page.waitForURL(/\/report\/[0-9a-f]{32}$/, { timeout: 120000 });
  const bigText = await reportText(page);
  const seconds = (Date.now() - t0) / 1000;
  const seen = await page.evaluate(() => window.__progress);
  check(seen.some((t) => /^Uploading/.test(t)), `big upload: the upload's progress shows (${seen.length} states, e.g. ${seen.slice(0, 3).join(' | ')})`);
  check(seen.some((t) => /Diagnosing/.test(t)), 'big upload: then "Diagnosing…" shows');
  check(bigText.includes(`rank ${pasteCase.initiating_rank}`) && bigText.includes(pasteCase.decisive),
    `big upload: ${BIG_MB} MB diagnosed in ${seconds.toFixed(1)} s with the right rank and line`);
  await page.screenshot({ path: path.join(shots, 'big-upload.png') });

  label = 'drop';
  const dropCase = labels.get('04_host_oom');
  const dropText = fs.readFileSync(path.join(corpus, 'cases', '04_host_oom.log'), 'utf8');
  await page.goto(base);
  await page.evaluate((text) => {
    const dt = new DataTransfer();
    dt.items.add(new File([text], 'node3-host-oom.log', { type: 'text/plain' }));
    document.getElementById('drop').dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
  }, dropText);
  check((await page.textContent('#chosen')).includes('node3-host-oom.log'), 'drop: the dropped file is named');
  // No click: the drop diagnoses.
  await page.waitForURL(/\/report\/[0-9a-f]{32}$/, { timeout: 30000 });
  await reportText(page);
  check(true, 'drop: diagnosed at once, no click');
  check((await page.getAttribute('#dl-json', 'href')) !== null &&
    (await page.request.get(new URL(await page.getAttribute('#dl-json', 'href'), base).toString())).headers()['content-disposition']
      .includes('node3-host-oom.firstfault.json'), 'drop: the download is named after the dropped file');
  check((await page.locator('#history li').count()) >= 2, 'drop: the list of diagnoses grows');
  await page.screenshot({ path: path.join(shots, 'drop.png'), fullPage: true });
  const dropJson = await (await page.request.get(new URL(await page.getAttribute('#dl-json', 'href'), base).toString())).json();
  check(dropJson.primary && dropJson.primary.category === dropCase.category,
    `drop: the dropped log's category is its label's (${dropJson.primary && dropJson.primary.category})`);
  check(dropJson.inputs.sources[0].name === 'node3-host-oom.log', 'drop: the source is named as the file was');

  // 3. Search the encyclopedia with a raw line from another real log.
  label = 'search';
  const line = dropCase.decisive;
  await page.click('#tab-kb');
  await page.fill('#query', line);
  await page.waitForFunction(() => document.querySelectorAll('#hits li .why').length > 0, null, { timeout: 10000 });
  const first = await page.getAttribute('#hits li:first-child', 'data-id');
  const cli = JSON.parse(spawnSync(binary, ['search', '--format', 'json', '--limit', '1', line], { env, encoding: 'utf8' }).stdout);
  check(first === cli.results[0].id, `search: the page ranks first what firstfault search does (${first})`);
  const firstCategory = (await page.textContent('#hits li:first-child .id')).split(' · ')[0];
  check(firstCategory === dropCase.category, `search: the first entry is of the line's category (${firstCategory})`);
  await page.click('#hits li:first-child');
  await page.waitForSelector('#entry:not([hidden]) h2');
  check((await page.textContent('#entry h2')).length > 0, 'search: the entry opens');
  await page.screenshot({ path: path.join(shots, 'search.png') });

  // 4. A phone's width.
  label = 'phone';
  const phone = await context.newPage();
  phone.on('console', (m) => { if (m.type() === 'error') check(false, `phone: console error: ${m.text()}`); });
  await phone.setViewportSize({ width: 390, height: 844 });
  await phone.goto(base);
  await phone.waitForSelector('#samples button.sample');
  await phone.click('#samples button.sample[data-name="rank_exception.log"]');
  await phone.waitForURL(/\/report\/[0-9a-f]{32}$/, { timeout: 30000 });
  const phoneText = await reportText(phone);
  const overflow = await phone.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  check(overflow <= 0, `phone: nothing scrolls sideways at 390 px (${overflow} px over)`);
  check(phoneText.includes('rank 2'), 'phone: the sample is diagnosed');
  await phone.screenshot({ path: path.join(shots, 'phone.png'), fullPage: true });
  await phone.click('#tab-kb');
  await phone.fill('#query', 'NCCL watchdog timeout');
  await phone.waitForFunction(() => document.querySelectorAll('#hits li .why').length > 0);
  // Issue 33: each hit shows the sentence of its quick answer that holds the query's words,
  // those words marked (as the site's search does).
  const snip = await phone.evaluate(() => {
    const s = document.querySelector('#hits li:first-child .snip');
    return s ? { text: s.textContent, marks: [...s.querySelectorAll('mark')].map((m) => m.textContent.toLowerCase()) } : null;
  });
  check(snip && snip.text.length > 20 && snip.marks.some((m) => ['nccl', 'watchdog', 'timeout'].includes(m)),
    `search: the first hit shows a snippet with the query's words marked (${JSON.stringify(snip)})`);
  // Issue 33: on a phone the entry opens below the list of hits; a tap on a hit brings it
  // into view (it used to open about 2,000 px below, off the screen).
  await phone.click('#hits li:first-child');
  await phone.waitForSelector('#entry:not([hidden]) h2');
  const entryTop = await phone.evaluate(() => document.querySelector('#entry').getBoundingClientRect().top);
  check(entryTop >= 0 && entryTop < 844 / 2, `phone: a tap on a hit shows its entry on the screen (top at ${Math.round(entryTop)} px)`);
  await phone.screenshot({ path: path.join(shots, 'phone-entry.png') });
  await phone.evaluate(() => window.scrollTo(0, 0));
  const kbOverflow = await phone.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  check(kbOverflow <= 0, `phone: the encyclopedia fits 390 px (${kbOverflow} px over)`);
  await phone.screenshot({ path: path.join(shots, 'phone-search.png') });

  check(foreign.length === 0, `no request leaves the server (${foreign.slice(0, 3).join(', ')})`);
  console.log(`screenshots: ${shots}`);
} finally {
  await context.close();
  server.kill('SIGTERM');
  fs.rmSync(tmp, { recursive: true, force: true, maxRetries: 3 });
}
if (failures.length) {
  console.error(`${failures.length} check(s) failed`);
  process.exit(1);
}
console.log('all checks passed');
