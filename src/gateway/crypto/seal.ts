// Sealed secrets: AES-256-GCM under the master key, bound to the owning record's id (as AAD)
// so a sealed value copied onto another row does not open.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export type Sealer = { seal(plain: string, boundTo: string): string; open(sealed: string, boundTo: string): string };

export function createSealer(masterKey: Buffer): Sealer {
  if (masterKey.length !== 32) throw new Error('master key must be 32 bytes');
  return {
    seal(plain, boundTo) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', masterKey, iv);
      cipher.setAAD(Buffer.from(boundTo));
      const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
      return 'v1:' + Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64');
    },
    open(sealed, boundTo) {
      if (!sealed.startsWith('v1:')) throw new Error('unknown sealed format');
      const raw = Buffer.from(sealed.slice(3), 'base64');
      const decipher = createDecipheriv('aes-256-gcm', masterKey, raw.subarray(0, 12));
      decipher.setAAD(Buffer.from(boundTo));
      decipher.setAuthTag(raw.subarray(12, 28));
      return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
    },
  };
}

/** The master key if there is one (COHORT_MASTER_KEY, else the data dir's master.key), never generating one (a restore). */
export function findMasterKey(opts: { dataDir: string; configured?: string }): Buffer | null {
  if (opts.configured) {
    const k = /^[0-9a-f]{64}$/i.test(opts.configured)
      ? Buffer.from(opts.configured, 'hex')
      : Buffer.from(opts.configured, 'base64');
    if (k.length !== 32) throw new Error('COHORT_MASTER_KEY must be 32 bytes as 64 hex characters or base64');
    return k;
  }
  const file = join(opts.dataDir, 'master.key');
  return existsSync(file) ? Buffer.from(readFileSync(file, 'utf8').trim(), 'hex') : null;
}

/** COHORT_MASTER_KEY (64 hex chars or base64 of 32 bytes), else a key generated once into the data dir. */
export function loadMasterKey(opts: { dataDir: string; configured?: string }): Buffer {
  const found = findMasterKey(opts);
  if (found) {
    if (!opts.configured) chmodSync(join(opts.dataDir, 'master.key'), 0o600);
    return found;
  }
  const file = join(opts.dataDir, 'master.key');
  mkdirSync(opts.dataDir, { recursive: true });
  const key = randomBytes(32);
  writeFileSync(file, key.toString('hex') + '\n', { mode: 0o600, flag: 'wx' });
  return key;
}
