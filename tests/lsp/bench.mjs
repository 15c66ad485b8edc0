// Measures `firstfault lsp` on a big buffer (issue 19: "fast on a 100 MB buffer"): the time
// from didOpen to the diagnostics, from a one-line incremental edit to the new ones (300 ms
// of it is the debounce), and how soon a diagnosis in flight gives way to a newer edit.
//
//   FIRSTFAULT=build/firstfault FF_SOURCE_DIR=. node tests/lsp/bench.mjs [MiB]
// A benchmark, not a test: it prints figures (BENCHMARKS.md keeps them).
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';

const require = createRequire(import.meta.url);
const rpc = require('vscode-languageserver-protocol/node');
const mib = Number(process.argv[2] ?? 100);
const root = process.env.FF_SOURCE_DIR;
// A real run's log (rank prefixes, progress lines, the failure), repeated to the size
// asked: the failure of the last copy is the one the editor would show.
const one = readFileSync(resolve(root, 'tests/data/01_rank_exception__rankprefix.log'), 'utf8');
const text = one.repeat(Math.ceil((mib << 20) / one.length));
const uri = 'file:///bench/big.log';

const child = spawn(process.env.FIRSTFAULT, ['lsp'], { stdio: ['pipe', 'pipe', 'inherit'] });
const conn = rpc.createProtocolConnection(new rpc.StreamMessageReader(child.stdout), new rpc.StreamMessageWriter(child.stdin));
let waiting = null;
conn.onNotification('textDocument/publishDiagnostics', (p) => { if (waiting && p.version === waiting.version) waiting.res(p); });
conn.listen();
const until = (version) => new Promise((res) => { waiting = { version, res }; });
await conn.sendRequest('initialize', { processId: process.pid, rootUri: null, capabilities: {} });

let t = performance.now();
let p = until(1);
await conn.sendNotification('textDocument/didOpen', { textDocument: { uri, languageId: 'log', version: 1, text } });
let d = await p;
const open = performance.now() - t;
const err = d.diagnostics.find((x) => x.severity === 1);
console.log(`${(text.length / 1048576).toFixed(0)} MiB buffer, ${text.split('\n').length} lines; decisive line ${err?.range.start.line}`);
console.log(`didOpen -> diagnostics: ${open.toFixed(0)} ms`);

t = performance.now();
p = until(2);
await conn.sendNotification('textDocument/didChange', { textDocument: { uri, version: 2 },
  contentChanges: [{ range: { start: { line: 0, character: 0 }, end: { line: 0, character: 0 } }, text: 'edited\n' }] });
d = await p;
console.log(`one-line edit -> diagnostics: ${(performance.now() - t).toFixed(0)} ms (300 ms debounce included)`);

// An edit, then another while the first one's diagnosis runs: the first is cancelled.
p = until(4);
await conn.sendNotification('textDocument/didChange', { textDocument: { uri, version: 3 },
  contentChanges: [{ range: { start: { line: 0, character: 0 }, end: { line: 1, character: 0 } }, text: '' }] });
await new Promise((r) => setTimeout(r, 400));
t = performance.now();
await conn.sendNotification('textDocument/didChange', { textDocument: { uri, version: 4 },
  contentChanges: [{ range: { start: { line: 0, character: 0 }, end: { line: 0, character: 0 } }, text: 'again\n' }] });
d = await p;
console.log(`edit during a diagnosis -> diagnostics of the newer text: ${(performance.now() - t).toFixed(0)} ms (300 ms debounce included)`);
await conn.sendRequest('shutdown');
await conn.sendNotification('exit');
