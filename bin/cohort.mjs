#!/usr/bin/env node
// Launcher for the `cohort` CLI: registers tsx so the TypeScript sources run as they are (no
// build step), then hands the arguments to src/cli/main.ts. Exits with its code, unless it started
// a long-running program (the gateway, a daemon), which then governs the process.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/cli/main.ts');
const code = await main(process.argv.slice(2));
if (code !== undefined) process.exit(code);
