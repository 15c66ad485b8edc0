// The encyclopedia's search (assets/search.js over assets/search-index.js) run under Node,
// without a browser: the words of tests/data/search-queries.tsv must rank their entry
// first, and the first three results must equal `firstfault search`'s.
//
//   node tests/site/search-node.mjs path/to/firstfault
//
// Exit: 0 pass, 1 fail. (tests/site/check.mjs checks the same in Chromium, where one is
// installed.)
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import vm from 'node:vm';

const binary = process.argv[2];
if (!binary) {
  console.error('usage: node search-node.mjs path/to/firstfault');
  process.exit(2);
}
const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ff-search-node-'));
const env = { ...process.env };
if (!env.FIRSTFAULT_CACHE_DIR) env.FIRSTFAULT_CACHE_DIR = path.join(tmp, 'cache');
const out = path.join(tmp, 'site');
const failures = [];
try {
  execFileSync(binary, ['site', out], { env, stdio: ['ignore', 'ignore', 'inherit'] });

  // A page's globals, as far as search.js reads them.
  const document = {
    readyState: 'complete',
    getElementById: () => null,
    querySelectorAll: () => [],
    addEventListener: () => {},
  };
  const context = { document, TextEncoder, URLSearchParams, Set, Map };
  context.window = context;
  vm.createContext(context);
  for (const f of ['search-index.js', 'search.js'])
    vm.runInContext(fs.readFileSync(path.join(out, 'assets', f), 'utf8'), context, { filename: f });
  const web = (q) => context.ffSearch.search(q).map((r) => r.id);

  const queries = fs
    .readFileSync(path.join(repo, 'tests', 'data', 'search-queries.tsv'), 'utf8')
    .split('\n')
    .filter((l) => l.trim() && !l.startsWith('#'))
    .map((l) => l.split('\t'));
  for (const [q, want] of queries) {
    const js = web(q).slice(0, 3);
    let cli = [];
    try {
      cli = JSON.parse(
        execFileSync(binary, ['search', '--format', 'json', '--limit', '3', q], { env, stdio: ['ignore', 'pipe', 'ignore'] }).toString(),
      ).results.map((r) => r.id);
    } catch (e) {
      if (e.status !== 1) throw e;
    }
    if (js[0] !== want) failures.push(`"${q}": the site's search ranks ${js[0]} first, want ${want} (then ${js.slice(1).join(' ')})`);
    if (JSON.stringify(js) !== JSON.stringify(cli)) failures.push(`"${q}": site ${js.join(' ')} but CLI ${cli.join(' ')}`);
  }
  if (failures.length === 0) console.log(`search under node: ${queries.length} queries rank their entry first, as the CLI does`);
} finally {
  fs.rmSync(tmp, { recursive: true, force: true });
}
for (const f of failures) console.error(`FAIL: ${f}`);
process.exit(failures.length ? 1 : 0);
