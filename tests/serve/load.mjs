// Load and fault test of `firstfault serve` on loopback (a bounded client; it stops by
// itself).
//
//   node tests/serve/load.mjs path/to/firstfault SOURCE_DIR
//
// 50 diagnoses of a 1 MB real log (a corpus run's log repeated) at once, every answer
// compared with `firstfault diagnose --format json` on the same file; meanwhile clients
// that misbehave: slow-loris connections that send half their headers and go silent, an
// upload declared larger than the limit, a malformed multipart body, a wrong Host header.
// Each of those gets a clean answer (or is dropped after the read timeout), none disturbs
// the 50, the server's memory stays under a bound (its peak RSS is printed), and the
// server still answers afterwards. Exit: 0 pass, 1 fail.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';

const [binary, source] = process.argv.slice(2);
if (!binary || !source) {
  console.error('usage: node load.mjs path/to/firstfault SOURCE_DIR');
  process.exit(2);
}
const watchdog = setTimeout(() => { console.error('FAIL: the load test took longer than 170 s'); process.exit(1); }, 170000);
watchdog.unref();

const CONCURRENT = 50;
const RSS_BOUND_MB = 600;
const failures = [];
const check = (ok, what) => {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
  if (!ok) failures.push(what);
};

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ff-serve-load-'));
const env = { ...process.env };
if (!env.FIRSTFAULT_CACHE_DIR) env.FIRSTFAULT_CACHE_DIR = path.join(tmp, 'cache');
const corpus = path.join(source, '..', 'shared', 'corpus', 'pytorch-runs');
// The corpus lives beside the checkout (README); a clone without it skips (77).
if (!fs.existsSync(path.join(corpus, 'labels.jsonl'))) {
  console.log(`skip: no corpus at ${corpus}`);
  process.exit(77);
}
const label = fs.readFileSync(path.join(corpus, 'labels.jsonl'), 'utf8').trim().split('\n')
  .map((l) => JSON.parse(l)).find((l) => l.id === '01_rank_exception__rankprefix');
const one = fs.readFileSync(path.join(corpus, 'cases', `${label.id}.log`));
const log = Buffer.concat(Array(Math.ceil((1 << 20) / one.length)).fill(one));
const logFile = path.join(tmp, 'one-megabyte.log');
fs.writeFileSync(logFile, log);
const expected = JSON.parse(spawnSync(binary, ['diagnose', '--format', 'json', logFile], { env, encoding: 'utf8' }).stdout);
check(expected.primary && expected.primary.rank === label.initiating_rank, `the CLI's answer for the 1 MB log is the label's (rank ${expected.primary?.rank})`);

const server = spawn(binary, ['serve', '--port', '0', '--jobs', '2', '--queue', '64', '--read-timeout', '2'],
  { env, stdio: ['ignore', 'pipe', 'inherit'] });
const base = await new Promise((resolve, reject) => {
  const rl = readline.createInterface({ input: server.stdout });
  rl.once('line', (line) => {
    const m = line.match(/(http:\/\/127\.0\.0\.1:(\d+)\/)/);
    if (m) resolve(m[1]); else reject(new Error(`unexpected first line: ${line}`));
  });
  server.once('exit', (code) => reject(new Error(`firstfault serve exited with ${code}`)));
});
const port = Number(new URL(base).port);
let alive = true;
server.on('exit', () => { alive = false; });

// The server's resident memory, sampled while the test runs.
const rssMb = () => {
  try {
    const m = fs.readFileSync(`/proc/${server.pid}/status`, 'utf8').match(/VmRSS:\s+(\d+) kB/);
    return m ? Number(m[1]) / 1024 : 0;
  } catch { return 0; }
};
const idleRss = rssMb();
let peakRss = idleRss;
const sampler = setInterval(() => { peakRss = Math.max(peakRss, rssMb()); }, 20);

// A raw request; resolves with what the server sent before closing (or '' when it closed
// without a word) and how long that took.
function raw(bytes, { keepSilent = false, timeoutMs = 15000 } = {}) {
  return new Promise((resolve) => {
    const t0 = Date.now();
    const s = net.connect(port, '127.0.0.1');
    let got = '';
    s.on('connect', () => { s.write(bytes); if (!keepSilent) { /* the request is complete */ } });
    s.on('data', (d) => { got += d.toString('latin1'); });
    s.on('error', () => {});
    s.on('close', () => resolve({ got, ms: Date.now() - t0 }));
    setTimeout(() => { s.destroy(); resolve({ got, ms: Date.now() - t0, timedOut: true }); }, timeoutMs);
  });
}

