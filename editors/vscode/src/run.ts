// Running `firstfault diagnose` on a text: the HTML report for the webview and the JSON
// report for the verdict, both from stdin, so nothing is written and nothing uploaded.
// No `vscode` import here: the parts the tests check without an editor.
import { spawn } from 'node:child_process';

export interface Settings {
  path: string;   // the binary
  args: string[]; // extra arguments before the subcommand
}

export interface Verdict {
  verdict: string;       // failed, degraded, healthy, incomplete, unknown
  title: string | null;  // the primary's title
  id: string | null;
  rank: number | null;
  line: number | null;   // the decisive line, 1-based in the diagnosed text
}

export interface Diagnosis {
  html: string;
  verdict: Verdict;
}

// The arguments of a run: the extra ones first (global options such as --kb), then the
// subcommand and its own.
export function argv(settings: Settings, sub: string[]): string[] {
  return [...settings.args, ...sub];
}

// Exit codes 0, 1, 3 and 4 are verdicts (firstfault --help); 2 is "could not run".
function run(settings: Settings, sub: string[], input: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(settings.path, argv(settings, sub), { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '', err = '';
    child.stdout.setEncoding('utf8'); // a character split across reads stays whole
    child.stderr.setEncoding('utf8');
    child.stdout.on('data', (d: string) => { out += d; });
    child.stderr.on('data', (d: string) => { err += d; });
    child.on('error', (e) => reject(new Error(`cannot run ${settings.path}: ${e.message} (setting firstfault.path)`)));
    child.on('close', (code) => {
      if (code === 2 || code === null) reject(new Error(`firstfault could not diagnose it: ${err.trim() || `exit ${code}`}`));
      else resolve(out);
    });
    child.stdin.on('error', () => { /* it exited early; 'close' says why */ });
    child.stdin.end(input);
  });
}

export async function diagnose(settings: Settings, text: string): Promise<Diagnosis> {
  const [html, json] = await Promise.all([
    run(settings, ['diagnose', '--format', 'html', '-'], text),
    run(settings, ['diagnose', '--format', 'json', '-'], text),
  ]);
  const j = JSON.parse(json);
  const p = j.primary;
  return {
    html,
    verdict: {
      verdict: j.verdict,
      title: p ? p.title : null,
      id: p ? p.id : null,
      rank: p && typeof p.rank === 'number' ? p.rank : null,
      line: p && p.evidence && p.evidence[0] ? p.evidence[0].line : null,
    },
  };
}

// The report in a webview: its own CSP first in <head> (no script, no request; the page's
// inline styles and data: images only). Several CSPs all apply, so the page's stays too.
export const webviewCsp = "default-src 'none'; style-src 'unsafe-inline'; img-src data:";
export function webviewHtml(html: string): string {
  const meta = `<meta http-equiv="Content-Security-Policy" content="${webviewCsp}">`;
  const head = html.search(/<head[^>]*>/i);
  if (head < 0) return `<!doctype html><html><head>${meta}</head><body><pre>${escapeHtml(html)}</pre></body></html>`;
  const end = html.indexOf('>', head) + 1;
  // Scripts are forbidden by the CSP anyway; none should be there to forbid.
  return html.slice(0, end) + meta + html.slice(end).replace(/<script\b[\s\S]*?<\/script>/gi, '');
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c] as string);
}

// The status bar's words for a verdict.
export function statusText(v: Verdict): string {
  if (v.verdict === 'failed' && v.title) return `$(error) firstfault: ${v.title}${v.rank !== null ? ` (rank ${v.rank})` : ''}`;
  return `$(${v.verdict === 'healthy' ? 'pass' : 'info'}) firstfault: ${v.verdict}`;
}

// Terminal output holds what the shell integration and the program wrote for the terminal:
// OSC sequences (633/133 marks, titles) are dropped here; colours and the rest firstfault
// cleans itself.
export function stripTerminalMarks(s: string): string {
  return s.replace(/\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)/g, '');
}

// The output kept of one command: the last `limit` characters.
export class Tail {
  private parts: string[] = [];
  private size = 0;
  constructor(private readonly limit: number) {}
  push(s: string): void {
    this.parts.push(s);
    this.size += s.length;
    while (this.size > this.limit && this.parts.length > 1) this.size -= (this.parts.shift() as string).length;
  }
  text(): string {
    const all = this.parts.join('');
    return all.length > this.limit ? all.slice(all.length - this.limit) : all;
  }
}
