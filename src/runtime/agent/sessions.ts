// Conversations, in memory while the agent runs and persisted as one JSON file per session so a
// restarted agent can load them (ACP session/load).
import { mkdirSync, readFileSync, writeFileSync, renameSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import type { ConversationMessage } from './openai.ts';

export type Mode = 'manual' | 'self-drive';

export type AgentSession = {
  id: string;
  cwd: string;
  messages: ConversationMessage[];
  costUsd: number;
  /** Run-scoped: reset whenever the daemon sets the mode for a new run. */
  mode: Mode;
  standing: { sandboxed?: 'allow' | 'reject'; escalated?: 'allow' | 'reject' };
  steering: string[];
  turn: AbortController | null;
};

type Persisted = Pick<AgentSession, 'id' | 'cwd' | 'messages' | 'costUsd'>;

export class SessionStore {
  private readonly live = new Map<string, AgentSession>();
  constructor(private readonly dir: string) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  }

  create(cwd: string): AgentSession {
    const s = fresh({ id: `s_${randomUUID()}`, cwd, messages: [], costUsd: 0 });
    this.live.set(s.id, s);
    this.save(s);
    return s;
  }

  liveIds(): string[] {
    return [...this.live.keys()];
  }

  get(id: string): AgentSession | undefined {
    return this.live.get(id);
  }

  /** Loads a persisted session into memory; undefined when it was never stored. */
  load(id: string): AgentSession | undefined {
    const file = this.file(id);
    if (!/^[\w-]+$/.test(id) || !existsSync(file)) return undefined;
    const s = this.live.get(id) ?? fresh(JSON.parse(readFileSync(file, 'utf8')) as Persisted);
    this.live.set(id, s);
    return s;
  }

  save(s: AgentSession): void {
    const data: Persisted = { id: s.id, cwd: s.cwd, messages: s.messages, costUsd: s.costUsd };
    // Write-then-rename so a crash mid-write never leaves a torn session file.
    const tmp = `${this.file(s.id)}.tmp`;
    writeFileSync(tmp, JSON.stringify(data), { mode: 0o600 });
    renameSync(tmp, this.file(s.id));
  }

  private file(id: string): string {
    return join(this.dir, `${id}.json`);
  }
}

function fresh(p: Persisted): AgentSession {
  return { ...p, mode: 'self-drive', standing: {}, steering: [], turn: null };
}
