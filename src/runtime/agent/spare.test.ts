import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { takeAssignment } from './spare.ts';

for (const [name, line] of [
  ['root', '{"uid":0,"cwd":"/intern/work","env":{}}'],
  ['no uid', '{"cwd":"/intern/work","env":{}}'],
  ['a fractional uid', '{"uid":1.5,"cwd":"/intern/work","env":{}}'],
  ['no cwd', '{"uid":200001,"env":{}}'],
  ['no env', '{"uid":200001,"cwd":"/intern/work"}'],
] as const)
  test(`an assignment with ${name} is refused before any id changes`, async () => {
    const input = new PassThrough();
    input.write(`${line}\n`);
    await assert.rejects(takeAssignment(input), {
      message: 'the spare agent\'s assignment must be {"uid": a positive integer, "cwd": …, "env": {…}}',
    });
    assert.equal(process.getuid!(), process.geteuid!());
  });
