// A minimal third-party-style ACP agent for tests: no model, no cohort extensions (modes of its
// own, no steering, no session/load), driven by the prompt's first word. Proves any ACP agent works
// behind the daemon. Commands: `echo TEXT`, `permission`, `chatter N` (asks, then streams N
// chunks while the question is pending), `count N` (N chunks sent without awaiting), `crash`,
// `fail`, `hang` (until cancelled), `deaf` (never ends, and ignores cancels), `silent` (a model's
// empty answer: usage, then nothing), `unheard` (nothing, no usage), `refuse` (ends it with
// `refusal`, no usage). Every other turn reports usage first. Like Claude Code it offers
// commands of its own (`/local TEXT`: says TEXT as a local command's output, in Claude Code's
// markup; any other `/…`: nothing).
import {
  agent,
  methods,
  serveStdio,
  PROTOCOL_VERSION,
  RequestError,
  type AgentContext,
} from '../../src/runtime/acp/index.ts';

const turns = new Map<string, number>();
/** Each session's current turn, cancelled or not: a cancel can arrive while the turn is still
 * reporting usage, before it reaches the command that waits for it. */
const cancels = new Map<string, { cancelled: Promise<void>; cancel: () => void }>();

function cancellable(sessionId: string) {
  let cancel!: () => void;
  const cancelled = new Promise<void>((resolve) => (cancel = resolve));
  const turn = { cancelled, cancel };
  cancels.set(sessionId, turn);
  return turn;
}

function say(client: AgentContext, sessionId: string, text: string) {
  return client.notify(methods.client.session.update, {
    sessionId,
    update: { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text } },
  });
}

function ask(client: AgentContext, sessionId: string) {
  return client.request(methods.client.session.requestPermission, {
    sessionId,
    toolCall: { toolCallId: `t${Date.now()}`, name: 'deploy', title: 'Deploy the thing' },
    options: [
      { optionId: 'yes', name: 'Yes', kind: 'allow_once' },
      { optionId: 'no', name: 'No', kind: 'reject_once' },
    ],
  });
}

const app = agent({ name: 'mini-agent' })
  .onRequest(methods.agent.initialize, () => ({
    protocolVersion: PROTOCOL_VERSION,
    agentInfo: { name: 'mini-agent', version: '0.0.1' },
  }))
  .onRequest(methods.agent.session.new, async ({ client }) => {
    const sessionId = `mini-${turns.size + 1}`;
    turns.set(sessionId, 0);
    await client.notify(methods.client.session.update, {
      sessionId,
      update: {
        sessionUpdate: 'available_commands_update',
        availableCommands: [{ name: 'local', description: 'Says its text as a local command', input: null }],
      },
    });
    // Modes of its own, unlike cohort's: the daemon must not try to set manual/self-drive here.
    return {
      sessionId,
      modes: {
        currentModeId: 'default',
        availableModes: [
          { id: 'default', name: 'Default' },
          { id: 'plan', name: 'Plan' },
        ],
      },
    };
  })
  .onRequest(methods.agent.session.setMode, ({ params }) => {
    if (params.modeId !== 'default' && params.modeId !== 'plan')
      throw RequestError.invalidParams(undefined, `no mode ${params.modeId}`);
    return {};
  })
  .onNotification(methods.agent.session.cancel, ({ params }) => cancels.get(params.sessionId)?.cancel())
  .onRequest(methods.agent.session.prompt, async ({ params, client }) => {
    const sid = params.sessionId;
    const turn = cancellable(sid);
    const text = params.prompt.map((b) => (b.type === 'text' ? b.text : '')).join('');
    const [cmd = '', ...rest] = text.split(' ');
    const n = (turns.get(sid) ?? 0) + 1;
    turns.set(sid, n);
    // Its own commands and refusals spend no model tokens: they report no usage.
    if (!cmd.startsWith('/') && cmd !== 'refuse' && cmd !== 'unheard')
      await client.notify(methods.client.session.update, {
        sessionId: sid,
        update: { sessionUpdate: 'usage_update', used: 42, size: 1000, cost: { amount: 0.25, currency: 'USD' } },
      });
    if (cmd === 'echo') await say(client, sid, `turn ${n}: ${rest.join(' ')}`);
    else if (cmd === '/local') {
      // Cut inside the tags, as a stream may cut them.
      await say(client, sid, '<local-command-std');
      await say(client, sid, `out>${rest.join(' ')}</local-command-`);
      await say(client, sid, 'stdout>');
    } else if (cmd === 'refuse') return { stopReason: 'refusal' };
    else if (cmd === 'count') for (let i = 0; i < Number(rest[0]); i++) void say(client, sid, `${i} `);
    else if (cmd === 'permission') {
      const r = await ask(client, sid);
      if (r.outcome.outcome === 'cancelled') return { stopReason: 'cancelled' };
      await say(client, sid, `chose ${r.outcome.optionId}`);
    } else if (cmd === 'chatter') {
      const answer = ask(client, sid);
      for (let i = 0; i < Number(rest[0]); i++) await say(client, sid, `c${i} `);
      const r = await answer;
      await say(client, sid, r.outcome.outcome === 'selected' ? `chose ${r.outcome.optionId}` : 'cancelled');
    } else if (cmd === 'crash') {
      await say(client, sid, 'about to crash');
      process.exit(3);
    } else if (cmd === 'fail') throw new RequestError(-32603, 'mini agent failure', { retryable: false });
    else if (cmd === 'deaf') await new Promise(() => undefined);
    else if (cmd === 'hang') {
      await turn.cancelled;
      return { stopReason: 'cancelled' };
    }
    return { stopReason: 'end_turn' };
  });

await serveStdio(app);
