// The built-in cohort agent (`bin/cohort.mjs agent`): an ACP agent on stdio whose turns are a
// tool-using loop over an OpenAI-compatible chat-completions endpoint (the gateway's /api/v1).
// Owns: its conversations (persisted under COHORT_AGENT_STATE_DIR), tools, approval modes.
// May import: src/shared, src/runtime/acp, src/runtime/sandbox, node and npm packages. stdout is the ACP channel: logs go to stderr.
import { pathToFileURL } from 'node:url';
import { join } from 'node:path';
import { hostname } from 'node:os';
import { z } from 'zod';
import { pino } from 'pino';
import {
  agent,
  methods,
  serveStdio,
  RequestError,
  PROTOCOL_VERSION,
  META_STEERING,
  MODE_MANUAL,
  MODE_SELF_DRIVE,
  STEER_METHOD,
} from '../acp/index.ts';
import { agentConfigFromEnv, shellEnv } from './config.ts';
import { SessionStore, type AgentSession } from './sessions.ts';
import { runTurn } from './turn.ts';
import { lowerPriorityLater } from '../../shared/priority.ts';
import { takeAssignment } from './spare.ts';

const SteerParams = z.object({ sessionId: z.string(), text: z.string().min(1) });

function modes(s: AgentSession) {
  return {
    currentModeId: s.mode,
    availableModes: [
      { id: MODE_SELF_DRIVE, name: 'Self-drive', description: 'No asking; the shell runs unsandboxed.' },
      {
        id: MODE_MANUAL,
        name: 'Manual',
        description: 'Asks before each shell call; the shell runs sandboxed until an escalation is allowed.',
      },
    ],
  };
}

/** `bin/cohort.mjs agent`: takes no arguments (configuration is the environment, see agent/config.ts). */
export async function runAgent(_argv: string[] = [], env: NodeJS.ProcessEnv = process.env): Promise<void> {
  // A warm spare's agent learns its intern (and becomes its uid) first.
  if (env.COHORT_AGENT_SPARE === '1') await takeAssignment();
  const cfg = agentConfigFromEnv(env);
  // pid and hostname given here: pino's own are read when it loads, which for a startup snapshot is the build.
  const log = pino(
    { name: 'cohort-agent', level: env.LOG_LEVEL ?? 'info', base: { pid: process.pid, hostname: hostname() } },
    pino.destination(2),
  );
  const store = new SessionStore(join(cfg.stateDir, 'sessions'));
  const env4shell = shellEnv(env);
  // Started for a wake, the agent keeps its starter's priority for its first turn, but lowers it
  // before any command runs, so nothing a tenant runs is ever above the intern's priority.
  const settle = lowerPriorityLater(cfg.nice);
  const session = (id: string) => {
    const s = store.get(id) ?? store.load(id);
    if (!s) throw RequestError.resourceNotFound(id);
    return s;
  };

  const app = agent({ name: 'cohort-agent' })
    .onRequest(methods.agent.initialize, () => {
      // Node loads its fetch machinery on first use (some 16 ms): done once this answer is on its
      // way, while the daemon goes on to listen, rather than before it (the daemon waits for the
      // answer) or in a woken intern's first turn.
      setImmediate(() => new Request('http://127.0.0.1/'));
      return {
        protocolVersion: PROTOCOL_VERSION,
        agentCapabilities: { loadSession: true },
        agentInfo: { name: 'cohort-agent', version: '0.1.0' },
        _meta: { [META_STEERING]: true },
      };
    })
    .onRequest(methods.agent.session.new, ({ params }) => {
      const s = store.create(params.cwd);
      return { sessionId: s.id, modes: modes(s) };
    })
    .onRequest(methods.agent.session.load, async ({ params, client }) => {
      const s = session(params.sessionId);
      // session/load replays the conversation to the client before answering.
      for (const m of s.messages) {
        if ((m.role !== 'user' && m.role !== 'assistant') || !m.content) continue;
        await client.notify(methods.client.session.update, {
          sessionId: s.id,
          update: {
            sessionUpdate: m.role === 'user' ? 'user_message_chunk' : 'agent_message_chunk',
            content: { type: 'text', text: m.content },
          },
        });
      }
      return { modes: modes(s) };
    })
    .onRequest(methods.agent.session.setMode, ({ params }) => {
      const s = session(params.sessionId);
      if (params.modeId !== MODE_MANUAL && params.modeId !== MODE_SELF_DRIVE)
        throw RequestError.invalidParams(undefined, `unknown mode ${params.modeId}`);
      s.mode = params.modeId;
      s.standing = {};
      return {};
    })
    .onRequest(methods.agent.session.prompt, async ({ params, client }) => {
      const s = session(params.sessionId);
      const prompt = params.prompt.map((b) => (b.type === 'text' ? b.text : '')).join('');
      try {
        return {
          stopReason: await runTurn({ cfg, session: s, prompt, client, shellEnv: env4shell, beforeCommand: settle }),
        };
      } catch (err) {
        log.info({ session: s.id, err: (err as Error).message }, 'turn failed');
        throw err;
      } finally {
        settle();
        store.save(s);
      }
    })
    .onNotification(methods.agent.session.cancel, ({ params }) => {
      store.get(params.sessionId)?.turn?.abort();
    })
    .onRequest(STEER_METHOD, SteerParams, ({ params }) => {
      const s = session(params.sessionId);
      if (!s.turn) throw RequestError.invalidRequest(undefined, 'no turn is running in this session');
      s.steering.push(params.text);
      return {};
    });
  log.info({ model: cfg.model }, 'agent ready');
  await serveStdio(app);
  // The client is gone (stdin closed): stop any turn, and exit rather than linger on open sockets.
  for (const id of store.liveIds()) store.get(id)?.turn?.abort();
  process.exit(0);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  runAgent().catch((err: unknown) => {
    process.stderr.write(`cohort agent: ${(err as Error).message}\n`);
    process.exit(1);
  });
}
