// What the three model-request routes (chat completions, messages, responses) share besides the
// HTTP plumbing (../http/sse-reply.ts): resolving a request with its refusal logged, and the
// refusals they document.
import { z } from 'zod';
import type { Ctx } from '../context.ts';
import { ApiError } from '../errors.ts';
import { refusals } from '../http/openapi.ts';
import type { Principal } from '../access/identity-store.ts';
import type { ApiStyle, Prepared } from './service.ts';
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

/** Resolves a request; a refusal is recorded in the request log before it is returned. */
export async function prepareOrRefuse(
  ctx: Ctx,
  o: { principal: Principal; body: RequestBody; style: ApiStyle; raw: unknown; sessionHeader?: string | string[] },
): Promise<Prepared> {
  const started = performance.now();
  try {
    return await ctx.inference.prepare(o);
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
