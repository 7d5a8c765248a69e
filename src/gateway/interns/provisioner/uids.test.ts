import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createUidPool, installationUidRange, UidRangeTaken } from './uids.ts';

function scratch(): { root: string; done(): void } {
  const root = mkdtempSync(join(tmpdir(), 'cohort-uids-'));
  return { root, done: () => rmSync(root, { recursive: true, force: true }) };
}

test('uids: one per intern, the same again for the same intern, refused when the range is full', () => {
  const { root, done } = scratch();
  try {
    const dir = join(root, 'uids');
    const pool = createUidPool({ dir, base: 300000, size: 2 });
    assert.equal(pool.claim('a'), 300000);
    assert.equal(pool.claim('b'), 300001);
    assert.equal(pool.claim('a'), 300000);
    // Another process on the same data dir sees the claims.
    assert.throws(
      () => createUidPool({ dir, base: 300000, size: 2 }).claim('c'),
      /no free intern uid in 300000\.\.300001; raise COHORT_INTERN_UID_COUNT/,
    );
  } finally {
    done();
  }
});

test('uids: a released uid is quarantined, and handed out again only when every other was used, the oldest first', () => {
  const { root, done } = scratch();
  try {
    const dir = join(root, 'uids');
    let t = 1000;
    const pool = createUidPool({ dir, base: 300000, size: 4, now: () => t });
    assert.deepEqual(
      ['a', 'b', 'c'].map((id) => pool.claim(id)),
      [300000, 300001, 300002],
    );
    pool.release('b');
    t = 2000;
    pool.release('a');
    assert.deepEqual(readdirSync(dir).sort(), ['300000.released-2000', '300001.released-1000', '300002']);
    // A new intern gets a never-used uid, not the one just freed.
    assert.equal(pool.claim('d'), 300003);
    // The range used up: the longest-quarantined uid comes back first.
    assert.equal(pool.claim('e'), 300001);
    assert.equal(pool.claim('f'), 300000);
    assert.throws(() => pool.claim('g'), /no free intern uid/);
    assert.equal(readFileSync(join(dir, '300001'), 'utf8'), 'e');
  } finally {
    done();
  }
});

test('uids: an intern holding a uid outside the range (the base changed) gets one of the range', () => {
  const { root, done } = scratch();
  try {
    const dir = join(root, 'uids');
    assert.equal(createUidPool({ dir, base: 200000, size: 4 }).claim('old'), 200000);
    assert.equal(createUidPool({ dir, base: 500000, size: 4 }).claim('old'), 500000);
    assert.deepEqual(readdirSync(dir).filter((f) => f.startsWith('200000')).length, 1);
    assert.equal(readdirSync(dir).includes('200000'), false, 'the old uid is quarantined, not left claimed');
  } finally {
    done();
  }
});

test('uid ranges: each installation chooses its own, keeps it, and registers it host-wide', () => {
  const { root, done } = scratch();
  try {
    const registry = join(root, 'registry');
    const [a, b] = ['a', 'b'].map((n) => join(root, n));
    const ra = installationUidRange({ dataDir: a!, count: 65536, registry });
    const rb = installationUidRange({ dataDir: b!, count: 65536, registry });
    assert.ok(ra.base >= 0x1000_0000 && ra.base + ra.count <= 0x7fff_ffff, `chosen above the host's users: ${ra.base}`);
    assert.notEqual(ra.base, rb.base);
    assert.deepEqual(installationUidRange({ dataDir: a!, count: 65536, registry }), ra, 'kept across starts');
    assert.deepEqual(JSON.parse(readFileSync(join(a!, 'run', 'uid-range'), 'utf8')), ra);
    assert.deepEqual(readdirSync(registry).sort(), [`${ra.base}-65536`, `${rb.base}-65536`].sort());
  } finally {
    done();
  }
});

test('uid ranges: a configured range that overlaps another installation is refused, naming it', () => {
  const { root, done } = scratch();
  try {
    const registry = join(root, 'registry');
    const [a, b] = ['a', 'b'].map((n) => join(root, n));
    installationUidRange({ dataDir: a!, base: 300000, count: 1000, registry });
    assert.throws(
      () => installationUidRange({ dataDir: b!, base: 300500, count: 1000, registry }),
      (err: Error) =>
        err instanceof UidRangeTaken &&
        err.message ===
          `intern uids 300500..301499 overlap those of the cohort installation at ${a} on this host: two installations would give their interns the same uids; set COHORT_INTERN_UID_BASE to a range of its own`,
    );
    // Once that installation is gone (its data dir removed), the range is free.
    rmSync(a!, { recursive: true });
    assert.deepEqual(installationUidRange({ dataDir: b!, base: 300500, count: 1000, registry }), {
      base: 300500,
      count: 1000,
    });
    assert.deepEqual(readdirSync(registry), ['300500-1000']);
  } finally {
    done();
  }
});

test('uid ranges: an installation with interns from before ranges were per installation keeps 200000', () => {
  const { root, done } = scratch();
  try {
    const dataDir = join(root, 'old');
    mkdirSync(join(dataDir, 'run', 'uids'), { recursive: true });
    writeFileSync(join(dataDir, 'run', 'uids', '200000'), 'some-intern');
    assert.deepEqual(installationUidRange({ dataDir, count: 65536, registry: join(root, 'registry') }), {
      base: 200000,
      count: 65536,
    });
  } finally {
    done();
  }
});
