// An intern's model requests are charged to the key that created it, and count against that key's
// limit: once it is spent, the intern's model request is refused with 402 and the turn, refused
// before any output, is the spec's `502 turn_failed` carrying the reason (not retryable), at once,
// never a hung stream.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startInternFixture, type InternFixture } from './helpers/interns.ts';
import { noSandbox } from './helpers/sandbox.ts';
import { hashKey } from '../src/gateway/crypto/keys.ts';

describe('an intern under a spent budget', { skip: noSandbox }, () => {
  let f: InternFixture;
  before(async () => {
    f = await startInternFixture();
  });
  after(() => f?.close());

  test("its turns are charged to its creator key, and refused once that key's limit is reached", async () => {
    const id = await f.intern('capped');
    const ok = await f.chat(id, { stream: true, messages: [{ role: 'user', content: 'hello' }] });
    assert.equal(ok.status, 200);
    // the key that created the intern (the management key) gets a limit of 0: spent from the start
    const hash = hashKey(f.gw.keys.management_key);
    await f.gw.ctx.inference.flush();
    const charged = (await f.gw.call('GET', `/keys/${hash}`)).body.data.usage;
    assert.ok(charged > 0, 'the turn was charged to the key that created the intern');
    assert.equal((await f.gw.call('PATCH', `/keys/${hash}`, { body: { limit: charged } })).status, 200);
    const started = Date.now();
    const r = await f.chat(id, { stream: true, messages: [{ role: 'user', content: 'hello again' }] });
    assert.deepEqual(
      [r.status, r.body],
      [
        502,
        {
          error: {
            code: 502,
            message: `model endpoint answered 402: the API key's spending limit of ${charged} USD is reached; it does not reset: raise the limit`,
            metadata: { reason: 'turn_failed', retryable: false },
          },
        },
      ],
    );
    assert.ok(Date.now() - started < 10_000, 'answered at once');
    // raising the limit lets the next turn run
    assert.equal((await f.gw.call('PATCH', `/keys/${hash}`, { body: { limit: charged + 1 } })).status, 200);
    const again = await f.chat(id, { stream: true, messages: [{ role: 'user', content: 'once more' }] });
    assert.equal(again.status, 200);
    assert.equal(again.done, true);
  });
});
