// The firstfault extension: the language server (`firstfault lsp`) on log files, two
// commands that diagnose a text on demand (the editor's selection, the last terminal
// command's output), the report in a webview and the verdict in the status bar.
import * as vscode from 'vscode';
import { LanguageClient, LanguageClientOptions, ServerOptions } from 'vscode-languageclient/node';
import { Diagnosis, Settings, Tail, argv, diagnose, statusText, stripTerminalMarks, webviewHtml } from './run';

// The output kept of a terminal command: enough for a long traceback and its context.
const kTerminalTail = 8 << 20;

interface Execution {
  command: string;
  exitCode: number | undefined;
  tail: Tail;
  reading: Promise<void>; // settles when the output has been read to its end
}

let client: LanguageClient | undefined;
let panel: vscode.WebviewPanel | undefined;
let status: vscode.StatusBarItem;
const lastRun = new Map<vscode.Terminal, Execution>();
const lastFailed = new Map<vscode.Terminal, Execution>();

function settings(): Settings {
  const c = vscode.workspace.getConfiguration('firstfault');
  return { path: c.get<string>('path') || 'firstfault', args: c.get<string[]>('args') || [] };
}

function startClient(): LanguageClient {
  const s = settings();
  const serverOptions: ServerOptions = { command: s.path, args: argv(s, ['lsp']) };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [
      { scheme: 'file', language: 'log' },
      { scheme: 'untitled', language: 'log' },
      { scheme: 'file', pattern: '**/*.{out,err}' },
    ],
    middleware: {
      // LSP has no clipboard: the server's "copy the verify command" action is done here.
      executeCommand: async (command, args, next) => {
        if (command === 'firstfault.copyVerifyCommand') {
          await vscode.env.clipboard.writeText(String(args[0] ?? ''));
          vscode.window.showInformationMessage('firstfault: the verify command is on the clipboard');
          return undefined;
        }
        return next(command, args);
      },
    },
  };
  const c = new LanguageClient('firstfault', 'firstfault', serverOptions, clientOptions);
  c.start().catch((e: Error) =>
    vscode.window.showErrorMessage(`firstfault: the language server did not start (${e.message}); see the setting firstfault.path`));
  return c;
}

function show(d: Diagnosis, what: string): void {
  if (!panel) {
    panel = vscode.window.createWebviewPanel('firstfault.report', 'firstfault', vscode.ViewColumn.Beside, {
      enableScripts: false,
      localResourceRoots: [],
    });
    panel.onDidDispose(() => { panel = undefined; });
  }
  panel.title = `firstfault: ${d.verdict.verdict} (${what})`;
  panel.webview.html = webviewHtml(d.html);
  panel.reveal(vscode.ViewColumn.Beside, true);
  status.text = statusText(d.verdict);
  status.tooltip = `firstfault on ${what}: ${d.verdict.verdict}${d.verdict.id ? ` — ${d.verdict.id}` : ''}`;
  status.show();
}

async function diagnoseAndShow(text: string, what: string): Promise<void> {
  if (!text.trim()) {
    vscode.window.showWarningMessage(`firstfault: nothing to diagnose in ${what}`);
    return;
  }
  try {
    const d = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Window, title: `firstfault: diagnosing ${what}` },
      () => diagnose(settings(), text));
    show(d, what);
  } catch (e) {
    vscode.window.showErrorMessage((e as Error).message);
  }
}

// "firstfault: Diagnose selection": the selected lines (all selections), else the file.
async function diagnoseSelection(): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  if (!editor) {
    vscode.window.showWarningMessage('firstfault: open a log or select a traceback first');
    return;
  }
  const parts = editor.selections.filter((s) => !s.isEmpty).map((s) => editor.document.getText(s));
  if (parts.length) await diagnoseAndShow(parts.join('\n'), 'the selection');
  else await diagnoseAndShow(editor.document.getText(), vscode.workspace.asRelativePath(editor.document.uri));
}

