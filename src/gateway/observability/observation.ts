// What a model request says about itself for observability (docs/guides/observability.md): its
// session (`session_id` in the body, else the `x-session-id` header), its end user (`user`, or the
// Anthropic style's `metadata.user_id`) and its `metadata`, string values under known bounds. They
// are recorded on the request's row and become span attributes when the workspace broadcasts.
// Pure; read from the body as the preset made it (a preset's `metadata` counts), under the bounds a
// preset's own `metadata` has (management/preset-config.schemas.ts), so the request schemas stay as they are.
import { invalidRequest } from '../errors.ts';

export type Observation = { sessionId: string | null; user: string | null; metadata: Record<string, string> | null };

export const METADATA_MAX_KEYS = 64;
export const METADATA_KEY_MAX = 128;
export const METADATA_VALUE_MAX = 2048;
const SESSION_MAX = 256;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The request's observation, or a 400 naming the field that breaks a bound. */
export function observationOf(o: { raw: unknown; sessionHeader?: string | string[]; style: string }): Observation {
  const body = isObject(o.raw) ? o.raw : {};
  let sessionId = typeof body.session_id === 'string' ? body.session_id : null;
  if (sessionId === null && o.sessionHeader !== undefined) {
    const h = o.sessionHeader;
    if (typeof h !== 'string' || h.length < 1 || h.length > SESSION_MAX)
      throw invalidRequest(`x-session-id: must be one header of 1 to ${SESSION_MAX} characters`);
    sessionId = h;
  }
  let metadata: Record<string, string> | null = null;
  const m = body.metadata;
  if (m !== undefined && m !== null) {
    if (!isObject(m)) throw invalidRequest('metadata: must be an object of strings');
    const keys = Object.keys(m);
    if (keys.length > METADATA_MAX_KEYS) throw invalidRequest(`metadata: at most ${METADATA_MAX_KEYS} keys`);
    metadata = {};
    for (const k of keys) {
      const v = m[k];
      // A null value (as a preset's metadata and Anthropic's `user_id` allow) is no value.
      if (v === null) continue;
      if (k.length < 1 || k.length > METADATA_KEY_MAX)
        throw invalidRequest(`metadata: keys are 1 to ${METADATA_KEY_MAX} characters`);
      if (typeof v !== 'string' || v.length > METADATA_VALUE_MAX)
        throw invalidRequest(`metadata.${k}: must be a string of at most ${METADATA_VALUE_MAX} characters`);
      metadata[k] = v;
    }
  }
  const user =
    typeof body.user === 'string' && body.user
      ? body.user
      : o.style === 'messages' && metadata?.user_id
        ? metadata.user_id
        : null;
  return { sessionId, user, metadata };
}
