// GNU tar's failure to unpack an upload, by its last lines, as the files API's outcome
// (tarFailure), by table.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { tarFailure } from './files.ts';

test("tarFailure: a full disk by its own kind, any other failure as tar's, with its last lines", () => {
  const table: [detail: string, outcome: ReturnType<typeof tarFailure>][] = [
    [
      'tar: big.bin: Cannot write: No space left on device;tar: Exiting with failure status due to previous errors;',
      { ok: false, kind: 'no_space', path: '' },
    ],
    ['tar: f: Cannot open: Disk quota exceeded;', { ok: false, kind: 'no_space', path: '' }],
    [
      'tar: ./big.bin: Wrote only 3072 of 10240 bytes;tar: Exiting with failure status due to previous errors;',
      { ok: false, kind: 'no_space', path: '' },
    ],
    [
      'tar: This does not look like a tar archive;tar: Exiting with failure status due to previous errors;',
      {
        ok: false,
        kind: 'tar',
        path: '',
        detail: 'tar: This does not look like a tar archive;tar: Exiting with failure status due to previous errors;',
      },
    ],
    ['', { ok: false, kind: 'tar', path: '', detail: 'tar failed' }],
  ];
  for (const [detail, outcome] of table) assert.deepEqual(tarFailure(detail), outcome, detail);
});