// Shell integration: each command's output is read as it runs (read() only yields what is
// written after it is called), kept per terminal, the last failed one apart.
function watchTerminals(context: vscode.ExtensionContext): void {
  if (!vscode.window.onDidStartTerminalShellExecution) return; // VS Code before 1.93
  context.subscriptions.push(
    vscode.window.onDidStartTerminalShellExecution((e) => {
      const run: Execution = { command: e.execution.commandLine.value, exitCode: undefined, tail: new Tail(kTerminalTail), reading: Promise.resolve() };
      run.reading = (async () => {
        for await (const data of e.execution.read()) run.tail.push(data);
      })().catch(() => undefined);
      pending.set(e.execution, run);
    }),
    vscode.window.onDidEndTerminalShellExecution((e) => {
      const run = pending.get(e.execution);
      if (!run) return;
      pending.delete(e.execution);
      run.exitCode = e.exitCode;
      lastRun.set(e.terminal, run);
      if (e.exitCode !== 0) lastFailed.set(e.terminal, run);
    }),
    vscode.window.onDidCloseTerminal((t) => { lastRun.delete(t); lastFailed.delete(t); }),
  );
}
const pending = new Map<vscode.TerminalShellExecution, Execution>();

// The terminal's selection, through the clipboard (the API has no other way to read it);
// the clipboard is put back as it was.
async function terminalSelection(): Promise<string> {
  const saved = await vscode.env.clipboard.readText();
  const marker = `firstfault-no-selection-${Date.now()}`;
  await vscode.env.clipboard.writeText(marker);
  await vscode.commands.executeCommand('workbench.action.terminal.copySelection');
  const copied = await vscode.env.clipboard.readText();
  await vscode.env.clipboard.writeText(saved);
  return copied === marker ? '' : copied;
}

// "firstfault: Diagnose last terminal command": the last failed command's output in the
// active terminal (else its last command's), from shell integration; without it, what is
// selected in the terminal.
async function diagnoseLastTerminalCommand(): Promise<void> {
  const terminal = vscode.window.activeTerminal;
  if (!terminal) {
    vscode.window.showWarningMessage('firstfault: no terminal is open');
    return;
  }
  const run = lastFailed.get(terminal) ?? lastRun.get(terminal);
  if (run) {
    await Promise.race([run.reading, new Promise((r) => setTimeout(r, 2000))]);
    const what = `\`${run.command}\`${run.exitCode !== undefined ? ` (exit ${run.exitCode})` : ''}`;
    await diagnoseAndShow(stripTerminalMarks(run.tail.text()), what);
    return;
  }
  const selected = await terminalSelection();
  if (!selected.trim()) {
    vscode.window.showWarningMessage(
      'firstfault: no command output recorded in this terminal (shell integration is off or no command ended yet); select the output in the terminal and run this again');
    return;
  }
  await diagnoseAndShow(selected, 'the terminal selection');
}

// The status bar follows the language server too: the active log's first failure.
function followDiagnostics(context: vscode.ExtensionContext): void {
  const update = () => {
    const doc = vscode.window.activeTextEditor?.document;
    if (!doc || doc.languageId !== 'log') return;
    const ours = vscode.languages.getDiagnostics(doc.uri).filter((d) => d.source === 'firstfault');
    const error = ours.find((d) => d.severity === vscode.DiagnosticSeverity.Error);
    status.text = error ? `$(error) firstfault: ${error.message.split(':')[0]}` : '$(pass) firstfault: no failure found';
    status.tooltip = error ? `line ${error.range.start.line + 1}: ${error.message}` : undefined;
    status.show();
  };
  context.subscriptions.push(vscode.languages.onDidChangeDiagnostics(update), vscode.window.onDidChangeActiveTextEditor(update));
}

export function activate(context: vscode.ExtensionContext): void {
  status = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 100);
  status.command = 'firstfault.showReport';
  context.subscriptions.push(status);
  client = startClient();
  context.subscriptions.push(
    vscode.commands.registerCommand('firstfault.diagnoseSelection', diagnoseSelection),
    vscode.commands.registerCommand('firstfault.diagnoseLastTerminalCommand', diagnoseLastTerminalCommand),
    vscode.commands.registerCommand('firstfault.showReport', () => panel?.reveal()),
    vscode.workspace.onDidChangeConfiguration(async (e) => {
      if (!e.affectsConfiguration('firstfault')) return;
      await client?.stop();
      client = startClient();
    }),
  );
  watchTerminals(context);
  followDiagnostics(context);
}

export async function deactivate(): Promise<void> {
  await client?.stop();
  client = undefined;
}
