// The sandbox: bubblewrap argv (pure) and the shell runner used by the agent's `shell` tool.
// Owns how commands are confined; may import node built-ins only.
export { BWRAP_PATH, bwrapArgv, type BwrapOptions } from './bwrap.ts';
export { runShell, sandboxAvailable, type RunShellOptions, type ShellResult } from './run.ts';
