// One prompt turn: call the model, stream its text and reasoning to the client, run the tools it
// asks for, feed results (and steering messages) back, until it stops. Usage is reported per call.
import {
  methods,
  RequestError,
  META_MODEL,
  META_USAGE,
  type AgentContext,
  type SessionUpdate,
  type StopReason,
  type ToolKind,
} from '../acp/index.ts';
import type { AgentConfig } from './config.ts';
import { streamChat, ModelCallError } from './openai.ts';
import type { AgentSession } from './sessions.ts';
import { runTool, TOOL_DEFINITIONS, TurnCancelled, type ToolHost } from './tools.ts';
import { approveShell, askUser } from './approval.ts';
import { addUsage, addUsd, type TurnUsage } from './usage.ts';

export type TurnOptions = {
  cfg: AgentConfig;
  session: AgentSession;
  prompt: string;
  client: AgentContext;
  shellEnv: NodeJS.ProcessEnv;
  beforeCommand?: () => void;
};

const TOOL_KINDS: Record<string, ToolKind> = { shell: 'execute', read_file: 'read', write_file: 'edit' };

/** A call's arguments as the object the model meant, or the raw string where it is not JSON. */
function parsedArguments(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}

export async function runTurn(o: TurnOptions): Promise<StopReason> {
  const s = o.session;
  if (s.turn) throw RequestError.invalidRequest(undefined, 'a turn is already running in this session');
  const turn = new AbortController();
  s.turn = turn;
  const before = s.messages.length;
  // Updates are chained so they reach the client in the order they were produced.
  let sent: Promise<void> = Promise.resolve();
  const send = (update: SessionUpdate) => {
    sent = sent.then(() => o.client.notify(methods.client.session.update, { sessionId: s.id, update }));
  };
  const meta = (model: string | null) => (model ? { _meta: { [META_MODEL]: model } } : {});
  const host: ToolHost = {
    session: s,
    signal: turn.signal,
    shellEnv: o.shellEnv,
    bwrapPath: o.cfg.bwrapPath,
    tenantFilter: o.cfg.tenantFilter,
    allowEscalation: o.cfg.allowEscalation,
    commandTimeoutMs: o.cfg.commandTimeoutMs,
    beforeCommand: o.beforeCommand ?? (() => undefined),
    approve: (call) => approveShell(o.client, s, call),
    ask: (q) => askUser(o.client, s, q),
  };
  let usage: TurnUsage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
  s.messages.push({ role: 'user', content: o.prompt });
  try {
    for (let step = 0; step < o.cfg.maxSteps; step++) {
      for (const text of s.steering.splice(0)) s.messages.push({ role: 'user', content: text });
      const system = o.cfg.instructions ? [{ role: 'system' as const, content: o.cfg.instructions }] : [];
      const r = await streamChat({
        baseUrl: o.cfg.baseUrl,
        apiKey: o.cfg.apiKey,
        signal: turn.signal,
        body: { model: o.cfg.model, messages: [...system, ...s.messages], tools: TOOL_DEFINITIONS },
        onContent: (text, model) =>
          send({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text }, ...meta(model) }),
        onReasoning: (text, model) =>
          send({ sessionUpdate: 'agent_thought_chunk', content: { type: 'text', text }, ...meta(model) }),
      });
      s.messages.push(r.message);
      if (r.usage) {
        usage = addUsage(usage, r.usage);
        if (r.usage.cost !== undefined) s.costUsd = addUsd(s.costUsd, r.usage.cost);
        send({
          sessionUpdate: 'usage_update',
          used: r.usage.total_tokens,
          size: o.cfg.contextWindow,
          ...(usage.cost === undefined ? {} : { cost: { amount: s.costUsd, currency: 'USD' } }),
          _meta: { [META_USAGE]: usage, ...(r.model ? { [META_MODEL]: r.model } : {}) },
        });
      }
      const calls = r.message.tool_calls ?? [];
      for (const call of calls) {
        send({
          sessionUpdate: 'tool_call',
          toolCallId: call.id,
          title: call.function.name,
          name: call.function.name,
          kind: TOOL_KINDS[call.function.name] ?? 'other',
          status: 'in_progress',
          rawInput: parsedArguments(call.function.arguments),
        });
        await sent;
        const out = await runTool(host, { id: call.id, name: call.function.name, arguments: call.function.arguments });
        s.messages.push({ role: 'tool', tool_call_id: call.id, content: out });
        send({
          sessionUpdate: 'tool_call_update',
          toolCallId: call.id,
          status: 'completed',
          content: [{ type: 'content', content: { type: 'text', text: out } }],
        });
      }
      if (turn.signal.aborted) throw new TurnCancelled();
      // A steering message that arrived during the last answer still gets a response this turn.
      if (calls.length === 0 && s.steering.length === 0) return 'end_turn';
    }
    return 'max_turn_requests';
  } catch (err) {
    // A turn that did not finish leaves no trace in the conversation.
    s.messages.length = before;
    if (turn.signal.aborted || err instanceof TurnCancelled) return 'cancelled';
    if (err instanceof ModelCallError)
      throw new RequestError(-32603, err.message, { retryable: err.retryable, status: err.status });
    throw err;
  } finally {
    await sent.catch(() => undefined);
    s.turn = null;
    s.steering.length = 0;
  }
}
