import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { firstLine } from './first-line.ts';

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

test('a stream that ends before the line does is the error the caller names', async () => {
  const input = new PassThrough();
  const reading = firstLine(input, 'stdin closed before the spare agent was assigned');
  input.end('{"uid":');
  await assert.rejects(reading, { message: 'stdin closed before the spare agent was assigned' });
});

test('otherwise a stream that ends first gives what it carried: a last line without its newline, or nothing', async () => {
  const unterminated = new PassThrough();
  const reading = firstLine(unterminated);
  unterminated.end('s3cret');
  assert.equal(await reading, 's3cret');
  const empty = new PassThrough();
  const nothing = firstLine(empty);
  empty.end();
  assert.equal(await nothing, '');
});
