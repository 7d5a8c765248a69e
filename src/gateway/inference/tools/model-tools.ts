// The tools that make model requests of their own, each recorded as a step of the generation and
// charged to it: service:subagent (a nested request with its own bounded loop), service:advisor
// (a second model's advice on the conversation), service:fusion (several models answer, one merges
// their answers) and service:image_generation (a provider's image API, the workspace's
// default_image_model). Nested requests may name only server tools that are not themselves
// model tools, so a request's work stays bounded by its own loop.
// May import: zod, ./types.ts, ../types.ts.
import { z } from 'zod';
import { type ServerTool, ToolError, type ServerToolType } from './types.ts';
import type { ChatMessage } from '../types.ts';

const Model = z.string().min(1).max(256);
const Effort = z.enum(['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max']);
const Sampling = {
  max_completion_tokens: z.number().int().min(1).max(200_000).optional(),
  temperature: z.number().min(0).max(2).optional(),
  reasoning: z.object({ effort: Effort.optional() }).strict().optional(),
};
const samplingOf = (c: { max_completion_tokens?: number; temperature?: number; reasoning?: { effort?: string } }) => ({
  ...(c.max_completion_tokens ? { max_tokens: c.max_completion_tokens } : {}),
  ...(c.temperature !== undefined ? { temperature: c.temperature } : {}),
  ...(c.reasoning?.effort ? { reasoning_effort: c.reasoning.effort } : {}),
});

/** Server tools a subagent may be given: those that make no model request of their own. */
export const NESTABLE: ServerToolType[] = [
  'service:datetime',
  'service:web_fetch',
  'service:web_search',
  'service:bash',
  'service:shell',
  'service:apply_patch',
  'service:tool_search',
  'service:experimental__search_models',
];
export const MAX_SUBAGENT_TOOL_CALLS = 10;

const NestedTool = z
  .object({ type: z.enum(NESTABLE as [ServerToolType, ...ServerToolType[]]), parameters: z.looseObject({}).optional() })
  .strict();

const SubagentConfig = z
  .object({
    model: Model.optional(),
    name: z.string().min(1).max(64).optional(),
    instructions: z.string().max(20_000).optional(),
    tools: z.array(NestedTool).max(NESTABLE.length).optional(),
    max_tool_calls: z.number().int().min(1).max(MAX_SUBAGENT_TOOL_CALLS).optional(),
    ...Sampling,
  })
  .strict();
const SubagentArgs = z.object({
  task: z.string().min(1).max(50_000).describe('what the subagent should do, with everything it needs to know'),
});

export const subagent: ServerTool<z.infer<typeof SubagentConfig>, z.infer<typeof SubagentArgs>> = {
  type: 'service:subagent',
  name: 'subagent',
  description: 'Hand a self-contained task to a subagent (a separate model conversation); returns its final answer.',
  config: SubagentConfig,
  args: SubagentArgs,
  async run(args, ctx) {
    const c = ctx.config;
    const r = await ctx.nested({
      model: c.model ?? ctx.model,
      body: {
        messages: [
          ...(c.instructions ? [{ role: 'system' as const, content: c.instructions }] : []),
          { role: 'user', content: args.task },
        ],
        ...samplingOf(c),
      },
      tools: (c.tools ?? []).map((t) => ({ type: t.type, config: t.parameters ?? {} })),
      maxToolCalls: c.max_tool_calls ?? 5,
      signal: ctx.signal,
    });
    return {
      ...(c.name ? { name: c.name } : {}),
      model: r.model,
      output: r.content,
      steps: r.steps,
      tool_calls: r.toolCalls,
    };
  },
};

const AdvisorConfig = z
  .object({
    model: Model.optional(),
    instructions: z.string().max(20_000).optional(),
    forward_transcript: z.boolean().optional(),
    ...Sampling,
  })
  .strict();
const AdvisorArgs = z.object({ question: z.string().min(1).max(20_000).describe('what to ask the advisor') });

/** The conversation as plain text, for a model that is not part of it (the advisor). */
export function transcript(messages: ChatMessage[], maxChars = 100_000): string {
  const text = (c: unknown) =>
    typeof c === 'string'
      ? c
      : Array.isArray(c)
        ? c.map((p: { text?: unknown }) => (typeof p?.text === 'string' ? p.text : '')).join('')
        : '';
  const lines = messages.map((m) => {
    const calls = (m.tool_calls ?? []).map((t) => `[calls ${t.function.name} ${t.function.arguments}]`).join(' ');
    return `${m.role}: ${[text(m.content), calls].filter(Boolean).join(' ')}`;
  });
  const all = lines.join('\n');
  return all.length > maxChars ? all.slice(all.length - maxChars) : all;
}

