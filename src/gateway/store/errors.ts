// Recognizes database errors the services turn into documented refusals.
function violates(err: unknown, sqlState: string, constraintPart?: string): boolean {
  for (let e = err as { code?: string; constraint?: string; cause?: unknown } | undefined; e; e = e.cause as typeof e) {
    if (e.code === sqlState) return !constraintPart || !e.constraint || e.constraint.includes(constraintPart);
  }
  return false;
}

export const isUniqueViolation = (err: unknown, constraintPart?: string) => violates(err, '23505', constraintPart);

/** A referenced row is gone: a workspace deleted after the request resolved it, before its insert. */
export const isForeignKeyViolation = (err: unknown, constraintPart?: string) => violates(err, '23503', constraintPart);

/** PostgreSQL could not store a character of a value: U+0000 in text (22021) or as jsonb's \u0000 (22P05). */
export const isUnstorableCharacter = (err: unknown) => violates(err, '22021') || violates(err, '22P05');
