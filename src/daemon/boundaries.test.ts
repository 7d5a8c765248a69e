// The runtime's import rules (DESIGN.md): daemon and agent code import only src/protocol, src/acp,
// src/sandbox, src/entry.ts (how a program starts another; node only) and each folder's own files;
// only src/acp imports the ACP SDK. Tests are exempt.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const SRC = resolve(fileURLToPath(new URL('..', import.meta.url)));
const RUNTIME = ['daemon', 'agent', 'acp', 'sandbox', 'protocol'];
const ALLOWED = new Set(['protocol', 'acp', 'sandbox', 'entry.ts']);
const isTestOnly = (f: string) => f.endsWith('.test.ts') || f.endsWith('test-fixture.ts') || f.endsWith('test-client.ts');

test('daemon, agent, acp, sandbox and protocol import nothing of the gateway', () => {
  const problems: string[] = [];
  for (const folder of RUNTIME) {
    for (const f of readdirSync(join(SRC, folder)).filter((n) => n.endsWith('.ts') && !isTestOnly(n))) {
      const file = join(SRC, folder, f);
      for (const [, spec] of readFileSync(file, 'utf8').matchAll(/^(?:import|export)[^'"]*from '([^']+)'/gm)) {
        if (spec!.startsWith('@agentclientprotocol/') && folder !== 'acp') problems.push(`${folder}/${f} imports the ACP SDK`);
        if (!spec!.startsWith('.')) continue;
        const target = relative(SRC, resolve(dirname(file), spec!)).split('/')[0]!;
        if (target !== folder && !ALLOWED.has(target)) problems.push(`${folder}/${f} imports ${spec}`);
      }
    }
  }
  assert.deepEqual(problems, []);
});
