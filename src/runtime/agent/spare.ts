// The built-in agent started for a warm spare (runtime/daemon/spare.ts): it runs as root inside the
// sandbox, with no intern, until the daemon's first line on stdin names its uid, working directory
// and environment. It takes them before it reads anything else, so no request of the intern's (and
// nothing a tenant runs) ever meets the process before it is the intern's uid, without capabilities.
import type { Readable } from 'node:stream';

type AgentAssignment = { uid: number; cwd: string; env: Record<string, string> };

/** The first line of `input`; what came after it is put back for the ACP channel. */
export function firstLine(input: Readable): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const done = (err: Error | null, line?: string) => {
      input.off('readable', onReadable);
      input.off('end', onEnd);
      input.off('error', done);
      if (err) reject(err);
      else resolve(line!);
    };
    const onEnd = () => done(new Error('stdin closed before the spare agent was assigned'));
    const onReadable = () => {
      for (let chunk: Buffer | null; (chunk = input.read() as Buffer | null) !== null; ) {
        const nl = chunk.indexOf(0x0a);
        if (nl < 0) {
          chunks.push(chunk);
          continue;
        }
        chunks.push(chunk.subarray(0, nl));
        const rest = chunk.subarray(nl + 1);
        if (rest.length) input.unshift(rest);
        return done(null, Buffer.concat(chunks).toString('utf8'));
      }
    };
    input.on('readable', onReadable);
    input.on('end', onEnd);
    input.on('error', done);
  });
}

function parse(line: string): AgentAssignment {
  const a = JSON.parse(line) as Partial<AgentAssignment>;
  if (!Number.isInteger(a.uid) || (a.uid as number) <= 0 || typeof a.cwd !== 'string' || typeof a.env !== 'object')
    throw new Error('the spare agent\'s assignment must be {"uid": a positive integer, "cwd": …, "env": {…}}');
  return a as AgentAssignment;
}

/** Becomes the intern's agent: its uid and gid (dropping every capability, and with them the
 * root it started as), its working directory, and exactly its environment. */
export async function takeAssignment(input: Readable = process.stdin): Promise<void> {
  const line = firstLine(input);
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
