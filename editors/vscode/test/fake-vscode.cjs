// A small stand-in for the `vscode` module: the parts of the API the extension calls, with
// state the tests can read (webview panels, the status bar, the clipboard, messages) and
// events they can fire (terminal shell executions). Not a simulation of VS Code.
'use strict';

function emitter() {
  const listeners = new Set();
  return {
    event: (fn) => { listeners.add(fn); return { dispose: () => listeners.delete(fn) }; },
    fire: (e) => { for (const fn of [...listeners]) fn(e); },
  };
}

function create(config) {
  const state = {
    config: { ...config },
    commands: new Map(),
    executed: [],
    panels: [],
    messages: [],
    clipboard: '',
    diagnostics: new Map(),
    statusBar: null,
    onExecute: null, // (command, args) => value, for built-in commands the tests fake
  };
  const events = {
    start: emitter(), end: emitter(), closeTerminal: emitter(), config: emitter(),
    diagnostics: emitter(), activeEditor: emitter(),
  };
  class Range {
    constructor(sl, sc, el, ec) { this.start = { line: sl, character: sc }; this.end = { line: el, character: ec }; }
    get isEmpty() { return this.start.line === this.end.line && this.start.character === this.end.character; }
  }
  const vscode = {
    ViewColumn: { Active: -1, Beside: -2, One: 1 },
    StatusBarAlignment: { Left: 1, Right: 2 },
    ProgressLocation: { SourceControl: 1, Window: 10, Notification: 15 },
    DiagnosticSeverity: { Error: 0, Warning: 1, Information: 2, Hint: 3 },
    Range,
    workspace: {
      getConfiguration: (section) => ({ get: (key) => state.config[`${section}.${key}`] }),
      onDidChangeConfiguration: events.config.event,
      asRelativePath: (uri) => uri.path.split('/').pop(),
    },
    window: {
      activeTextEditor: undefined,
      activeTerminal: undefined,
      createWebviewPanel: (viewType, title, column, options) => {
        const p = {
          viewType, title, options, revealed: 0, disposed: false,
          webview: { html: '' },
          reveal() { this.revealed++; },
          onDidDispose: (fn) => { p.disposeListener = fn; },
          dispose() { this.disposed = true; p.disposeListener?.(); },
        };
        state.panels.push(p);
        return p;
      },
      createStatusBarItem: (alignment, priority) => {
        state.statusBar = { alignment, priority, text: '', tooltip: undefined, visible: false, show() { this.visible = true; }, dispose() {} };
        return state.statusBar;
      },
      showInformationMessage: (m) => { state.messages.push({ level: 'info', text: m }); return Promise.resolve(); },
      showWarningMessage: (m) => { state.messages.push({ level: 'warning', text: m }); return Promise.resolve(); },
      showErrorMessage: (m) => { state.messages.push({ level: 'error', text: m }); return Promise.resolve(); },
      withProgress: (options, task) => task({ report() {} }),
      onDidStartTerminalShellExecution: events.start.event,
      onDidEndTerminalShellExecution: events.end.event,
      onDidCloseTerminal: events.closeTerminal.event,
      onDidChangeActiveTextEditor: events.activeEditor.event,
    },
    commands: {
      registerCommand: (name, fn) => { state.commands.set(name, fn); return { dispose: () => state.commands.delete(name) }; },
      executeCommand: async (name, ...args) => {
        state.executed.push(name);
        if (state.commands.has(name)) return state.commands.get(name)(...args);
        return state.onExecute ? state.onExecute(name, args) : undefined;
      },
    },
    env: {
      clipboard: {
        readText: async () => state.clipboard,
        writeText: async (t) => { state.clipboard = t; },
      },
    },
    languages: {
      getDiagnostics: (uri) => state.diagnostics.get(String(uri)) ?? [],
      onDidChangeDiagnostics: events.diagnostics.event,
    },
  };
  return { vscode, state, events };
}

// A text editor over a text, with selections given as [startLine, startChar, endLine, endChar].
function editor(vscode, path, text, selections = []) {
  const lines = text.split('\n');
  const offset = (line, ch) => lines.slice(0, line).reduce((n, l) => n + l.length + 1, 0) + ch;
  return {
    document: {
      uri: { path, toString: () => `file://${path}` },
      languageId: 'log',
      getText: (r) => (r ? text.slice(offset(r.start.line, r.start.character), offset(r.end.line, r.end.character)) : text),
    },
    selections: selections.length ? selections.map((s) => new vscode.Range(...s)) : [new vscode.Range(0, 0, 0, 0)],
  };
}

module.exports = { create, editor };
