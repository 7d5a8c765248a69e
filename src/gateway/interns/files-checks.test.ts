// The error each refusal of an operation in an intern's view answers with (refusalOf), table by
// table; the path checks (one pass over a path) against the rules written plainly (property); and
// the branch a push makes when none is asked for (defaultBranch).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { MAX_DEPTH, MAX_NAME_BYTES, MAX_PATH_BYTES, pathRefusal, refusalOf, tarRefusal } from './files-checks.ts';
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

/** The path rules as plainly as they can be written: the spec pathRefusal is held to. */
function plainly(path: string): string | null {
  if (path.includes('\0')) return 'contains a NUL byte';
  if (Buffer.byteLength(path) > MAX_PATH_BYTES) return `is longer than ${MAX_PATH_BYTES} bytes`;
  if (path === '') return null;
  if (path.startsWith('/')) return 'is absolute: paths are relative to the work folder /intern/work';
  const parts = path.split('/');
  if (parts.length > MAX_DEPTH) return `is deeper than ${MAX_DEPTH} folders`;
  if (parts.some((p) => p === '..')) return 'climbs out of the work folder with ..';
  if (parts.some((p) => p === '' || p === '.')) return 'has an empty or . component';
  if (parts.some((p) => Buffer.byteLength(p) > MAX_NAME_BYTES)) return `has a name longer than ${MAX_NAME_BYTES} bytes`;
  return null;
}

test('pathRefusal and tarRefusal: as the rules written plainly, for any path', () => {
  // Paths of the pieces that matter: separators, dots, NULs, names near the bounds, wide characters.
  const piece = fc.oneof(
    fc.constantFrom('/', '.', '..', './', '\0', 'a', 'é', '漢', '😀', ''),
    fc.tuple(fc.integer({ min: 80, max: 300 }), fc.constantFrom('n', 'é', '漢', '😀')).map(([n, c]) => c.repeat(n)),
    fc.string({ maxLength: 8 }),
  );
  const path = fc.array(piece, { maxLength: 80 }).map((xs) => xs.join(''));
  fc.assert(
    fc.property(path, (p) => {
      assert.equal(pathRefusal(p), plainly(p));
      let stripped = p;
      while (stripped.startsWith('./')) stripped = stripped.slice(2);
      stripped = stripped.replace(/\/+$/, '');
      const dirs = new Set(['a', 'a/b']);
      const why = stripped === '.' || stripped === '' ? 'the folder itself as a file' : plainly(stripped);
      const parent = stripped.split('/').slice(0, -1).join('/');
      const want =
        why === 'the folder itself as a file'
          ? why
          : why
            ? `a path that ${why}`
            : parent && !dirs.has(parent)
              ? `a path whose folder "${parent}" is not an entry before it`
              : null;
      assert.equal(tarRefusal(p, 'File', dirs), want);
    }),
    {
      numRuns: 3000,
      // Names at the bound and one byte past it, in 1-, 2- and 3-byte characters.
      examples: [
        'n'.repeat(255),
        'n'.repeat(256),
        'é'.repeat(127),
        'é'.repeat(128),
        '漢'.repeat(85),
        `漢`.repeat(86),
      ].map((name) => [`a/${name}/b`]),
    },
  );
});
