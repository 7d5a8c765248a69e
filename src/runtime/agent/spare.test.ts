import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { firstLine, takeAssignment } from './spare.ts';

/** What a reader sees after firstLine: the rest of the stream, byte for byte. */
async function rest(input: PassThrough): Promise<string> {
  input.end();
  const chunks: Buffer[] = [];
  for await (const c of input) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

test('the first line is taken and what came after it in the same chunk is left for the ACP channel', async () => {
  const input = new PassThrough();
  input.write('{"uid":200001}\n{"jsonrpc":"2.0","id":0,"method":"initialize"}\n');
  assert.equal(await firstLine(input), '{"uid":200001}');
  assert.equal(await rest(input), '{"jsonrpc":"2.0","id":0,"method":"initialize"}\n');
});

test('a line split across chunks, even inside a multibyte character, is joined whole', async () => {
  const input = new PassThrough();
  const line = Buffer.from('{"cwd":"/intern/wörk"}\nnext');
  const reading = firstLine(input);
  input.write(line.subarray(0, 15));
  input.write(line.subarray(15, 17));
  input.write(line.subarray(17));
  assert.equal(await reading, '{"cwd":"/intern/wörk"}');
  assert.equal(await rest(input), 'next');
});

test('stdin that closes before the line ends is an error', async () => {
  const input = new PassThrough();
  const reading = firstLine(input);
  input.end('{"uid":');
  await assert.rejects(reading, { message: 'stdin closed before the spare agent was assigned' });
});

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
