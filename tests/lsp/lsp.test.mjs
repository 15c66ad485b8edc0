// `firstfault lsp` driven over stdio by Microsoft's LSP client library
// (vscode-languageserver-protocol / vscode-jsonrpc), under node's test runner.
//
//   FIRSTFAULT=build/firstfault FF_SOURCE_DIR=. node --test tests/lsp/lsp.test.mjs
//
// The document is a real run (tests/data/01_rank_exception__rankprefix.log, from
// ../shared/corpus/pytorch-runs); the decisive line expected is the corpus label's, and the
// line number the one `firstfault diagnose --format json` gives for the same file.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL, fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const binary = process.env.FIRSTFAULT;
const root = process.env.FF_SOURCE_DIR;
let rpc;
try {
  rpc = require('vscode-languageserver-protocol/node');
} catch {
  rpc = null;
}
const skip = !binary || !root ? 'FIRSTFAULT and FF_SOURCE_DIR not set' : !rpc ? 'npm ci not run in tests/lsp (tools/install-deps)' : false;

const logPath = skip ? '' : resolve(root, 'tests/data/01_rank_exception__rankprefix.log');
const healthyPath = skip ? '' : resolve(root, 'tests/data/09_healthy__tee.log');
const uri = skip ? '' : pathToFileURL(logPath).href;
const logText = skip ? '' : readFileSync(logPath, 'utf8');
const lines = logText.split('\n');

// What the CLI says about the same file, and the corpus label when the corpus is here.
function cli(path) {
  try {
    return JSON.parse(execFileSync(binary, ['diagnose', '--format', 'json', path], { encoding: 'utf8' }));
  } catch (e) {
    return JSON.parse(e.stdout);
  }
}
function label(id) {
  const labels = resolve(root, '../shared/corpus/pytorch-runs/labels.jsonl');
  if (!existsSync(labels)) return null;
  for (const l of readFileSync(labels, 'utf8').split('\n')) if (l.trim() && JSON.parse(l).id === id) return JSON.parse(l);
  return null;
}

let child, conn, stderr = '';
const published = []; // every publishDiagnostics, in order
const waiters = [];
const showDocuments = [];
const messages = [];

function nextDiagnostics(pred) {
  const hit = published.find(pred);
  if (hit) return Promise.resolve(hit);
  return new Promise((res, rej) => {
    const t = setTimeout(() => rej(new Error('no matching publishDiagnostics in 20 s; stderr: ' + stderr)), 20000);
    waiters.push({ pred, res: (p) => { clearTimeout(t); res(p); } });
  });
}

let version = 1;
const expected = {};

before(async () => {
  if (skip) return;
  child = spawn(binary, ['lsp'], { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env } });
  child.stderr.on('data', (d) => { stderr += d; });
  conn = rpc.createProtocolConnection(new rpc.StreamMessageReader(child.stdout), new rpc.StreamMessageWriter(child.stdin));
  conn.onNotification('textDocument/publishDiagnostics', (p) => {
    published.push(p);
    for (let i = waiters.length - 1; i >= 0; i--) if (waiters[i].pred(p)) waiters.splice(i, 1)[0].res(p);
  });
  conn.onNotification('window/showMessage', (p) => messages.push(p));
  conn.onRequest('window/showDocument', (p) => { showDocuments.push(p); return { success: true }; });
  conn.listen();
  const j = cli(logPath);
  assert.equal(j.verdict, 'failed');
  expected.line = j.primary.evidence[0].line - 1;
  expected.id = j.primary.id;
  expected.title = j.primary.title;
  expected.verifyFirstLine = j.primary.verify.split('\n')[0];
  expected.label = label('01_rank_exception__rankprefix');
});

after(() => {
  if (child && child.exitCode === null) child.kill();
});

test('initialize: incremental sync, hover, code actions, commands', { skip }, async () => {
  const r = await conn.sendRequest('initialize', { processId: process.pid, rootUri: null, capabilities: {} });
  assert.equal(r.serverInfo.name, 'firstfault');
  assert.equal(r.capabilities.textDocumentSync.change, 2);
  assert.equal(r.capabilities.hoverProvider, true);
  assert.ok(r.capabilities.codeActionProvider);
  assert.ok(r.capabilities.executeCommandProvider.commands.includes('firstfault.openReport'));
  await conn.sendNotification('initialized', {});
});

