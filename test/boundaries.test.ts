// The import rules of the tree (docs/internals/architecture.md), checked rather than commented:
// - the runtime (daemon, agent, acp, sandbox) and src/shared never import gateway code; only
//   src/runtime/acp imports the ACP SDK;
// - each gateway folder imports only the folders its row of DEPENDS allows: the three features
//   (management, inference, interns) never import each other, the store imports no service;
// - routes → services → store: route modules (*.routes.ts) are imported only by the route list
//   (src/gateway/routes.ts) and never query the store themselves; services never import Fastify.
// Tests are exempt.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const SRC = resolve(fileURLToPath(new URL('../src', import.meta.url)));

/** Folder (relative to src/) → the folders its modules may import, besides their own. */
const DEPENDS: Record<string, string[]> = {
  shared: [],
  'runtime/acp': ['shared'],
  'runtime/sandbox': ['shared'],
  'runtime/agent': ['shared', 'runtime/acp', 'runtime/sandbox'],
  'runtime/daemon': ['shared', 'runtime/acp', 'runtime/sandbox'],
  'gateway/crypto': [],
  'gateway/store': ['shared', 'gateway/crypto'],
  'gateway/access': ['shared', 'gateway/crypto', 'gateway/store', 'gateway/management'],
  'gateway/http': ['shared', 'gateway/store', 'gateway/access'],
  'gateway/management': ['shared', 'gateway/crypto', 'gateway/store', 'gateway/http', 'gateway/access'],
  // Broadcast destinations, spans and the observation of a request (docs/guides/observability.md).
  'gateway/observability': ['shared', 'gateway/crypto', 'gateway/store', 'gateway/http', 'gateway/access'],
  // runtime/sandbox: the server tools' ephemeral sandbox (inference/tools/sandbox.ts).
  'gateway/inference': [
    'shared',
    'gateway/crypto',
    'gateway/store',
    'gateway/http',
    'gateway/access',
    'gateway/observability',
    'runtime/sandbox',
  ],
  'gateway/interns': [
    'shared',
    'gateway/crypto',
    'gateway/store',
    'gateway/http',
    'gateway/access',
    'gateway/observability',
    'runtime/sandbox',
  ],
};
/** Modules at the root of src/gateway (the assembly) that its folders may import: configuration,
 * the error registry, and the context route modules receive (types only). */
const GATEWAY_ROOT = new Set(['gateway/config.ts', 'gateway/errors.ts', 'gateway/context.ts']);

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return files(p);
    return e.name.endsWith('.ts') && !e.name.endsWith('.test.ts') ? [p] : [];
  });
}

/** The DEPENDS row a path (relative to src/) belongs to, the longest that matches. */
function folderOf(rel: string): string | undefined {
  return Object.keys(DEPENDS)
    .filter((f) => rel === f || rel.startsWith(`${f}/`))
    .sort((a, b) => b.length - a.length)[0];
}

const imports = (file: string) =>
  [...readFileSync(file, 'utf8').matchAll(/^(?:import|export)[^'"]*from '([^']+)'/gm)].map((m) => m[1]!);

test('each folder imports only what its row of DEPENDS allows, and only runtime/acp imports the ACP SDK', () => {
  const problems: string[] = [];
  for (const file of files(SRC)) {
    const rel = relative(SRC, file);
    const folder = folderOf(rel);
    if (!folder) continue;
    for (const spec of imports(file)) {
      if (spec.startsWith('@agentclientprotocol/') && folder !== 'runtime/acp')
        problems.push(`${rel} imports the ACP SDK`);
      if (!spec.startsWith('.')) continue;
      const target = relative(SRC, resolve(dirname(file), spec));
      const targetFolder = folderOf(target);
      const allowed =
        targetFolder === folder ||
        (targetFolder && DEPENDS[folder]!.includes(targetFolder)) ||
        (folder.startsWith('gateway/') && GATEWAY_ROOT.has(target));
      if (!allowed) problems.push(`${rel} imports ${target}`);
    }
  }
  assert.deepEqual(problems, []);
});

test('routes → services → store: route modules are imported by the route list only, query no store, and services never import Fastify', () => {
  const problems: string[] = [];
  for (const file of files(join(SRC, 'gateway'))) {
    const rel = relative(SRC, file);
    const isRoute = rel.endsWith('.routes.ts');
    for (const spec of imports(file)) {
      const target = relative(SRC, resolve(dirname(file), spec));
      if (spec.startsWith('.') && target.endsWith('.routes.ts') && rel !== 'gateway/routes.ts')
        problems.push(`${rel} imports the route module ${target}`);
      if (isRoute && spec.startsWith('.') && target.startsWith('gateway/store/'))
        problems.push(`${rel} (a route module) queries the store through ${target}`);
      if (!isRoute && spec === 'fastify' && !rel.startsWith('gateway/http/') && !/^gateway\/[^/]+\.ts$/.test(rel))
        problems.push(`${rel} (a service) imports Fastify`);
    }
  }
  assert.deepEqual(problems, []);
});
