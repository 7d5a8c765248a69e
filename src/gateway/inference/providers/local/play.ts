// Plays a scripted plan as OpenAI chat-completions output: a stream of chunk objects (with the
// plan's sleeps honoured and abortable) or one non-streaming completion. No I/O besides timers.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Plan, Step } from './scripted.ts';
import type { ChatChunk, ToolCall } from '../../../../shared/openai.ts';
import { PARTS, type Cancel, type TextPart as Part } from '../../types.ts';

export const SCRIPTED_MODEL = 'local/scripted';

type Delta = ChatChunk['choices'][number]['delta'];

export type OkPlan = Extract<Plan, { kind: 'ok' }>;

function deltaOf(step: Exclude<Step, { type: 'sleep' | 'repeat' }>): Delta {
  if (step.type === 'content') return { content: step.text };
  if (step.type === 'reasoning') return { reasoning: step.text };
  return {
    tool_calls: [{ index: 0, id: step.id, type: 'function', function: { name: step.name, arguments: step.arguments } }],
  };
}

/** Yields the chunks of a streamed response; the last one carries finish_reason and usage. */
export async function* streamChunks(
  p: OkPlan,
  opts: { id: string; model?: string; cancel?: Cancel; created?: number },
): AsyncGenerator<ChatChunk> {
  const base = {
    id: opts.id,
    object: 'chat.completion.chunk' as const,
    created: opts.created ?? Math.floor(Date.now() / 1000),
    model: opts.model ?? SCRIPTED_MODEL,
  };
  yield { ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] };
  for (const step of p.steps) {
    if (step.type === 'sleep') {
      await sleep(step.ms, undefined, { signal: opts.cancel?.signal });
      continue;
    }
    if (step.type === 'repeat') {
      // A counted loop over two prepared strings: no allocation per chunk beyond the chunk itself.
      for (let i = 0; i < step.n; i++)
        yield {
          ...base,
          choices: [{ index: 0, delta: { content: i === 0 ? step.first : step.rest }, finish_reason: null }],
        };
      continue;
    }
    yield { ...base, choices: [{ index: 0, delta: deltaOf(step), finish_reason: null }] };
  }
  yield { ...base, choices: [{ index: 0, delta: {}, finish_reason: p.finish }], usage: p.usage };
}

/** The text and reasoning of a response in order, one part per change of kind (an Anthropic
 * message's text and thinking blocks, as its stream opens them). */
function partsOf(steps: Step[]): Part[] {
  const parts: Part[] = [];
  const add = (kind: Part['kind'], text: string) => {
    const last = parts.at(-1);
    if (last?.kind === kind) last.text += text;
    else if (text !== '') parts.push({ kind, text });
  };
  for (const step of steps) {
    if (step.type === 'content') add('text', step.text);
    else if (step.type === 'reasoning') add('thinking', step.text);
    else if (step.type === 'repeat') add('text', step.first + step.rest.repeat(step.n - 1));
  }
  return parts;
}

const join = (parts: Part[], kind: Part['kind']) =>
  parts
    .filter((p) => p.kind === kind)
    .map((p) => p.text)
    .join('');

/** The non-streaming completion for a plan, after its sleeps. */
export async function completion(p: OkPlan, opts: { id: string; model?: string; cancel?: Cancel }) {
  const toolCalls: ToolCall[] = [];
  for (const step of p.steps) {
    if (step.type === 'sleep') await sleep(step.ms, undefined, { signal: opts.cancel?.signal });
    else if (step.type === 'tool_call')
      toolCalls.push({ id: step.id, type: 'function', function: { name: step.name, arguments: step.arguments } });
  }
  const parts = partsOf(p.steps);
  const content = join(parts, 'text');
  const reasoning = join(parts, 'thinking');
  return {
    id: opts.id,
    object: 'chat.completion' as const,
    created: Math.floor(Date.now() / 1000),
    model: opts.model ?? SCRIPTED_MODEL,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant' as const,
          content: content === '' && toolCalls.length ? null : content,
          ...(reasoning ? { reasoning } : {}),
          ...(toolCalls.length ? { tool_calls: toolCalls } : {}),
          [PARTS]: parts,
        },
        finish_reason: p.finish,
      },
    ],
    usage: p.usage,
  };
}
