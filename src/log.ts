// The one logger. Secrets are redacted here, not at call sites: known secret-bearing fields by
// path, and anything shaped like a cohort API key, a bearer token or a URL's credentials (a
// connection string's user and password) wherever it appears in a line.
import pino, { type Logger, type DestinationStream } from 'pino';

export const REDACT_PATHS = [
  'key',
  'api_key',
  'apiKey',
  'management_key',
  'secret',
  'password',
  'authorization',
  '*.key',
  '*.api_key',
  '*.secret',
  '*.authorization',
  'req.headers.authorization',
  'headers.authorization',
];

const SECRET_PATTERNS: RegExp[] = [/ck-[A-Za-z0-9_-]{20,}/g, /Bearer\s+[^\s"']+/gi, /(?<=:\/\/)[^\s/@]+(?=@)/g];

export function scrub(text: string): string {
  return SECRET_PATTERNS.reduce((t, re) => t.replace(re, '[REDACTED]'), text);
}

export function createLogger(opts: { level: string; name?: string; destination?: DestinationStream }): Logger {
  return pino(
    {
      level: opts.level,
      name: opts.name,
      redact: { paths: REDACT_PATHS, censor: '[REDACTED]' },
      hooks: {
        // Free-text fields (messages, error strings) can carry a key a caller pasted; scrub them.
        logMethod(args, method) {
          method.apply(this, args.map((a) => (typeof a === 'string' ? scrub(a) : a)) as Parameters<typeof method>);
        },
      },
      serializers: {
        err: (e: unknown) => {
          const s = pino.stdSerializers.err(e as Error);
          return { ...s, message: scrub(s.message ?? ''), stack: s.stack ? scrub(s.stack) : undefined };
        },
      },
    },
    opts.destination,
  );
}

export type { Logger };
