// The intern chat request and stream shapes (docs/reference/intern-chat.md). Unknown OpenAI fields are
// accepted and dropped (z.object strips them); only the last message is acted on.
import { z } from 'zod';
import { ApprovalMode, SessionId, ToolActivity, Usage } from '../../shared/daemon-protocol.ts';
import { FinishReason, StreamError as WireStreamError } from '../../shared/openai.ts';

const TextPart = z.object({ type: z.literal('text'), text: z.string() });
const Content = z.union([z.string(), z.array(TextPart)]);
const CallId = z.string().min(1).max(128);

export const InternMessage = z.discriminatedUnion('role', [
  z.object({ role: z.literal('system'), content: Content }),
  z.object({ role: z.literal('developer'), content: Content }),
  z.object({ role: z.literal('user'), content: Content }),
  z.object({
    role: z.literal('assistant'),
    content: Content.nullable().optional(),
    tool_calls: z
      .array(
        z.object({
          id: CallId,
          type: z.literal('function').optional(),
          function: z.object({ name: z.string(), arguments: z.string() }),
        }),
      )
      .optional(),
  }),
  z.object({ role: z.literal('tool'), content: Content, tool_call_id: CallId }),
]);
export type InternMessage = z.infer<typeof InternMessage>;

export const ChatRequest = z.object({
  messages: z.array(InternMessage).min(1),
  stream: z.literal(true, { error: 'must be true: only streaming is supported' }),
  session_id: SessionId.optional(),
  approval_mode: ApprovalMode.optional(),
  model: z.string().min(1).max(256).optional(),
});
export type ChatRequest = z.infer<typeof ChatRequest>;

export const SteeredResponse = z.object({ session_id: z.string(), status: z.literal('steered') });

/** An intern stream's error always says its reason and whether a retry may succeed. */
export const StreamError = WireStreamError.required({ metadata: true });

export const ToolCall = z.object({
  index: z.number().int(),
  id: z.string(),
  type: z.literal('function'),
  function: z.object({
    name: z.literal('service.provide_input'),
    arguments: z.string().describe('JSON of the interaction'),
  }),
});

export const InternChunk = z.object({
  id: z.string(),
  object: z.literal('chat.completion.chunk'),
  created: z.number().int(),
  model: z.string(),
  choices: z.array(
    z.object({
      index: z.number().int(),
      delta: z.object({
        role: z.literal('assistant').optional(),
        content: z.string().optional(),
        reasoning: z.string().optional(),
        tool_calls: z.array(ToolCall).optional(),
      }),
      // An intern's turn ends in one of these (docs/reference/intern-chat.md#stream-chunks).
      finish_reason: FinishReason.extract(['stop', 'tool_calls', 'error']).nullable(),
    }),
  ),
  error: StreamError.optional(),
  session_id: z.string().nullable().optional(),
  usage: Usage.nullable().optional(),
  /** cohort's extension, only for a request that asks (docs/reference/tool-events.md). */
  cohort_tool: ToolActivity.optional(),
});
export type InternChunk = z.infer<typeof InternChunk>;
export type StreamError = z.infer<typeof StreamError>;
