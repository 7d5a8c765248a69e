// The server-tool agent loop (docs/guides/server-tools.md) of a request that names server tools:
// the tools are offered to the model as function tools; each turn's server-tool calls are run by
// the gateway and their results fed back, until the model answers without one, calls a client
// function tool (the client runs it; the loop stops there), or a stop condition (stop.ts) fires,
// after which the pending calls still run and one final turn is made with tool calls disabled.
// Each turn, and each model request a tool makes, is a request-log row under the response's
// generation id; usage and cost are summed in the final usage. Streamed, the model's text passes
// as it comes; a tool's step is a chunk of its own (delta.reasoning_details), and only the last
// turn's finish and the summed usage end the stream.
// planLoop() is called only for a request that names a server tool; a request that names none
// never reaches this module.
// May import: this folder, ../types.ts, ../attempts.ts, ../routing.ts, ../../errors.ts,
// ../../http/common.schemas.ts, ../../access/*, ../../../shared/*.
import { ApiError, invalidRequest, serverToolDisabled } from '../../errors.ts';
import { MAX_TOOL_CALLS, type StopCondition } from '../../http/common.schemas.ts';
import type { Logger } from '../../../shared/log.ts';
import type { ConcurrencyLimiter } from '../../access/concurrency.ts';
import {
  Cancel,
  type ChatChunk,
  type ChatMessage,
  type ChatTool,
  type Completion,
  type FinishReason,
  PARTS,
  type Part,
  type ServerToolStep,
  type ToolCall,
  type Usage,
  WIRE_TAIL,
} from '../types.ts';
import type { Route, Served } from '../attempts.ts';
import type { Prepared } from '../prepare.ts';
import type { Outcome } from '../record.ts';
import type { RequestBody } from '../routing.ts';
import { boundResult, functionOf, TOOLS, toolEntries } from './index.ts';
import { budgetOf, decide, type Limits, type Totals } from './stop.ts';
import { type ServerTool, type ServerToolType, ToolError, type ToolsEnv } from './types.ts';
import { NESTABLE } from './model-tools.ts';
import { openSandbox, type OpenSandbox, type SandboxHost } from './sandbox.ts';
import { SERVER_TOOLS } from '../../http/common.schemas.ts';

type Offered = { type: ServerToolType; name: string; tool: ServerTool; config: unknown };

export type LoopPlan = {
  /** The server tools offered, by the function name the model calls. */
  tools: Map<string, Offered>;
  functions: ChatTool[];
  limits: Limits;
  env: ToolsEnv;
  workspace: { defaultImageModel: string | null; disabled: string[] };
  /** The routes of another model in the request's workspace (subagent, advisor, fusion, images). */
  routesFor: (model: string) => Route[];
};

/** Why an entry cannot run here (400), as the field to fix and what to do. */
function refusal(type: ServerToolType, field: string, why: string): ApiError {
  return invalidRequest(`${field}: ${type}: ${why}`);
}

/** The loop's plan for a request naming server tools: each tool's settings checked, what the
 * operator must configure named (400), disabled ones refused (403), the function names free. */
