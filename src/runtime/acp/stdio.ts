// NDJSON ACP streams over node stdio: the agent's own stdin/stdout, or a child process's pipes.
import { Readable, Writable } from 'node:stream';
import type { ChildProcessByStdio } from 'node:child_process';
import { ndJsonStream, type Stream } from '@agentclientprotocol/sdk';

export function processStdioStream(): Stream {
  return ndJsonStream(
    Writable.toWeb(process.stdout) as WritableStream<Uint8Array>,
    Readable.toWeb(process.stdin) as ReadableStream<Uint8Array>,
  );
}

export function childStdioStream(child: ChildProcessByStdio<Writable, Readable, Readable | null>): Stream {
  return ndJsonStream(
    Writable.toWeb(child.stdin) as WritableStream<Uint8Array>,
    Readable.toWeb(child.stdout) as ReadableStream<Uint8Array>,
  );
}
