// Model request bodies: OpenAI chat completions (`POST /chat/completions`) and Anthropic
// messages (`POST /messages`), plus the routing fields both accept. Parameters the router does
// not interpret pass through to the provider, so objects are loose; bounds are checked here.
import { z } from 'zod';
import { PresetSlug } from './common.ts';

/** Only looked up, never stored, so any text is accepted: an unknown model is a 404 that the request
 * log records (it makes the text storable itself). */
const RequestedModel = z.string().min(1).max(256);

/** Fields that steer routing rather than generation; never sent upstream. */
const routing = {
  model: RequestedModel.optional().describe('`provider/model`, or `@preset/<slug>`; absent: the workspace default_text_model'),
  preset: PresetSlug.optional().describe('a preset of the workspace whose designated version applies'),
  models: z.array(RequestedModel).min(1).max(3).optional().describe('fallback models, tried in order'),
  fallbacks: z.array(z.object({ model: RequestedModel }).strict()).max(3).optional().describe('fallback models, tried in order; not with `models`'),
  provider: z.looseObject({ zdr: z.boolean().nullable().optional(), allow_fallbacks: z.boolean().nullable().optional() }).nullable().optional(),
  plugins: z.array(z.looseObject({ id: z.string().min(1).max(128) })).max(16).optional(),
  session_id: z.string().min(1).max(256).optional(),
  user: z.string().max(256).optional(),
  stream: z.boolean().optional(),
};

const noBoth = (b: { models?: unknown; fallbacks?: unknown }) => !(b.models && b.fallbacks);
const noBothIssue = { message: 'cannot be combined with models', path: ['fallbacks'] };

const ToolCall = z.looseObject({ id: z.string().min(1).max(128), type: z.literal('function').optional(), function: z.looseObject({ name: z.string().min(1).max(256), arguments: z.string() }) });

export const ChatMessage = z.looseObject({
  role: z.enum(['system', 'developer', 'user', 'assistant', 'tool']),
  content: z.union([z.string(), z.array(z.looseObject({ type: z.string().min(1) })), z.null()]).optional(),
  tool_calls: z.array(ToolCall).nullable().optional(),
  tool_call_id: z.string().min(1).max(128).optional(),
});

export const ChatCompletionRequest = z
  .looseObject({
    ...routing,
    messages: z.array(ChatMessage).min(1),
    tools: z.array(z.looseObject({ type: z.string().min(1), function: z.looseObject({ name: z.string().min(1).max(256) }).optional() })).max(256).optional(),
    max_tokens: z.number().int().min(1).optional(),
    max_completion_tokens: z.number().int().min(1).optional(),
    temperature: z.number().min(0).max(2).optional(),
    top_p: z.number().min(0).max(1).optional(),
  })
  .refine(noBoth, noBothIssue);
export type ChatCompletionRequest = z.infer<typeof ChatCompletionRequest>;

const Block = z.looseObject({ type: z.string().min(1) });

export const MessagesRequest = z
  .looseObject({
    ...routing,
    messages: z.array(z.looseObject({ role: z.enum(['user', 'assistant']), content: z.union([z.string(), z.array(Block)]) })).min(1),
    system: z.union([z.string(), z.array(z.looseObject({ type: z.literal('text'), text: z.string() }))]).optional(),
    max_tokens: z.number().int().min(1).optional(),
    tools: z.array(z.looseObject({ name: z.string().min(1).max(256).optional(), type: z.string().min(1).optional() })).max(256).optional(),
    tool_choice: z.looseObject({ type: z.enum(['auto', 'any', 'none', 'tool']), name: z.string().optional() }).optional(),
    stop_sequences: z.array(z.string()).max(16).optional(),
    temperature: z.number().min(0).max(2).optional(),
    top_p: z.number().min(0).max(1).optional(),
    top_k: z.number().int().min(0).optional(),
    metadata: z.looseObject({ user_id: z.string().max(256).nullable().optional() }).optional(),
  })
  .refine(noBoth, noBothIssue);
export type MessagesRequest = z.infer<typeof MessagesRequest>;

const UsageDoc = z.looseObject({ prompt_tokens: z.number().int(), completion_tokens: z.number().int(), total_tokens: z.number().int(), cost: z.number(), is_byok: z.boolean() });
export const ChatCompletionResponse = z.looseObject({ id: z.string(), object: z.literal('chat.completion'), model: z.string(), choices: z.array(z.looseObject({})), usage: UsageDoc });
export const MessageResponse = z.looseObject({ id: z.string(), type: z.literal('message'), role: z.literal('assistant'), model: z.string(), content: z.array(Block), stop_reason: z.string().nullable() });
