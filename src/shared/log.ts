// The one logger: JSON lines, or readable ones on a terminal (pino-pretty). Secrets are redacted here, not at call sites: known secret-bearing fields by
// path, and anything shaped like a cohort API key, a bearer token or a URL's credentials (a
// connection string's user and password) wherever it appears in a line; a failed query's
// parameters and the value a database error quotes are dropped from a logged error.
import pino, { type Logger, type DestinationStream } from 'pino';
import pretty from 'pino-pretty';

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

/** Drizzle puts a failed query's parameters in its message and in `params`; they can hold sealed
 * keys, key hashes and callers' text, so a log line keeps the query only. */
function withoutParams(text: string, err: unknown): string {
  for (
    let e = err as { params?: unknown; cause?: unknown } | undefined;
    e && typeof e === 'object';
    e = e.cause as typeof e
  ) {
    if (Array.isArray(e.params)) text = text.replaceAll(`\nparams: ${String(e.params)}`, '\nparams: [REDACTED]');
  }
  return text;
}

/** A PostgreSQL error's `where` quotes the value it failed on (`COPY t, line 2, column body: "…"`,
 * `portal parameter $1 = '…'`, `JSON data, line 1: …`); the location is kept, the value is not. */
const whereWithoutValues = (where: string) => where.replace(/(: | = )[\s\S]+$/, '$1[REDACTED]');

/** Whether lines are written for a person: asked for, or else when stdout is a terminal. */
export const prettyFor = (format: 'pretty' | 'json' | undefined, isTTY = process.stdout.isTTY === true) =>
  format ? format === 'pretty' : isTTY;

/** `pretty`: one readable line per entry (time, level, message, then the fields), formatted in
 * this thread after redaction, so a pretty line hides exactly what a JSON one does. */
export function createLogger(opts: {
  level: string;
  name?: string;
  destination?: DestinationStream;
  pretty?: boolean;
}): Logger {
  const destination = opts.pretty
    ? pretty({
        destination: opts.destination ?? 1,
        colorize: opts.destination ? false : pretty.isColorSupported,
        translateTime: 'SYS:HH:MM:ss.l',
        ignore: 'pid,hostname',
        sync: true,
      })
    : opts.destination;
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
          const clean = (t: string) => scrub(withoutParams(t, e));
          return {
            ...s,
            message: clean(s.message ?? ''),
            stack: s.stack ? clean(s.stack) : undefined,
            ...('params' in s ? { params: '[REDACTED]' } : {}),
            ...(typeof s.where === 'string' ? { where: whereWithoutValues(s.where) } : {}),
          };
        },
      },
    },
    destination,
  );
}

export type { Logger };
