// Anthropic Messages API answers as OpenAI-shaped output: a message as a completion, and the
// event stream (message_start … message_stop) as chat chunks. Pure (the stream mapper keeps
// its own state per response).
import {
  UpstreamError,
  type ChatChunk,
  type Completion,
  type FinishReason,
  type ToolCall,
  type Usage,
} from '../../types.ts';

type AnthropicUsage = {
  input_tokens?: number;
  output_tokens?: number;
  cache_read_input_tokens?: number | null;
  cache_creation_input_tokens?: number | null;
};
type ContentBlock = { type: string; text?: string; thinking?: string; id?: string; name?: string; input?: unknown };
export type AnthropicMessage = {
  id: string;
  model: string;
  content: ContentBlock[];
  stop_reason: string | null;
  usage: AnthropicUsage;
};

export function finishOf(stop: string | null | undefined): FinishReason | null {
  if (!stop) return null;
  if (stop === 'max_tokens') return 'length';
  if (stop === 'tool_use') return 'tool_calls';
  if (stop === 'refusal') return 'content_filter';
  return 'stop';
}

export function usageOf(u: AnthropicUsage): Usage {
  const cached = u.cache_read_input_tokens ?? 0;
  const prompt = (u.input_tokens ?? 0) + cached + (u.cache_creation_input_tokens ?? 0);
  const completion = u.output_tokens ?? 0;
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    prompt_tokens_details: { cached_tokens: cached },
  };
}

export function fromAnthropicMessage(m: AnthropicMessage): Completion {
  const text = m.content
    .filter((b) => b.type === 'text')
    .map((b) => b.text ?? '')
    .join('');
  const reasoning = m.content
    .filter((b) => b.type === 'thinking')
    .map((b) => b.thinking ?? '')
    .join('');
  const calls: ToolCall[] = m.content
    .filter((b) => b.type === 'tool_use')
    .map((b) => ({
      id: b.id!,
      type: 'function',
      function: { name: b.name!, arguments: JSON.stringify(b.input ?? {}) },
    }));
  return {
    id: m.id,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: m.model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: text === '' && calls.length ? null : text,
          ...(reasoning ? { reasoning } : {}),
          ...(calls.length ? { tool_calls: calls } : {}),
        },
        finish_reason: finishOf(m.stop_reason),
      },
    ],
    usage: usageOf(m.usage),
  };
}

type Event = {
  type: string;
  message?: AnthropicMessage;
  index?: number;
  content_block?: ContentBlock;
  delta?: Record<string, string | undefined>;
  usage?: AnthropicUsage;
  error?: { type?: string; message?: string };
};

/** Maps one response's events to chunks; call with each parsed event, in order. */
export function anthropicChunker(opts: { model: string }) {
  let id = '';
  const created = Math.floor(Date.now() / 1000);
  let usage: AnthropicUsage = {};
  let finish: FinishReason | null = null;
  const toolIndexOf = new Map<number, number>();
  const chunk = (delta: ChatChunk['choices'][number]['delta'], extra: Partial<ChatChunk> = {}): ChatChunk => ({
    id,
    object: 'chat.completion.chunk',
    created,
    model: opts.model,
    choices: [{ index: 0, delta, finish_reason: null }],
    ...extra,
  });
  return (e: Event): ChatChunk | null => {
    switch (e.type) {
      case 'message_start':
        id = e.message?.id ?? '';
        usage = { ...e.message?.usage };
        return chunk({ role: 'assistant', content: '' });
      case 'content_block_start': {
        const b = e.content_block;
        if (b?.type === 'text' && b.text) return chunk({ content: b.text });
        if (b?.type !== 'tool_use') return null;
        const index = toolIndexOf.size;
        toolIndexOf.set(e.index ?? 0, index);
        return chunk({
          tool_calls: [{ index, id: b.id, type: 'function', function: { name: b.name, arguments: '' } }],
        });
      }
      case 'content_block_delta': {
        const d = e.delta ?? {};
        if (d.type === 'text_delta') return chunk({ content: d.text ?? '' });
        if (d.type === 'thinking_delta') return chunk({ reasoning: d.thinking ?? '' });
        if (d.type === 'input_json_delta')
          return chunk({
            tool_calls: [{ index: toolIndexOf.get(e.index ?? 0) ?? 0, function: { arguments: d.partial_json ?? '' } }],
          });
        return null;
      }
      case 'message_delta':
        finish = finishOf(e.delta?.stop_reason) ?? finish;
        usage = { ...usage, ...e.usage };
        return null;
      case 'message_stop':
        return {
          ...chunk({}),
          choices: [{ index: 0, delta: {}, finish_reason: finish ?? 'stop' }],
          usage: usageOf(usage),
        };
      case 'error':
        throw new UpstreamError({
          status: e.error?.type === 'overloaded_error' ? 529 : 502,
          message: e.error?.message ?? 'the provider reported an error mid-stream',
        });
      default:
        return null;
    }
  };
}
