// The error registry: one ApiError class, every reason with its statuses and retry rule (REASONS_TABLE,
// the reference's table in docs/reference/errors.md, kept with the daemon's in src/shared/refusals.ts),
// one constructor per refusal the gateway makes, and one renderer that gives the documented body shape. Nothing else constructs an ApiError
// (a test holds the tree to it); anything else thrown becomes a plain 500.
import { Reason, REASONS_TABLE, retryableFor } from '../shared/refusals.ts';

/** The reason values (docs/reference/errors.md#reasons); the daemon protocol and the gateway share one
 * registry (src/shared/refusals.ts: the reasons, their statuses and retry rules). */
export const REASONS = Reason.options;
export { REASONS_TABLE, retryableFor };
export type { Reason };

export type ApiErrorInit = {
  status: number;
  message: string;
  reason?: Reason;
  retryable?: boolean;
  headers?: Record<string, string>;
  /** What went wrong underneath (a transport error); never rendered. */
  cause?: unknown;
};

export class ApiError extends Error {
  readonly status: number;
  readonly reason?: Reason;
  readonly retryable: boolean;
  readonly headers: Record<string, string>;

  constructor(init: ApiErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = 'ApiError';
    this.status = init.status;
    this.reason = init.reason;
    this.retryable = init.reason ? retryableFor(init.reason, init.retryable) : false;
    this.headers = init.headers ?? {};
  }
}

export type ErrorBody = {
  error: { code: number; message: string; metadata?: { reason: Reason; retryable: boolean } };
};

/** The documented body: `metadata` only where the route renders it and the error has a reason. */
export function errorBody(err: ApiError, opts: { metadata: boolean }): ErrorBody {
  const body: ErrorBody = { error: { code: err.status, message: err.message } };
  if (opts.metadata && err.reason) body.error.metadata = { reason: err.reason, retryable: err.retryable };
  return body;
}

// Management-endpoint refusals (docs/reference/api.md#management-errors).
export const invalidRequest = (detail: string) =>
  new ApiError({ status: 400, reason: 'bad_request', message: `invalid request parameters: ${detail}` });
// The workspace a request would act in is gone (docs/reference/api.md#provider-credentials: 400, not a 500
// from the insert).
export const defaultWorkspaceDeleted = () =>
  invalidRequest("workspace_id: the account's default workspace was deleted, so workspace_id must be passed");
export const keyWorkspaceDeleted = (field: string) =>
  invalidRequest(`${field}: the key's workspace was deleted; use a key bound to an existing workspace`);
export const missingAuth = () => new ApiError({ status: 401, message: 'missing authentication header' });
export const invalidKey = () => new ApiError({ status: 401, message: 'invalid or revoked API key' });
export const managementOnly = () =>
  new ApiError({ status: 403, message: 'only management keys can perform this operation' });
export const departedCreator = () =>
  new ApiError({
    status: 403,
    message: 'the member who created this key has left the organization and the key holds no grant',
  });
/** The management `404` message (docs/reference/errors.md#without-a-reason), naming what was not found
 * after it, as `invalid request parameters: …` names the field. */
export const resourceNotFound = (what?: string) =>
  new ApiError({
    status: 404,
    reason: 'not_found',
    message: what ? `resource not found: ${what}` : 'resource not found',
  });
export const resourceConflict = () => new ApiError({ status: 409, message: 'resource conflict, try again later' });
export const payloadTooLarge = () =>
  new ApiError({ status: 413, reason: 'payload_too_large', message: 'request body exceeds 1 MiB (1048576 bytes)' });
export const internalError = () => new ApiError({ status: 500, message: 'internal server error' });
/** An open stream ended by the gateway's shutdown: the connection is lost, a retry may go to another gateway. */
export const gatewayStopping = () =>
  new ApiError({ status: 502, reason: 'stream_severed', message: 'the gateway is shutting down' });
export const serverToolDisabled = (tool: string) =>
  new ApiError({ status: 403, message: `server tool ${tool} is disabled in this workspace` });
export const workspaceHoldsInterns = (n: number) =>
  new ApiError({
    status: 409,
    message: `resource conflict: the workspace still has ${n} intern${n === 1 ? '' : 's'}; delete ${n === 1 ? 'it' : 'them'} first`,
  });
/** An administrative change that contradicts the records (the CLI's). */
export const adminConflict = (message: string) => new ApiError({ status: 409, message });
/** A plain 404 (no `metadata`) for a caller outside the interns programme, before anything else is checked. */
export const outsideProgramme = () => new ApiError({ status: 404, message: 'resource not found' });

// Model requests.
export const badModelRequest = (message: string) => new ApiError({ status: 400, reason: 'bad_request', message });
/** `silent`: how many of the slots are held by a gateway that stopped answering (its leases end by
 * themselves within Retry-After); else the caller's own requests hold them. */
export const concurrencyLimited = (o: {
  what: string;
  scope: 'key' | 'account';
  limit: number;
  retryAfterS: number;
  silent?: number;
}) =>
  new ApiError({
    status: 429,
    reason: 'rate_limited',
    message: `too many concurrent ${o.what} for this ${o.scope === 'key' ? 'API key' : 'account'} (at most ${o.limit}); ${
      o.silent
        ? `${o.silent} of them ${o.silent === 1 ? 'is' : 'are'} held by a gateway that stopped answering, freed within ${o.retryAfterS} s`
        : 'retry when one ends'
    }`,
    headers: { 'retry-after': String(o.retryAfterS) },
  });
