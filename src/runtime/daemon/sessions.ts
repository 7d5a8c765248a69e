// The intern's sessions: caller-visible session ids → the agent's ACP session ids, persisted in
// the intern's directory so conversations survive a daemon restart.
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

type Entry = { acp: string; created_at: string };

export class SessionMap {
  private readonly entries: Map<string, Entry>;
  private readonly file: string;

  constructor(dir: string) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    this.file = join(dir, 'sessions.json');
    const stored = existsSync(this.file) ? (JSON.parse(readFileSync(this.file, 'utf8')) as Record<string, Entry>) : {};
    this.entries = new Map(Object.entries(stored));
  }

  get(id: string): string | undefined {
    return this.entries.get(id)?.acp;
  }

  set(id: string, acp: string): void {
    this.entries.set(id, { acp, created_at: this.entries.get(id)?.created_at ?? new Date().toISOString() });
    const tmp = `${this.file}.tmp`;
    writeFileSync(tmp, JSON.stringify(Object.fromEntries(this.entries)), { mode: 0o600 });
    renameSync(tmp, this.file);
  }

  get size(): number {
    return this.entries.size;
  }
}
