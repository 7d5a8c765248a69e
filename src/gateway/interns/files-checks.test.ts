// The error each refusal of an operation in an intern's view answers with (refusalOf), table by
// table, and the branch a push makes when none is asked for (defaultBranch).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { refusalOf } from './files-checks.ts';
import { defaultBranch } from './files-repositories.ts';

test("refusalOf: each kind of refusal as its status and message, naming the path or the request's", () => {
  const logged: unknown[] = [];
  const o = { fallback: 'req/path', maxBytes: 1000, log: { error: (detail: unknown) => logged.push(detail) } };
  const table: [kind: string, path: string, status: number, message: string][] = [
    ['missing', 'a/b', 404, 'resource not found: file "a/b"'],
    ['missing', '', 404, 'resource not found: file "req/path"'],
    ['symlink', 'l', 400, 'invalid request parameters: path: "l" is a symbolic link: the files API follows no link'],
    [
      'special',
      'p',
      400,
      'invalid request parameters: path: "p" is a device, fifo or socket: only files and folders are handled',
    ],
    ['not_folder', 'f', 409, 'resource conflict: "f" is a file, not a folder'],
    ['is_folder', 'd', 409, 'resource conflict: "d" is a folder; upload a folder with ?format=tar'],
    ['exists', 'x', 409, 'resource conflict: "x" already exists'],
    ['into_itself', 'd', 400, 'invalid request parameters: path: "d" cannot be moved into itself'],
    [
      'is_root',
      '',
      400,
      'invalid request parameters: path: "" is the work folder itself, which cannot be removed or moved',
    ],
    ['too_large', 'big', 413, `"big" exceeds the files API's limit of 1000 bytes (COHORT_FILES_MAX_MB)`],
    ['too_long', 'n', 400, `invalid request parameters: path: "n" is too long for the intern's disk`],
    ['no_space', 'f', 413, "the intern's disk is full"],
    ['denied', 'f', 409, `resource conflict: "f" cannot be read or written by the intern's own user (its permissions)`],
    ['changed', 'f', 409, 'resource conflict: "f" changed while it was handled; retry'],
    ['tar', '', 400, 'invalid request parameters: body: the tar stream could not be unpacked (bad header)'],
    ['failed', '', 500, 'internal server error'],
    ['toString', '', 500, 'internal server error'],
  ];
  for (const [kind, path, status, message] of table) {
    const err = refusalOf({ ok: false, kind, path, detail: kind === 'tar' ? 'bad header' : 'why' }, o);
    assert.deepEqual({ status: (err as { status?: number }).status, message: err.message }, { status, message }, kind);
  }
  assert.deepEqual(
    refusalOf({ ok: false, kind: 'missing', path: '' }, { ...o, fallback: '' }).message,
    'resource not found: file "."',
  );
  // Only what no kind names is logged, with its detail.
  assert.deepEqual(logged, [{ detail: 'why' }, { detail: 'why' }]);
});

test("defaultBranch: the intern's name made safe for a ref, at most 60 characters of it, and the time", () => {
  const table: [string, number, string][] = [
    ['Alice', 0, 'cohort/alice-0'],
    ['my intern: v2!', 36, 'cohort/my-intern-v2--10'],
    ['n'.repeat(80), 1_700_000_000_000, `cohort/${'n'.repeat(60)}-loyw3v28`],
    ['é..x', 1, 'cohort/-..x-1'],
  ];
  for (const [name, now, branch] of table) assert.equal(defaultBranch(name, now), branch, name);
});
