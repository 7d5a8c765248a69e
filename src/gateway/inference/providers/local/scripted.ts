// The `local/scripted` model: a deterministic, stateless model driven by directives in the
// turn's opening user message (grammar in docs/reference/scripted-model.md). Pure: messages in, a response plan out.
// Players (the local provider, the loopback test server) turn a plan into a wire response.
import { createHash } from 'node:crypto';
import type { Usage } from '../../../../shared/openai.ts';

export type ScriptMessage = {
  role: string;
  content?: unknown;
  tool_calls?: { id: string; function: { name: string; arguments: string } }[] | null;
  tool_call_id?: string;
};

export type ScriptRequest = {
  messages: ScriptMessage[];
  tools?: { function?: { name?: string } }[];
  /** `none`: no tool is available (as a model asked not to call tools). */
  tool_choice?: unknown;
};

export type Step =
  | { type: 'content'; text: string }
  | { type: 'reasoning'; text: string }
  | { type: 'tool_call'; id: string; name: string; arguments: string }
  | { type: 'sleep'; ms: number }
  /** `n` (at least 1) content chunks, `first` then `rest` each time: played lazily, so a long repeat costs no memory up front. */
  | { type: 'repeat'; n: number; first: string; rest: string };

export type Plan =
  | { kind: 'fail'; status: number }
  | { kind: 'ok'; steps: Step[]; finish: 'stop' | 'tool_calls'; usage: Usage };

const RESULT_LIMIT = 500;
/** Bounds (docs/reference/scripted-model.md) on one response, summed over all of its lines: they keep one request from
 * taking the process's memory, its event loop or a connection for longer than ten minutes. */
export const MAX_REPEATS = 100_000;
export const MAX_REPEAT_CHARS = 1_000_000;
export const MAX_SLEEP_MS = 600_000;

export function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((p) =>
        p && typeof p === 'object' && typeof (p as { text?: unknown }).text === 'string'
          ? (p as { text: string }).text
          : '',
      )
      .join('');
  }
  return '';
}

/** Blocks agents wrap around their user's words: Claude Code's `<system-reminder>` before every
 * prompt, Codex's `<environment_context>` and `<user_instructions>` messages. */
const AGENT_CONTEXT = /<(system-reminder|environment_context|user_instructions)>[\s\S]*?<\/\1>\s*/g;

/** A message's script: its text without the context blocks agents add. */
export function scriptOf(content: unknown): string {
  return textOf(content).replace(AGENT_CONTEXT, '');
}

/** A user message that is only an agent's context (no words of its user) counts as a system message. */
const contextOnly = (m: ScriptMessage) =>
  m.role === 'user' && textOf(m.content).trim() !== '' && scriptOf(m.content).trim() === '';
const conversational = (m: ScriptMessage) => m.role !== 'system' && m.role !== 'developer' && !contextOnly(m);

export function countWords(text: string): number {
  const t = text.trim();
  return t === '' ? 0 : t.split(/\s+/).length;
}

/** Index of the user message that opened the current turn, or -1 when there is none. */
export function openerIndex(messages: ScriptMessage[]): number {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role !== 'user' || contextOnly(m)) continue;
    const prev = messages.slice(0, i).filter(conversational).at(-1);
    if (!prev || (prev.role === 'assistant' && !prev.tool_calls?.length)) return i;
  }
  return -1;
}

type Line =
  | { kind: 'say'; text: string }
  | { kind: 'think'; text: string }
  | { kind: 'tool'; name: string; args: string }
  | { kind: 'sleep'; ms: number }
  | { kind: 'repeat'; n: number; text: string }
  | { kind: 'fail'; status: number };

/** Parses one script line; a line that is not a well-formed directive is said as text. */
export function parseLine(raw: string): Line {
  const m = /^\/(say|think|tool|shell|ask|sleep|repeat|fail)(?:\s+([\s\S]*))?$/.exec(raw.trim());
  if (!m) return { kind: 'say', text: raw };
  const [, name, rest = ''] = m;
  switch (name) {
    case 'say':
      return { kind: 'say', text: rest };
    case 'think':
      return { kind: 'think', text: rest };
    case 'shell':
      return { kind: 'tool', name: 'shell', args: JSON.stringify({ command: rest }) };
    case 'ask':
      return {
        kind: 'tool',
        name: 'ask_user',
        args: JSON.stringify({ message: rest, fields: [{ name: 'answer', type: 'string', required: true }] }),
      };
    case 'tool': {
      const t = /^(\S+)\s*([\s\S]*)$/.exec(rest);
      return t ? { kind: 'tool', name: t[1]!, args: t[2]!.trim() || '{}' } : { kind: 'say', text: raw };
    }
    case 'sleep':
    case 'repeat':
    case 'fail': {
      const n = /^(\d+)(?:\s+([\s\S]*))?$/.exec(rest);
      if (!n) return { kind: 'say', text: raw };
      const value = Number(n[1]);
      if (name === 'sleep') return { kind: 'sleep', ms: value };
      if (name === 'fail') return { kind: 'fail', status: value };
      return n[2] ? { kind: 'repeat', n: value, text: n[2] } : { kind: 'say', text: raw };
    }
  }
  return { kind: 'say', text: raw };
}

function isDirective(raw: string): boolean {
  return parseLine(raw).kind !== 'say' || /^\/say(\s|$)/.test(raw.trim());
}

/** Splits text into word chunks that concatenate back to it (a word at a time). */
export function words(text: string, leadingNewline: boolean): string[] {
  const parts = text.split(/(?<=\S)(?=\s)/);
  if (leadingNewline) parts[0] = '\n' + (parts[0] ?? '');
  return parts.filter((p) => p !== '');
}

