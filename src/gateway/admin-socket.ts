// The operator's door to a running gateway: a unix socket at `<data dir>/run/admin.sock`, reachable
// only by the data dir's owner (0700 directory) and never bound into an intern. It serves one
// thing: `POST /backup {"file": "/abs/path"}`, so that `cohort backup` works while a gateway holds
// the embedded store (PGlite admits one process). May import: node built-ins, backup.
import { createServer, type Server } from 'node:http';
import { mkdirSync, rmSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';

export const adminSocketPath = (dataDir: string): string => join(dataDir, 'run', 'admin.sock');

export type AdminActions = { backup(file: string): Promise<unknown> };

function reply(res: import('node:http').ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

export async function listenForOperator(opts: {
  dataDir: string;
  actions: AdminActions;
}): Promise<{ close(): Promise<void> }> {
  const path = adminSocketPath(opts.dataDir);
  mkdirSync(join(opts.dataDir, 'run'), { recursive: true, mode: 0o700 });
  rmSync(path, { force: true });
  const server: Server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8').on('data', (d: string) => (body = (body + d).slice(0, 65_536)));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/backup') return reply(res, 404, { error: 'only POST /backup' });
      let file: unknown;
      try {
        file = (JSON.parse(body) as { file?: unknown }).file;
      } catch {}
      if (typeof file !== 'string' || !isAbsolute(file))
        return reply(res, 400, { error: 'file: an absolute path is required' });
      opts.actions.backup(file).then(
        (result) => reply(res, 200, result),
        (err: Error) => reply(res, 500, { error: err.message }),
      );
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, () => resolve());
  });
  return {
    close: () =>
      new Promise((resolve) => {
        rmSync(path, { force: true });
        server.close(() => resolve());
      }),
  };
}
