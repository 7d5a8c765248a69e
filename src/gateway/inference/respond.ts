// What the three model-request routes (chat completions, messages, responses) share besides the
// HTTP plumbing (../http/sse-reply.ts): resolving a request with its refusal logged, and the
// refusals they document.
import { z } from 'zod';
import type { Ctx } from '../context.ts';
import { ApiError, invalidRequest } from '../errors.ts';
import type { Served } from './attempts.ts';
import { refusals } from '../http/openapi.ts';
import type { Principal } from '../access/identity-store.ts';
import type { ApiStyle, Prepared } from './prepare.ts';
import type { RequestBody } from './routing.ts';

const ChatError = z.object({
  error: z.object({
    code: z.number().int(),
    message: z.string(),
    metadata: z.object({ reason: z.string(), retryable: z.boolean() }).optional(),
  }),
});

/** The refusals of the model-request routes, for the OpenAPI document. */
export const errorDocs = refusals(ChatError, 400, 401, 402, 403, 404, 429, 502, 504);

/** The x-session-id header, checked as the body's session_id is (1 to 256 characters). */
function sessionHeader(headers: Record<string, string | string[] | undefined>): string | undefined {
  const h = headers['x-session-id'];
  if (h === undefined) return undefined;
  if (typeof h !== 'string' || h.length < 1 || h.length > 256)
    throw invalidRequest('x-session-id: must be one header of 1 to 256 characters');
  return h;
}

/** Names the endpoint that served a request and how it was chosen (docs/guides/model-requests.md#provider-preferences). */
export function routeHeader(
  reply: { header(name: string, value: string): unknown },
  p: Prepared,
  served: Served,
): void {
  reply.header(
    'x-cohort-route',
    `provider=${served.provider}; model=${served.model}; credential=${served.isByok ? 'byok' : 'shared'}; ${p.routing}`,
  );
}

/** Resolves a request; a refusal is recorded in the request log before it is returned. */
export async function prepareOrRefuse(
  ctx: Ctx,
  o: {
    principal: Principal;
    body: RequestBody;
    style: ApiStyle;
    raw: unknown;
    headers: Record<string, string | string[] | undefined>;
  },
): Promise<Prepared> {
  const started = performance.now();
  try {
    return await ctx.inference.prepare({ ...o, sessionHeader: sessionHeader(o.headers) });
  } catch (err) {
    if (err instanceof ApiError)
      ctx.inference.refused({
        ...o,
        stream: o.body.stream === true,
        requestedModel: o.body.model ?? null,
        error: err,
        started,
      });
    throw err;
  }
}
