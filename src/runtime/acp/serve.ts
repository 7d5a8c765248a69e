// Serves an ACP agent app on this process's stdin/stdout and exits when the client goes away.
import type { AgentApp } from '@agentclientprotocol/sdk';
import { processStdioStream } from './stdio.ts';

export async function serveStdio(app: AgentApp): Promise<void> {
  const conn = app.connect(processStdioStream());
  await conn.closed;
}
