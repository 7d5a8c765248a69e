// The built-in agent started for a warm spare (runtime/daemon/spare.ts): it runs as root inside the
// sandbox, with no intern, until the daemon's first line on stdin names its uid, working directory
// and environment. It takes them before it reads anything else, so no request of the intern's (and
// nothing a tenant runs) ever meets the process before it is the intern's uid, without capabilities.
import type { Readable } from 'node:stream';
import { z } from 'zod';
import { firstLine } from '../../shared/first-line.ts';

const AgentAssignment = z.object({
  uid: z.number().int().positive(),
  cwd: z.string(),
  env: z.record(z.string(), z.string()),
});

function parse(line: string): z.infer<typeof AgentAssignment> {
  const a = AgentAssignment.safeParse(JSON.parse(line));
  if (!a.success)
    throw new Error('the spare agent\'s assignment must be {"uid": a positive integer, "cwd": …, "env": {…}}');
  return a.data;
}

/** Becomes the intern's agent: its uid and gid (dropping every capability, and with them the
 * root it started as), its working directory, and exactly its environment. */
export async function takeAssignment(input: Readable = process.stdin): Promise<void> {
  const line = firstLine(input, 'stdin closed before the spare agent was assigned');
  // Node loads its fetch machinery at first use: while the spare waits, not in its first turn.
  new Request('http://127.0.0.1/');
  const a = parse(await line);
  process.setgroups!([]);
  process.setgid!(a.uid);
  process.setuid!(a.uid);
  if (process.getuid!() !== a.uid || process.geteuid!() !== a.uid || process.getegid!() !== a.uid)
    throw new Error('the spare agent could not become its intern uid');
  process.chdir(a.cwd);
  for (const k of Object.keys(process.env)) delete process.env[k];
  Object.assign(process.env, a.env);
}
