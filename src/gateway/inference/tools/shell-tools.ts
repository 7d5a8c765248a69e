// service:bash, service:shell and service:apply_patch: commands and file changes in the request's
// ephemeral sandbox (sandbox.ts), which the three share for the request's life. bash runs a
// script with bash; shell runs an argv (or a string with sh); apply_patch applies a patch in
// patch.ts's format under /work. Output is cut at EXEC_MAX_BYTES, then to the tool output bound.
// May import: zod, ./types.ts, ./patch.ts.
import { z } from 'zod';
import { type ServerTool, ToolError, type ToolContext, type ToolsEnv } from './types.ts';
import { applyHunks, parsePatch } from './patch.ts';

const Config = z.object({}).strict();
const Timeout = z.number().int().min(1).optional().describe('milliseconds before the command is killed');

const sandboxUnconfigured = ({ env }: { env: ToolsEnv }) =>
  env.sandbox ? null : `the sandbox for command tools cannot run on this gateway: ${env.sandboxOff}`;

async function run(argv: string[], timeout: number | undefined, ctx: ToolContext<unknown>) {
  const max = ctx.env.sandbox!.timeoutMs;
  const sandbox = await ctx.sandbox();
  const r = await sandbox.exec({ argv, timeoutMs: Math.min(timeout ?? max, max), signal: ctx.signal });
  return {
    exit_code: r.exitCode,
    stdout: r.stdout,
    stderr: r.stderr,
    ...(r.truncated ? { truncated: true } : {}),
    ...(r.timedOut ? { timed_out: true } : {}),
  };
}

const BashArgs = z.object({ command: z.string().min(1).max(100_000).describe('a bash script'), timeout_ms: Timeout });
export const bash: ServerTool<z.infer<typeof Config>, z.infer<typeof BashArgs>> = {
  type: 'service:bash',
  name: 'bash',
  description:
    'Run a bash script in a sandbox of this request (no network; files under /work last for the request). Returns exit code, stdout and stderr.',
  config: Config,
  args: BashArgs,
  unconfigured: sandboxUnconfigured,
  run: (args, ctx) => run(['/bin/bash', '-c', args.command], args.timeout_ms, ctx),
};

const ShellArgs = z.object({
  command: z
    .union([z.array(z.string().max(100_000)).min(1).max(1000), z.string().min(1).max(100_000)])
    .describe('the program and its arguments, or a command line for sh'),
  workdir: z.string().max(4096).optional().describe('directory under /work to run in'),
  timeout_ms: Timeout,
});
export const shell: ServerTool<z.infer<typeof Config>, z.infer<typeof ShellArgs>> = {
  type: 'service:shell',
  name: 'shell',
  description:
    'Run a command (an argv array, or a string for sh) in a sandbox of this request (no network; files under /work last for the request).',
  config: Config,
  args: ShellArgs,
  unconfigured: sandboxUnconfigured,
  run(args, ctx) {
    const argv = typeof args.command === 'string' ? ['/bin/sh', '-c', args.command] : args.command;
    if (!args.workdir) return run(argv, args.timeout_ms, ctx);
    if (args.workdir.split('/').includes('..')) throw new ToolError('workdir: must stay under /work');
    const dir = args.workdir.replace(/^\/work\/?/, '') || '.';
    return run(['/bin/sh', '-c', 'cd -- "$1" && shift && exec "$@"', 'sh', dir, ...argv], args.timeout_ms, ctx);
  },
};

const PatchArgs = z.object({
  input: z.string().min(1).max(1_000_000).describe('the patch, from "*** Begin Patch" to "*** End Patch"'),
});
export const applyPatch: ServerTool<z.infer<typeof Config>, z.infer<typeof PatchArgs>> = {
  type: 'service:apply_patch',
  name: 'apply_patch',
  description:
    'Create, change or delete files under /work in this request\'s sandbox with a patch: "*** Begin Patch", then "*** Add File: PATH" (lines with +), "*** Update File: PATH" (@@ hunks with " ", -, + lines) or "*** Delete File: PATH", then "*** End Patch".',
  config: Config,
  args: PatchArgs,
  unconfigured: sandboxUnconfigured,
  async run(args, ctx) {
    const ops = parsePatch(args.input);
    const sandbox = await ctx.sandbox();
    const done: { path: string; action: string }[] = [];
    for (const op of ops) {
      if (op.kind === 'add') {
        await sandbox.write(op.path, op.content, ctx.signal);
        done.push({ path: op.path, action: 'added' });
      } else if (op.kind === 'delete') {
        if ((await sandbox.read(op.path, ctx.signal)) === null) throw new ToolError(`${op.path}: no such file`);
        await sandbox.remove(op.path, ctx.signal);
        done.push({ path: op.path, action: 'deleted' });
      } else {
        const before = await sandbox.read(op.path, ctx.signal);
        if (before === null) throw new ToolError(`${op.path}: no such file`);
        const after = applyHunks(before, op.hunks, op.path);
        await sandbox.write(op.moveTo ?? op.path, after, ctx.signal);
        if (op.moveTo && op.moveTo !== op.path) await sandbox.remove(op.path, ctx.signal);
        done.push({ path: op.moveTo ?? op.path, action: op.moveTo ? `moved from ${op.path}` : 'updated' });
      }
    }
    return { applied: done };
  },
};
