// Wire data read against its schema (the shared Zod schemas), not cast: JSON text in, the typed
// value out, or an error that names what was read and which fields are wrong (never their values,
// which may be anyone's). For readers of the public API and of the runtime's own protocols (the
// CLI, the built-in agent). May import: zod.
import type { z } from 'zod';

/** `text` parsed as JSON and checked by `schema`; `what` names it in the error. */
export function parseJson<S extends z.ZodType>(schema: S, text: string, what: string): z.output<S> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new Error(`${what} is not JSON`);
  }
  const r = schema.safeParse(value);
  if (!r.success)
    throw new Error(
      `${what} is not as expected: ${r.error.issues.map((i) => `${i.path.join('.') || '(itself)'}: ${i.message}`).join('; ')}`,
    );
  return r.data;
}
