// An Anthropic Messages API request body as the router's OpenAI-shaped request: `system` as a
// system message, `tool_result` blocks as tool messages, `tool_use` blocks as tool calls, tools
// as function tools (server tools, `type: "service:…"`, stay as they are for the router). Pure.
import type { ChatMessage, ChatRequest, ChatTool, ToolCall } from '../types.ts';
import type { MessagesRequest } from '../inference.schemas.ts';

type AnthropicBody = MessagesRequest;
type AnthropicMessage = AnthropicBody['messages'][number];
type Block = Exclude<AnthropicMessage['content'], string>[number];
type AnthropicTool = NonNullable<AnthropicBody['tools']>[number];

/** Fields converted here; any other field is passed through as is. */
const CONVERTED = new Set(['messages', 'system', 'tools', 'tool_choice', 'stop_sequences', 'metadata', 'top_k']);

const blockText = (content: unknown): string =>
  typeof content === 'string'
    ? content
    : Array.isArray(content)
      ? content.map((b: Block) => (b.type === 'text' ? (b.text ?? '') : '')).join('')
      : '';

function imageUrl(b: Block): string {
  return b.source?.type === 'base64' ? `data:${b.source.media_type};base64,${b.source.data}` : (b.source?.url ?? '');
}

function convertMessage(m: AnthropicMessage): ChatMessage[] {
  if (typeof m.content === 'string') return [{ role: m.role, content: m.content }];
  if (m.role === 'assistant') {
    const calls: ToolCall[] = m.content
      .filter((b) => b.type === 'tool_use')
      .map((b) => ({
        id: b.id ?? '',
        type: 'function',
        function: { name: b.name ?? '', arguments: JSON.stringify(b.input ?? {}) },
      }));
    const text = blockText(m.content);
    return [
      {
        role: 'assistant',
        content: text === '' && calls.length ? null : text,
        ...(calls.length ? { tool_calls: calls } : {}),
      },
    ];
  }
  const results: ChatMessage[] = m.content
    .filter((b) => b.type === 'tool_result')
    .map((b) => ({ role: 'tool', tool_call_id: b.tool_use_id ?? '', content: blockText(b.content) }));
  type Part = ({ type: 'text'; text: string } | { type: 'image_url'; image_url: { url: string } }) & {
    cache_control?: unknown;
  };
  // A block's cache breakpoint stays on its part, for a provider that caches by breakpoints.
  const mark = (b: Block) => (b.cache_control ? { cache_control: b.cache_control } : {});
  const parts = m.content.flatMap((b): Part[] =>
    b.type === 'text'
      ? [{ type: 'text', text: b.text ?? '', ...mark(b) }]
      : b.type === 'image'
        ? [{ type: 'image_url', image_url: { url: imageUrl(b) }, ...mark(b) }]
        : [],
  );
  const onlyText = parts.every((p) => p.type === 'text' && !p.cache_control);
  const user: ChatMessage[] = parts.length
    ? [{ role: 'user', content: onlyText ? parts.map((p) => (p.type === 'text' ? p.text : '')).join('') : parts }]
    : [];
  return [...results, ...user];
}

function convertTool(t: AnthropicTool): ChatTool {
  if (t.type && t.type !== 'custom') return { ...t, type: t.type };
  return {
    type: 'function',
    function: {
      name: t.name ?? '',
      ...(t.description ? { description: t.description } : {}),
      parameters: t.input_schema ?? { type: 'object' },
    },
  };
}

function convertChoice(c: AnthropicBody['tool_choice']): unknown {
  if (!c) return undefined;
  if (c.type === 'any') return 'required';
  if (c.type === 'tool') return { type: 'function', function: { name: c.name } };
  return c.type;
}

export function fromMessagesBody(body: AnthropicBody): ChatRequest {
  const rest = Object.fromEntries(Object.entries(body).filter(([k]) => !CONVERTED.has(k)));
  const blocks = typeof body.system === 'string' ? null : (body.system ?? []);
  const system = blocks?.some((b) => b.cache_control)
    ? blocks.map((b) => ({
        type: 'text',
        text: b.text,
        ...(b.cache_control ? { cache_control: b.cache_control } : {}),
      }))
    : blocks
      ? blocks.map((b) => b.text).join('\n\n')
      : (body.system as string | undefined);
  const choice = convertChoice(body.tool_choice);
  return {
    ...rest,
    messages: [
      ...(system?.length ? [{ role: 'system' as const, content: system }] : []),
      ...body.messages.flatMap(convertMessage),
    ],
    ...(body.tools ? { tools: body.tools.map(convertTool) } : {}),
    ...(choice !== undefined ? { tool_choice: choice } : {}),
    ...(body.stop_sequences?.length ? { stop: body.stop_sequences } : {}),
    ...(body.metadata?.user_id && !body.user ? { user: body.metadata.user_id } : {}),
  };
}