export function planLoop(o: {
  body: {
    tools?: ChatTool[];
    plugins?: RequestBody['plugins'];
    stop_server_tools_when?: StopCondition[];
    max_tool_calls?: number;
  };
  rawTools: { type?: string; parameters?: unknown }[] | undefined;
  env: ToolsEnv;
  workspace: { defaultImageModel: string | null; disabled: string[] };
  routesFor: (model: string) => Route[];
}): LoopPlan {
  const tools = new Map<string, Offered>();
  const entries = toolEntries({ tools: o.rawTools, plugins: o.body.plugins });
  /** Where a setting of an entry is: `tools.0.parameters.model`, `plugins.1.model`. */
  const at = (field: string, name: string) =>
    field.startsWith('tools') ? `${field}.parameters.${name}` : `${field}.${name}`;
  const check = (type: ServerToolType, field: string, raw: unknown): unknown => {
    if (o.workspace.disabled.includes(type)) throw serverToolDisabled(type);
    if (o.env.off.includes(type))
      throw refusal(type, field, 'turned off on this gateway by its operator (COHORT_SERVER_TOOLS_OFF)');
    const tool = TOOLS[type];
    const parsed = tool.config.safeParse(raw ?? {});
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      throw invalidRequest(`${at(field, issue.path.join('.')).replace(/\.$/, '')}: ${issue.message}`);
    }
    const why = tool.unconfigured?.({ env: o.env, config: parsed.data, workspace: o.workspace });
    if (why) throw refusal(type, field, why);
    return parsed.data;
  };
  const routable = (model: string, field: string) => {
    try {
      o.routesFor(model);
    } catch (err) {
      if (err instanceof ApiError)
        throw invalidRequest(`${field}: ${err.message.replace(/^invalid request parameters: (model: )?/, '')}`);
      throw err;
    }
  };
  for (const e of entries) {
    const config = check(e.type, e.field, e.config) as Record<string, unknown>;
    if (e.type === 'service:subagent') {
      for (const [i, t] of ((config.tools as { type: ServerToolType; parameters?: unknown }[]) ?? []).entries())
        check(t.type, at(e.field, `tools.${i}`), t.parameters);
      if (typeof config.model === 'string') routable(config.model, at(e.field, 'model'));
    }
    if (e.type === 'service:advisor') routable((config.model as string) ?? o.env.advisorModel!, at(e.field, 'model'));
    if (e.type === 'service:fusion') {
      for (const m of (config.analysis_models as string[] | undefined) ?? o.env.fusionModels)
        routable(m, at(e.field, 'analysis_models'));
      if (typeof config.model === 'string') routable(config.model, at(e.field, 'model'));
    }
    if (e.type === 'service:image_generation')
      routable((config.model as string) ?? o.workspace.defaultImageModel!, at(e.field, 'model'));
    const tool = TOOLS[e.type];
    tools.set(tool.name, { type: e.type, name: tool.name, tool, config });
  }
  for (const t of o.body.tools ?? []) {
    const name = t.function?.name;
    if (name && tools.has(name))
      throw invalidRequest(
        `tools: the function name ${name} is the name server tool ${tools.get(name)!.type} is offered under`,
      );
  }
  return {
    tools,
    functions: [...tools.values()].map((t) => functionOf(t.type)),
    limits: { stopWhen: o.body.stop_server_tools_when ?? null, maxToolCalls: o.body.max_tool_calls ?? MAX_TOOL_CALLS },
    env: o.env,
    workspace: o.workspace,
    routesFor: o.routesFor,
  };
}

export type LoopDeps = {
  stream(p: Prepared, cancel: Cancel): Promise<{ served: Served; chunks: AsyncGenerator<ChatChunk[]> }>;
  complete(p: Prepared, cancel: Cancel): Promise<{ served: Served; completion: Completion }>;
  /** Tries a request's routes with `run` for each (the image API); a failure is recorded. */
  attempt<T>(
    p: Prepared,
    cancel: Cancel,
    run: (call: { model: string; baseUrl: string; apiKey: string | null }) => Promise<T>,
  ): Promise<{ value: T; served: Served }>;
  record(p: Prepared, outcome: Outcome): void;
  usageOf(u: Usage | null | undefined, served: Served): Usage;
  models(p: Prepared): Promise<{ id: string; name: string; pricing: unknown; context_length?: number | null }[]>;
  image(o: {
    call: { model: string; baseUrl: string; apiKey: string | null };
    prompt: string;
    config: Record<string, unknown>;
    cancel: Cancel;
  }): Promise<{
    url: string;
    revisedPrompt: string | null;
    usage: Usage | null;
  }>;
  slots?: ConcurrencyLimiter;
  sandboxHost: SandboxHost | null;
  log: Logger;
  /** Told of each server-tool call that ran, and when (broadcast makes it a span). */
  toolRan?(p: Prepared, o: { step: ServerToolStep; startMs: number; endMs: number }): void;
};

const zeroUsage = (): Usage => ({
  prompt_tokens: 0,
  completion_tokens: 0,
  total_tokens: 0,
  prompt_tokens_details: { cached_tokens: 0 },
  cost: 0,
  is_byok: false,
});

