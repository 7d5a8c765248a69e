// Model request bodies: OpenAI chat completions (`POST /chat/completions`), Anthropic messages
// (`POST /messages`) and OpenAI responses (`POST /responses`), plus the routing fields all accept. Parameters the router does
// not interpret pass through to the provider, so objects are loose; bounds are checked here.
import { z } from 'zod';
import { MaxToolCalls, PresetSlug, StopConditions } from '../http/common.schemas.ts';
import { CacheControl, requestOptions, ResponsesText } from '../http/request-options.schemas.ts';
import { checkPluginList, checkToolList } from './tools/index.ts';

/** Only looked up, never stored, so any text is accepted: an unknown model is a 404 that the request
 * log records (it makes the text storable itself). */
const RequestedModel = z.string().min(1).max(256);

/** The request options (docs/reference/request-options.md), the same schemas as a preset's; null is "not set". */
const options = Object.fromEntries(Object.entries(requestOptions).map(([k, s]) => [k, s.nullable().optional()])) as {
  [K in keyof typeof requestOptions]: z.ZodOptional<z.ZodNullable<(typeof requestOptions)[K]>>;
};

/** Fields that steer routing rather than generation, and the request options. */
const routing = {
  model: RequestedModel.optional().describe(
    '`provider/model`, or `@preset/<slug>`; absent: the workspace default_text_model',
  ),
  preset: PresetSlug.optional().describe('a preset of the workspace whose designated version applies'),
  models: z.array(RequestedModel).min(1).max(3).optional().describe('fallback models, tried in order'),
  fallbacks: z
    .array(z.object({ model: RequestedModel }).strict())
    .max(3)
    .optional()
    .describe('fallback models, tried in order; not with `models`'),
  ...options,
  plugins: requestOptions.plugins.superRefine(checkPluginList).nullable().optional(),
  stop_server_tools_when: StopConditions.optional().describe(
    'stop conditions of the server-tool loop; any one ends it; overrides max_tool_calls',
  ),
  max_tool_calls: MaxToolCalls.optional().describe('server-tool calls the loop may run (default and maximum 30)'),
  stream: z.boolean().optional(),
};

const noBoth = (b: { models?: unknown; fallbacks?: unknown }) => !(b.models && b.fallbacks);
const noBothIssue = { message: 'cannot be combined with models', path: ['fallbacks'] };

const ToolCall = z.looseObject({
  id: z.string().min(1).max(128),
  // Clients may leave it out; upstream it is always sent (the wire's ToolCall, src/shared/openai.ts).
  type: z.literal('function').default('function'),
  function: z.looseObject({ name: z.string().min(1).max(256), arguments: z.string() }),
});

export const ChatMessage = z.looseObject({
  role: z.enum(['system', 'developer', 'user', 'assistant', 'tool']),
  content: z
    .union([
      z.string(),
      z.array(z.looseObject({ type: z.string().min(1), cache_control: CacheControl.optional() })),
      z.null(),
    ])
    .optional(),
  tool_calls: z.array(ToolCall).nullable().optional(),
  tool_call_id: z.string().min(1).max(128).optional(),
});

export const ChatCompletionRequest = z
  .looseObject({
    ...routing,
    messages: z.array(ChatMessage).min(1),
    tools: z
      .array(
        z.looseObject({
          type: z.string().min(1),
          function: z.looseObject({ name: z.string().min(1).max(256) }).optional(),
        }),
      )
      .max(256)
      .superRefine(checkToolList)
      .optional(),
    max_tokens: z.number().int().min(1).optional(),
    max_completion_tokens: z.number().int().min(1).optional(),
    temperature: z.number().min(0).max(2).optional(),
    top_p: z.number().min(0).max(1).optional(),
  })
  .refine(noBoth, noBothIssue);
export type ChatCompletionRequest = z.infer<typeof ChatCompletionRequest>;

/** A content block; its cache breakpoint (`cache_control`) is kept for providers that cache by
 * breakpoints. The fields the conversion to a chat request reads (wire/anthropic-request.ts) are
 * typed here, so that conversion takes the parsed body as it is. */
const Block = z.looseObject({
  type: z.string().min(1),
  cache_control: CacheControl.optional(),
  text: z.string().optional(),
  id: z.string().optional(),
  name: z.string().optional(),
  input: z.unknown().optional(),
  tool_use_id: z.string().optional(),
  content: z.unknown().optional(),
  source: z
    .looseObject({
      type: z.string().optional(),
      media_type: z.string().optional(),
      data: z.string().optional(),
      url: z.string().optional(),
    })
    .optional(),
});

