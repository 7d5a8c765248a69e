// The gateway's own frames, beside the shared ones (src/shared/sse/write.ts): the OpenAI error
// chunk, and the intern stream's chat chunks, written by chunkEncoder: nearly every chunk of a stream is a content or reasoning delta that differs from
// the one before only in its text, so those come from a prefix kept per stream instead of
// serialising the whole object each time; the bytes are exactly JSON.stringify's (its test checks
// every chunk the intern mapping can produce).
import type { ChatChunk } from '../../shared/openai.ts';
import { dataFrame } from '../../shared/sse/write.ts';
import { errorBody, type ApiError } from '../errors.ts';

/** The chunk that ends an OpenAI-style stream in failure: finish_reason `error` and the error
 * object of the error body (docs/reference/errors.md), `metadata` included where the error has a reason. */
export function errorChunk(o: { id: string; model: string; created?: number; error: ApiError }): ChatChunk {
  return {
    id: o.id,
    object: 'chat.completion.chunk',
    created: o.created ?? Math.floor(Date.now() / 1000),
    model: o.model,
    choices: [{ index: 0, delta: {}, finish_reason: 'error' }],
    error: errorBody(o.error, { metadata: true }).error,
  };
}

const TAIL = '},"finish_reason":null}]}\n\n';

/** A text delta's field and text when the chunk is exactly a plain content or reasoning delta. */
function textDelta(c: ChatChunk): ['content' | 'reasoning', string] | null {
  if (c.choices.length !== 1 || c.error !== undefined || c.usage !== undefined || c.session_id !== undefined)
    return null;
  const choice = c.choices[0]!;
  if (choice.index !== 0 || choice.finish_reason !== null) return null;
  const d = choice.delta;
  if (d.role !== undefined || d.tool_calls !== undefined) return null;
  if (typeof d.content === 'string' && d.reasoning === undefined) return ['content', d.content];
  if (typeof d.reasoning === 'string' && d.content === undefined) return ['reasoning', d.reasoning];
  return null;
}

/** A string kept for a stream's lifetime, as one flat copy rather than the tree of pieces `+` built it from (a UTF-16 round trip is lossless). */
export const flat = (s: string): string => Buffer.from(s, 'utf16le').toString('utf16le');

export function chunkEncoder(): (c: ChatChunk) => string {
  // The prefix is rebuilt only when one of what it is made of changes (compared by value, not by building a key).
  let id: string | null = null;
  let created = NaN;
  let model: string | null = null;
  let field = '';
  let head = '';
  return (c) => {
    const text = textDelta(c);
    if (!text) return dataFrame(c);
    if (c.id !== id || c.created !== created || c.model !== model || text[0] !== field) {
      id = c.id;
      created = c.created;
      model = c.model;
      field = text[0];
      head = flat(
        `data: {"id":${JSON.stringify(c.id)},"object":"chat.completion.chunk","created":${JSON.stringify(c.created)},"model":${JSON.stringify(c.model)},"choices":[{"index":0,"delta":{"${field}":`,
      );
    }
    return head + JSON.stringify(text[1]) + TAIL;
  };
}
