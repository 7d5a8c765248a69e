// The OpenAI chat-completions wire contract, once for the whole tree: what the gateway's router,
// its intern streams, the daemon, the built-in agent, the CLI and the console send and receive.
// Zod schemas, with each type inferred from its schema. These are the shapes in between; each route
// validates its own input with schemas that are stricter or looser as its docs/reference page
// asks, and an intern's stream narrows the chunk (src/gateway/interns/chat.schemas.ts).
// May import: zod.
import { z } from 'zod';

export const ToolCall = z.object({
  id: z.string(),
  type: z.literal('function'),
  function: z.object({ name: z.string(), arguments: z.string() }),
});
export type ToolCall = z.infer<typeof ToolCall>;

export const ChatMessage = z.object({
  role: z.enum(['system', 'developer', 'user', 'assistant', 'tool']),
  content: z.unknown().optional(),
  tool_calls: z.array(ToolCall).nullable().optional(),
  tool_call_id: z.string().optional(),
  name: z.string().optional(),
  reasoning: z.string().optional(),
});
export type ChatMessage = z.infer<typeof ChatMessage>;

export const ChatTool = z.looseObject({
  type: z.string(),
  function: z
    .object({ name: z.string(), description: z.string().optional(), parameters: z.unknown().optional() })
    .optional(),
});
export type ChatTool = z.infer<typeof ChatTool>;

/** What is sent upstream: OpenAI chat-completions parameters (unknown ones pass through). */
export const ChatRequest = z.looseObject({
  messages: z.array(ChatMessage),
  tools: z.array(ChatTool).optional(),
  tool_choice: z.unknown().optional(),
  max_tokens: z.number().optional(),
  temperature: z.number().optional(),
  top_p: z.number().optional(),
  stop: z.union([z.string(), z.array(z.string())]).optional(),
  /** null: not set, as a route's body may say it (the router drops it before the provider). */
  user: z.string().nullable().optional(),
});
export type ChatRequest = z.infer<typeof ChatRequest>;

/** The usage object (docs/reference/intern-chat.md#stream-chunks): a provider's, the router's, an agent's. */
export const Usage = z.object({
  prompt_tokens: z.number().int(),
  completion_tokens: z.number().int(),
  total_tokens: z.number().int(),
  cost: z.number().optional(),
  is_byok: z.boolean().optional(),
  prompt_tokens_details: z.object({ cached_tokens: z.number().int().optional() }).optional(),
  completion_tokens_details: z.object({ reasoning_tokens: z.number().int().optional() }).optional(),
});
export type Usage = z.infer<typeof Usage>;

export const FinishReason = z.enum(['stop', 'length', 'tool_calls', 'content_filter', 'error']);
export type FinishReason = z.infer<typeof FinishReason>;

/** One server tool the gateway ran for the model: what it was asked and what it answered. */
export const ServerToolStep = z.object({
  type: z.literal('reasoning.server_tool_call'),
  id: z.string(),
  index: z.number(),
  tool_call_id: z.string(),
  tool_name: z.string(),
  arguments: z.string(),
  result: z.string(),
  status: z.enum(['completed', 'failed']),
  /** image_generation: the image, for the client (never sent to the model). */
  images: z.array(z.object({ type: z.literal('image_url'), image_url: z.object({ url: z.string() }) })).optional(),
});
export type ServerToolStep = z.infer<typeof ServerToolStep>;

export const ChunkToolCall = z.object({
  index: z.number(),
  id: z.string().optional(),
  type: z.literal('function').optional(),
  function: z.object({ name: z.string().optional(), arguments: z.string().optional() }).optional(),
});
export type ChunkToolCall = z.infer<typeof ChunkToolCall>;

/** The error of a chunk that ends a stream in failure (docs/reference/errors.md). */
export const StreamError = z.object({
  code: z.number().int(),
  message: z.string(),
  metadata: z.object({ reason: z.string(), retryable: z.boolean() }).optional(),
});
export type StreamError = z.infer<typeof StreamError>;

export const ChatChunk = z.object({
  id: z.string(),
  object: z.literal('chat.completion.chunk'),
  created: z.number(),
  model: z.string(),
  choices: z.array(
    z.object({
      index: z.number(),
      delta: z.object({
        role: z.literal('assistant').optional(),
        content: z.string().nullable().optional(),
        reasoning: z.string().nullable().optional(),
        tool_calls: z.array(ChunkToolCall).optional(),
        /** cohort's server-tool steps (docs/guides/server-tools.md), in OpenRouter's `reasoning.server_tool_call` shape. */
        reasoning_details: z.array(ServerToolStep).optional(),
      }),
      finish_reason: FinishReason.nullable(),
    }),
  ),
  usage: Usage.nullable().optional(),
  error: StreamError.optional(),
  /** cohort's extension on an intern's stream: the session the turn ran in. */
  session_id: z.string().nullable().optional(),
});
export type ChatChunk = z.infer<typeof ChatChunk>;
