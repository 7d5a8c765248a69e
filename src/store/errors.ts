// Recognizes database errors the services turn into documented refusals.
export function isUniqueViolation(err: unknown, constraintPart?: string): boolean {
  for (let e = err as { code?: string; constraint?: string; cause?: unknown } | undefined; e; e = e.cause as typeof e) {
    if (e.code === '23505') return !constraintPart || !e.constraint || e.constraint.includes(constraintPart);
  }
  return false;
}