test('open a real log: the decisive line is an Error, collateral Information, the user frame a Hint', { skip }, async () => {
  await conn.sendNotification('textDocument/didOpen', { textDocument: { uri, languageId: 'log', version, text: logText } });
  const p = await nextDiagnostics((p) => p.uri === uri && p.version === version);
  const errors = p.diagnostics.filter((d) => d.severity === 1);
  assert.equal(errors.length, 1, JSON.stringify(p.diagnostics));
  const err = errors[0];
  assert.equal(err.range.start.line, expected.line, 'the line the CLI names');
  assert.equal(err.code, expected.id);
  assert.ok(err.message.startsWith(expected.title), err.message);
  if (expected.label) assert.ok(lines[err.range.start.line].includes(expected.label.decisive), lines[err.range.start.line]);
  assert.equal(err.range.end.character, lines[expected.line].length, 'the whole line (ASCII: UTF-16 = bytes)');
  const infos = p.diagnostics.filter((d) => d.severity === 3);
  expected.collateral = infos;
  assert.ok(infos.length >= 1, 'collateral (the other ranks, the launcher)');
  for (const i of infos) {
    assert.equal(i.relatedInformation[0].location.uri, uri);
    assert.equal(i.relatedInformation[0].location.range.start.line, expected.line, 'points at the decisive line');
    assert.notEqual(i.range.start.line, expected.line);
  }
  const hints = p.diagnostics.filter((d) => d.severity === 4);
  assert.equal(hints.length, 1);
  assert.match(lines[hints[0].range.start.line], /File "scenarios\/common\.py", line \d+, in /);
  assert.ok(hints[0].range.start.line < expected.line, 'above the decisive line, in its traceback');
});

test('hover on the decisive line: quick answer, fix, verify command', { skip }, async () => {
  const h = await conn.sendRequest('textDocument/hover', { textDocument: { uri }, position: { line: expected.line, character: 10 } });
  assert.equal(h.contents.kind, 'markdown');
  assert.ok(h.contents.value.includes(`**${expected.title}**`), h.contents.value);
  assert.ok(h.contents.value.includes('**Fix**'));
  assert.ok(h.contents.value.includes('**Verify**'));
  assert.ok(h.contents.value.includes(expected.verifyFirstLine), h.contents.value);
  // A collateral line: its own entry (the one the diagnostic names), not the primary.
  const c = expected.collateral[0];
  const ch = await conn.sendRequest('textDocument/hover', { textDocument: { uri }, position: { line: c.range.start.line, character: 0 } });
  assert.ok(ch.contents.value.includes(`\`${c.code}\``), ch.contents.value);
  assert.ok(!ch.contents.value.includes('The first failure of this log'));
  const none = await conn.sendRequest('textDocument/hover', { textDocument: { uri }, position: { line: 1, character: 0 } });
  assert.equal(none, null, 'a line no entry recognises has no hover');
});

test('code actions: open the entry, copy the verify command, open the HTML report', { skip }, async () => {
  const range = { start: { line: expected.line, character: 0 }, end: { line: expected.line, character: 0 } };
  const actions = await conn.sendRequest('textDocument/codeAction', { textDocument: { uri }, range, context: { diagnostics: [] } });
  const by = Object.fromEntries(actions.map((a) => [a.command.command, a]));
  assert.deepEqual(Object.keys(by).sort(), ['firstfault.copyVerifyCommand', 'firstfault.openEntry', 'firstfault.openReport']);
  assert.equal(by['firstfault.openEntry'].command.arguments[0], expected.id);
  assert.ok(by['firstfault.copyVerifyCommand'].command.arguments[0].includes(expected.verifyFirstLine));

  const report = await conn.sendRequest('workspace/executeCommand', by['firstfault.openReport'].command);
  const html = readFileSync(fileURLToPath(report.uri), 'utf8');
  assert.match(html, /^<!DOCTYPE html>/i);
  assert.ok(html.includes('Content-Security-Policy'));
  assert.ok(showDocuments.some((s) => s.uri === report.uri && s.external === true), 'window/showDocument asked');

  const entry = await conn.sendRequest('workspace/executeCommand', by['firstfault.openEntry'].command);
  assert.ok(readFileSync(fileURLToPath(entry.uri), 'utf8').startsWith(`# ${expected.title}`));

  const copied = await conn.sendRequest('workspace/executeCommand', by['firstfault.copyVerifyCommand'].command);
  assert.equal(copied.text, by['firstfault.copyVerifyCommand'].command.arguments[0]);
  await new Promise((r) => setTimeout(r, 50));
  assert.ok(messages.some((m) => m.message.includes(expected.verifyFirstLine)), 'shown to clients without a clipboard command');

  await assert.rejects(conn.sendRequest('workspace/executeCommand', { command: 'firstfault.openEntry', arguments: ['no.such.entry'] }),
    (e) => e.code === -32602);
});