export const MessagesRequest = z
  .looseObject({
    ...routing,
    messages: z
      .array(z.looseObject({ role: z.enum(['user', 'assistant']), content: z.union([z.string(), z.array(Block)]) }))
      .min(1),
    system: z
      .union([
        z.string(),
        z.array(z.looseObject({ type: z.literal('text'), text: z.string(), cache_control: CacheControl.optional() })),
      ])
      .optional(),
    max_tokens: z.number().int().min(1).optional(),
    tools: z
      .array(
        z.looseObject({
          name: z.string().min(1).max(256).optional(),
          type: z.string().min(1).optional(),
          description: z.string().optional(),
          input_schema: z.unknown().optional(),
        }),
      )
      .max(256)
      .superRefine(checkToolList)
      .optional(),
    tool_choice: z
      .looseObject({ type: z.enum(['auto', 'any', 'none', 'tool']), name: z.string().optional() })
      .optional(),
    stop_sequences: z.array(z.string()).max(16).optional(),
    temperature: z.number().min(0).max(2).optional(),
    top_p: z.number().min(0).max(1).optional(),
    top_k: z.number().int().min(0).optional(),
  })
  .refine(noBoth, noBothIssue);
export type MessagesRequest = z.infer<typeof MessagesRequest>;

// OpenAI Responses: the input items and tools the chat-completions router can carry. Anything
// that needs a stored response, file or hosted tool is refused here, naming the field.
const InputText = z.looseObject({ type: z.literal('input_text'), text: z.string() });
const ContentPart = z.discriminatedUnion('type', [
  InputText,
  z.looseObject({ type: z.literal('output_text'), text: z.string() }),
  z.looseObject({ type: z.literal('refusal'), refusal: z.string() }),
  z.looseObject({
    type: z.literal('input_image'),
    image_url: z.string().min(1, 'required: file_id is not supported (this gateway stores no files)'),
    detail: z.enum(['low', 'high', 'auto']).optional(),
  }),
]);
const CallId = z.string().min(1).max(128);
const InputItem = z.discriminatedUnion('type', [
  z.looseObject({
    type: z.literal('message').optional(),
    role: z.enum(['user', 'assistant', 'system', 'developer']),
    content: z.union([z.string(), z.array(ContentPart)]),
  }),
  z.looseObject({
    type: z.literal('function_call'),
    call_id: CallId,
    name: z.string().min(1).max(256),
    arguments: z.string(),
  }),
  z.looseObject({
    type: z.literal('function_call_output'),
    call_id: CallId,
    output: z.union([z.string(), z.array(InputText)]),
  }),
  z.looseObject({ type: z.literal('reasoning') }),
]);
const ResponsesTool = z
  .looseObject({
    type: z.string().min(1),
    name: z.string().min(1).max(256).optional(),
    description: z.string().optional(),
    parameters: z.looseObject({}).nullable().optional(),
    strict: z.boolean().nullable().optional(),
  })
  .superRefine((t, ctx) => {
    if (t.type === 'function' && t.name === undefined)
      ctx.addIssue({ code: 'custom', path: ['name'], message: 'required for a function tool' });
  });
const unsupported = (why: string) => z.null({ error: `not supported: ${why}` }).optional();
const noStore = 'this gateway stores no responses, so send the whole conversation as input';

export const ResponsesRequest = z
  .looseObject({
    ...routing,
    input: z.union([z.string(), z.array(InputItem).min(1)], { error: 'required: a string or an array of input items' }),
    instructions: z.string().nullable().optional(),
    tools: z.array(ResponsesTool).max(256).superRefine(checkToolList).optional(),
    tool_choice: z
      .union([
        z.enum(['auto', 'none', 'required']),
        z.looseObject({ type: z.literal('function'), name: z.string().min(1).max(256) }),
      ])
      .optional(),
    max_output_tokens: z.number().int().min(1).nullable().optional(),
    temperature: z.number().min(0).max(2).nullable().optional(),
    top_p: z.number().min(0).max(1).nullable().optional(),
    parallel_tool_calls: z.boolean().nullable().optional(),
    text: ResponsesText.nullable().optional(),
    store: z.boolean().nullable().optional(),
    previous_response_id: unsupported(noStore),
    conversation: unsupported(noStore),
    background: z
      .literal(false, { error: 'not supported: responses are answered on the request that made them' })
      .nullable()
      .optional(),
  })
  .refine(noBoth, noBothIssue);
export type ResponsesRequest = z.infer<typeof ResponsesRequest>;

const UsageDoc = z.looseObject({
  prompt_tokens: z.number().int(),
  completion_tokens: z.number().int(),
  total_tokens: z.number().int(),
  cost: z.number(),
  is_byok: z.boolean(),
});
export const ChatCompletionResponse = z.looseObject({
  id: z.string(),
  object: z.literal('chat.completion'),
  model: z.string(),
  choices: z.array(z.looseObject({})),
  usage: UsageDoc,
});
export const ResponseObject = z.looseObject({
  id: z.string(),
  object: z.literal('response'),
  status: z.string(),
  model: z.string(),
  output: z.array(z.looseObject({ type: z.string() })),
  output_text: z.string(),
  usage: z.looseObject({
    input_tokens: z.number().int(),
    output_tokens: z.number().int(),
    total_tokens: z.number().int(),
    cost: z.number(),
    is_byok: z.boolean(),
  }),
});
export const MessageResponse = z.looseObject({
  id: z.string(),
  type: z.literal('message'),
  role: z.literal('assistant'),
  model: z.string(),
  content: z.array(Block),
  stop_reason: z.string().nullable(),
});
