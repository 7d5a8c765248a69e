// Request validation with Zod: a failure becomes the documented 400 naming the offending field.
import { z } from 'zod';
import { invalidRequest, ApiError } from '../errors.ts';

export function describeIssues(error: z.ZodError): string {
  return error.issues
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

export function parseWith<S extends z.ZodType>(schema: S, value: unknown, make: (detail: string) => ApiError = invalidRequest): z.output<S> {
  const r = schema.safeParse(value);
  if (!r.success) throw make(describeIssues(r.error));
  return r.data;
}

