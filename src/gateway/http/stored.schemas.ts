// Strings the database keeps. PostgreSQL's text cannot hold U+0000 (SQLSTATE 22021) and its jsonb
// rejects the \u0000 escape (22P05) and an unpaired surrogate's escape (22P02), so a body carrying
// one would fail at the insert, as a 500. Every stored string is declared with StoredString, and
// every free-form value stored as jsonb is wrapped in storedJson, so such a body is a 400 naming the
// field and nothing is written. A string whose pattern already excludes these characters (slugs,
// hashes, UUIDs) needs neither; a string only forwarded upstream (a model request's messages) may
// hold them: the request log makes its own copy safe (src/gateway/inference/request-log.ts).
import { z } from 'zod';

const LONE_SURROGATE = /\p{Cs}/u;

/** Why PostgreSQL cannot store `s`, or null when it can. */
function unstorable(s: string): string | null {
  if (s.includes('\0')) return 'must not contain U+0000 (NUL)';
  if (LONE_SURROGATE.test(s)) return 'must not contain an unpaired surrogate';
  return null;
}

export const StoredString = z.string().superRefine((s, ctx) => {
  const reason = unstorable(s);
  if (reason) ctx.addIssue({ code: 'custom', message: reason });
});

type Path = (string | number)[];
/** A value still to visit, with the way back to the root (a path is built only for the one reported). */
type Node = { value: unknown; key?: string | number; parent?: Node };

const pathOf = (n: Node | undefined): Path => {
  const path: Path = [];
  for (; n?.parent; n = n.parent) path.push(n.key!);
  return path.reverse();
};

/** The first string or object key in a JSON value that cannot be stored. Iterative and linear: a
 * parsed body may nest deeper than the call stack allows. */
function findUnstorable(value: unknown): { path: Path; message: string } | null {
  const todo: Node[] = [{ value }];
  for (let n = todo.pop(); n; n = todo.pop()) {
    const v = n.value;
    if (typeof v === 'string') {
      const reason = unstorable(v);
      if (reason) return { path: pathOf(n), message: reason };
    } else if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) todo.push({ value: v[i], key: i, parent: n });
    } else if (v !== null && typeof v === 'object') {
      const keys = Object.keys(v);
      for (const k of keys) {
        const reason = unstorable(k);
        if (reason) return { path: pathOf(n), message: `a key ${reason}` };
      }
      for (let i = keys.length - 1; i >= 0; i--)
        todo.push({ value: (v as Record<string, unknown>)[keys[i]!], key: keys[i]!, parent: n });
    }
  }
  return null;
}

/** A free-form value (a loose object, a record of unknown) that is stored as jsonb. */
export function storedJson<S extends z.ZodType>(schema: S): S {
  return schema.superRefine((v, ctx) => {
    const found = findUnstorable(v);
    if (found) ctx.addIssue({ code: 'custom', path: found.path, message: found.message });
  }) as S;
}
