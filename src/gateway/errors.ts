// Errors as values: one ApiError class, one constructor per documented refusal (SPEC §7), and
// one renderer that gives the spec's body shape. Anything else thrown becomes a plain 500.
import { Reason } from '../shared/daemon-protocol.ts';

/** SPEC §7 reason values; the daemon protocol and the gateway share one list. */
export const REASONS = Reason.options;
export type { Reason };

/** SPEC §7: retryable is fixed for these reasons; `turn_failed` carries the intern's own classification. */
const ALWAYS_RETRYABLE: ReadonlySet<Reason> = new Set(['busy', 'intern_not_ready', 'intern_unreachable', 'rate_limited', 'stream_severed', 'timeout']);

export function retryableFor(reason: Reason, classified?: boolean): boolean {
  if (ALWAYS_RETRYABLE.has(reason)) return true;
  if (reason === 'turn_failed') return classified ?? false;
  return false;
}

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

/** The spec's body: `metadata` only where the route renders it and the error has a reason. */
export function errorBody(err: ApiError, opts: { metadata: boolean }): ErrorBody {
  const body: ErrorBody = { error: { code: err.status, message: err.message } };
  if (opts.metadata && err.reason) body.error.metadata = { reason: err.reason, retryable: err.retryable };
  return body;
}

// Management-endpoint refusals (SPEC §7, second table).
export const invalidRequest = (detail: string) =>
  new ApiError({ status: 400, reason: 'bad_request', message: `invalid request parameters: ${detail}` });
// The workspace a request would act in is gone (SPEC §4.5: 400, not a 500 from the insert).
export const defaultWorkspaceDeleted = () =>
  invalidRequest("workspace_id: the account's default workspace was deleted, so workspace_id must be passed");
export const keyWorkspaceDeleted = (field: string) =>
  invalidRequest(`${field}: the key's workspace was deleted; use a key bound to an existing workspace`);
export const missingAuth = () => new ApiError({ status: 401, message: 'missing authentication header' });
export const invalidKey = () => new ApiError({ status: 401, message: 'invalid or revoked API key' });
export const managementOnly = () => new ApiError({ status: 403, message: 'only management keys can perform this operation' });
export const departedCreator = () =>
  new ApiError({ status: 403, message: 'the member who created this key has left the organization and the key holds no grant' });
/** SPEC §7's message, naming what was not found after it, as `invalid request parameters: …` names the field. */
export const resourceNotFound = (what?: string) =>
  new ApiError({ status: 404, reason: 'not_found', message: what ? `resource not found: ${what}` : 'resource not found' });
export const resourceConflict = () => new ApiError({ status: 409, message: 'resource conflict, try again later' });
export const payloadTooLarge = () =>
  new ApiError({ status: 413, reason: 'payload_too_large', message: 'request body exceeds 1 MiB (1048576 bytes)' });
export const internalError = () => new ApiError({ status: 500, message: 'internal server error' });
/** An open stream ended by the gateway's shutdown: the connection is lost, a retry may go to another gateway. */
export const gatewayStopping = () => new ApiError({ status: 502, reason: 'stream_severed', message: 'the gateway is shutting down' });
export const serverToolDisabled = (tool: string) =>
  new ApiError({ status: 403, message: `server tool ${tool} is disabled in this workspace` });
