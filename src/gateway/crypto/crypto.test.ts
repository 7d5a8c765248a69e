import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createSealer } from './seal.ts';
import { generateApiKey, hashKey, maskSecret } from './keys.ts';

test('sealed values open only with the same key and binding', () => {
  const s = createSealer(randomBytes(32));
  const sealed = s.seal('sk-provider-secret', 'cred-1');
  assert.ok(!sealed.includes('sk-provider-secret'));
  assert.equal(s.open(sealed, 'cred-1'), 'sk-provider-secret');
  assert.throws(() => s.open(sealed, 'cred-2'));
  assert.throws(() => createSealer(randomBytes(32)).open(sealed, 'cred-1'));
});

test('keys are prefixed, hashed to 64 hex and masked', () => {
  const k = generateApiKey();
  assert.match(k, /^ck-[A-Za-z0-9_-]{43}$/);
  assert.match(hashKey(k), /^[a-f0-9]{64}$/);
  assert.equal(hashKey(k), hashKey(k));
  assert.notEqual(hashKey(k), hashKey(k + 'x'));
  assert.equal(maskSecret('sk-abcdefghijklmnop1234'), 'sk-abc...1234');
  assert.equal(maskSecret('short'), '*****');
});
