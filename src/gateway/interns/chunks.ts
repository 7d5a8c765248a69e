// The PURE mapping from daemon run events (docs/daemon-protocol.md) to OpenAI chat chunks
// (docs/reference/intern-chat.md). No I/O: the relay feeds events in and writes what comes out.
// Nothing is written until the first output, so a turn the intern refuses before any output can
// still be answered with a status (`refuse`) instead of an in-stream error.
import type { RunEvent, Usage } from '../../shared/daemon-protocol.ts';
import { retryableFor, type Reason } from '../errors.ts';
import type { InternChunk } from './chat.schemas.ts';

export const SERVICE_MODEL = 'service/intern';
export const TOOL_NAME = 'service.provide_input' as const;

export type MapState = {
  id: string;
  created: number;
  /** Last model the intern reported; null until it reports one. */
  model: string | null;
  sessionId: string | null;
  usage: Usage | null;
  opened: boolean;
  ended: boolean;
  /** The request asked for the agent's tool calls as `cohort_tool` chunks (docs/reference/tool-events.md). */
  toolEvents: boolean;
};

export type Refusal = { status: number; reason: Reason; message: string; retryable: boolean; retryAfter?: number };

export type Step =
  | { kind: 'hold' }
  | { kind: 'refuse'; refusal: Refusal }
  | { kind: 'write'; chunks: InternChunk[]; end: boolean };

/** Failures the API itself detects, after or before the stream opened. */
export type ApiEnding = { reason: 'stream_severed' | 'timeout'; status: number; message: string };

/** `sessionId` is known up front when continuing a paused run (its stream has no `run` event). */
export function initialState(opts: {
  id: string;
  created: number;
  sessionId?: string;
  toolEvents?: boolean;
}): MapState {
  return {
    id: opts.id,
    created: opts.created,
    model: null,
    sessionId: opts.sessionId ?? null,
    usage: null,
    opened: false,
    ended: false,
    toolEvents: opts.toolEvents ?? false,
  };
}

type Delta = InternChunk['choices'][number]['delta'];
type Finish = InternChunk['choices'][number]['finish_reason'];

function chunk(s: MapState, model: string, delta: Delta, finish: Finish = null): InternChunk {
  return {
    id: s.id,
    object: 'chat.completion.chunk',
    created: s.created,
    model,
    choices: [{ index: 0, delta, finish_reason: finish }],
  };
}

function finalChunk(s: MapState, model: string, usage: Usage | null): InternChunk {
  return {
    id: s.id,
    object: 'chat.completion.chunk',
    created: s.created,
    model,
    choices: [],
    session_id: s.sessionId,
    usage,
  };
}

function errorChunk(
  s: MapState,
  model: string,
  e: { status: number; message: string; reason: Reason; retryable: boolean },
): InternChunk {
  const c = chunk(s, model, {}, 'error');
  c.error = {
    code: e.status,
    message: e.message,
    metadata: { reason: e.reason, retryable: retryableFor(e.reason, e.retryable) },
  };
  return c;
}

const modelOf = (s: MapState) => s.model ?? SERVICE_MODEL;

/** Prefixes the role chunk when this is the first thing written. */
function open(s: MapState, chunks: InternChunk[], end = false): { state: MapState; step: Step } {
  // Most events of a stream are text on an open stream: the state is unchanged, so it is not copied.
  if (s.opened && !end) return { state: s, step: { kind: 'write', chunks, end } };
  const all = s.opened ? chunks : [chunk(s, modelOf(s), { role: 'assistant' }), ...chunks];
  return { state: { ...s, opened: true, ended: end }, step: { kind: 'write', chunks: all, end } };
}

const quiet = (s: MapState): { state: MapState; step: Step } => ({
  state: s,
  step: s.opened ? { kind: 'write', chunks: [], end: false } : { kind: 'hold' },
});

export function mapEvent(s: MapState, e: RunEvent): { state: MapState; step: Step } {
  if (s.ended) return { state: s, step: { kind: 'write', chunks: [], end: false } };
  switch (e.type) {
    case 'run':
      return quiet({ ...s, sessionId: e.session_id });
    case 'model':
      return quiet({ ...s, model: e.model });
    case 'usage':
      return quiet({ ...s, usage: e.usage });
    case 'steered':
      return quiet(s);
    case 'tool': {
      if (!s.toolEvents) return quiet(s);
      // An empty delta: a client that does not know the extension adds nothing to its answer.
      const c = chunk(s, modelOf(s), {});
      const { seq: _, type: __, ...tool } = e;
      c.cohort_tool = tool;
      return open(s, [c]);
    }
    case 'text':
      return open(s, [chunk(s, modelOf(s), { content: e.text })]);
    case 'reasoning':
      return open(s, [chunk(s, modelOf(s), { reasoning: e.text })]);
    case 'interaction': {
      const call = {
        index: 0,
        id: e.interaction_id,
        type: 'function' as const,
        function: { name: TOOL_NAME, arguments: JSON.stringify(e.interaction) },
      };
      return open(
        s,
        [
          chunk(s, modelOf(s), { tool_calls: [call] }),
          chunk(s, modelOf(s), {}, 'tool_calls'),
          finalChunk(s, modelOf(s), null),
        ],
        true,
      );
    }
    case 'completed': {
      const next = { ...s, model: e.model ?? s.model };
      return open(
        next,
        [chunk(next, modelOf(next), {}, 'stop'), finalChunk(next, modelOf(next), e.usage ?? s.usage)],
        true,
      );
    }
    case 'failed': {
      const retryable = retryableFor(e.reason, e.retryable);
      if (!s.opened && e.before_output) {
        return {
          state: { ...s, ended: true },
          step: {
            kind: 'refuse',
            refusal: {
              status: e.status,
              reason: e.reason,
              message: e.message,
              retryable,
              retryAfter: e.retry_after_seconds,
            },
          },
        };
      }
      // A severed stream or a deadline is the API's ending whoever noticed it
      // (docs/reference/intern-chat.md#stream-chunks): the daemon reports these when it loses the agent,
      // and they carry `service/intern` as the gateway's own do.
      const model = e.reason === 'stream_severed' || e.reason === 'timeout' ? SERVICE_MODEL : modelOf(s);
      return open(s, [errorChunk(s, model, { ...e, retryable }), finalChunk(s, model, e.usage ?? s.usage)], true);
    }
    case 'ended': {
      const err = { status: 410, reason: 'run_ended' as const, retryable: false, message: e.message };
      return open(s, [errorChunk(s, SERVICE_MODEL, err), finalChunk(s, SERVICE_MODEL, e.usage ?? s.usage)], true);
    }
  }
}

/** The API ends the response itself: severed daemon stream, turn budget exceeded. */
export function mapApiEnding(s: MapState, e: ApiEnding): { state: MapState; step: Step } {
  if (s.ended) return { state: s, step: { kind: 'write', chunks: [], end: false } };
  const retryable = retryableFor(e.reason);
  if (!s.opened) return { state: { ...s, ended: true }, step: { kind: 'refuse', refusal: { ...e, retryable } } };
  const err = { ...e, retryable };
  return open(s, [errorChunk(s, SERVICE_MODEL, err), finalChunk(s, SERVICE_MODEL, s.usage)], true);
}
