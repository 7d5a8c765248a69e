// Resolves a bearer API key to its Principal. Every route pays this, so resolutions are cached
// for a short TTL (COHORT_KEY_CACHE_MS) and dropped at once on revoke (or when the workspace they
// act in is deleted) in this process; with a bus (REDIS_URL) other processes drop them at once
// too, else they see it within the TTL.
import type { Db } from '../store/db.ts';
import { findPrincipal, type Principal } from './identity-store.ts';
import { hashKey } from '../crypto/keys.ts';
import { ApiError, invalidKey, missingAuth } from '../errors.ts';
import type { InvalidationBus } from './invalidation.ts';

const MAX_ENTRIES = 50_000;
const NEGATIVE_TTL_MS = 1_000;

export type Authenticator = {
  authenticate(authorization: string | undefined): Promise<Principal>;
  /** The same answer without waiting when it is already known (a cached key or a malformed header); undefined when a lookup is needed. */
  known(authorization: string | undefined): Principal | ApiError | undefined;
  /** Drops the cached resolution of one key (every key when absent) here and, with a bus, in every process. */
  invalidate(keyHash?: string): Promise<void>;
  /** Drops the cached resolutions acting in a deleted workspace here and, with a bus, in every process. */
  dropWorkspace(workspaceId: string): Promise<void>;
};

type Entry = { principal: Principal | null; expires: number };

export function bearerToken(authorization: string | undefined): string | null {
  if (!authorization) return null;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
  return m ? m[1]! : null;
}

export function createAuthenticator(opts: {
  db: Db;
  ttlMs: number;
  now?: () => number;
  bus?: InvalidationBus;
}): Authenticator {
  const cache = new Map<string, Entry>();
  const now = opts.now ?? Date.now;
  // Concurrent requests with the same uncached key share one lookup.
  const pending = new Map<string, Promise<Principal | null>>();
  // A lookup that started before an invalidation must not cache what it read.
  let generation = 0;
  // A lookup in flight may have read the state before the change: it neither caches nor is shared.
  const forgetInFlight = () => {
    generation++;
    pending.clear();
  };
  const drop = (keyHash: string | null | undefined) => {
    forgetInFlight();
    if (keyHash) cache.delete(keyHash);
    else cache.clear();
  };
  // A rare write, so a scan of the cache is cheaper than an index kept on every lookup.
  const dropWorkspace = (workspaceId: string | null) => {
    if (!workspaceId) return drop(null);
    forgetInFlight();
    for (const [hash, e] of cache) if (e.principal?.workspaceId === workspaceId) cache.delete(hash);
  };
  opts.bus?.subscribe('keys', drop);
  opts.bus?.subscribe('workspaces', dropWorkspace);

  async function lookup(hash: string): Promise<Principal | null> {
    const started = generation;
    const principal = await findPrincipal(opts.db, hash);
    if (started === generation) {
      if (cache.size >= MAX_ENTRIES) cache.delete(cache.keys().next().value!);
      cache.set(hash, { principal, expires: now() + (principal ? opts.ttlMs : NEGATIVE_TTL_MS) });
    }
    return principal;
  }

  function resolve(hash: string): Promise<Principal | null> {
    const hit = cache.get(hash);
    if (hit && hit.expires > now()) return Promise.resolve(hit.principal);
    const inFlight = pending.get(hash);
    if (inFlight) return inFlight;
    const p: Promise<Principal | null> = lookup(hash).finally(() => {
      if (pending.get(hash) === p) pending.delete(hash);
    });
    pending.set(hash, p);
    return p;
  }

  const hashOf = (authorization: string | undefined): string | ApiError => {
    const token = bearerToken(authorization);
    return token ? hashKey(token) : missingAuth();
  };
  // The cache and the store are both keyed by the digest, so a principal found is the key's own.
  // An expired key is refused from the instant it expires, whatever the cache holds.
  const verdict = (principal: Principal | null): Principal | ApiError =>
    principal && (principal.expiresAt === null || principal.expiresAt > now()) ? principal : invalidKey();

  return {
    async authenticate(authorization) {
      const hash = hashOf(authorization);
      if (hash instanceof ApiError) throw hash;
      const v = verdict(await resolve(hash));
      if (v instanceof ApiError) throw v;
      return v;
    },
    known(authorization) {
      const hash = hashOf(authorization);
      if (hash instanceof ApiError) return hash;
      const hit = cache.get(hash);
      return hit && hit.expires > now() ? verdict(hit.principal) : undefined;
    },
    async invalidate(keyHash) {
      drop(keyHash);
      await opts.bus?.publish('keys', keyHash ?? null);
    },
    async dropWorkspace(workspaceId) {
      dropWorkspace(workspaceId);
      await opts.bus?.publish('workspaces', workspaceId);
    },
  };
}
