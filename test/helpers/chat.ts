// Intern chat requests and readings of their streams, as the end-to-end tests write them: a user
// turn, a tool reply that continues a paused run, and what a read stream (ChatResult) says.

/** A streamed chat turn: one user message, plus any other body fields. */
export const user = (content: unknown, extra: Record<string, unknown> = {}) => ({
  stream: true,
  messages: [{ role: 'user', content }],
  ...extra,
});

/** The caller's answer to a paused run's question or permission request. */
export const tool = (sessionId: string, id: string, content: string) => ({
  stream: true,
  session_id: sessionId,
  messages: [{ role: 'tool', tool_call_id: id, content }],
});

type Read = { chunks: any[] };

/** The streamed content, chunks joined. */
export const text = (r: Read): string => r.chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
/** The first tool call the stream carried (an interaction). */
export const callOf = (r: Read) => r.chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? [])[0];
/** The finish reasons, in order. */
export const finish = (r: Read) => r.chunks.map((c) => c.choices[0]?.finish_reason).filter(Boolean);
/** The stream's last chunk (the final chunk, with usage). */
export const final = (r: Read) => r.chunks.at(-1);