const host = `127.0.0.1:${port}`;
const bad = [];
for (let i = 0; i < 10; i++) {
  bad.push(raw(`POST /api/diagnose HTTP/1.1\r\nHost: ${host}\r\nContent-Type: text/plain\r\nX-Slow: `, { keepSilent: true })
    .then((r) => ({ kind: 'slow-loris', ...r })));
}
bad.push(raw(`POST /api/diagnose HTTP/1.1\r\nHost: ${host}\r\nContent-Type: text/plain\r\nContent-Length: 100000000000\r\n\r\n` +
  'x'.repeat(1 << 20)).then((r) => ({ kind: 'oversize', ...r })));
const mp = '--B\r\nContent-Disposition: form-data; name="file"; filename="a.log"\r\n\r\nline without an end';
bad.push(raw(`POST /api/diagnose HTTP/1.1\r\nHost: ${host}\r\nContent-Type: multipart/form-data; boundary=B\r\n` +
  `Content-Length: ${mp.length}\r\nConnection: close\r\n\r\n${mp}`).then((r) => ({ kind: 'malformed multipart', ...r })));
bad.push(raw(`GET /healthz HTTP/1.1\r\nHost: rebind.example:${port}\r\nConnection: close\r\n\r\n`)
  .then((r) => ({ kind: 'wrong Host', ...r })));

const t0 = Date.now();
const answers = await Promise.all(Array.from({ length: CONCURRENT }, async (_, i) => {
  const s = Date.now();
  try {
    const r = await fetch(`${base}api/diagnose?name=run-${i}.log`, { method: 'POST', body: log, headers: { 'Content-Type': 'text/plain' } });
    const j = await r.json();
    return { status: r.status, j, ms: Date.now() - s };
  } catch (e) {
    return { status: 0, error: String(e), ms: Date.now() - s };
  }
}));
const wall = (Date.now() - t0) / 1000;
const badResults = await Promise.all(bad);
clearInterval(sampler);
peakRss = Math.max(peakRss, rssMb());

const right = answers.filter((a) => a.status === 200 && a.j.verdict === expected.verdict &&
  a.j.primary?.id === expected.primary.id && a.j.primary?.rank === expected.primary.rank &&
  a.j.primary?.evidence?.[0]?.line === expected.primary.evidence[0].line && a.j.inputs?.lines === expected.inputs.lines);
check(right.length === CONCURRENT, `${right.length}/${CONCURRENT} concurrent diagnoses of a 1 MB log answered like the CLI` +
  (right.length < CONCURRENT ? ` (first wrong: ${JSON.stringify(answers.find((a) => !right.includes(a))).slice(0, 300)})` : ''));
const ms = answers.map((a) => a.ms).sort((a, b) => a - b);
console.log(`figures: ${CONCURRENT} x 1 MB in ${wall.toFixed(1)} s (${(CONCURRENT / wall).toFixed(1)} diagnoses/s), latency p50 ${ms[Math.floor(ms.length / 2)]} ms, ` +
  `max ${ms[ms.length - 1]} ms; server RSS idle ${idleRss.toFixed(0)} MB, peak ${peakRss.toFixed(0)} MB`);
check(peakRss > 0 && peakRss < RSS_BOUND_MB, `the server's peak RSS ${peakRss.toFixed(0)} MB stays under ${RSS_BOUND_MB} MB`);

for (const r of badResults.filter((b) => b.kind === 'slow-loris')) {
  check(!r.timedOut && r.ms < 10000, `slow-loris: dropped after ${r.ms} ms (${r.got.split('\r\n')[0] || 'closed'})`);
}
const status = (r) => Number((r.got.match(/^HTTP\/1\.1 (\d{3})/) || [])[1]);
const byKind = (k) => badResults.find((b) => b.kind === k);
check(status(byKind('oversize')) === 413 && /max-upload/.test(byKind('oversize').got), `oversize: 413 with the limit named`);
check(status(byKind('malformed multipart')) === 400 && /multipart/.test(byKind('malformed multipart').got), 'malformed multipart: 400 that says so');
check(status(byKind('wrong Host')) === 421 && /rebind\.example/.test(byKind('wrong Host').got), 'wrong Host: 421 naming the host');

const health = await fetch(`${base}healthz`).then((r) => r.json()).catch(() => null);
check(alive && health && health.status === 'ok' && health.diagnoses_running === 0, 'the server is up and idle afterwards');

server.kill('SIGTERM');
await new Promise((r) => { if (!alive) r(); else server.once('exit', r); });
fs.rmSync(tmp, { recursive: true, force: true });
if (failures.length) {
  console.error(`${failures.length} check(s) failed`);
  process.exit(1);
}
console.log('all checks passed');