/** What one request's loop holds: its totals and usage, its step numbers, its sandbox, its deadline. Nested loops (subagent) share the root's. */
class LoopRun {
  readonly totals: Totals = { steps: 0, toolCalls: 0, cost: 0, tokens: 0 };
  readonly usage = zeroUsage();
  requested = 0;
  executed = 0;
  readonly messages: ChatMessage[];
  private rows = 0;
  private uses = new Map<ServerToolType, number>();
  private box: Promise<OpenSandbox> | null = null;
  readonly abort = new AbortController();
  readonly deadline: number;
  private timer: NodeJS.Timeout | null = null;
  steps: ServerToolStep[] = [];

  constructor(
    readonly p: Prepared,
    readonly plan: LoopPlan,
    readonly cancel: Cancel,
    readonly deps: LoopDeps,
    readonly root: LoopRun | null,
  ) {
    this.messages = [...p.upstream.messages];
    this.deadline = root?.deadline ?? performance.now() + plan.env.deadlineMs;
    if (!root) {
      cancel.onCancel(() => this.abort.abort());
      this.timer = setTimeout(() => this.abort.abort(), plan.env.deadlineMs);
      this.timer.unref?.();
    }
  }

  get signal(): AbortSignal {
    return this.root?.signal ?? this.abort.signal;
  }
  get expired(): boolean {
    return performance.now() >= this.deadline;
  }

  /** The next row's step number, over the whole generation. */
  nextRow(): number {
    return this.root ? this.root.nextRow() : ++this.rows;
  }

  /** A turn's Prepared: the plain path's, its row a step of the generation. */
  turn(final: boolean): Prepared {
    const { p, plan } = this;
    const upstream = {
      ...p.upstream,
      messages: this.messages,
      tools: [...(p.upstream.tools ?? []), ...plan.functions],
      ...(final ? { tool_choice: 'none' } : {}),
    };
    return {
      ...p,
      started: performance.now(),
      loop: undefined,
      step: this.nextRow(),
      upstream,
      loggedBody: p.loggedBody === undefined ? undefined : upstream,
    };
  }

  /** Adds a model request's usage to the totals (and the root's). */
  charge(u: Usage | null | undefined, byok = false): void {
    for (let r: LoopRun | null = this; r; r = r.root) {
      const t = r.usage;
      t.prompt_tokens += u?.prompt_tokens ?? 0;
      t.completion_tokens += u?.completion_tokens ?? 0;
      t.total_tokens += u?.total_tokens ?? 0;
      t.prompt_tokens_details!.cached_tokens! += u?.prompt_tokens_details?.cached_tokens ?? 0;
      t.cost = Math.round(((t.cost ?? 0) + (u?.cost ?? 0)) * 1e12) / 1e12;
      t.is_byok ||= byok || u?.is_byok === true;
      r.totals.cost = t.cost;
      r.totals.tokens = t.total_tokens;
    }
  }

  finalUsage(): Usage {
    return {
      ...this.usage,
      server_tool_use_details: { tool_calls_requested: this.requested, tool_calls_executed: this.executed },
    } as Usage;
  }

  sandbox(): Promise<OpenSandbox> {
    if (this.root) return this.root.sandbox();
    const env = this.plan.env.sandbox;
    const host = this.deps.sandboxHost;
    if (!env || !host) return Promise.reject(new ToolError(`the sandbox cannot run here: ${this.plan.env.sandboxOff}`));
    this.box ??= openSandbox({ env, host, id: this.p.id });
    return this.box;
  }

  async close(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    const box = this.box;
    this.box = null;
    if (box) await box.then((b) => b.close()).catch(() => {});
  }

