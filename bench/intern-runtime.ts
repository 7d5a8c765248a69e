// Shared by the intern benchmarks (isolation, agents): a gateway process's intern provisioned and
// timed, a turn's time to first content, and the memory of all of one intern's processes.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { GatewayProcess } from '../test/helpers/gateway-process.ts';

export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
export const p90 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.9)]!;

export async function call(gw: GatewayProcess, method: string, path: string, body?: unknown) {
  const res = await fetch(gw.url + path, {
    method,
    headers: { authorization: `Bearer ${gw.keys().management_key}`, 'content-type': 'application/json' },
    body: body ? JSON.stringify(body) : undefined,
  });
  return (await res.json()) as any;
}

/** Creates and provisions an intern; resolves with its id and the milliseconds until it ran. */
export async function provisionTimed(
  gw: GatewayProcess,
  body: Record<string, unknown>,
): Promise<{ id: string; ms: number }> {
  const t0 = performance.now();
  const { id } = await call(gw, 'POST', '/interns', { ...body, provision: true });
  for (;;) {
    const got = await call(gw, 'GET', `/interns/${id}`);
    if (got.status === 'running') return { id, ms: performance.now() - t0 };
    if (got.status === 'failed') throw new Error(`provisioning failed: ${got.last_failure_message}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

/** Sends a turn; resolves with the milliseconds to its first content chunk, once it completed. */
export async function firstContentMs(
  gw: GatewayProcess,
  id: string,
  prompt: string,
  during?: () => void,
): Promise<number> {
  const t0 = performance.now();
  const res = await fetch(`${gw.url}/interns/${id}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${gw.keys().api_key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ stream: true, messages: [{ role: 'user', content: prompt }] }),
  });
  const reader = res.body!.getReader();
  let seen = '';
  let at = 0;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    seen += new TextDecoder().decode(value);
    if (!at && seen.includes('"content"')) {
      at = performance.now() - t0;
      during?.();
    }
  }
  if (!at || !seen.includes('[DONE]')) throw new Error(`a turn did not complete: ${seen.slice(0, 300)}`);
  return at;
}

function children(pid: number): number[] {
  try {
    return readdirSync(`/proc/${pid}/task`).flatMap((t) =>
      readFileSync(`/proc/${pid}/task/${t}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number),
    );
  } catch {
    return [];
  }
}

/** RSS of every process of one intern (launcher, bwrap, daemon, agent, …), summed, in MiB. */
export function internRss(dataDir: string, id: string): number {
  const roots = readdirSync('/proc')
    .filter((p) => /^\d+$/.test(p))
    .map(Number)
    .filter((p) => {
      try {
        return readFileSync(`/proc/${p}/cmdline`, 'utf8').includes(join(dataDir, 'interns', id));
      } catch {
        return false;
      }
    });
  const all = new Set<number>();
  const walk = (p: number) => {
    if (all.has(p)) return;
    all.add(p);
    children(p).forEach(walk);
  };
  roots.forEach(walk);
  let kib = 0;
  for (const p of all) {
    try {
      kib += Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${p}/status`, 'utf8'))?.[1] ?? 0);
    } catch {}
  }
  return kib / 1024;
}
