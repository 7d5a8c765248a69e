// The inference router's one vocabulary: an OpenAI-shaped chat request, completion and stream
// chunk (every API style and every provider converts to and from these), the typed adapter
// interface every provider implements, the upstream failure they throw, and the cancellation
// that gives a call up (src/shared/http/cancel.ts's, re-exported so callers name one vocabulary).
import type { Cancel } from '../../shared/http/cancel.ts';

export { Cancel } from '../../shared/http/cancel.ts';
import type {
  ChatChunk as WireChunk,
  ChatRequest,
  FinishReason,
  ServerToolStep,
  ToolCall,
  Usage,
} from '../../shared/openai.ts';
export type {
  ChatMessage,
  ChatRequest,
  ChatTool,
  ChunkToolCall,
  FinishReason,
  ServerToolStep,
  ToolCall,
  Usage,
} from '../../shared/openai.ts';

/** On a chunk parsed from an OpenAI-style stream in the usual layout: the provider's own text
 * after its `model` field, which the chat route re-sends as is behind our id and model rather
 * than serialising the chunk again. Whoever changes the chunk otherwise drops it. */
export const WIRE_TAIL = Symbol('wireTail');

/** A chunk as the router passes it on: the wire shape, with the provider's own text where it kept it. */
export type ChatChunk = WireChunk & { [WIRE_TAIL]?: string };

/** On a completion's message, where the provider knows it: its text and reasoning in the order
 * produced, one part per change of kind, so an Anthropic message can put its text and thinking
 * blocks in the order its stream would. A symbol, so no OpenAI response or log carries it. */
export const PARTS = Symbol('parts');

export type TextPart = { kind: 'text' | 'thinking'; text: string };
/** A server tool the gateway ran between a turn's text and the next's (docs/guides/server-tools.md). */
export type Part = TextPart | { kind: 'tool'; step: ServerToolStep };

export type Completion = {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  choices: {
    index: number;
    message: {
      role: 'assistant';
      content: string | null;
      reasoning?: string;
      tool_calls?: ToolCall[];
      /** The server-tool steps the gateway ran for this answer (docs/guides/server-tools.md). */
      reasoning_details?: ServerToolStep[];
      [PARTS]?: Part[];
    };
    finish_reason: FinishReason | null;
  }[];
  system_fingerprint?: string | null;
  usage?: Usage;
};

/** One call of one provider with one credential. */
export type UpstreamCall = {
  /** The provider's own model id (the slug after `provider/`). */
  model: string;
  body: ChatRequest;
  baseUrl: string;
  apiKey: string | null;
  /** The client's request going away; gives up the call and any stream it opened. */
  cancel: Cancel;
};

export type StreamOptions = {
  /** Only a chunk's finish, usage and wire text are read (the chat route, bodies not logged): a
   * chunk with none of the first two may come unparsed, as its WIRE_TAIL and no choices. */
  wireOnly?: boolean;
};

/** The one interface every provider folder implements. */
export type ProviderAdapter = {
  /** Resolves once the provider accepted the request (so failures before any output can be retried elsewhere).
   * Yields the chunks in batches, one batch per read from the provider, so a response that arrives
   * at once costs one pass through the relay rather than one per chunk. */
  stream(call: UpstreamCall, opts?: StreamOptions): Promise<AsyncIterable<ChatChunk[]>>;
  complete(call: UpstreamCall): Promise<Completion>;
  /** Whether the provider serves this model id; undefined means "any id, the provider decides". */
  hasModel?(model: string): boolean;
};

/** A provider failure. status 0: no HTTP answer (connection error or timeout). */
export class UpstreamError extends Error {
  readonly status: number;
  readonly retryable: boolean;
  readonly timeout: boolean;
  constructor(init: { status: number; message: string; timeout?: boolean }) {
    super(init.message);
    this.name = 'UpstreamError';
    this.status = init.status;
    this.timeout = init.timeout ?? false;
    this.retryable = isRetryableStatus(init.status);
  }
}

/** 429, 5xx and no-answer failures are worth another credential, provider or model; 4xx are not. */
export function isRetryableStatus(status: number): boolean {
  return status === 0 || status === 408 || status === 429 || status >= 500;
}
