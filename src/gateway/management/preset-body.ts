// Pure mapping from a validated inference request body (messages, chat or responses style) to a
// preset version: its system prompt and its configuration. Nulls mean "not set"; fields that are
// not configuration are dropped. The route validates with STYLES[style].schema first.
import { CONFIG_KEYS, type PresetConfig } from './preset-config.schemas.ts';
import {
  ChatPresetBody,
  isSystemMessage,
  MessagesPresetBody,
  ResponsesPresetBody,
  SystemMessage,
} from './presets.schemas.ts';

export type BodyStyle = 'messages' | 'chat' | 'responses';
export type PresetDraft = { systemPrompt: string; config: PresetConfig };

type Parts = string | { text: string }[];
const joinText = (c: Parts) => (typeof c === 'string' ? c : c.map((b) => b.text).join('\n'));

/** Keys each style names differently; they are mapped by the style, never picked verbatim. */
const RENAMED = new Set(['stop', 'max_tokens']);

/** The configuration keys present in a parsed body, without nulls (a null leaves the key unset). */
function pickConfig(body: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of CONFIG_KEYS) if (!RENAMED.has(k) && body[k] !== undefined && body[k] !== null) out[k] = body[k];
  return out;
}

export function fromMessages(b: MessagesPresetBody): PresetDraft {
  const config = pickConfig(b);
  if (b.max_tokens != null) config.max_tokens = b.max_tokens;
  if (b.stop_sequences) config.stop = b.stop_sequences;
  const system = b.system ?? '';
  const marked = typeof system === 'string' ? [] : system.filter((blk) => blk.cache_control);
  if (marked.length) config.system_cache_control = marked[marked.length - 1]!.cache_control;
  return { systemPrompt: joinText(system), config: config as PresetConfig };
}

export function fromChat(b: ChatPresetBody): PresetDraft {
  const config = pickConfig(b);
  if (b.stop) config.stop = typeof b.stop === 'string' ? [b.stop] : b.stop;
  const maxTokens = b.max_completion_tokens ?? b.max_tokens;
  if (maxTokens != null) config.max_tokens = maxTokens;
  const system = (b.messages ?? []).filter(isSystemMessage).map((m) => joinText(SystemMessage.parse(m).content));
  return { systemPrompt: system.join('\n\n'), config: config as PresetConfig };
}

export function fromResponses(b: ResponsesPresetBody): PresetDraft {
  const config = pickConfig(b);
  if (b.max_output_tokens != null) config.max_tokens = b.max_output_tokens;
  return { systemPrompt: b.instructions ?? '', config: config as PresetConfig };
}

export const STYLES = {
  messages: { schema: MessagesPresetBody, toDraft: fromMessages },
  chat: { schema: ChatPresetBody, toDraft: fromChat },
  responses: { schema: ResponsesPresetBody, toDraft: fromResponses },
} as const;
