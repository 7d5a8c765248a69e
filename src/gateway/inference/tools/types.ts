// The one interface every server tool implements (one module per tool in this folder), what a
// tool is given when it runs, and the operator's settings for them (docs/reference/configuration.md,
// "Server tools"). A tool never throws to the client: what it throws becomes `{"error": …}`, the
// tool's result that goes back to the model.
// May import: zod, ../types.ts, ../../http/common.schemas.ts, ../../../shared/*.
import type { z } from 'zod';
import type { ServerTool as ServerToolType } from '../../http/common.schemas.ts';
import type { ChatMessage, ChatRequest, ChatTool, Usage } from '../types.ts';
import type { EgressPolicy } from '../../../shared/egress-policy.ts';

export type { ServerToolType };

/** The operator's settings for server tools (COHORT_* variables, parsed in ../../config.ts). */
export type ToolsEnv = {
  /** Server tools the operator turned off (COHORT_SERVER_TOOLS_OFF). */
  off: ServerToolType[];
  /** Every tool result is cut to this many characters before the model sees it. */
  outputChars: number;
  /** One request's loop, tools and turns included; then the final turn is made without tools. */
  deadlineMs: number;
  webFetch: { policy: EgressPolicy; anyPublic: boolean; maxBytes: number; timeoutMs: number; source: string };
  webSearch: { provider: 'searxng' | 'brave' | 'tavily' | null; url: string | null; apiKey: string | null };
  /** The ephemeral sandbox of bash, shell and apply_patch; null where it cannot be built (why in `sandboxOff`). */
  sandbox: {
    diskMb: number;
    timeoutMs: number;
    limits: { processes: number; memoryMb: number; fileMb: number; openFiles: number };
    bwrapPath: string;
  } | null;
  sandboxOff: string | null;
  advisorModel: string | null;
  fusionModels: string[];
};

/** Thrown by a tool: its message is the result's `error`, for the model to read. */
export class ToolError extends Error {
  override name = 'ToolError';
}

/** A model request a tool makes (subagent, advisor, fusion), recorded as a step of the generation and charged to it. */
export type NestedCall = (o: {
  model: string;
  body: ChatRequest;
  /** Server tools the nested request may use (subagent), with their configs; its own bounded loop. */
  tools?: { type: ServerToolType; config: unknown }[];
  maxToolCalls?: number;
  signal: AbortSignal;
  /** Takes a model-request slot of the key for the call (calls made side by side). */
  slot?: boolean;
}) => Promise<{ content: string; model: string; usage: Usage; steps: number; toolCalls: number }>;

/** The ephemeral sandbox of one request (sandbox.ts). */
export type Sandbox = {
  exec(o: { argv: string[]; timeoutMs: number; signal: AbortSignal }): Promise<{
    exitCode: number | null;
    stdout: string;
    stderr: string;
    truncated: boolean;
    timedOut: boolean;
  }>;
  read(path: string, signal: AbortSignal): Promise<string | null>;
  write(path: string, content: string, signal: AbortSignal): Promise<void>;
  remove(path: string, signal: AbortSignal): Promise<void>;
};

export type ToolInfo = { type: ServerToolType; name: string; description: string };

export type ToolContext<C> = {
  config: C;
  env: ToolsEnv;
  signal: AbortSignal;
  /** The conversation so far (the request's messages and the loop's turns). */
  conversation: () => ChatMessage[];
  /** The model serving the request. */
  model: string;
  nested: NestedCall;
  sandbox: () => Promise<Sandbox>;
  workspace: { defaultImageModel: string | null };
  /** This installation's server tools as this workspace may use them, and the request's own function tools. */
  catalogue: {
    models: () => Promise<{ id: string; name: string; pricing: unknown; context_length?: number | null }[]>;
    serverTools: () => (ToolInfo & { available: boolean; why: string | null })[];
    clientTools: ChatTool[];
  };
  /** An image for the client (image_generation), shown beside the tool's step. */
  image: (o: { model: string; prompt: string; signal: AbortSignal; config: Record<string, unknown> }) => Promise<{
    url: string;
    revisedPrompt: string | null;
    usage: Usage | null;
  }>;
};

export type ServerTool<C = unknown, A = unknown> = ToolInfo & {
  /** The request's `parameters` for the tool (strict: an unknown setting is a 400 naming it). */
  config: z.ZodType<C>;
  /** The model's arguments; their JSON Schema is what the model is offered. */
  args: z.ZodType<A>;
  /** What must be configured before the tool can run (a 400 naming it), or null when it can. */
  unconfigured?: (o: { env: ToolsEnv; config: C; workspace: { defaultImageModel: string | null } }) => string | null;
  run: (args: A, ctx: ToolContext<C>) => Promise<unknown>;
};
