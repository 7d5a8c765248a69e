// Request validation with Zod: a failure becomes the documented 400 naming the offending field.
import type { z } from 'zod';
import { invalidRequest, type ApiError } from '../errors.ts';

type Issue = z.core.$ZodIssue;

/** A union (string or array, say) that failed names the offending field inside the one branch the
 * value's type matched, rather than only "Invalid input" at the union: a branch whose issues all
 * lie below the union's own path is the one the value was meant for. */
function deepest(issue: Issue): Issue[] {
  if (issue.code !== 'invalid_union' || !issue.errors.length) return [issue];
  const matched = issue.errors.filter((branch) => branch.length && branch.every((i) => i.path.length > 0));
  if (matched.length !== 1) return [issue];
  return matched[0]!.flatMap((i) => deepest({ ...i, path: [...issue.path, ...i.path] } as Issue));
}

export function describeIssues(error: z.ZodError): string {
  return error.issues
    .flatMap(deepest)
    .slice(0, 5)
    .map((i) => {
      const path = i.path.length ? i.path.join('.') : 'body';
      if (i.code === 'unrecognized_keys') {
        const names = i.keys.map((k) => (i.path.length ? `${path}.${k}` : k));
        return `${names.join(', ')}: unknown field${names.length > 1 ? 's' : ''}`;
      }
      return `${path}: ${i.message}`;
    })
    .join('; ');
}

export function parseWith<S extends z.ZodType>(
  schema: S,
  value: unknown,
  make: (detail: string) => ApiError = invalidRequest,
): z.output<S> {
  const r = schema.safeParse(value);
  if (!r.success) throw make(describeIssues(r.error));
  return r.data;
}
