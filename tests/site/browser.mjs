// What the headless-Chromium checks share (check.mjs: the encyclopedia, check-report.mjs:
// the HTML report): Debian's chromium driven by playwright-core, skipped (exit 77) when
// either is missing, a watchdog, and the flags that keep the browser off the network.
import fs from 'node:fs';

export const CHROMIUM = '/usr/bin/chromium';

export const LAUNCH_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

// playwright-core's chromium, or exit 77 (skipped) saying what is missing.
export async function chromiumOrSkip() {
  if (!fs.existsSync(CHROMIUM)) {
    console.log(`SKIP: ${CHROMIUM} is missing (tools/install-deps installs Debian's chromium)`);
    process.exit(77);
  }
  try {
    return (await import('playwright-core')).chromium;
  } catch {
    console.log('SKIP: playwright-core is missing (npm ci --prefix tests/site, done by tools/install-deps)');
    process.exit(77);
  }
}

// Fails the check when it runs longer than `seconds`.
export function startWatchdog(seconds) {
  const t = setTimeout(() => {
    console.error(`FAIL: the check took longer than ${seconds} s`);
    process.exit(1);
  }, seconds * 1000);
  t.unref();
}

// The checks' tally: check(ok, what) prints "ok" or "FAIL" and the check, done() prints the
// count and exits 0 when every check passed, else 1.
export function checks() {
  const failures = [];
  const check = (ok, what) => {
    console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
    if (!ok) failures.push(what);
  };
  const done = () => {
    console.log(failures.length ? `${failures.length} check(s) failed` : 'all checks passed');
    process.exit(failures.length ? 1 : 0);
  };
  return { check, done };
}