test('change: an incremental edit moves the diagnostics; a burst of edits is diagnosed once', { skip }, async () => {
  // Three lines inserted at the top: the decisive line is three lines lower.
  version++;
  await conn.sendNotification('textDocument/didChange', {
    textDocument: { uri, version },
    contentChanges: [{ range: { start: { line: 0, character: 0 }, end: { line: 0, character: 0 } }, text: 'one\ntwo\nthree\n' }],
  });
  let p = await nextDiagnostics((p) => p.uri === uri && p.version === version);
  assert.equal(p.diagnostics.find((d) => d.severity === 1).range.start.line, expected.line + 3);

  // Ten edits in a row (each deletes one of the first lines, then the last re-inserts
  // them): debounced, only the last version is diagnosed.
  const first = version + 1;
  for (let i = 0; i < 10; i++) {
    version++;
    const change = i < 9
      ? { range: { start: { line: 0, character: 0 }, end: { line: 0, character: 1 } }, text: '' }
      : { range: { start: { line: 0, character: 0 }, end: { line: 3, character: 0 } }, text: '' };
    await conn.sendNotification('textDocument/didChange', { textDocument: { uri, version }, contentChanges: [change] });
  }
  p = await nextDiagnostics((p) => p.uri === uri && p.version === version);
  assert.equal(p.diagnostics.find((d) => d.severity === 1).range.start.line, expected.line, 'back where it was');
  const between = published.filter((q) => q.uri === uri && q.version >= first && q.version < version);
  assert.equal(between.length, 0, `superseded versions were published: ${between.map((q) => q.version)}`);

  // A full replacement with a healthy run: no Error left.
  version++;
  await conn.sendNotification('textDocument/didChange', { textDocument: { uri, version }, contentChanges: [{ text: readFileSync(healthyPath, 'utf8') }] });
  p = await nextDiagnostics((p) => p.uri === uri && p.version === version);
  assert.equal(p.diagnostics.filter((d) => d.severity === 1).length, 0, JSON.stringify(p.diagnostics));
});

test('$/cancelRequest answers a request waiting for the diagnosis with RequestCancelled', { skip }, async () => {
  version++;
  await conn.sendNotification('textDocument/didChange', { textDocument: { uri, version }, contentChanges: [{ text: logText }] });
  // The hover waits for the diagnosis of this version (300 ms away): cancelled meanwhile.
  const source = new rpc.CancellationTokenSource();
  const hover = conn.sendRequest('textDocument/hover', { textDocument: { uri }, position: { line: expected.line, character: 0 } }, source.token);
  source.cancel();
  await assert.rejects(hover, (e) => e.code === -32800);
  await nextDiagnostics((p) => p.uri === uri && p.version === version);
});

test('close clears the diagnostics; shutdown then exit ends with 0', { skip }, async () => {
  await conn.sendNotification('textDocument/didClose', { textDocument: { uri } });
  const p = await nextDiagnostics((p) => p.uri === uri && p.diagnostics.length === 0 && p.version === undefined);
  assert.deepEqual(p.diagnostics, []);
  assert.equal(await conn.sendRequest('shutdown'), null);
  const exited = new Promise((r) => child.on('exit', (code) => r(code)));
  await conn.sendNotification('exit');
  assert.equal(await exited, 0);
});

// Bytes a client should never send: the server answers or skips them and keeps serving.
test('malformed headers and bodies: an error or a line on stderr, never a crash', { skip }, async () => {
  const c = spawn(binary, ['lsp'], { stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '', err = '';
  c.stdout.on('data', (d) => { out += d; });
  c.stderr.on('data', (d) => { err += d; });
  const frame = (body) => `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
  c.stdin.write('Content-Length: many\r\n\r\n{"x":1}');               // a header that is no number
  c.stdin.write(frame('{"jsonrpc":"2.0","id":1,"method":"initialize",')); // cut JSON
  c.stdin.write(frame('[1,2]'));                                       // JSON, not an object
  c.stdin.write(frame('{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"capabilities":{}}}'));
  c.stdin.write(frame('{"jsonrpc":"2.0","id":3,"method":"textDocument/hover","params":{}}'));   // no textDocument
  c.stdin.write(frame('{"jsonrpc":"2.0","id":4,"method":"no/such"}'));
  c.stdin.write(frame('{"jsonrpc":"2.0","method":"textDocument/didOpen","params":{"textDocument":{"uri":7}}}'));
  c.stdin.write(frame('{"jsonrpc":"2.0","id":5,"method":"shutdown"}'));
  c.stdin.write(frame('{"jsonrpc":"2.0","method":"exit"}'));
  const code = await new Promise((r) => c.on('exit', r));
  assert.equal(code, 0, err);
  const bodies = out.split(/Content-Length: \d+\r\n\r\n/).filter(Boolean).map((b) => JSON.parse(b));
  const byId = (id) => bodies.find((b) => b.id === id);
  assert.equal(bodies.filter((b) => b.id === null && b.error?.code === -32700).length, 2, out);
  assert.ok(byId(2).result.capabilities);
  assert.equal(byId(3).error.code, -32602);
  assert.equal(byId(4).error.code, -32601);
  assert.equal(byId(5).result, null);
  assert.match(err, /bad message header \(Content-Length is not a number\)/);
  assert.match(err, /didOpen: bad parameters/);
});
