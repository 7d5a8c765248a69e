// API keys: long random secrets with a recognizable prefix, stored only as SHA-256 hex.
import { hash, randomBytes } from 'node:crypto';

export const KEY_PREFIX = 'ck-';

export function generateApiKey(): string {
  return KEY_PREFIX + randomBytes(32).toString('base64url');
}

export function hashKey(raw: string): string {
  return hash('sha256', raw, 'hex');
}

/** Masked form shown instead of a secret: prefix, ellipsis, last characters. */
export function maskSecret(raw: string): string {
  if (raw.length <= 8) return '*'.repeat(raw.length);
  const head = raw.length >= 16 ? raw.slice(0, 6) : raw.slice(0, 2);
  return `${head}...${raw.slice(-4)}`;
}