/** A provider's failure, already classified and scrubbed of the key by the caller. */
export const providerFailed = (o: {
  status: number;
  reason: 'timeout' | 'rate_limited' | 'turn_failed' | 'bad_request';
  retryable?: boolean;
  message: string;
}) => new ApiError({ ...o, ...(o.reason === 'rate_limited' ? { headers: { 'retry-after': '1' } } : {}) });
export const noUsableCredential = () =>
  new ApiError({
    status: 502,
    reason: 'turn_failed',
    retryable: true,
    message: 'no provider credential could be used',
  });
export const clientClosed = () =>
  new ApiError({ status: 499, reason: 'client_closed_request', message: 'the client closed the request' });

// Interns.
export const internNameTaken = (name: string) =>
  new ApiError({ status: 409, message: `an intern named "${name}" already exists for this creator in the workspace` });
export const tooManyInterns = (max: number) =>
  new ApiError({
    status: 409,
    message: `this account already has ${max} interns, the most this installation allows (COHORT_MAX_INTERNS_PER_ACCOUNT); delete one first`,
  });
export const internDeleting = () => new ApiError({ status: 409, message: 'the intern is being deleted' });
export const internNotReady = (status: string, next: string) =>
  new ApiError({
    status: 409,
    reason: 'intern_not_ready',
    message: `the intern is not running (status ${status}): ${next}`,
  });
export const turnsLimited = (retryAfterS: number) =>
  new ApiError({
    status: 429,
    reason: 'rate_limited',
    message: 'too many turns for this user or organization; retry later',
    headers: { 'retry-after': String(retryAfterS) },
  });
export const internUnreachable = (err: unknown) =>
  new ApiError({
    status: 502,
    reason: 'intern_unreachable',
    message: `the intern could not be reached: ${(err as { code?: string }).code ?? 'connection failed'}`,
    cause: err,
  });
export const internRejected = (status: number) =>
  new ApiError({
    status: 502,
    reason: 'intern_rejected',
    message: `the intern rejected the request (status ${status})`,
  });
/** A refusal the intern's daemon made (the reasons of docs/reference/intern-chat.md#statuses-and-reasons),
 * passed on as it said it. */
export const internRefused = (o: {
  status: number;
  reason: Reason;
  retryable: boolean;
  message: string;
  retryAfter?: string;
}) =>
  new ApiError({
    status: o.status,
    reason: o.reason,
    retryable: o.retryable,
    message: o.message,
    headers: o.retryAfter ? { 'retry-after': o.retryAfter } : {},
  });
export const internWakeFailed = (detail: string) =>
  new ApiError({ status: 502, reason: 'intern_unreachable', message: `the intern could not be woken: ${detail}` });
/** More sleeping interns asked to wake than the wake queue holds (docs/fleet.md). */
export const wakeQueueFull = (why: string, retryAfterS: number) =>
  new ApiError({
    status: 503,
    reason: 'busy',
    message: `${why}; retry shortly`,
    headers: { 'retry-after': String(retryAfterS) },
  });
export const routeDeadline = (seconds: number) =>
  new ApiError({
    status: 408,
    reason: 'timeout',
    message: `the request exceeded the route's deadline of ${seconds} seconds`,
  });
export const turnBudgetSpent = (message: string) => new ApiError({ status: 504, reason: 'timeout', message });
// An intern's files (docs/guides/files.md): the path is named as the client gave it, relative to
// the intern's work folder.
export const filePathRefused = (path: string, why: string) => invalidRequest(`path: "${path}" ${why}`);
export const fileNotFound = (path: string) =>
  new ApiError({ status: 404, reason: 'not_found', message: `resource not found: file "${path}"` });
export const fileConflict = (path: string, why: string) =>
  new ApiError({ status: 409, message: `resource conflict: "${path}" ${why}` });
export const fileTooLarge = (what: string) => new ApiError({ status: 413, reason: 'payload_too_large', message: what });
/** An intern's repository whose work cannot be taken or pushed (docs/guides/repositories.md). */
export const repositoryConflict = (message: string) =>
  new ApiError({ status: 409, message: `resource conflict: ${message}` });
export const gitHostRefused = (message: string) =>
  new ApiError({ status: 502, message: `the git host refused: ${message}` });
/** The CLI's: a command whose module this build does not carry. */
export const notInThisBuild = (module: string, command: string) =>
  new ApiError({ status: 501, message: `"${command}" is not available in this build (${module} is missing)` });

// Budgets (docs/guides/keys-and-budgets.md).
/** A spending limit is reached: 402, as OpenRouter answers exhausted credit; no retry helps before the reset. */
export const budgetExceeded = (o: { what: 'key' | 'guardrail'; limitUsd: number; resetsAt: number | null }) =>
  new ApiError({
    status: 402,
    message: `the ${o.what === 'key' ? "API key's" : "guardrail's"} spending limit of ${o.limitUsd} USD is reached; ${
      o.resetsAt === null ? 'it does not reset: raise the limit' : `it resets at ${new Date(o.resetsAt).toISOString()}`
    }`,
  });
/** A model or provider the caller's guardrail does not allow. */
export const guardrailRefused = (message: string) => new ApiError({ status: 403, message });
