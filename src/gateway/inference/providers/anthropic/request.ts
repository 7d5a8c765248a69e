// An OpenAI-shaped chat request as an Anthropic Messages API body: system messages become
// `system`, tool results become user `tool_result` blocks, tool calls `tool_use` blocks. Pure.
import { textOf } from '../local/scripted.ts';
import type { ChatMessage, ChatRequest, ChatTool } from '../../types.ts';
import {
  applyCacheBreakpoint,
  JSON_MODE_INSTRUCTION,
  jsonModeOf,
  outputFormatOf,
  type Reasoning,
  thinkingOf,
} from '../options.ts';

type Block = Record<string, unknown>;
type AnthropicMessage = { role: 'user' | 'assistant'; content: Block[] };

const DEFAULT_MAX_TOKENS = 4096;

function imageBlock(url: string): Block {
  const m = /^data:([^;]+);base64,(.*)$/s.exec(url);
  return m
    ? { type: 'image', source: { type: 'base64', media_type: m[1], data: m[2] } }
    : { type: 'image', source: { type: 'url', url } };
}

function userBlocks(content: unknown): Block[] {
  if (!Array.isArray(content)) return textOf(content) ? [{ type: 'text', text: textOf(content) }] : [];
  return content.flatMap(
    (p: { type?: string; text?: string; image_url?: { url?: string }; cache_control?: unknown }): Block[] => {
      const mark = p?.cache_control ? { cache_control: p.cache_control } : {};
      if (p?.type === 'text' && p.text) return [{ type: 'text', text: p.text, ...mark }];
      if (p?.type === 'image_url' && p.image_url?.url) return [{ ...imageBlock(p.image_url.url), ...mark }];
      return [];
    },
  );
}

function parseArgs(args: string): unknown {
  try {
    const v: unknown = JSON.parse(args || '{}');
    return v && typeof v === 'object' ? v : {};
  } catch {
    return {};
  }
}

function blocksOf(m: ChatMessage): { role: 'user' | 'assistant'; blocks: Block[] } {
  if (m.role === 'tool')
    return { role: 'user', blocks: [{ type: 'tool_result', tool_use_id: m.tool_call_id, content: textOf(m.content) }] };
  if (m.role !== 'assistant') return { role: 'user', blocks: userBlocks(m.content) };
  const text = textOf(m.content);
  return {
    role: 'assistant',
    blocks: [
      ...(text ? [{ type: 'text', text }] : []),
      ...(m.tool_calls ?? []).map((c) => ({
        type: 'tool_use',
        id: c.id,
        name: c.function.name,
        input: parseArgs(c.function.arguments),
      })),
    ],
  };
}

function toolChoice(choice: unknown): Block | undefined {
  if (choice === 'auto') return { type: 'auto' };
  if (choice === 'required') return { type: 'any' };
  if (choice === 'none') return { type: 'none' };
  const named = choice as { function?: { name?: string } } | undefined;
  return named?.function?.name ? { type: 'tool', name: named.function.name } : undefined;
}

const functionTools = (tools: ChatTool[] = []) =>
  tools
    .filter((t) => t.type === 'function' && t.function)
    .map((t) => ({
      name: t.function!.name,
      description: t.function!.description,
      input_schema: t.function!.parameters ?? { type: 'object' },
    }));

/** The system prompt: text, or text blocks when a system part carries a cache breakpoint; JSON
 * mode's instruction last (after any breakpoint, so the cached prefix stays the same). */
function systemOf(messages: ChatMessage[], jsonMode: boolean): string | Block[] {
  const system = messages.filter((m) => m.role === 'system' || m.role === 'developer');
  const marked = system.some((m) => Array.isArray(m.content) && m.content.some((p) => p?.cache_control));
  if (!marked) {
    const text = system.map((m) => textOf(m.content)).join('\n\n');
    return jsonMode ? (text ? `${text}\n\n${JSON_MODE_INSTRUCTION}` : JSON_MODE_INSTRUCTION) : text;
  }
  const blocks = system.flatMap((m) => userBlocks(m.content));
  return jsonMode ? [...blocks, { type: 'text', text: JSON_MODE_INSTRUCTION }] : blocks;
}

export function toAnthropicBody(req: ChatRequest, opts: { model: string; stream: boolean }): Record<string, unknown> {
  const system = systemOf(req.messages, jsonModeOf(req.response_format));
  const messages: AnthropicMessage[] = [];
  for (const m of req.messages) {
    if (m.role === 'system' || m.role === 'developer') continue;
    const { role, blocks } = blocksOf(m);
    const last = messages.at(-1);
    if (last && last.role === role) last.content.push(...blocks);
    else messages.push({ role, content: blocks });
  }
  const tools = functionTools(req.tools);
  const stop = typeof req.stop === 'string' ? [req.stop] : req.stop;
  const asked = req.max_tokens ?? (req.max_completion_tokens as number | undefined) ?? DEFAULT_MAX_TOKENS;
  const { thinking, max_tokens } = req.reasoning
    ? thinkingOf(req.reasoning as Reasoning, asked)
    : { thinking: undefined, max_tokens: asked };
  const output = outputFormatOf(req.response_format);
  const cacheMark = req.cache_control as Record<string, unknown> | undefined;
  const body = { messages, system: system || undefined };
  if (cacheMark) applyCacheBreakpoint(body, cacheMark);
  return {
    model: opts.model,
    max_tokens,
    messages,
    stream: opts.stream,
    ...(body.system ? { system: body.system } : {}),
    ...(thinking ? { thinking } : {}),
    ...(output ? { output_config: output } : {}),
    ...(tools.length ? { tools } : {}),
    ...(toolChoice(req.tool_choice) ? { tool_choice: toolChoice(req.tool_choice) } : {}),
    ...(req.temperature !== undefined ? { temperature: req.temperature } : {}),
    ...(req.top_p !== undefined ? { top_p: req.top_p } : {}),
    ...(stop?.length ? { stop_sequences: stop } : {}),
    ...(req.user ? { metadata: { user_id: req.user } } : {}),
  };
}
