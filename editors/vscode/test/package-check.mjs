// `npm run package` builds the .vsix (offline: everything comes from node_modules, which
// tools/install-deps installs from package-lock.json); then its contents are checked: the
// manifest, the compiled extension, the language client it needs at run time, and none of
// the sources or tests.
//
//   node test/package-check.mjs OUT.vsix
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const ext = resolve(here, '..');
const out = resolve(process.argv[2] ?? join(ext, 'firstfault.vsix'));
if (!existsSync(join(ext, 'node_modules', '@vscode', 'vsce'))) {
  console.log('SKIP: npm ci not run in editors/vscode (tools/install-deps)');
  process.exit(77);
}
execFileSync('npm', ['run', 'package', '--', '-o', out], { cwd: ext, stdio: 'inherit' });
const yauzl = createRequire(join(ext, 'package.json'))('yauzl');
const names = await new Promise((res, rej) => {
  yauzl.open(out, { lazyEntries: true }, (err, zip) => {
    if (err) return rej(err);
    const all = [];
    zip.on('entry', (e) => { all.push(e.fileName); zip.readEntry(); });
    zip.on('end', () => res(all));
    zip.readEntry();
  });
});
const must = ['extension.vsixmanifest', 'extension/package.json', 'extension/out/src/extension.js', 'extension/out/src/run.js',
  'extension/node_modules/vscode-languageclient/package.json', 'extension/readme.md'];
const missing = must.filter((m) => !names.includes(m));
const stray = names.filter((n) => /^extension\/(src|test)\//.test(n) || n.endsWith('.vsix') || n.endsWith('.map'));
if (missing.length || stray.length) {
  console.error(`FAIL: ${out}: missing ${missing.join(', ') || 'nothing'}; should not hold ${stray.join(', ') || 'anything else'}`);
  process.exit(1);
}
console.log(`${out}: ${names.length} files, the extension and its language client`);