export const advisor: ServerTool<z.infer<typeof AdvisorConfig>, z.infer<typeof AdvisorArgs>> = {
  type: 'service:advisor',
  name: 'advisor',
  description: 'Ask a second model for advice on this conversation; returns its advice.',
  config: AdvisorConfig,
  args: AdvisorArgs,
  unconfigured: ({ env, config }) =>
    config.model || env.advisorModel
      ? null
      : 'no advisor model: set parameters.model on the tool, or the operator sets COHORT_ADVISOR_MODEL',
  async run(args, ctx) {
    const c = ctx.config;
    const context =
      c.forward_transcript === false ? '' : `The conversation so far:\n${transcript(ctx.conversation())}\n\n`;
    const r = await ctx.nested({
      model: c.model ?? ctx.env.advisorModel!,
      body: {
        messages: [
          {
            role: 'system',
            content: c.instructions ?? 'You advise another assistant. Answer its question briefly and concretely.',
          },
          { role: 'user', content: `${context}The assistant asks: ${args.question}` },
        ],
        ...samplingOf(c),
      },
      signal: ctx.signal,
    });
    return { model: r.model, advice: r.content };
  },
};

const FusionConfig = z
  .object({
    analysis_models: z.array(Model).min(1).max(5).optional(),
    model: Model.optional(),
    ...Sampling,
  })
  .strict();
const FusionArgs = z.object({ prompt: z.string().min(1).max(50_000).describe('the question every model answers') });

export const fusion: ServerTool<z.infer<typeof FusionConfig>, z.infer<typeof FusionArgs>> = {
  type: 'service:fusion',
  name: 'fusion',
  description: 'Ask several models the same question and get one answer merged from theirs.',
  config: FusionConfig,
  args: FusionArgs,
  unconfigured: ({ env, config }) =>
    config.analysis_models?.length || env.fusionModels.length
      ? null
      : 'no models to ask: set parameters.analysis_models on the tool, or the operator sets COHORT_FUSION_MODELS',
  async run(args, ctx) {
    const c = ctx.config;
    const models = c.analysis_models ?? ctx.env.fusionModels;
    const answers = await Promise.all(
      models.map((model) =>
        ctx
          .nested({
            model,
            body: { messages: [{ role: 'user', content: args.prompt }], ...samplingOf(c) },
            signal: ctx.signal,
            slot: true,
          })
          .then(
            (r) => ({ model, content: r.content }),
            (err: Error) => {
              if (ctx.signal.aborted) throw err;
              return { model, error: err instanceof ToolError ? err.message : 'the model request failed' };
            },
          ),
      ),
    );
    const usable = answers.filter((a): a is { model: string; content: string } => 'content' in a);
    if (!usable.length)
      throw new ToolError(
        `no model answered: ${answers.map((a) => `${a.model}: ${'error' in a ? a.error : ''}`).join('; ')}`,
      );
    const merged = await ctx.nested({
      model: c.model ?? ctx.model,
      body: {
        messages: [
          {
            role: 'system',
            content:
              'Merge the answers below into one answer: keep what they agree on, settle or note where they differ.',
          },
          {
            role: 'user',
            content: `Question: ${args.prompt}\n\n${usable.map((a, i) => `Answer ${i + 1} (${a.model}):\n${a.content}`).join('\n\n')}`,
          },
        ],
        ...samplingOf(c),
      },
      signal: ctx.signal,
    });
    return { answer: merged.content, model: merged.model, answers };
  },
};

const ImageConfig = z
  .object({
    model: Model.optional(),
    size: z
      .string()
      .regex(/^(auto|\d{2,4}x\d{2,4})$/, 'must be auto or WIDTHxHEIGHT')
      .optional(),
    quality: z.enum(['auto', 'low', 'medium', 'high', 'standard', 'hd']).optional(),
    background: z.enum(['auto', 'transparent', 'opaque']).optional(),
    output_format: z.enum(['png', 'jpeg', 'webp']).optional(),
  })
  .strict();
const ImageArgs = z.object({ prompt: z.string().min(1).max(32_000).describe('the image to make') });

export const imageGeneration: ServerTool<z.infer<typeof ImageConfig>, z.infer<typeof ImageArgs>> = {
  type: 'service:image_generation',
  name: 'image_generation',
  description: 'Generate an image from a description; the image is shown to the user.',
  config: ImageConfig,
  args: ImageArgs,
  unconfigured: ({ config, workspace }) =>
    config.model || workspace.defaultImageModel
      ? null
      : "no image model: set the workspace's default_image_model, or parameters.model on the tool",
  async run(args, ctx) {
    const { model: _m, ...rest } = ctx.config;
    const model = ctx.config.model ?? ctx.workspace.defaultImageModel!;
    const img = await ctx.image({ model, prompt: args.prompt, signal: ctx.signal, config: rest });
    return {
      model,
      image: 'generated and shown to the user',
      ...(img.revisedPrompt ? { revised_prompt: img.revisedPrompt } : {}),
    };
  },
};
