// The files API's pure checks, table by table: a request's path, and a folder upload's tar entries.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkedPath, pathRefusal, tarRefusal } from './files.ts';

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
