// What the gateway sends, checked by hand before the console reads it as its type: the console
// does not bundle Zod (its first load stays under 80 KB gzip, bench/console.ts), so these are
// small guards of the fields it reads, of the shapes of src/shared's schemas and
// docs/reference/intern-chat.md. Tested by table (wire.test.ts).
import type { Agent } from './app.tsx';
import type { Chunk, PermissionArgs, QuestionArgs } from './chat.ts';
import type { Listing } from './screens/files.tsx';

type Check = (v: unknown) => boolean;
type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const str: Check = (v) => typeof v === 'string';
const num: Check = (v) => typeof v === 'number';
const bool: Check = (v) => typeof v === 'boolean';
const any: Check = () => true;
const is =
  (...values: unknown[]): Check =>
  (v) =>
    values.includes(v);
const orNull =
  (c: Check): Check =>
  (v) =>
    v === null || c(v);
const list =
  (c: Check): Check =>
  (v) =>
    Array.isArray(v) && v.every(c);
/** An object with each of `fields` passing its check, and each of `optional` absent or passing. */
const shape =
  (fields: Record<string, Check>, optional: Record<string, Check> = {}): Check =>
  (v) =>
    isObj(v) &&
    Object.keys(fields).every((k) => fields[k]!(v[k])) &&
    Object.keys(optional).every((k) => v[k] === undefined || optional[k]!(v[k]));

const toolCall = shape({
  index: num,
  id: str,
  type: is('function'),
  function: shape({ name: is('service.provide_input'), arguments: str }),
});
const usage = shape({ prompt_tokens: num, completion_tokens: num, total_tokens: num }, { cost: num });
const toolEvent = shape({
  id: str,
  title: orNull(str),
  kind: orNull(str),
  status: orNull(is('pending', 'in_progress', 'completed', 'failed')),
  input: orNull(str),
  output: orNull(str),
});
const chunk = shape(
  {
    choices: list(
      shape({
        delta: shape({}, { content: str, reasoning: str, tool_calls: list(toolCall) }),
        finish_reason: orNull(is('stop', 'tool_calls', 'error')),
      }),
    ),
  },
  {
    model: str,
    error: shape({ code: num, message: str, metadata: shape({ reason: str, retryable: bool }) }),
    session_id: orNull(str),
    usage: orNull(usage),
    cohort_tool: toolEvent,
  },
);
/** A permission's title, input and sandbox are cohort's extension, absent from an older daemon's. */
const permission = shape(
  { kind: is('permission'), operation: orNull(str), options: list(str) },
  { title: orNull(str), input: any, sandbox: orNull(str) },
);
const question = shape({
  kind: is('elicitation'),
  message: str,
  fields: list(shape({ name: str, type: str, required: bool, options: list(str) }, { title: str, description: str })),
});
const errorBody = shape({
  error: shape({}, { message: str, metadata: shape({}, { reason: str, retryable: bool }) }),
});
const answer = shape({ action: str }, { content: isObj });
const listing = shape({
  path: str,
  entries: list(
    shape({
      name: str,
      type: is('file', 'directory', 'symlink', 'special'),
      size: orNull(num),
      modified_at: num,
    }),
  ),
  truncated: bool,
});
const agents = shape({
  data: list(
    shape({
      id: str,
      name: str,
      description: str,
      supports: shape({ sessions: bool, questions: bool, steering: bool }),
    }),
  ),
});

export const isChunk = (v: unknown): v is Chunk => chunk(v);
export const isInteraction = (v: unknown): v is PermissionArgs | QuestionArgs => permission(v) || question(v);
export const isErrorBody = (
  v: unknown,
): v is { error: { message?: string; metadata?: { reason?: string; retryable?: boolean } } } => errorBody(v);
/** A question's answer as the console and the CLI write it (a permission's is the option's name). */
export const isAnswer = (v: unknown): v is { action: string; content?: Record<string, unknown> } => answer(v);
export const isListing = (v: unknown): v is Listing => listing(v);
export const isAgentList = (v: unknown): v is { data: Agent[] } => agents(v);
