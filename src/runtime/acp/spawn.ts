// Starting an agent's process, apart from speaking ACP to it: node built-ins only, so the daemon
// can start its agent before it loads the ACP SDK and its own code (the two loads then overlap,
// which is most of what waking a sleeping intern costs).
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';

export type AgentExit = { code: number | null; signal: string | null };

export type AgentCommand = {
  command: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** Run the agent as this uid and gid (the daemon then needs CAP_SETUID, CAP_SETGID and CAP_KILL). */
  uid?: number;
  /** A seccomp program for the bubblewrap the command starts with, written on its descriptor 3. */
  filter?: Buffer;
};

/** A started agent process and its exit, watched from the start so an early exit is never missed. */
export type StartedAgent = { child: ChildProcessByStdio<Writable, Readable, Readable>; exited: Promise<AgentExit> };

export function startAgentProcess(c: AgentCommand): StartedAgent {
  const ids = c.uid === undefined ? {} : { uid: c.uid, gid: c.uid };
  const child = spawn(c.command, c.args, {
    cwd: c.cwd,
    env: c.env,
    stdio: c.filter ? ['pipe', 'pipe', 'pipe', 'pipe'] : ['pipe', 'pipe', 'pipe'],
    ...ids,
  }) as ChildProcessByStdio<Writable, Readable, Readable>;
  if (c.filter) {
    const pipe = child.stdio[3] as Writable;
    // A bubblewrap that fails to start closes the pipe unread; its exit says why.
    pipe.on('error', () => {});
    pipe.end(c.filter);
  }
  const exited = new Promise<AgentExit>((resolve) => {
    child.on('exit', (code, signal) => resolve({ code, signal }));
    child.on('error', () => resolve({ code: null, signal: null }));
  });
  return { child, exited };
}
