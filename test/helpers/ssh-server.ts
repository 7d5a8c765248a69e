// A real SSH git server on loopback for the SSH repositories' tests: OpenSSH's sshd with a host key
// and an authorized client key of its own (both made by ssh-keygen in a temporary directory),
// serving bare repositories under `root` to this machine's user through git-upload-pack and
// git-receive-pack as any SSH git host does. Its log (sshd -e) is kept: which key was accepted.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { dirname, join } from 'node:path';

export const SSHD = '/usr/sbin/sshd';
/** Why an SSH test skips here (false where it can run); CI installs openssh-server. */
export const noSshd: string | false = existsSync(SSHD)
  ? false
  : `${SSHD} is absent (install the Debian package openssh-server)`;

const GIT_ENV = { GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', PATH: process.env.PATH ?? '/usr/bin:/bin' };

export type SshServer = {
  /** host:port, as credentials and COHORT_GIT_HOSTS name it. */
  host: string;
  root: string;
  /** An authorized private key, and one that is not. */
  key: string;
  wrongKey: string;
  /** The authorized key's fingerprint (SHA256:…), as ssh-keygen -l shows it. */
  fingerprint: string;
  /** The server's host key as a known_hosts line, and a line of another key for the same host. */
  knownHosts: string;
  otherKnownHosts: string;
  /** What sshd logged so far. */
  log(): string;
  /** A bare repository `name`.git holding one commit of `files` on main; its ssh:// URL. */
  seed(name: string, files: Record<string, string>): string;
  git(name: string, args: string[]): string;
  close(): Promise<void>;
};

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const s = createServer();
    s.once('error', reject).listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });

export async function startSshServer(): Promise<SshServer> {
  const dir = mkdtempSync(join(tmpdir(), 'cohort-sshd-'));
  const root = join(dir, 'repos');
  mkdirSync(root);
  const keygen = (name: string) => {
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', name, '-f', join(dir, name)]);
    return readFileSync(join(dir, name), 'utf8');
  };
  keygen('host_key');
  keygen('other_host_key');
  const key = keygen('client');
  const wrongKey = keygen('stranger');
  writeFileSync(join(dir, 'authorized_keys'), readFileSync(join(dir, 'client.pub')));
  writeFileSync(
    join(dir, 'sshd_config'),
    [
      `HostKey ${join(dir, 'host_key')}`,
      `AuthorizedKeysFile ${join(dir, 'authorized_keys')}`,
      'StrictModes no',
      'PermitRootLogin prohibit-password',
      'PasswordAuthentication no',
      'KbdInteractiveAuthentication no',
      'UsePAM no',
      'PidFile none',
      'ListenAddress 127.0.0.1',
      '',
    ].join('\n'),
  );
  // sshd's privilege separation directory, which only an installed service's start makes.
  if (!existsSync('/run/sshd')) mkdirSync('/run/sshd', { mode: 0o755 });
  let log = '';
  let port = 0;
  let sshd: ReturnType<typeof spawn> | null = null;
  // Another process may take the free port before sshd binds it: a few tries.
  for (let i = 0; i < 5 && !sshd; i++) {
    port = await freePort();
    const p = spawn(SSHD, ['-D', '-e', '-f', join(dir, 'sshd_config'), '-p', String(port)], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    const up = await new Promise<boolean>((resolve) => {
      p.stderr!.on('data', (d: Buffer) => {
        log += d;
        if (log.includes(`Server listening on 127.0.0.1 port ${port}.`)) resolve(true);
      });
      p.once('exit', () => resolve(false));
    });
    if (up) sshd = p;
  }
  if (!sshd) throw new Error(`sshd did not start: ${log}`);
  const hostLine = (name: string) =>
    `[127.0.0.1]:${port} ${readFileSync(join(dir, `${name}.pub`), 'utf8')
      .split(' ')
      .slice(0, 2)
      .join(' ')}\n`;
  const user = userInfo().username;
  return {
    host: `127.0.0.1:${port}`,
    root,
    key,
    wrongKey,
    fingerprint: execFileSync('ssh-keygen', ['-l', '-f', join(dir, 'client.pub')], { encoding: 'utf8' }).split(' ')[1]!,
    knownHosts: hostLine('host_key'),
    otherKnownHosts: hostLine('other_host_key'),
    log: () => log,
    seed(name, files) {
      const work = mkdtempSync(join(tmpdir(), 'cohort-ssh-seed-'));
      for (const [p, content] of Object.entries(files)) {
        mkdirSync(dirname(join(work, p)), { recursive: true });
        writeFileSync(join(work, p), content);
      }
      const run = (args: string[], cwd = work) => execFileSync('git', args, { cwd, env: GIT_ENV, stdio: 'pipe' });
      run(['init', '-q', '-b', 'main']);
      run(['add', '.']);
      run(['-c', 'user.name=seed', '-c', 'user.email=seed@example.com', 'commit', '-q', '-m', 'seed']);
      run(['clone', '-q', '--bare', work, join(root, `${name}.git`)], root);
      rmSync(work, { recursive: true, force: true });
      return `ssh://${user}@127.0.0.1:${port}${root}/${name}.git`;
    },
    git: (name, args) => execFileSync('git', args, { cwd: join(root, `${name}.git`), env: GIT_ENV, encoding: 'utf8' }),
    close: async () => {
      const p = sshd!;
      if (p.exitCode === null) {
        const gone = new Promise((r) => p.once('exit', r));
        p.kill();
        await gone;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
