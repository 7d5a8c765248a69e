// The helper of spawner.ts: runs the jobs its parent sends over IPC ({id, job}, a Job of
// spawner.ts), each a child of this small process, and answers {id, code, stderr} or {id, error}.
// It exits when its parent lets go of it. Plain JavaScript with node built-ins only, so that it
// starts in some 40 ms from the source tree and from dist/ alike (no TypeScript loader).
import { spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';

/** A job sees nothing of the gateway's environment (nor does this helper: spawner.ts). */
const ENV = { PATH: '/usr/local/bin:/usr/bin:/bin', LANG: 'C.UTF-8' };

function run(id, job) {
  const fds = [];
  const open = (path, flags) => {
    if (!path) return 'ignore';
    fds.push(openSync(path, flags, 0o600));
    return fds.at(-1);
  };
  try {
    const stdin = open(job.stdin, 'r');
    const stdout = open(job.stdout, 'w');
    const ids = job.uid === undefined ? {} : { uid: job.uid, gid: job.gid ?? job.uid };
    const child = spawn(job.file, job.args, { cwd: job.cwd, env: ENV, stdio: [stdin, stdout, 'pipe'], ...ids });
    for (const fd of fds.splice(0)) closeSync(fd);
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
    let done = false;
    const finish = (reply) => {
      if (done) return;
      done = true;
      process.send(reply);
    };
    child.on('error', (err) => finish({ id, error: err.message }));
    child.on('close', (code) => finish({ id, code, stderr }));
  } catch (err) {
    for (const fd of fds.splice(0)) closeSync(fd);
    process.send({ id, error: err.message });
  }
}

process.on('message', (m) => run(m.id, m.job));
process.on('disconnect', () => process.exit(0));
