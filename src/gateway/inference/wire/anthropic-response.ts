// The router's OpenAI-shaped output as Anthropic Messages API output: a completion as a message,
// and chat chunks as the event stream message_start, content_block_start/delta/stop,
// message_delta, message_stop (or an `error` event). Pure; the encoder keeps per-response state.
import { eventFrame } from '../../../shared/sse/write.ts';
import { randomUUID } from 'node:crypto';
import {
  PARTS,
  type ChatChunk,
  type Completion,
  type FinishReason,
  type Part,
  type ServerToolStep,
  type Usage,
} from '../types.ts';

/** The Anthropic error type of an error with this HTTP status, as Anthropic's own API names them. */
export function anthropicErrorType(status: number): string {
  switch (status) {
    case 400:
      return 'invalid_request_error';
    case 401:
      return 'authentication_error';
    case 403:
      return 'permission_error';
    case 404:
      return 'not_found_error';
    case 413:
      return 'request_too_large';
    case 429:
      return 'rate_limit_error';
    case 503:
    case 529:
      return 'overloaded_error';
    default:
      return 'api_error';
  }
}

const STOP: Record<FinishReason, string> = {
  stop: 'end_turn',
  length: 'max_tokens',
  tool_calls: 'tool_use',
  content_filter: 'refusal',
  error: 'end_turn',
};

function parseInput(args: string): unknown {
  try {
    return JSON.parse(args || '{}');
  } catch {
    return {};
  }
}

export function anthropicUsage(u: Usage | null | undefined) {
  const cached = u?.prompt_tokens_details?.cached_tokens ?? 0;
  return {
    input_tokens: (u?.prompt_tokens ?? 0) - cached,
    output_tokens: u?.completion_tokens ?? 0,
    cache_read_input_tokens: cached,
    cache_creation_input_tokens: 0,
    ...(u?.cost !== undefined ? { cost: u.cost, is_byok: u.is_byok } : {}),
  };
}

/** A message's text and thinking blocks: in the order produced where the provider says it (as the
 * stream opens them), else the thinking before the text. */
function textBlocks(m: Completion['choices'][number]['message'] | undefined) {
  const parts: Part[] = m?.[PARTS] ?? [
    ...(m?.reasoning ? [{ kind: 'thinking' as const, text: m.reasoning }] : []),
    ...(m?.content ? [{ kind: 'text' as const, text: m.content }] : []),
  ];
  return parts.flatMap((p): object[] =>
    p.kind === 'tool'
      ? stepBlocks(p.step)
      : p.kind === 'thinking'
        ? [{ type: 'thinking', thinking: p.text, signature: '' }]
        : [{ type: 'text', text: p.text }],
  );
}

/** A server tool the gateway ran (docs/guides/server-tools.md): a `server_tool_use` block, as
 * Anthropic's own server tools have, and a `service_tool_result` block with what it answered. */
export function stepBlocks(step: ServerToolStep): [object, object] {
  return [
    { type: 'server_tool_use', id: step.tool_call_id, name: step.tool_name, input: parseInput(step.arguments) },
    {
      type: 'service_tool_result',
      tool_use_id: step.tool_call_id,
      content: parseInput(step.result),
      ...(step.status === 'failed' ? { is_error: true } : {}),
      ...(step.images ? { images: step.images } : {}),
    },
  ];
}

export function toMessage(c: Completion) {
  const choice = c.choices[0];
  const m = choice?.message;
  const content = [
    ...textBlocks(m),
    ...(m?.tool_calls ?? []).map((t) => ({
      type: 'tool_use',
      id: t.id,
      name: t.function.name,
      input: parseInput(t.function.arguments),
    })),
  ];
  return {
    id: c.id.startsWith('msg_') ? c.id : `msg_${c.id}`,
    type: 'message' as const,
    role: 'assistant' as const,
    model: c.model,
    content,
    stop_reason: STOP[choice?.finish_reason ?? 'stop'],
    stop_sequence: null,
    usage: anthropicUsage(c.usage),
  };
}

const sse = (type: string, data: object) => eventFrame(type, { type, ...data });

/** Turns one response's chunks into Anthropic SSE text; `end()` closes it, `error()` ends it failed. */
export function messagesEncoder(opts: { model: string }) {
  let started = false;
  let block = -1;
  let open: 'text' | 'thinking' | 'tool' | null = null;
  let finish: FinishReason | null = null;
  let usage: Usage | null = null;
  const toolBlocks = new Map<number, number>();
  let out = '';

  const start = (id: string) => {
    if (started) return;
    started = true;
    const message = {
      id: `msg_${id || randomUUID()}`,
      type: 'message',
      role: 'assistant',
      model: opts.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: anthropicUsage(null),
    };
    out += sse('message_start', { message });
  };
  const close = () => {
    if (open) out += sse('content_block_stop', { index: block });
    open = null;
  };
  const openBlock = (kind: 'text' | 'thinking' | 'tool', content_block: object) => {
    close();
    block++;
    open = kind;
    out += sse('content_block_start', { index: block, content_block });
  };
  const flush = () => {
    const s = out;
    out = '';
    return s;
  };

  return {
    push(c: ChatChunk): string {
      start(c.id);
      if (c.usage) usage = c.usage;
      const choice = c.choices[0];
      if (!choice) return flush();
      const d = choice.delta;
      if (d.reasoning) {
        if (open !== 'thinking') openBlock('thinking', { type: 'thinking', thinking: '', signature: '' });
        out += sse('content_block_delta', { index: block, delta: { type: 'thinking_delta', thinking: d.reasoning } });
      }
      for (const step of d.reasoning_details ?? []) {
        const [use, result] = stepBlocks(step);
        openBlock('tool', { ...use, input: {} });
        out += sse('content_block_delta', {
          index: block,
          delta: { type: 'input_json_delta', partial_json: step.arguments },
        });
        openBlock('tool', result);
        close();
      }
      if (d.content) {
        if (open !== 'text') openBlock('text', { type: 'text', text: '' });
        out += sse('content_block_delta', { index: block, delta: { type: 'text_delta', text: d.content } });
      }
      for (const t of d.tool_calls ?? []) {
        if (t.id && !toolBlocks.has(t.index)) {
          openBlock('tool', { type: 'tool_use', id: t.id, name: t.function?.name ?? '', input: {} });
          toolBlocks.set(t.index, block);
        }
        if (t.function?.arguments)
          out += sse('content_block_delta', {
            index: toolBlocks.get(t.index) ?? block,
            delta: { type: 'input_json_delta', partial_json: t.function.arguments },
          });
      }
      if (choice.finish_reason) finish = choice.finish_reason;
      return flush();
    },
    end(): string {
      start('');
      close();
      out += sse('message_delta', {
        delta: { stop_reason: STOP[finish ?? 'stop'], stop_sequence: null },
        usage: anthropicUsage(usage),
      });
      out += sse('message_stop', {});
      return flush();
    },
    error(message: string, status: number): string {
      start('');
      close();
      out += sse('error', { error: { type: anthropicErrorType(status), message } });
      return flush();
    },
  };
}
