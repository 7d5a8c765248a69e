// The built-in provider `local`: one model, `scripted` (see scripted.ts), played in-process
// behind the same adapter interface as any upstream. A `/fail` directive fails like an upstream
// would, before any output. May import: this folder, ../../types.ts.
import { plan } from './scripted.ts';
import { completion, streamChunks, SCRIPTED_MODEL } from './play.ts';
import { UpstreamError, type ChatChunk, type ProviderAdapter, type UpstreamCall } from '../../types.ts';
import { randomUUID } from 'node:crypto';

/** The scripted model's chunks, each its own batch (sleeps come between chunks). */
async function* batches(chunks: AsyncIterable<ChatChunk>): AsyncGenerator<ChatChunk[]> {
  for await (const c of chunks) yield [c];
}

function planOf(call: UpstreamCall) {
  const p = plan({ messages: call.body.messages, tools: call.body.tools, tool_choice: call.body.tool_choice });
  if (p.kind === 'fail') throw new UpstreamError({ status: p.status, message: `scripted failure ${p.status}` });
  return p;
}

export const localAdapter: ProviderAdapter = {
  hasModel: (model) => `local/${model}` === SCRIPTED_MODEL,
  async stream(call) {
    const p = planOf(call);
    return batches(streamChunks(p, { id: `gen-${randomUUID()}`, cancel: call.cancel }) as AsyncIterable<ChatChunk>);
  },
  async complete(call) {
    return await completion(planOf(call), { id: `gen-${randomUUID()}`, cancel: call.cancel });
  },
};
