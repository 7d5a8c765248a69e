// The agent's tools as OpenAI function definitions, and their implementations. Each returns the
// text the model sees as the tool result; approval and questions go through the ToolHost.
import { readFile, writeFile, mkdir, realpath } from 'node:fs/promises';
import { dirname, isAbsolute, relative, resolve } from 'node:path';
import { z } from 'zod';
import { runShell, sandboxAvailable } from '../sandbox/index.ts';
import type { AgentSession } from './sessions.ts';
import type { AskField } from '../acp/index.ts';
import { groupLikeMe } from '../../shared/priority.ts';

export type Approval = 'allow' | 'reject' | 'cancelled';

/** What a tool may ask of the client (over ACP) while it runs. */
export type ToolHost = {
  session: AgentSession;
  signal: AbortSignal;
  shellEnv: NodeJS.ProcessEnv;
  bwrapPath: string;
  /** The tenant's seccomp program every command runs under, or null (agent/config.ts). */
  tenantFilter: Buffer | null;
  allowEscalation: boolean;
  /** A shell command is killed after this long (0: no limit). */
  commandTimeoutMs: number;
  /** Called before a command starts (the agent lowers its priority first, so no command runs above it). */
  beforeCommand(): void;
  /** Asks permission for a shell call; remembers *_always answers in session.standing. */
  approve(call: { toolCallId: string; command: string; escalated: boolean }): Promise<Approval>;
  ask(call: { toolCallId: string; message: string; fields: AskField[] }): Promise<string>;
};

export class TurnCancelled extends Error {}

const str = (d: string) => ({ type: 'string', description: d });

export const TOOL_DEFINITIONS = [
  {
    type: 'function',
    function: {
      name: 'shell',
      description:
        'Run a shell command in the work directory. In manual mode it runs sandboxed (no network, writes only in the work directory) unless escalate is true and the user allows it.',
      parameters: {
        type: 'object',
        properties: {
          command: str('The command for /bin/sh -c'),
          escalate: { type: 'boolean', description: 'Ask to run outside the sandbox' },
        },
        required: ['command'],
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'read_file',
      description: 'Read a text file in the work directory.',
      parameters: {
        type: 'object',
        properties: { path: str('Path relative to the work directory') },
        required: ['path'],
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'write_file',
      description: 'Write a text file in the work directory.',
      parameters: {
        type: 'object',
        properties: { path: str('Path relative to the work directory'), content: str('The whole file content') },
        required: ['path', 'content'],
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'ask_user',
      description: 'Ask the user a question with typed answer fields.',
      parameters: {
        type: 'object',
        properties: {
          message: str('The question'),
          fields: {
            type: 'array',
            items: {
              type: 'object',
              properties: {
                name: str('field name'),
                type: { type: 'string', enum: ['string', 'number', 'integer', 'boolean', 'array'] },
                required: { type: 'boolean' },
                options: { type: 'array', items: { type: 'string' } },
              },
              required: ['name', 'type'],
            },
          },
        },
        required: ['message'],
      },
    },
  },
] as const;

const ShellArgs = z.object({ command: z.string().min(1), escalate: z.boolean().optional() });
const PathArgs = z.object({ path: z.string().min(1) });
const WriteArgs = PathArgs.extend({ content: z.string() });
const AskArgs = z.object({
  message: z.string().min(1),
  fields: z
    .array(
      z.object({
        name: z.string().min(1),
        type: z.string().default('string'),
        required: z.boolean().default(false),
        options: z.array(z.string()).default([]),
      }),
    )
    .default([{ name: 'answer', type: 'string', required: true, options: [] }]),
});

async function shell(host: ToolHost, id: string, raw: unknown): Promise<string> {
  const a = ShellArgs.parse(raw);
  const manual = host.session.mode === 'manual';
  if (manual && !sandboxAvailable(host.bwrapPath)) {
    return 'Refused: manual mode runs shell commands only inside the bubblewrap sandbox, and bubblewrap cannot run on this host. Install the Debian package `bubblewrap` (or use self-drive mode).';
  }
  if (manual && a.escalate === true && !host.allowEscalation) {
    return "Refused: this installation does not allow running commands outside the sandbox (the operator's COHORT_ALLOW_ESCALATION is off). Run it inside the sandbox instead (escalate: false).";
  }
  // Once an escalation was allowed for the run, the shell stays outside the sandbox.
  const escalated = manual && (a.escalate === true || host.session.standing.escalated === 'allow');
  if (manual) {
    const verdict = await host.approve({ toolCallId: id, command: a.command, escalated });
    if (verdict === 'cancelled') throw new TurnCancelled();
    if (verdict === 'reject') return 'The user rejected this command.';
  }
  host.beforeCommand();
  const r = await runShell({
    command: a.command,
    workDir: host.session.cwd,
    sandboxed: manual && !escalated,
    env: host.shellEnv,
    signal: host.signal,
    bwrapPath: host.bwrapPath,
    filter: host.tenantFilter ?? undefined,
    timeoutMs: host.commandTimeoutMs,
    // A session of its own (to kill its whole tree) would otherwise be scheduled at nice 0.
    onStart: groupLikeMe,
  });
  if (host.signal.aborted) throw new TurnCancelled();
  const status = r.timedOut
    ? `killed after ${host.commandTimeoutMs / 1000} s, the time limit for a command`
    : r.exitCode === null
      ? `killed by ${r.signal}`
      : `exit ${r.exitCode}`;
  return `${r.output}${r.truncated ? '\n[output truncated]' : ''}[${status}]`;
}

function inside(root: string, path: string, shown: string): void {
  const rel = relative(root, path);
  if (rel.startsWith('..') || isAbsolute(rel)) throw new Error(`${shown} is outside the work directory`);
}

/** Resolves a path inside the work dir, following symlinks, or throws. */
async function confined(workDir: string, p: string, forWrite: boolean): Promise<string> {
  const root = await realpath(workDir);
  const target = resolve(root, p);
  inside(root, target, p);
  if (forWrite) {
    await mkdir(dirname(target), { recursive: true });
    inside(root, await realpath(dirname(target)), p);
  }
  const real = await realpath(target).catch((e: NodeJS.ErrnoException) => {
    if (forWrite && e.code === 'ENOENT') return target;
    throw e;
  });
  inside(root, real, p);
  return real;
}

export async function runTool(host: ToolHost, call: { id: string; name: string; arguments: string }): Promise<string> {
  let args: unknown;
  try {
    args = JSON.parse(call.arguments || '{}');
  } catch {
    return `Error: arguments are not valid JSON`;
  }
  try {
    switch (call.name) {
      case 'shell':
        return await shell(host, call.id, args);
      case 'read_file':
        return (await readFile(await confined(host.session.cwd, PathArgs.parse(args).path, false), 'utf8')).slice(
          0,
          256 * 1024,
        );
      case 'write_file': {
        const a = WriteArgs.parse(args);
        await writeFile(await confined(host.session.cwd, a.path, true), a.content);
        return `wrote ${Buffer.byteLength(a.content)} bytes to ${a.path}`;
      }
      case 'ask_user': {
        const a = AskArgs.parse(args);
        return await host.ask({ toolCallId: call.id, message: a.message, fields: a.fields });
      }
      default:
        return `Error: no tool named ${call.name}`;
    }
  } catch (err) {
    if (err instanceof TurnCancelled || host.signal.aborted) throw new TurnCancelled();
    return `Error: ${err instanceof z.ZodError ? 'invalid arguments: ' + err.issues.map((i) => `${i.path.join('.')} ${i.message}`).join('; ') : (err as Error).message}`;
  }
}
