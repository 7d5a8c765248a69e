// The helper of spawner.ts: runs the jobs its parent sends over IPC ({id, job}, a Job of
// spawner.ts), each a child of this small process, and answers {id, code, stderr} or {id, error}.
// A job's stdin and stdout are each a file, nothing, or (sockets) a Unix socket its parent listens
// on, as its descriptor 3 may be: this process connects to each, gives the command the
// connections, and keeps no copy.
// It exits when its parent lets go of it. Plain JavaScript with node built-ins only, so that it
// starts in some 40 ms from the source tree and from dist/ alike (no TypeScript loader).
import { spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { connect } from 'node:net';

/** A job sees nothing of the gateway's environment (nor does this helper: spawner.ts). */
const ENV = { PATH: '/usr/local/bin:/usr/bin:/bin', LANG: 'C.UTF-8' };

/** Connects to each of the job's sockets (its parent listens on them), then starts it. */
function run(id, job) {
  const ends = Object.entries(job.sockets ?? {});
  const sockets = {};
  let waiting = ends.length;
  if (!waiting) return start(id, job, sockets);
  let failed = false;
  for (const [end, path] of ends) {
    // Paused from the start: what the parent writes to a stdin is the command's to read, and
    // nothing of it is taken into this process before the command holds the connection.
    const socket = connect(path).pause();
    sockets[end] = socket;
    socket.once('error', (err) => {
      if (failed) return;
      failed = true;
      for (const s of Object.values(sockets)) s.destroy();
      process.send({ id, error: err.message });
    });
    socket.once('connect', () => {
      socket.removeAllListeners('error');
      socket.on('error', () => {});
      if (--waiting === 0 && !failed) start(id, job, sockets);
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
