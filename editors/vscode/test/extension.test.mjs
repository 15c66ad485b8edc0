// The extension's commands under node's test runner, the `vscode` API stubbed
// (fake-vscode.cjs) and the language client recorded; the diagnoses are real: the
// commands run the firstfault binary named by $FIRSTFAULT on real logs (tests/data).
//
//   FIRSTFAULT=build/firstfault npm test          (in editors/vscode)
import { test, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const Module = require('node:module');
const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, '../../..');
const binary = process.env.FIRSTFAULT ? resolve(process.env.FIRSTFAULT) : '';
// The extension is compiled first (into out/, as `npm test` does), when npm ci has run.
const tsc = join(here, '..', 'node_modules', 'typescript', 'bin', 'tsc');
const compiled = existsSync(tsc);
if (compiled) execFileSync(process.execPath, [tsc, '-p', join(here, '..')], { stdio: 'inherit' });
const skip = !compiled ? 'npm ci not run in editors/vscode (tools/install-deps)' : binary ? false : 'FIRSTFAULT (the binary) is not set';
const fake = require('./fake-vscode.cjs');

const logPath = join(repo, 'tests/data/01_rank_exception__rankprefix.log');
const logText = readFileSync(logPath, 'utf8');
const manifest = JSON.parse(readFileSync(join(here, '..', 'package.json'), 'utf8'));

function cli(text) {
  try {
    return JSON.parse(execFileSync(binary, ['diagnose', '--format', 'json', '-'], { input: text, encoding: 'utf8' }));
  } catch (e) {
    return JSON.parse(e.stdout);
  }
}

// A fresh extension per test: the module cache dropped, `vscode` and the client faked.
let vs, state, events, clients, ext;
beforeEach(() => {
  if (!compiled) return;
  ({ vscode: vs, state, events } = fake.create({ 'firstfault.path': binary, 'firstfault.args': [] }));
  clients = [];
  class LanguageClient {
    constructor(id, name, serverOptions, clientOptions) {
      Object.assign(this, { id, name, serverOptions, clientOptions, stopped: false });
      clients.push(this);
    }
    start() { return Promise.resolve(); }
    stop() { this.stopped = true; return Promise.resolve(); }
  }
  const load = Module._load;
  Module._load = function (request, ...rest) {
    if (request === 'vscode') return vs;
    if (request === 'vscode-languageclient/node') return { LanguageClient };
    return load.call(this, request, ...rest);
  };
  for (const k of Object.keys(require.cache)) if (k.includes(`${join('vscode', 'out')}`)) delete require.cache[k];
  try {
    ext = require('../out/src/extension.js');
  } finally {
    Module._load = load;
  }
  ext.activate({ subscriptions: [] });
});

test('the manifest: activation on logs and scheduler outputs, the two commands, the settings', () => {
  assert.ok(manifest.activationEvents.includes('onLanguage:log'));
  const log = manifest.contributes.languages.find((l) => l.id === 'log');
  for (const ext of ['.log', '.out', '.err']) assert.ok(log.extensions.includes(ext), ext);
  const titles = manifest.contributes.commands.map((c) => `${c.category}: ${c.title}`);
  assert.deepEqual(titles.sort(), ['firstfault: Diagnose last terminal command', 'firstfault: Diagnose selection']);
  assert.ok(manifest.contributes.configuration.properties['firstfault.path']);
  assert.ok(manifest.contributes.configuration.properties['firstfault.args']);
});

test('activate starts `firstfault ARGS lsp` on log files and *.out / *.err', { skip }, () => {
  assert.equal(clients.length, 1);
  assert.deepEqual(clients[0].serverOptions, { command: binary, args: ['lsp'] });
  const sel = clients[0].clientOptions.documentSelector;
  assert.ok(sel.some((s) => s.language === 'log' && s.scheme === 'file'));
  assert.ok(sel.some((s) => s.pattern === '**/*.{out,err}'));
  for (const c of manifest.contributes.commands) assert.ok(state.commands.has(c.command), c.command);
});

