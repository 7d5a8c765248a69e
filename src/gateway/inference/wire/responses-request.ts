// An OpenAI Responses API request body as the router's OpenAI chat-completions request:
// `instructions` as a system message, input messages as chat messages, `function_call` items as
// the tool calls of an assistant message and `function_call_output` items as tool messages,
// function tools as chat function tools (server tools, `type: "service:…"`, stay as they are for
// the router). Reasoning items are dropped: chat-completions providers take no reasoning back.
// Pure; the body was validated with ../inference.schemas.ts ResponsesRequest.
// May import: ../types.ts, ../inference.schemas.ts (types).
import type { ResponsesRequest } from '../inference.schemas.ts';
import type { ChatMessage, ChatRequest, ChatTool, ToolCall } from '../types.ts';

/** The body as its schema parsed it. */
export type ResponsesBody = ResponsesRequest;
type InputItem = Exclude<ResponsesBody['input'], string>[number];
type Message = Extract<InputItem, { role: string }>;
type ContentPart = Exclude<Message['content'], string>[number];
type ResponsesTool = NonNullable<ResponsesBody['tools']>[number];

/** Fields converted here. */
const CONVERTED = new Set(['input', 'instructions', 'tools', 'tool_choice', 'max_output_tokens', 'reasoning', 'text']);
/** Responses-only fields with no chat-completions counterpart: storage (nothing is stored, see
 * the README; the schema lets `previous_response_id` and `conversation` be null only, and a null
 * is dropped anyway), extra output (`include`, `top_logprobs`), limits chat providers do not know.
 * (`max_tool_calls` passes to the router: it bounds the server-tool loop.) */
const DROPPED = new Set(['store', 'include', 'truncation', 'background', 'top_logprobs', 'stream_options']);

const partText = (p: ContentPart): string =>
  p.type === 'refusal' ? p.refusal : p.type === 'input_image' ? '' : p.text;

/** Text only: a string, as every chat provider takes it; with an image, chat content parts. */
function contentOf(content: string | ContentPart[]): ChatMessage['content'] {
  if (typeof content === 'string') return content;
  if (!content.some((p) => p.type === 'input_image')) return content.map(partText).join('');
  return content.map((p) =>
    p.type === 'input_image'
      ? { type: 'image_url', image_url: { url: p.image_url, ...(p.detail ? { detail: p.detail } : {}) } }
      : { type: 'text', text: partText(p) },
  );
}

function convertInput(items: InputItem[]): ChatMessage[] {
  const out: ChatMessage[] = [];
  for (const item of items) {
    if (item.type === 'function_call') {
      const call: ToolCall = {
        id: item.call_id,
        type: 'function',
        function: { name: item.name, arguments: item.arguments },
      };
      // Calls made in one turn belong to the assistant message before them (parallel calls are
      // consecutive items), as chat providers expect the tool messages to follow one such message.
      const last = out.at(-1);
      if (last?.role === 'assistant') last.tool_calls = [...(last.tool_calls ?? []), call];
      else out.push({ role: 'assistant', content: null, tool_calls: [call] });
    } else if (item.type === 'function_call_output') {
      const output = item.output;
      out.push({
        role: 'tool',
        tool_call_id: item.call_id,
        content: typeof output === 'string' ? output : output.map(partText).join(''),
      });
    } else if (item.type === undefined || item.type === 'message') {
      const role = item.role;
      out.push({
        role,
        content:
          role === 'user'
            ? contentOf(item.content)
            : typeof item.content === 'string'
              ? item.content
              : item.content.map(partText).join(''),
      });
    }
  }
  return out;
}

function convertTool(t: ResponsesTool): ChatTool {
  if (t.type !== 'function') return t;
  const fn = {
    name: t.name!,
    ...(t.description !== undefined ? { description: t.description } : {}),
    ...(t.parameters ? { parameters: t.parameters } : {}),
    ...(t.strict != null ? { strict: t.strict } : {}),
  };
  return { type: 'function', function: fn };
}

function convertChoice(c: ResponsesBody['tool_choice']): unknown {
  if (c === undefined || typeof c === 'string') return c;
  return { type: 'function', function: { name: c.name } };
}

function convertFormat(f: NonNullable<ResponsesBody['text']>['format']): unknown {
  if (!f || f.type === 'text') return undefined;
  if (f.type === 'json_object') return { type: 'json_object' };
  const { type: _type, ...schema } = f;
  return { type: 'json_schema', json_schema: schema };
}

/** The reasoning setting without its nulls, in the router's vocabulary (routing.ts normalizeOptions). */
function reasoningOf(r: NonNullable<ResponsesBody['reasoning']>): { reasoning?: Record<string, unknown> } {
  const set = Object.fromEntries(Object.entries(r).filter(([, v]) => v !== null && v !== undefined));
  return Object.keys(set).length ? { reasoning: set } : {};
}

/** The chat-completions request for a Responses body; a null field is "not set", so a preset may fill it. */
export function fromResponsesBody(body: ResponsesBody): ChatRequest {
  const rest = Object.fromEntries(
    Object.entries(body).filter(([k, v]) => v !== null && !CONVERTED.has(k) && !DROPPED.has(k)),
  );
  const input =
    typeof body.input === 'string' ? [{ role: 'user' as const, content: body.input }] : convertInput(body.input);
  const choice = convertChoice(body.tool_choice);
  // OpenAI's hosted tools (web_search, namespace, local_shell, custom…) have no chat-completions
  // form: they are left out, as an agent that offers them (Codex does) still works with the rest.
  const tools = (body.tools ?? []).filter((t) => t.type === 'function' || t.type.startsWith('service:'));
  const format = convertFormat(body.text?.format);
  return {
    ...rest,
    messages: [...(body.instructions ? [{ role: 'system' as const, content: body.instructions }] : []), ...input],
    ...(tools.length ? { tools: tools.map(convertTool) } : {}),
    ...(choice !== undefined ? { tool_choice: choice } : {}),
    ...(body.max_output_tokens != null ? { max_tokens: body.max_output_tokens } : {}),
    ...(body.reasoning ? reasoningOf(body.reasoning) : {}),
    ...(format ? { response_format: format } : {}),
    ...(body.text?.verbosity ? { verbosity: body.text.verbosity } : {}),
  };
}
