// The files API's pure checks, table by table: a request's path, and a folder upload's tar entries;
// and how a file's download ends once its response has begun (outbound).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough, Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { checkedPath, pathRefusal, tarRefusal } from './files-checks.ts';
import { outbound } from './files-download.ts';

test('pathRefusal: what a path relative to the work folder may be', () => {
  const table: [string, string | null][] = [
    ['', null],
    ['a', null],
    ['a/b.c/.hidden', null],
    ['..', 'climbs out of the work folder with ..'],
    ['a/../b', 'climbs out of the work folder with ..'],
    ['/etc/passwd', 'is absolute: paths are relative to the work folder /intern/work'],
    ['a//b', 'has an empty or . component'],
    ['./a', 'has an empty or . component'],
    ['a\0b', 'contains a NUL byte'],
    ['n'.repeat(256), 'has a name longer than 255 bytes'],
    ['é'.repeat(128), 'has a name longer than 255 bytes'],
    [Array(65).fill('d').join('/'), 'is deeper than 64 folders'],
    [Array(300).fill('dddd').join('/'), 'is longer than 1024 bytes'],
  ];
  for (const [path, why] of table) assert.equal(pathRefusal(path), why, path);
  assert.equal(checkedPath('a/b/'), 'a/b');
  assert.throws(() => checkedPath('../x'), {
    status: 400,
    message: 'invalid request parameters: path: "../x" climbs out of the work folder with ..',
  });
});

test('tarRefusal: files and folders only, each under folders listed before it', () => {
  const dirs = new Set<string>();
  const table: [string, string, string | null][] = [
    ['./', 'Directory', null],
    ['.', 'File', 'the folder itself as a file'],
    ['./a/', 'Directory', null],
    ['./a/x', 'File', null],
    ['a/b/c', 'File', 'a path whose folder "a/b" is not an entry before it'],
    ['a/b/', 'Directory', null],
    ['a/b/c', 'OldFile', null],
    ['../x', 'File', 'a path that climbs out of the work folder with ..'],
    ['/x', 'File', 'a path that is absolute: paths are relative to the work folder /intern/work'],
    ['l', 'SymbolicLink', 'a symbolic link'],
    ['h', 'Link', 'a hard link'],
    ['d', 'BlockDevice', 'a device'],
    ['p', 'FIFO', 'a fifo'],
    ['q', 'GNUDumpDir', 'an entry of type GNUDumpDir'],
  ];
  for (const [path, type, why] of table) assert.equal(tarRefusal(path, type, dirs), why, `${path} ${type}`);
  assert.deepEqual([...dirs], ['a', 'a/b']);
});

test('outbound: a reader that takes nothing while bytes wait for it is cut off after idleMs; one that reads on, or a slow source, is not', async () => {
  // A reader that stops: the stream fails, and its source is destroyed.
  const endless = new Readable({
    read() {
      this.push(Buffer.alloc(65536));
    },
  });
  const stalled = outbound(endless, { idleMs: 100 });
  const first = await new Promise<Buffer>((resolve) =>
    stalled.once('data', (c: Buffer) => {
      stalled.pause();
      resolve(c);
    }),
  );
  assert.equal(first.length, 65536);
  const err = await new Promise<Error>((resolve) => stalled.once('error', resolve));
  assert.equal(err.message, 'the client took nothing of the download for 100 ms (COHORT_FILES_IDLE_MS)');
  await finished(endless).catch(() => {});
  assert.equal(endless.destroyed, true);

  // A source that is slow while the reader waits for it is not the reader's idleness.
  const slow = new PassThrough();
  const out = outbound(slow, { idleMs: 100 });
  const chunks: Buffer[] = [];
  out.on('data', (c: Buffer) => chunks.push(c));
  slow.write(Buffer.alloc(10));
  await new Promise((r) => setTimeout(r, 300));
  slow.end(Buffer.alloc(10));
  await finished(out);
  assert.equal(Buffer.concat(chunks).length, 20);
});