test('the server\'s "copy the verify command" is done by the client; other commands go to the server', { skip }, async () => {
  const mw = clients[0].clientOptions.middleware;
  let forwarded = null;
  await mw.executeCommand('firstfault.copyVerifyCommand', ['python -c "x"'], () => { forwarded = 'copy'; });
  assert.equal(state.clipboard, 'python -c "x"');
  assert.equal(forwarded, null);
  await mw.executeCommand('firstfault.openReport', ['file:///x.log'], (c, a) => { forwarded = [c, a]; });
  assert.deepEqual(forwarded, ['firstfault.openReport', ['file:///x.log']]);
});

test('changing the settings restarts the server with them', { skip }, async () => {
  state.config['firstfault.args'] = ['--kb', '/tmp'];
  events.config.fire({ affectsConfiguration: (s) => s === 'firstfault' });
  await new Promise((r) => setTimeout(r, 10));
  assert.equal(clients.length, 2);
  assert.ok(clients[0].stopped);
  assert.deepEqual(clients[1].serverOptions.args, ['--kb', '/tmp', 'lsp']);
});

test('Diagnose selection: a selected traceback, the report in a webview with a strict CSP, the verdict in the status bar', { skip }, async () => {
  const lines = logText.split('\n');
  const expected = cli(logText);
  const decisive = expected.primary.evidence[0].line - 1;
  // The rank-2 traceback: from its header to the decisive line.
  let start = decisive;
  while (start > 0 && !lines[start].includes('Traceback (most recent call last):')) start--;
  vs.window.activeTextEditor = fake.editor(vs, logPath, logText, [[start, 0, decisive, lines[decisive].length]]);
  const selected = lines.slice(start, decisive + 1).join('\n');
  const want = cli(selected);
  assert.equal(want.verdict, 'failed');

  await vs.commands.executeCommand('firstfault.diagnoseSelection');
  assert.equal(state.panels.length, 1, JSON.stringify(state.messages));
  const p = state.panels[0];
  assert.equal(p.options.enableScripts, false);
  assert.deepEqual(p.options.localResourceRoots, []);
  assert.match(p.title, /^firstfault: failed \(the selection\)$/);
  const html = p.webview.html;
  assert.match(html, /^<!doctype html>\n<html[^>]*><head><meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">/i);
  assert.ok(html.includes(want.primary.title.replace(/&/g, '&amp;').replace(/</g, '&lt;')), 'the report of the selection');
  assert.ok(!/<script/i.test(html));
  assert.ok(state.statusBar.visible);
  assert.ok(state.statusBar.text.includes(`firstfault: ${want.primary.title}`), state.statusBar.text);

  // No selection: the whole file, in the same panel.
  vs.window.activeTextEditor = fake.editor(vs, logPath, logText);
  await vs.commands.executeCommand('firstfault.diagnoseSelection');
  assert.equal(state.panels.length, 1);
  assert.match(p.title, /01_rank_exception__rankprefix\.log/);
  assert.ok(state.statusBar.text.includes(`(rank ${expected.primary.rank})`), state.statusBar.text);
});

function execution(command, chunks) {
  return { commandLine: { value: command }, read: async function* () { for (const c of chunks) yield c; } };
}

test('Diagnose last terminal command: the last failed command\'s output, from shell integration', { skip }, async () => {
  const terminal = { name: 'bash' };
  vs.window.activeTerminal = terminal;
  // The output as a terminal gets it: shell-integration marks, CRLF line ends, in pieces.
  const output = logText.replace(/\n/g, '\r\n');
  const pieces = ['\x1b]633;C\x07'];
  for (let i = 0; i < output.length; i += 4096) pieces.push(output.slice(i, i + 4096));
  const failed = execution('torchrun --nproc-per-node 4 train.py', pieces);
  events.start.fire({ terminal, execution: failed });
  events.end.fire({ terminal, execution: failed, exitCode: 1 });
  const ok = execution('ls', ['train.py\r\n']);
  events.start.fire({ terminal, execution: ok });
  events.end.fire({ terminal, execution: ok, exitCode: 0 });

  await vs.commands.executeCommand('firstfault.diagnoseLastTerminalCommand');
  assert.equal(state.panels.length, 1, JSON.stringify(state.messages));
  assert.equal(state.panels[0].title, 'firstfault: failed (`torchrun --nproc-per-node 4 train.py` (exit 1))');
  const expected = cli(logText);
  assert.ok(state.statusBar.text.includes(expected.primary.title), state.statusBar.text);
  assert.ok(!state.executed.includes('workbench.action.terminal.copySelection'), 'no clipboard round trip needed');
});

test('Diagnose last terminal command without shell integration: the terminal selection, the clipboard put back', { skip }, async () => {
  vs.window.activeTerminal = { name: 'plain' };
  state.clipboard = 'what the user had copied';
  state.onExecute = (name) => {
    if (name === 'workbench.action.terminal.copySelection') state.clipboard = logText;
  };
  await vs.commands.executeCommand('firstfault.diagnoseLastTerminalCommand');
  assert.equal(state.clipboard, 'what the user had copied');
  assert.equal(state.panels.length, 1, JSON.stringify(state.messages));
  assert.equal(state.panels[0].title, 'firstfault: failed (the terminal selection)');

  // Nothing selected: the copy leaves the clipboard alone; a warning says what to do.
  state.onExecute = () => undefined;
  await vs.commands.executeCommand('firstfault.diagnoseLastTerminalCommand');
  assert.equal(state.clipboard, 'what the user had copied');
  assert.match(state.messages.at(-1).text, /select the output in the terminal/);
});

test('a binary that cannot run is an error message, not a crash', { skip }, async () => {
  state.config['firstfault.path'] = join(here, 'no-such-firstfault');
  vs.window.activeTextEditor = fake.editor(vs, logPath, logText);
  await vs.commands.executeCommand('firstfault.diagnoseSelection');
  assert.equal(state.panels.length, 0);
  assert.match(state.messages.at(-1).text, /cannot run .*no-such-firstfault.*firstfault\.path/);
});

test('the status bar follows the language server\'s diagnostics of the active log', { skip }, () => {
  const ed = fake.editor(vs, logPath, logText);
  vs.window.activeTextEditor = ed;
  state.diagnostics.set(String(ed.document.uri), [
    { source: 'firstfault', severity: vs.DiagnosticSeverity.Error, message: 'Tensor shape mismatch on rank 2: the first failure', range: new vs.Range(194, 0, 194, 10) },
  ]);
  events.diagnostics.fire({ uris: [ed.document.uri] });
  assert.equal(state.statusBar.text, '$(error) firstfault: Tensor shape mismatch on rank 2');
  state.diagnostics.set(String(ed.document.uri), []);
  events.diagnostics.fire({ uris: [ed.document.uri] });
  assert.equal(state.statusBar.text, '$(pass) firstfault: no failure found');
});

test('run.ts: the webview CSP goes first and scripts go; the tail keeps the end; terminal marks dropped', { skip: !compiled && 'not compiled' }, () => {
  const run = require('../out/src/run.js');
  const html = run.webviewHtml('<html><head><title>x</title></head><body><script>alert(1)</script>ok</body></html>');
  assert.ok(html.startsWith(`<html><head><meta http-equiv="Content-Security-Policy" content="${run.webviewCsp}">`));
  assert.ok(!html.includes('<script'));
  assert.ok(run.webviewHtml('plain <b>').includes('&lt;b&gt;'));
  const t = new run.Tail(10);
  for (const s of ['aaaa', 'bbbb', 'cccc', 'dd']) t.push(s);
  assert.equal(t.text(), 'bbbbccccdd');
  assert.deepEqual(run.argv({ path: 'ff', args: ['--kb', 'my-kb'] }, ['diagnose', '-']), ['--kb', 'my-kb', 'diagnose', '-']);
  assert.equal(run.stripTerminalMarks('\x1b]633;A\x07$ ls\x1b]633;E;ls\x1b\\\r\nx'), '$ ls\r\nx');
});
