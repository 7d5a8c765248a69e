// The operator's door to a running gateway: a unix socket at `<data dir>/run/admin.sock`, reachable
// only by the data dir's owner (0700 directory) and never bound into an intern. It serves two
// things, so that the CLI works while a gateway holds the embedded store (PGlite admits one
// process): `POST /backup {"file": "/abs/path"}` (`cohort backup`) and `POST /admin {"argv": [...]}`
// (the administration commands, run in this gateway). May import: node built-ins.
import { createServer, type Server } from 'node:http';
import { mkdirSync, rmSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';

export const adminSocketPath = (dataDir: string): string => join(dataDir, 'run', 'admin.sock');

export type AdminActions = {
  backup(file: string): Promise<unknown>;
  /** Runs an admin command line; a refusal is thrown with the status to answer. */
  admin(argv: string[]): Promise<unknown>;
};

/** A refusal of the operator's request, answered with its status. */
export class OperatorRefusal extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

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
      const route = req.method === 'POST' ? req.url : undefined;
      if (route !== '/backup' && route !== '/admin')
        return reply(res, 404, { error: 'only POST /backup and POST /admin' });
      let parsed: { file?: unknown; argv?: unknown } = {};
      try {
        parsed = JSON.parse(body) as typeof parsed;
      } catch {}
      const answer = (p: Promise<unknown>) =>
        p.then(
          (result) => reply(res, 200, result),
          (err: Error) => reply(res, err instanceof OperatorRefusal ? err.status : 500, { error: err.message }),
        );
      if (route === '/admin') {
        const { argv } = parsed;
        if (!Array.isArray(argv) || !argv.every((a) => typeof a === 'string'))
          return reply(res, 400, { error: 'argv: an array of strings is required' });
        return answer(opts.actions.admin(argv));
      }
      const { file } = parsed;
      if (typeof file !== 'string' || !isAbsolute(file))
        return reply(res, 400, { error: 'file: an absolute path is required' });
      answer(opts.actions.backup(file));
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
