// Resolves a bearer API key to its Principal. Every route pays this, so resolutions are cached
// for a short TTL (COHORT_KEY_CACHE_MS) and dropped at once on revoke in this process; other
// processes see a revocation within the TTL.
import type { Db } from '../store/db.ts';
import { findPrincipal, type Principal } from '../store/identity.ts';
import { hashKey, sameHash } from '../crypto/keys.ts';
import { invalidKey, missingAuth } from '../errors.ts';

const MAX_ENTRIES = 50_000;
const NEGATIVE_TTL_MS = 1_000;

export type Authenticator = {
  authenticate(authorization: string | undefined): Promise<Principal>;
  invalidate(keyHash?: string): void;
};

type Entry = { principal: Principal | null; expires: number };

export function bearerToken(authorization: string | undefined): string | null {
  if (!authorization) return null;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
  return m ? m[1]! : null;
}

export function createAuthenticator(opts: { db: Db; ttlMs: number; now?: () => number }): Authenticator {
  const cache = new Map<string, Entry>();
  const now = opts.now ?? Date.now;

  async function resolve(hash: string): Promise<Principal | null> {
    const hit = cache.get(hash);
    if (hit && hit.expires > now()) return hit.principal;
    const principal = await findPrincipal(opts.db, hash);
    if (cache.size >= MAX_ENTRIES) cache.delete(cache.keys().next().value!);
    cache.set(hash, { principal, expires: now() + (principal ? opts.ttlMs : NEGATIVE_TTL_MS) });
    return principal;
  }

  return {
    async authenticate(authorization) {
      const token = bearerToken(authorization);
      if (!token) throw missingAuth();
      const hash = hashKey(token);
      const principal = await resolve(hash);
      if (!principal || !sameHash(principal.keyHash, hash)) throw invalidKey();
      return principal;
    },
    invalidate(keyHash) {
      if (keyHash) cache.delete(keyHash);
      else cache.clear();
    },
  };
}
