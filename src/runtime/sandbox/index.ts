// The sandbox: bubblewrap argv and seccomp filters (pure), and the shell runner used by the agent's
// `shell` tool. Owns how commands are confined; may import node built-ins only.
export {
  BWRAP_PATH,
  bwrapArgv,
  confinedArgv,
  FILTER_FD,
  PRIVATE_NAMESPACES,
  SYSTEM_ETC,
  userlandArgv,
  type BwrapOptions,
} from './bwrap.ts';
export { runShell, sandboxAvailable, writeFilter, type RunShellOptions, type ShellResult } from './run.ts';
export { seccompProgram, type Policy } from './seccomp.ts';
