// `firstfault diagnose --format sarif` against the official SARIF 2.1.0 JSON schema
// (sarif-schema-2.1.0.json beside this file, from the OASIS SARIF TC's repository
// github.com/oasis-tcs/sarif-spec, sarif-2.1/schema/; licence: LICENSE-OASIS.md), checked
// with ajv (draft-04 dialect, formats on). Every log in tests/data and the labelled runs of
// ../shared/corpus/pytorch-runs (when present) is rendered and validated; its error result
// must be the JSON report's primary (same entry, same line of the log), and how many of the
// labelled runs it puts on the label's decisive line is printed (corpus_score holds the
// accuracy threshold).
//
//   node check.mjs FIRSTFAULT_BINARY REPO_ROOT
// Exits 0 when all are valid, 1 on the first invalid document, 77 (skipped) without the
// npm packages (tools/install-deps runs npm ci here).
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const [binary, root] = process.argv.slice(2);
if (!binary || !root) {
  console.error('usage: node check.mjs FIRSTFAULT_BINARY REPO_ROOT');
  process.exit(2);
}

let Ajv, addFormats;
try {
  Ajv = (await import('ajv-draft-04')).default;
  addFormats = (await import('ajv-formats')).default;
} catch (e) {
  console.log(`SKIP: ajv-draft-04 / ajv-formats not installed (tools/install-deps): ${e.message}`);
  process.exit(77);
}

const schema = JSON.parse(readFileSync(join(here, 'sarif-schema-2.1.0.json'), 'utf8'));
const ajv = new Ajv({ allErrors: true, strict: false });
addFormats(ajv);
const validate = ajv.compile(schema);

let failures = 0;
function fail(what) {
  console.error(`FAIL: ${what}`);
  failures++;
}

// The validator must be able to say no: a level SARIF does not have, a missing message.
{
  const bad = { version: '2.1.0', runs: [{ tool: { driver: { name: 'x' } }, results: [{ level: 'fatal' }] }] };
  if (validate(bad)) fail('the schema accepted a result with level "fatal" and no message');
}

function diagnose(log, format) {
  // Exit codes 0-4 are verdicts; only 2 (could not run) is a problem, and it prints nothing.
  try {
    return execFileSync(binary, ['diagnose', '--format', format, log], { encoding: 'utf8', maxBuffer: 64 << 20 });
  } catch (e) {
    if (e.status === 2 || e.stdout === undefined) throw e;
    return e.stdout;
  }
}

const logs = [];
const data = join(root, 'tests', 'data');
for (const dir of [data, join(data, 'real'), join(data, 'pasted')]) {
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isFile() && /\.(log|txt|out|err)$/.test(name)) logs.push({ path: p });
  }
}
const corpus = join(root, '..', 'shared', 'corpus', 'pytorch-runs');
if (existsSync(join(corpus, 'labels.jsonl'))) {
  for (const line of readFileSync(join(corpus, 'labels.jsonl'), 'utf8').split('\n')) {
    if (!line.trim()) continue;
    const label = JSON.parse(line);
    const p = join(corpus, 'cases', `${label.id}.log`);
    if (existsSync(p)) logs.push({ path: p, label });
  }
}

let checked = 0, errors = 0, labelled = 0, onLabel = 0;
for (const { path, label } of logs) {
  const doc = JSON.parse(diagnose(path, 'sarif'));
  const report = JSON.parse(diagnose(path, 'json'));
  if (!validate(doc)) {
    fail(`${path}: not valid SARIF 2.1.0:\n${ajv.errorsText(validate.errors, { separator: '\n' })}`);
    continue;
  }
  checked++;
  const results = doc.runs[0].results;
  const error = results.find((r) => r.level === 'error');
  if (error) errors++;
  const primary = report.primary;
  if (!primary !== !error) fail(`${path}: an error result ${!!error}, a primary in the JSON report ${!!primary}`);
  if (primary && error) {
    const region = error.locations[0].physicalLocation.region;
    if (error.ruleId !== primary.id) fail(`${path}: error result ${error.ruleId}, primary ${primary.id}`);
    if (region.startLine !== primary.evidence[0].line) fail(`${path}: line ${region.startLine}, primary's ${primary.evidence[0].line}`);
    const actual = readFileSync(path, 'utf8').split('\n')[region.startLine - 1] ?? '';
    if (!actual.includes(region.snippet.text)) fail(`${path}: line ${region.startLine} is "${actual}", not "${region.snippet.text}"`);
    if (label && label.decisive) {
      labelled++;
      if (actual.includes(label.decisive)) onLabel++;
    }
  }
  for (const r of results) {
    const rules = doc.runs[0].tool.driver.rules;
    if (rules[r.ruleIndex]?.id !== r.ruleId) fail(`${path}: result ${r.ruleId} has ruleIndex ${r.ruleIndex}`);
  }
}
console.log(`${checked} SARIF documents valid, ${errors} with an error result equal to the JSON report's primary; ` +
  `${onLabel} of ${labelled} labelled failed runs on the label's decisive line`);
if (checked === 0) fail('no log was checked');
process.exit(failures ? 1 : 0);
