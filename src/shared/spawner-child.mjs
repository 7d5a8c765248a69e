// The helper of spawner.ts: runs the jobs its parent sends over IPC ({id, job}, a Job of
// spawner.ts), each a child of this small process, and answers {id, code, stderr} or {id, error}.
// A job's stdin and stdout are each a file, nothing, or (sockets) a Unix socket, as its descriptor 3
// may be: this process listens on each path, says {id, listening: true}, and once its parent has
// dialled each, gives the command the connections and keeps no copy.
// It exits when its parent lets go of it. Plain JavaScript with node built-ins only, so that it
// starts in some 40 ms from the source tree and from dist/ alike (no TypeScript loader).
import { spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { createServer } from 'node:net';

/** A job sees nothing of the gateway's environment (nor does this helper: spawner.ts). */
const ENV = { PATH: '/usr/local/bin:/usr/bin:/bin', LANG: 'C.UTF-8' };

/** How long a job's sockets wait for its parent to dial them: one that went away meanwhile. */
const DIAL_MS = 10_000;

/** Listens on each of the job's sockets, says so, and starts it once its parent has dialled each. */
function run(id, job) {
  const ends = Object.entries(job.sockets ?? {});
  const sockets = {};
  if (!ends.length) return start(id, job, sockets);
  const servers = [];
  let listening = ends.length;
  let waiting = ends.length;
  let failed = false;
  const fail = (message) => {
    if (failed) return;
    failed = true;
    clearTimeout(timer);
    for (const server of servers) server.close();
    for (const s of Object.values(sockets)) s.destroy();
    process.send({ id, error: message });
  };
  const timer = setTimeout(() => fail("the job's sockets were not dialled in time"), DIAL_MS);
  for (const [end, path] of ends) {
    // Paused from the start: what the parent writes to a stdin is the command's to read, and
    // nothing of it is taken into this process before the command holds the connection.
    const server = createServer({ pauseOnConnect: true });
    servers.push(server);
    server.once('error', (err) => fail(err.message));
    server.once('connection', (socket) => {
      // Closing the server removes its path: nobody else can dial it.
      server.close();
      sockets[end] = socket;
      socket.on('error', () => {});
      if (--waiting === 0 && !failed) {
        clearTimeout(timer);
        start(id, job, sockets);
      }
    });
    server.listen(path, () => {
      if (--listening === 0 && !failed) process.send({ id, listening: true });
    });
  }
}

function start(id, job, sockets) {
  const fds = [];
  const open = (path, flags) => {
    if (!path) return 'ignore';
    fds.push(openSync(path, flags, 0o600));
    return fds.at(-1);
  };
  try {
    const stdin = sockets.stdin ?? open(job.stdin, 'r');
    const stdout = sockets.stdout ?? open(job.stdout, 'w');
    const ids = job.uid === undefined ? {} : { uid: job.uid, gid: job.gid ?? job.uid };
    const stdio = [stdin, stdout, 'pipe', ...(job.fd3 || sockets.fd3 ? ['pipe'] : [])];
    // detached: a group of its own, which a timeout kills whole (nsenter's child with it).
    const child = spawn(job.file, job.args, { cwd: job.cwd, env: ENV, stdio, detached: true, ...ids });
    for (const fd of fds.splice(0)) closeSync(fd);
    if (sockets.fd3) {
      // Relayed both ways rather than given: a socket handed over keeps the non-blocking mode
      // this process set (node makes only descriptors 0-2 blocking for a child), which a program
      // other than node reads as EAGAIN; the pipe is blocking on the command's side.
      const control = sockets.fd3;
      delete sockets.fd3;
      child.stdio[3].on('error', () => control.destroy());
      control.on('error', () => child.stdio[3].destroy());
      control.pipe(child.stdio[3]);
      child.stdio[3].pipe(control);
      child.once('close', () => control.destroy());
    } else if (job.fd3) {
      // A command that fails before reading closes the pipe unread; its exit says why.
      child.stdio[3].on('error', () => {});
      child.stdio[3].end(Buffer.from(job.fd3, 'base64'));
    }
    let timedOut = false;
    const timer = job.timeoutMs
      ? setTimeout(() => {
          timedOut = true;
          try {
            process.kill(-child.pid, 'SIGKILL');
          } catch {}
        }, job.timeoutMs)
      : null;
    // The command holds the connections now: their ends are the ends of the streams.
    for (const s of Object.values(sockets)) s.destroy();
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
    let done = false;
    const finish = (reply) => {
      if (done) return;
      done = true;
      if (timer) clearTimeout(timer);
      process.send(reply);
    };
    child.on('error', (err) => finish({ id, error: err.message }));
    child.on('close', (code) => finish({ id, code, stderr, ...(timedOut ? { timedOut } : {}) }));
  } catch (err) {
    for (const fd of fds.splice(0)) closeSync(fd);
    for (const s of Object.values(sockets)) s.destroy();
    process.send({ id, error: err.message });
  }
}

process.on('message', (m) => run(m.id, m.job));
process.on('disconnect', () => process.exit(0));