  /** Runs one server-tool call; whatever goes wrong is its result for the model. */
  async execute(call: ToolCall, index: number): Promise<ServerToolStep> {
    const offered = this.plan.tools.get(call.function.name)!;
    const { tool } = offered;
    const step: ServerToolStep = {
      type: 'reasoning.server_tool_call',
      id: `${this.p.id}-t${index}`,
      index,
      tool_call_id: call.id,
      tool_name: offered.type,
      arguments: call.function.arguments,
      result: '',
      status: 'completed',
    };
    const fail = (message: string) => {
      step.status = 'failed';
      step.result = boundResult({ error: message }, this.plan.env.outputChars);
      return step;
    };
    const max = (offered.config as { max_uses?: number }).max_uses;
    const used = this.uses.get(offered.type) ?? 0;
    if (max !== undefined && used >= max)
      return fail(`max_uses reached: ${offered.type} may run ${max} times in this request`);
    this.uses.set(offered.type, used + 1);
    let args: unknown;
    try {
      args = JSON.parse(call.function.arguments || '{}');
    } catch {
      return fail('the arguments are not JSON');
    }
    const parsed = tool.args.safeParse(args);
    if (!parsed.success) {
      const i = parsed.error.issues[0]!;
      return fail(`invalid arguments: ${i.path.length ? `${i.path.join('.')}: ` : ''}${i.message}`);
    }
    if (this.signal.aborted) return fail(this.cancel.aborted ? 'cancelled' : 'not run: the loop deadline passed');
    this.executed++;
    const images: ServerToolStep['images'] = [];
    try {
      const result = await tool.run(parsed.data, {
        config: offered.config,
        env: this.plan.env,
        signal: this.signal,
        conversation: () => this.messages,
        model: this.servedModel,
        nested: (o) => this.nested(o),
        sandbox: () => this.sandbox(),
        workspace: this.plan.workspace,
        catalogue: {
          models: () => this.deps.models(this.p),
          serverTools: () => serverToolsFor(this.plan),
          clientTools: this.p.upstream.tools ?? [],
        },
        image: async (o) => {
          const img = await this.image(o.model, o.prompt, o.config);
          images.push({ type: 'image_url', image_url: { url: img.url } });
          return img;
        },
      });
      step.result = boundResult(result, this.plan.env.outputChars);
      if (images.length) step.images = images;
      return step;
    } catch (err) {
      if (this.signal.aborted) return fail(this.cancel.aborted ? 'cancelled' : 'stopped: the loop deadline passed');
      if (err instanceof ToolError) return fail(err.message);
      if (err instanceof ApiError) return fail(err.message);
      this.deps.log.error({ err, tool: offered.type }, 'a server tool failed');
      return fail('the tool failed');
    }
  }

  servedModel = '';

  /** A model request of a tool: a step row of the generation, charged to it; with tools, a loop of its own. */
  async nested(o: Parameters<import('./types.ts').NestedCall>[0]) {
    let routes: Route[];
    try {
      routes = this.plan.routesFor(o.model);
    } catch (err) {
      throw new ToolError(err instanceof Error ? err.message : 'the model cannot be used');
    }
    let release: (() => void) | null = null;
    if (o.slot && this.deps.slots) {
      try {
        release = await this.deps.slots.acquire('model', {
          keyId: this.p.principal.keyId,
          accountId: this.p.principal.orgId,
        });
      } catch (err) {
        throw new ToolError(err instanceof ApiError ? err.message : 'no model-request slot is free');
      }
    }
    const cancel = new CancelLink(this.signal);
    try {
      const p: Prepared = {
        ...this.p,
        routes,
        requestedModel: o.model,
        stream: false,
        upstream: { ...o.body, messages: o.body.messages },
        loggedBody: this.p.loggedBody === undefined ? undefined : o.body,
        loop: undefined,
      };
      if (!o.tools?.length) {
        const { served, completion } = await this.deps.complete(
          { ...p, started: performance.now(), step: this.nextRow() },
          cancel.cancel,
        );
        this.charge(completion.usage, served.isByok);
        return {
          content: completion.choices[0]?.message.content ?? '',
          model: served.model,
          usage: completion.usage!,
          steps: 1,
          toolCalls: 0,
        };
      }
      const plan: LoopPlan = {
        ...this.plan,
        tools: new Map(
          o.tools
            .filter((t) => NESTABLE.includes(t.type))
            .map((t) => {
              const tool = TOOLS[t.type];
              return [tool.name, { type: t.type, name: tool.name, tool, config: tool.config.parse(t.config ?? {}) }];
            }),
        ),
        limits: { stopWhen: null, maxToolCalls: o.maxToolCalls ?? 5 },
      };
      plan.functions = [...plan.tools.values()].map((t) => functionOf(t.type));
      const run = new LoopRun(p, plan, cancel.cancel, this.deps, this.root ?? this);
      const { served, completion } = await completeLoop(run);
      return {
        content: completion.choices[0]?.message.content ?? '',
        model: served.model,
        usage: run.usage,
        steps: run.totals.steps,
        toolCalls: run.executed,
      };
    } finally {
      cancel.close();
      release?.();
    }
  }

