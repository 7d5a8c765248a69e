// The OpenAI chat-completions wire types, once for the whole tree: what the gateway's router,
// its intern streams and the built-in agent send and receive. Validation lives with each route
// (its Zod schemas are stricter or looser as its docs/reference page asks); these are the shapes in between.
// May import: nothing.

export type ToolCall = { id: string; type: 'function'; function: { name: string; arguments: string } };

export type ChatMessage = {
  role: 'system' | 'developer' | 'user' | 'assistant' | 'tool';
  content?: unknown;
  tool_calls?: ToolCall[] | null;
  tool_call_id?: string;
  name?: string;
  reasoning?: string;
};

export type ChatTool = {
  type: string;
  function?: { name: string; description?: string; parameters?: unknown };
  [k: string]: unknown;
};

/** What is sent upstream: OpenAI chat-completions parameters (unknown ones pass through). */
export type ChatRequest = {
  messages: ChatMessage[];
  tools?: ChatTool[];
  tool_choice?: unknown;
  max_tokens?: number;
  temperature?: number;
  top_p?: number;
  stop?: string | string[];
  user?: string;
  [k: string]: unknown;
};

export type Usage = {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  cost?: number;
  is_byok?: boolean;
  prompt_tokens_details?: { cached_tokens?: number };
  completion_tokens_details?: { reasoning_tokens?: number };
};

export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter' | 'error';

/** One server tool the gateway ran for the model: what it was asked and what it answered. */
export type ServerToolStep = {
  type: 'reasoning.server_tool_call';
  id: string;
  index: number;
  tool_call_id: string;
  tool_name: string;
  arguments: string;
  result: string;
  status: 'completed' | 'failed';
  /** image_generation: the image, for the client (never sent to the model). */
  images?: { type: 'image_url'; image_url: { url: string } }[];
};

export type ChunkToolCall = {
  index: number;
  id?: string;
  type?: 'function';
  function?: { name?: string; arguments?: string };
};

export type ChatChunk = {
  id: string;
  object: 'chat.completion.chunk';
  created: number;
  model: string;
  choices: {
    index: number;
    delta: {
      role?: 'assistant';
      content?: string | null;
      reasoning?: string | null;
      tool_calls?: ChunkToolCall[];
      /** cohort's server-tool steps (docs/guides/server-tools.md), in OpenRouter's `reasoning.server_tool_call` shape. */
      reasoning_details?: ServerToolStep[];
    };
    finish_reason: FinishReason | null;
  }[];
  usage?: Usage | null;
  error?: { code: number; message: string; metadata?: { reason: string; retryable: boolean } };
  /** cohort's extension on an intern's stream: the session the turn ran in. */
  session_id?: string | null;
};
