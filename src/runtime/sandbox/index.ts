// The sandbox: bubblewrap argv (one builder, bwrap.ts) and seccomp filters (pure), and the shell runner used by the agent's
// `shell` tool. Owns how commands are confined; may import node built-ins only.
export {
  BWRAP_PATH,
  bwrapArgs,
  confinedArgv,
  FILTER_FD,
  innerArgv,
  type BwrapOptions,
  type SandboxSpec,
} from './bwrap.ts';
export { runShell, sandboxAvailable, writeFilter, type RunShellOptions, type ShellResult } from './run.ts';
export { seccompProgram, type Policy } from './seccomp.ts';