  /** One image from the image model's provider, recorded as a step of the generation. */
  async image(model: string, prompt: string, config: Record<string, unknown>) {
    let routes: Route[];
    try {
      routes = this.plan.routesFor(model);
    } catch (err) {
      throw new ToolError(err instanceof Error ? err.message : 'the image model cannot be used');
    }
    const p: Prepared = {
      ...this.p,
      routes,
      requestedModel: model,
      stream: false,
      started: performance.now(),
      step: this.nextRow(),
      loop: undefined,
      loggedBody: this.p.loggedBody === undefined ? undefined : { model, prompt, ...config },
    };
    const cancel = new CancelLink(this.signal);
    try {
      const { value, served } = await this.deps.attempt(p, cancel.cancel, (call) =>
        this.deps.image({ call, prompt, config, cancel: cancel.cancel }),
      );
      const usage = this.deps.usageOf(value.usage, served);
      this.charge(usage, served.isByok);
      this.deps.record(p, {
        status: 200,
        served,
        usage,
        finish: 'stop',
        response: { revised_prompt: value.revisedPrompt },
      });
      return value;
    } finally {
      cancel.close();
    }
  }
}

/** A Cancel that follows an AbortSignal (the loop's), for a request a tool makes. */
class CancelLink {
  readonly cancel = new Cancel();
  private readonly onAbort = () => this.cancel.cancel();
  constructor(private readonly signal: AbortSignal) {
    if (signal.aborted) this.cancel.cancel();
    else signal.addEventListener('abort', this.onAbort, { once: true });
  }
  close() {
    this.signal.removeEventListener('abort', this.onAbort);
  }
}

/** This installation's server tools as the plan's workspace may use them (tool_search). */
function serverToolsFor(plan: LoopPlan) {
  return SERVER_TOOLS.map((type) => {
    const t = TOOLS[type];
    const why = plan.workspace.disabled.includes(type)
      ? 'disabled in this workspace'
      : plan.env.off.includes(type)
        ? 'turned off on this gateway'
        : (t.unconfigured?.({ env: plan.env, config: {}, workspace: plan.workspace }) ?? null);
    return { type, name: t.name, description: t.description, available: why === null, why };
  });
}

/** One turn's tool calls, split into the server's (run here) and the client's (passed on). */
class TurnCalls {
  readonly server: ToolCall[] = [];
  readonly client: ToolCall[] = [];
  private byIndex = new Map<number, { call: ToolCall; server: boolean; clientIndex: number }>();

  constructor(private readonly plan: LoopPlan) {}

  /** Takes a streamed tool-call delta; returns the delta to pass on (client calls, renumbered), or null. */
  take(t: { index: number; id?: string; function?: { name?: string; arguments?: string } }) {
    let entry = this.byIndex.get(t.index);
    if (!entry) {
      const call: ToolCall = {
        id: t.id ?? '',
        type: 'function',
        function: { name: t.function?.name ?? '', arguments: '' },
      };
      const server = this.plan.tools.has(call.function.name);
      entry = { call, server, clientIndex: server ? -1 : this.client.length };
      (server ? this.server : this.client).push(call);
      this.byIndex.set(t.index, entry);
    }
    entry.call.function.arguments += t.function?.arguments ?? '';
    return entry.server ? null : { ...t, index: entry.clientIndex };
  }

  /** A completion's calls. */
  all(calls: ToolCall[] | undefined): void {
    for (const c of calls ?? []) (this.plan.tools.has(c.function.name) ? this.server : this.client).push(c);
  }
}

