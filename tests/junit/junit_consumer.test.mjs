// meshinfer's JUnit files read back by junit2json, a JUnit parser from npm
// that knows nothing of meshinfer: the totals, names and failure messages a CI
// system would show. MESHINFER names the binary, MESHINFER_SOURCE_DIR the tree.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';

import { parse } from 'junit2json';

const meshinfer = process.env.MESHINFER;
const source = process.env.MESHINFER_SOURCE_DIR;
const dir = mkdtempSync(join(tmpdir(), 'meshinfer-junit-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function run(args) {
  const r = spawnSync(meshinfer, args, { encoding: 'utf8', timeout: 300_000 });
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

test('a breached run shows one failed case naming the metric, its value and the bound', async () => {
  const scenario = JSON.parse(readFileSync(join(source, 'scenarios/ci/node-crash-replan.json'), 'utf8'));
  delete scenario.$schema;
  scenario.expect.decode_tokens_per_s = { min: 1e6 };
  const file = join(dir, 'breach "quoted" & <tagged>.json');
  writeFileSync(file, JSON.stringify(scenario));
  const r = run(['run', '--quiet', file, '--out', join(dir, 'out'), '--junit', join(dir, 'run.xml')]);
  assert.equal(r.status, 1, r.output);

  const junit = await parse(readFileSync(join(dir, 'run.xml'), 'utf8'));
  assert.equal(junit.tests, 6);
  assert.equal(junit.failures, 1);
  assert.equal(junit.errors, 0);
  const [suite] = junit.testsuite;
  assert.equal(suite.name, 'ci-node-crash-replan');
  assert.deepEqual(
    suite.testcase.map((c) => c.name),
    ['decode_tokens_per_s >= 1e+06', 'failed_requests == 0', 'recovery_s <= 30',
     'token times never go backwards',
     'every request completes with exactly its output tokens or fails with a cause',
     'the run ends by its deadline']);
  const failed = suite.testcase.filter((c) => c.failure);
  assert.equal(failed.length, 1);
  assert.equal(failed[0].classname, 'ci-node-crash-replan.expect');
  assert.match(failed[0].failure[0].message,
    /^expectation failed: decode_tokens_per_s = [\d.]+, must be >= 1e\+06 \(.*breach "quoted" & <tagged>\.json \/expect\/decode_tokens_per_s\/min\)$/);
  // The same value the run printed.
  const printed = r.output.match(/expectation failed: decode_tokens_per_s = ([\d.]+)/);
  assert.ok(printed, r.output);
  assert.match(failed[0].failure[0].inner, new RegExp(`^decode_tokens_per_s = ${printed[1].replace('.', '\\.')}\\n`));
});

test('a chaos campaign shows a suite per seed with every invariant passing', async () => {
  const r = run(['chaos', join(source, 'scenarios/ci/node-crash-replan.json'), '--seeds', '1..4',
    '--requests', '2', '--output-tokens', '8', '--jobs', '2', '--junit', join(dir, 'chaos.xml')]);
  assert.equal(r.status, 0, r.output);
  const junit = await parse(readFileSync(join(dir, 'chaos.xml'), 'utf8'));
  assert.equal(junit.tests, 12);
  assert.equal(junit.failures, 0);
  assert.deepEqual(junit.testsuite.map((s) => s.name), [1, 2, 3, 4].map((n) => `ci-node-crash-replan seed ${n}`));
  for (const suite of junit.testsuite) {
    assert.equal(suite.testcase.length, 3);
    const faults = JSON.parse(suite.properties.find((p) => p.name === 'faults').value);
    assert.ok(faults.length >= 1 && faults.every((f) => typeof f.kind === 'string'));
  }
});
