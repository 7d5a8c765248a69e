import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createUidPool } from './uids.ts';

test('uids: one per intern, the same again for the same intern, freed on release, refused when the range is full', () => {
  const dir = join(mkdtempSync(join(tmpdir(), 'cohort-uids-')), 'uids');
  try {
    const pool = createUidPool({ dir, base: 300000, size: 2 });
    assert.equal(pool.claim('a'), 300000);
    assert.equal(pool.claim('b'), 300001);
    assert.equal(pool.claim('a'), 300000);
    // Another process on the same data dir sees the claims.
    assert.throws(
      () => createUidPool({ dir, base: 300000, size: 2 }).claim('c'),
      /no free intern uid in 300000\.\.300001; raise COHORT_INTERN_UID_COUNT/,
    );
    pool.release('a');
    assert.deepEqual(readdirSync(dir), ['300001']);
    assert.equal(pool.claim('c'), 300000);
  } finally {
    rmSync(join(dir, '..'), { recursive: true, force: true });
  }
});