/** After a turn: its usage charged, the decision made (stop.ts), the assistant message kept. */
function afterTurn(
  run: LoopRun,
  o: {
    usage: Usage | null | undefined;
    served: Served;
    finish: FinishReason | null;
    calls: TurnCalls;
    content: string;
    final: boolean;
  },
) {
  run.totals.steps++;
  run.charge(o.usage, o.served.isByok);
  run.servedModel = o.served.model;
  run.requested += o.calls.server.length;
  const decision = decide({
    limits: run.plan.limits,
    totals: run.totals,
    turn: {
      finish: o.finish,
      serverCalls: o.calls.server.map((c) => run.plan.tools.get(c.function.name)!.type),
      clientCalls: o.calls.client.length,
      final: o.final,
    },
    expired: run.expired,
  });
  run.totals.toolCalls += decision.kind === 'run' ? decision.run : 0;
  if (decision.kind === 'run')
    run.messages.push({ role: 'assistant', content: o.content || null, tool_calls: o.calls.server });
  return decision;
}

/** The turn's server calls run in order; those over the budget answered "not run". */
async function* runCalls(
  run: LoopRun,
  calls: ToolCall[],
  allowed: number,
  why: string | null,
): AsyncGenerator<ServerToolStep> {
  for (const [i, call] of calls.entries()) {
    const index = run.steps.length;
    const startMs = Date.now();
    const step =
      i < allowed
        ? await run.execute(call, index)
        : {
            type: 'reasoning.server_tool_call' as const,
            id: `${run.p.id}-t${index}`,
            index,
            tool_call_id: call.id,
            tool_name: run.plan.tools.get(call.function.name)!.type,
            arguments: call.function.arguments,
            result: JSON.stringify({
              error: `not run: ${why ?? `the limit of ${budgetOf(run.plan.limits)} tool calls`} was reached`,
            }),
            status: 'failed' as const,
          };
    if (i < allowed) run.deps.toolRan?.(run.p, { step, startMs, endMs: Date.now() });
    run.steps.push(step);
    run.messages.push({ role: 'tool', tool_call_id: call.id, content: step.result });
    yield step;
  }
}

const chunkOf = (
  p: Prepared,
  model: string,
  delta: ChatChunk['choices'][number]['delta'],
  finish: FinishReason | null = null,
): ChatChunk => ({
  id: p.id,
  object: 'chat.completion.chunk',
  created: Math.floor(Date.now() / 1000),
  model,
  choices: [{ index: 0, delta, finish_reason: finish }],
});

/** The streamed loop: resolves once the first turn's provider accepted it. */
export async function streamLoop(
  p: Prepared,
  cancel: Cancel,
  deps: LoopDeps,
): Promise<{ served: Served; chunks: AsyncGenerator<ChatChunk[]> }> {
  const run = new LoopRun(p, p.loop!, cancel, deps, null);
  let first: { served: Served; chunks: AsyncGenerator<ChatChunk[]> };
  try {
    first = await deps.stream(run.turn(false), cancel);
  } catch (err) {
    await run.close();
    throw err;
  }
  return { served: first.served, chunks: relay(run, first) };
}

