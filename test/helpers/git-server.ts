// A real git server on loopback for the repositories' tests: git's own http-backend (CGI) behind a
// small Node HTTP server, with HTTP basic auth when `auth` is given. Repositories are bare ones
// under `root`; `seed` makes one from a few files. Every request is recorded (path, whether it
// carried the right credential, the Authorization header as sent) so a test can say what reached it.
import { spawn, execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

const BACKEND = '/usr/lib/git-core/git-http-backend';
const GIT_ENV = { GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', PATH: process.env.PATH ?? '/usr/bin:/bin' };

export type GitServer = {
  url: string;
  host: string;
  root: string;
  hits: { path: string; authorized: boolean; authorization?: string }[];
  /** A bare repository `name`.git holding one commit of `files` on `branch`. */
  seed(name: string, files: Record<string, string>, branch?: string): string;
  /** `git` run in a repository of the server's (for checks). */
  git(name: string, args: string[]): string;
  close(): Promise<void>;
};

export async function startGitServer(o: { auth?: { user: string; password: string } } = {}): Promise<GitServer> {
  const root = mkdtempSync(join(tmpdir(), 'cohort-git-'));
  const hits: GitServer['hits'] = [];
  const expected = o.auth ? `Basic ${Buffer.from(`${o.auth.user}:${o.auth.password}`).toString('base64')}` : null;
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url!, 'http://x');
    const authorized = expected === null || req.headers.authorization === expected;
    hits.push({ path: url.pathname, authorized, authorization: req.headers.authorization });
    if (!authorized) {
      res.writeHead(401, { 'www-authenticate': 'Basic realm="git"' }).end();
      return;
    }
    const cgi = spawn(BACKEND, [], {
      env: {
        ...GIT_ENV,
        GIT_PROJECT_ROOT: root,
        GIT_HTTP_EXPORT_ALL: '1',
        REQUEST_METHOD: req.method!,
        PATH_INFO: url.pathname,
        QUERY_STRING: url.search.slice(1),
        CONTENT_TYPE: req.headers['content-type'] ?? '',
        REMOTE_USER: o.auth?.user ?? 'anonymous',
        REMOTE_ADDR: '127.0.0.1',
        ...(req.headers['content-encoding'] ? { HTTP_CONTENT_ENCODING: req.headers['content-encoding'] } : {}),
        GIT_HTTP_RECEIVE_PACK: '1',
      },
      stdio: ['pipe', 'pipe', 'ignore'],
    });
    req.pipe(cgi.stdin);
    let head = Buffer.alloc(0);
    let headed = false;
    cgi.stdout.on('data', (d: Buffer) => {
      if (headed) return void res.write(d);
      head = Buffer.concat([head, d]);
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      headed = true;
      let status = 200;
      for (const line of head.subarray(0, end).toString().split('\r\n')) {
        const [k, ...v] = line.split(':');
        if (k!.toLowerCase() === 'status') status = Number.parseInt(v.join(':').trim(), 10);
        else res.setHeader(k!, v.join(':').trim());
      }
      res.writeHead(status);
      res.write(head.subarray(end + 4));
    });
    cgi.on('close', () => res.end());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const host = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  const git = (name: string, args: string[]) =>
    execFileSync('git', args, { cwd: join(root, `${name}.git`), env: GIT_ENV, encoding: 'utf8' });
  return {
    url: `http://${host}`,
    host,
    root,
    hits,
    seed(name, files, branch = 'main') {
      const work = mkdtempSync(join(tmpdir(), 'cohort-git-seed-'));
      for (const [p, content] of Object.entries(files)) {
        mkdirSync(dirname(join(work, p)), { recursive: true });
        writeFileSync(join(work, p), content);
      }
      const run = (args: string[], cwd = work) => execFileSync('git', args, { cwd, env: GIT_ENV, stdio: 'pipe' });
      run(['init', '-q', '-b', branch]);
      run(['add', '.']);
      run(['-c', 'user.name=seed', '-c', 'user.email=seed@example.com', 'commit', '-q', '-m', 'seed']);
      run(['clone', '-q', '--bare', work, join(root, `${name}.git`)], root);
      rmSync(work, { recursive: true, force: true });
      return `http://${host}/${name}.git`;
    },
    git,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => {
          rmSync(root, { recursive: true, force: true });
          r();
        });
      }),
  };
}