/** The first `limit` characters (code points) of text: a surrogate pair is never split. */
export function cutChars(text: string, limit: number): string {
  let end = 0;
  let n = 0;
  for (const ch of text) {
    if (n++ === limit) break;
    end += ch.length;
  }
  return text.slice(0, end);
}

function charCount(text: string): number {
  let n = 0;
  for (const _ of text) n++;
  return n;
}

function callId(seed: string, k: number): string {
  return 'call_' + createHash('sha256').update(`${seed}\u0000${k}`).digest('hex').slice(0, 24);
}

/** A response being built. A text line starts on a new line after the text before it, and a
 * reasoning line after the reasoning before it, so the usage (every line's words) is the number of
 * whitespace-separated words of what is produced. */
class Output {
  readonly steps: Step[] = [];
  tokens = 0;
  /** Characters and repetitions of /repeat so far, against MAX_REPEAT_CHARS and MAX_REPEATS. */
  repeated = 0;
  repetitions = 0;
  /** Milliseconds of /sleep so far, against MAX_SLEEP_MS. */
  slept = 0;
  private spoke = false;
  private thought = false;

  say(text: string): void {
    for (const w of words(text, this.spoke)) this.steps.push({ type: 'content', text: w });
    this.spoke = true;
    this.tokens += countWords(text);
  }

  think(text: string): void {
    for (const w of words(text, this.thought)) this.steps.push({ type: 'reasoning', text: w });
    this.thought = true;
    this.tokens += countWords(text);
  }

  /** n chunks of text separated by a space; its words counted, not built. */
  repeat(n: number, text: string): void {
    this.repeated += n * charCount(text);
    this.repetitions += n;
    if (n === 0) return;
    this.steps.push({ type: 'repeat', n, first: (this.spoke ? '\n' : '') + text, rest: ' ' + text });
    this.spoke = true;
    this.tokens += n * countWords(text);
  }

  call(id: string, name: string, args: string): void {
    this.steps.push({ type: 'tool_call', id, name, arguments: args });
    this.tokens += countWords(args);
  }
}

/** Why a well-formed directive cannot be carried out, in words; null when it can. */
function refusalOf(line: Line, out: Output, tools: Set<string | undefined>): string | null {
  switch (line.kind) {
    case 'sleep':
      return out.slept + line.ms > MAX_SLEEP_MS ? `/sleep is limited to ${MAX_SLEEP_MS} ms a response.` : null;
    case 'repeat':
      return out.repetitions + line.n > MAX_REPEATS || out.repeated + line.n * charCount(line.text) > MAX_REPEAT_CHARS
        ? `/repeat is limited to ${MAX_REPEATS} repetitions and ${MAX_REPEAT_CHARS} characters a response.`
        : null;
    case 'tool':
      if (!tools.has(line.name)) return `Tool ${line.name} is not available.`;
      return isJsonObject(line.args) ? null : `Tool ${line.name} was given arguments that are not a JSON object.`;
    default:
      return null;
  }
}

export function plan(req: ScriptRequest): Plan {
  const { messages } = req;
  const open = openerIndex(messages);
  const script = open >= 0 ? scriptOf(messages[open]!.content) : '';
  const since = open >= 0 ? messages.slice(open + 1) : [];
  const position = since.filter((m) => m.role === 'assistant' && m.tool_calls?.length).length;
  const lastAssistant = since.map((m) => m.role).lastIndexOf('assistant');
  const afterLast = since.slice(lastAssistant + 1);

  const out = new Output();
  for (const m of afterLast) if (m.role === 'user') out.say(`Noted: ${textOf(m.content)}`);
  if (position > 0) {
    const asked = since.filter((m) => m.role === 'assistant' && m.tool_calls?.length).at(-1)!;
    const call = asked.tool_calls![0]!;
    const result = afterLast.find((m) => m.role === 'tool' && m.tool_call_id === call.id);
    out.say(`${call.function.name}: ${cutChars(textOf(result?.content), RESULT_LIMIT)}`);
  }

  const lines = script.split('\n').filter((l) => l.trim() !== '');
  const scripted = lines.some(isDirective);
  if (!scripted && position === 0 && open >= 0) out.say(`You said: ${script}`);

  const toolNames = new Set(
    req.tool_choice === 'none' ? [] : (req.tools ?? []).map((t) => t.function?.name).filter(Boolean),
  );
  let finish: 'stop' | 'tool_calls' = 'stop';
  let toolSeen = 0;
  for (const raw of scripted ? lines : []) {
    const line = parseLine(raw);
    if (toolSeen < position) {
      if (line.kind === 'tool') toolSeen++;
      continue;
    }
    if (line.kind === 'fail') return { kind: 'fail', status: line.status };
    const refusal = refusalOf(line, out, toolNames);
    if (refusal) {
      out.say(refusal);
      break;
    }
    if (line.kind === 'say') out.say(line.text);
    else if (line.kind === 'think') out.think(line.text);
    else if (line.kind === 'sleep') {
      out.slept += line.ms;
      out.steps.push({ type: 'sleep', ms: line.ms });
    } else if (line.kind === 'repeat') out.repeat(line.n, line.text);
    else {
      out.call(callId(`${open}:${script}`, position), line.name, line.args);
      finish = 'tool_calls';
      break;
    }
  }

  const prompt = messages.reduce((n, m) => n + countWords(textOf(m.content)), 0);
  return {
    kind: 'ok',
    steps: out.steps,
    finish,
    usage: { prompt_tokens: prompt, completion_tokens: out.tokens, total_tokens: prompt + out.tokens },
  };
}

function isJsonObject(text: string): boolean {
  try {
    const v: unknown = JSON.parse(text);
    return typeof v === 'object' && v !== null && !Array.isArray(v);
  } catch {
    return false;
  }
}
