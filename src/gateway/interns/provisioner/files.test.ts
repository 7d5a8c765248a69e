// GNU tar's failure to unpack an upload as the files API's outcome (tarFailure), by table.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { tarFailure } from './files.ts';

test("tarFailure: a full disk by its own kind, any other failure as tar's, with its last lines", () => {
  const table: [code: number | null, stderr: string, outcome: ReturnType<typeof tarFailure>][] = [
    [
      2,
      'tar: big.bin: Cannot write: No space left on device\ntar: Exiting with failure status due to previous errors\n',
      { ok: false, kind: 'no_space', path: '' },
    ],
    [2, 'tar: f: Cannot open: Disk quota exceeded\n', { ok: false, kind: 'no_space', path: '' }],
    [
      2,
      'tar: ./big.bin: Wrote only 3072 of 10240 bytes\ntar: Exiting with failure status due to previous errors\n',
      { ok: false, kind: 'no_space', path: '' },
    ],
    [
      2,
      'tar: This does not look like a tar archive\ntar: Exiting with failure status due to previous errors\n',
      {
        ok: false,
        kind: 'tar',
        path: '',
        detail: 'tar: This does not look like a tar archive; tar: Exiting with failure status due to previous errors',
      },
    ],
    [null, '', { ok: false, kind: 'tar', path: '', detail: 'exit null' }],
  ];
  for (const [code, stderr, outcome] of table) assert.deepEqual(tarFailure({ code, stderr }), outcome, stderr);
});