async function* relay(
  run: LoopRun,
  first: { served: Served; chunks: AsyncGenerator<ChatChunk[]> },
): AsyncGenerator<ChatChunk[]> {
  try {
    let current = first;
    let final = false;
    for (;;) {
      const calls = new TurnCalls(run.plan);
      let usage: Usage | null = null;
      let finish: FinishReason | null = null;
      let content = '';
      for await (const batch of current.chunks) {
        const out: ChatChunk[] = [];
        for (const c of batch) {
          if (c.usage) {
            usage = c.usage;
            c.usage = undefined;
          }
          const choice = c.choices[0];
          if (!choice) continue;
          if (choice.finish_reason) {
            finish = choice.finish_reason;
            choice.finish_reason = null;
            c[WIRE_TAIL] = undefined;
          }
          const d = choice.delta;
          // The stream has one assistant message: later turns' role deltas go.
          if (d.role && run.totals.steps > 0) {
            delete d.role;
            c[WIRE_TAIL] = undefined;
          }
          if (d.content) content += d.content;
          if (d.tool_calls) {
            const passed = d.tool_calls.map((t) => calls.take(t)).filter((t) => t !== null);
            c[WIRE_TAIL] = undefined;
            if (passed.length) d.tool_calls = passed;
            else delete d.tool_calls;
          }
          if (c[WIRE_TAIL] !== undefined || d.content || d.reasoning || d.tool_calls || d.role) out.push(c);
        }
        if (out.length) yield out;
      }
      const decision = afterTurn(run, { usage, served: current.served, finish, calls, content, final });
      if (decision.kind === 'answer') {
        const reason = calls.client.length ? 'tool_calls' : finish === 'tool_calls' ? 'stop' : finish;
        const end = chunkOf(run.p, current.served.model, {}, reason);
        const last = chunkOf(run.p, current.served.model, {});
        last.choices = [];
        last.usage = run.finalUsage();
        yield [end, last];
        return;
      }
      for await (const step of runCalls(run, calls.server, decision.run, decision.why))
        yield [chunkOf(run.p, current.served.model, { reasoning_details: [step] })];
      final = decision.final || run.expired;
      current = await run.deps.stream(run.turn(final), run.cancel);
    }
  } finally {
    await run.close();
  }
}

/** The loop answered as one completion: the turns' text and reasoning joined, the steps in between. */
async function completeLoop(run: LoopRun): Promise<{ served: Served; completion: Completion }> {
  const parts: Part[] = [];
  const addText = (kind: 'text' | 'thinking', text: string | null | undefined) => {
    if (!text) return;
    const last = parts.at(-1);
    if (last && last.kind === kind) last.text += text;
    else parts.push({ kind, text });
  };
  let final = false;
  for (;;) {
    const { served, completion } = await run.deps.complete(run.turn(final), run.cancel);
    const choice = completion.choices[0];
    const m = choice?.message;
    const own = m?.[PARTS];
    if (own) for (const part of own) if (part.kind !== 'tool') addText(part.kind, part.text);
    if (!own) {
      addText('thinking', m?.reasoning);
      addText('text', m?.content);
    }
    const calls = new TurnCalls(run.plan);
    calls.all(m?.tool_calls);
    const finish = choice?.finish_reason ?? null;
    const decision = afterTurn(run, {
      usage: completion.usage,
      served,
      finish,
      calls,
      content: m?.content ?? '',
      final,
    });
    if (decision.kind === 'answer') {
      const text = parts
        .filter((x) => x.kind === 'text')
        .map((x) => (x as { text: string }).text)
        .join('');
      const reasoning = parts
        .filter((x) => x.kind === 'thinking')
        .map((x) => (x as { text: string }).text)
        .join('');
      const images = run.steps.flatMap((s) => s.images ?? []);
      const message: Completion['choices'][number]['message'] = {
        role: 'assistant',
        content: text || (calls.client.length ? null : ''),
        ...(reasoning ? { reasoning } : {}),
        ...(calls.client.length ? { tool_calls: calls.client } : {}),
        ...(run.steps.length ? { reasoning_details: run.steps } : {}),
        [PARTS]: parts,
      };
      if (images.length) (message as { images?: unknown }).images = images;
      return {
        served,
        completion: {
          ...completion,
          id: run.p.id,
          model: served.model,
          choices: [
            {
              index: 0,
              message,
              finish_reason: calls.client.length ? 'tool_calls' : finish === 'tool_calls' ? 'stop' : finish,
            },
          ],
          usage: run.finalUsage(),
        },
      };
    }
    for await (const step of runCalls(run, calls.server, decision.run, decision.why))
      parts.push({ kind: 'tool', step });
    final = decision.final || run.expired;
  }
}

export async function completeWithLoop(
  p: Prepared,
  cancel: Cancel,
  deps: LoopDeps,
): Promise<{ served: Served; completion: Completion }> {
  const run = new LoopRun(p, p.loop!, cancel, deps, null);
  try {
    return await completeLoop(run);
  } finally {
    await run.close();
  }
}
