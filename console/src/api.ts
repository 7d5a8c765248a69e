// The console's only way to the gateway: /api/v1 on the page's own origin, with the key the user
// pasted. The key lives in this tab's sessionStorage (gone when the tab closes), is sent only in
// the Authorization header, and never goes into a URL, localStorage or a log line.
import { isErrorBody } from './wire.ts';

const KEY = 'cohort.key';

export const storedKey = () => sessionStorage.getItem(KEY);
export const storeKey = (key: string) => sessionStorage.setItem(KEY, key);
export const forgetKey = () => sessionStorage.removeItem(KEY);

/** A refusal in words: the server's message, its reason and retryability where the route gives
 * them, and the message split by the field each part names (`name: too long` → fields.name). */
export type Problem = {
  status: number;
  message: string;
  reason?: string;
  retryable: boolean;
  retryAfter?: number;
  fields: Record<string, string>;
};

export class ApiProblem extends Error {
  constructor(readonly problem: Problem) {
    super(problem.message);
  }
}

/** `invalid request parameters: name: too long; slug: bad` → {name: 'too long', slug: 'bad'}, by
 * each path's first segment (`messages.0.content` → messages); `body: …` stays form-wide. */
export function fieldErrors(message: string): Record<string, string> {
  const fields: Record<string, string> = {};
  const detail = message.replace(/^invalid request parameters: /, '');
  for (const part of detail.split('; ')) {
    const m = /^([A-Za-z_][\w]*)(?:\.[\w.]*)?: (.+)$/.exec(part);
    if (m && m[1] !== 'body') fields[m[1]!] = fields[m[1]!] ? `${fields[m[1]!]}; ${m[2]}` : m[2]!;
  }
  return fields;
}

export async function problemOf(res: Response): Promise<Problem> {
  let error: { message?: string; metadata?: { reason?: string; retryable?: boolean } } = {};
  try {
    const body: unknown = await res.json();
    if (isErrorBody(body)) error = body.error;
  } catch {}
  const message = error.message ?? `the gateway answered ${res.status}`;
  const retryAfter = Number(res.headers.get('retry-after')) || undefined;
  return {
    status: res.status,
    message,
    reason: error.metadata?.reason,
    retryable: error.metadata?.retryable ?? res.status >= 500,
    retryAfter,
    fields: res.status === 400 ? fieldErrors(message) : {},
  };
}

/** Whoever shows the key screen again when the gateway refuses the key (revoked meanwhile, say). */
let onRefused: () => void = () => {};
export const whenKeyRefused = (f: () => void) => (onRefused = f);

export function request(
  method: string,
  path: string,
  body?: unknown,
  init: { signal?: AbortSignal; key?: string; headers?: Record<string, string>; raw?: Blob } = {},
): Promise<Response> {
  const key = init.key ?? storedKey() ?? '';
  const json = body !== undefined && init.raw === undefined;
  return fetch('/api/v1' + path, {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      ...(json ? { 'content-type': 'application/json' } : {}),
      ...init.headers,
    },
    // A file's bytes go as they are (an intern's files, docs/guides/files.md).
    body: init.raw ?? (json ? JSON.stringify(body) : undefined),
    signal: init.signal,
    cache: 'no-store',
    credentials: 'omit',
  });
}

/** A JSON call; a refusal throws ApiProblem, and a 401 also hands control back to the key screen. */
export async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const res = await request(method, path, body);
  if (!res.ok) {
    const p = await problemOf(res);
    if (p.status === 401) onRefused();
    throw new ApiProblem(p);
  }
  return (res.status === 204 ? undefined : await res.json()) as T;
}

export const problem = (e: unknown): Problem =>
  e instanceof ApiProblem
    ? e.problem
    : {
        status: 0,
        message: `the gateway could not be reached (${e instanceof Error ? e.message : String(e)})`,
        retryable: true,
        fields: {},
      };
