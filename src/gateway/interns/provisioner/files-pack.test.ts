// The folder download's script (files-pack.ts) run on a folder of this host, as the view's root
// would see it: the bounds to the byte of GNU tar's own stream (what is sent: written once the
// walk has passed), the path's components refused by
// name, an unreadable entry named (as nobody, when this process is root), a name with a newline.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { packArgv } from './files-pack.ts';

const pack = (root: string, rel: string, maxBytes: number, maxEntries: number, asNobody = false) => {
  const argv = packArgv(rel, { maxBytes, maxEntries });
  const [file, args] = asNobody
    ? ['/usr/bin/setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', ...argv]]
    : [argv[0]!, argv.slice(1)];
  const r = spawnSync(file, args, { cwd: root, maxBuffer: 1 << 26, stdio: ['ignore', 'pipe', 'pipe', 'pipe'] });
  const last = r.stderr.toString().trim().split('\n').at(-1)!;
  // What the gateway sends: the stream once the walk has said `ok` on descriptor 3, else nothing
  // (GNU tar writes beside the walk, and a refusal drops what it wrote).
  const passed = r.output[3]!.toString();
  assert.ok(passed === '' || passed === 'ok\n', passed);
  return { code: r.status, bytes: passed ? r.stdout.length : 0, result: JSON.parse(last) };
};

test('the script packs within the bounds of the stream GNU tar writes, and refuses before a byte past them', () => {
  const root = mkdtempSync(join(tmpdir(), 'cohort-pack-'));
  try {
    const dir = join(root, 'work', 'a');
    mkdirSync(join(dir, `d${'n'.repeat(120)}`), { recursive: true });
    writeFileSync(join(dir, 'n'.repeat(150)), 'x');
    writeFileSync(join(dir, `d${'n'.repeat(120)}`, 'f'), Buffer.alloc(200_000, 1));
    writeFileSync(join(dir, 'new\nline "quoted"'), 'z');
    symlinkSync(`/${'t'.repeat(200)}`, join(dir, 'link'));
    symlinkSync('/etc', join(root, 'work', 'etc'));
    // Six entries (the folder, a subfolder, four files and links): 262,144 bytes in whole records.
    const whole = pack(root, 'a', 262_144, 6);
    assert.deepEqual([whole.code, whole.bytes, whole.result], [0, 262_144, { ok: true, type: 'tar' }]);
    const table: [string, number, number, unknown][] = [
      ['a', 262_143, 6, { ok: false, kind: 'too_large', path: 'a' }],
      ['a', 262_144, 5, { ok: false, kind: 'too_many', path: 'a' }],
      ['etc', 1e9, 1e9, { ok: false, kind: 'symlink', path: 'etc' }],
      ['etc/ssl', 1e9, 1e9, { ok: false, kind: 'symlink', path: 'etc' }],
      ['a/link', 1e9, 1e9, { ok: false, kind: 'symlink', path: 'a/link' }],
      ['a/new\nline "quoted"', 1e9, 1e9, { ok: false, kind: 'not_folder', path: 'a/new\nline "quoted"' }],
      ['nope/x', 1e9, 1e9, { ok: false, kind: 'missing', path: 'nope' }],
    ];
    for (const [rel, bytes, entries, result] of table)
      assert.deepEqual(pack(root, rel, bytes, entries), { code: 3, bytes: 0, result }, rel);
    if (process.getuid?.() === 0) {
      chmodSync(root, 0o755);
      for (const d of ['work', 'work/a', `work/a/d${'n'.repeat(120)}`]) chmodSync(join(root, d), 0o755);
      chmodSync(join(dir, `d${'n'.repeat(120)}`, 'f'), 0o600);
      assert.deepEqual(pack(root, 'a', 1e9, 1e9, true), {
        code: 3,
        bytes: 0,
        result: { ok: false, kind: 'denied', path: `a/d${'n'.repeat(120)}/f` },
      });
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
