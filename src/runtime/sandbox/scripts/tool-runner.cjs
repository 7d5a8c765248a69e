// The server tools' runner (tool.ts starts it as `node -e`, inside their sandbox): one request a
// line on stdin (run a command, kill one, read, write or remove a file under /work), one answer a
// line on stdout, each with the request's id.
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const kills = new Map();
const send = (m) => process.stdout.write(JSON.stringify(m) + '\n');
const inside = (p) => {
  const r = path.resolve('/work', p);
  if (r !== '/work' && !r.startsWith('/work/')) throw new Error('outside /work: ' + p);
  return r;
};
const failed = (e) => ({ exitCode: 127, stdout: '', stderr: String(e.message), truncated: false, timedOut: false });
function exec(m) {
  return new Promise((resolve) => {
    let child;
    try {
      child = spawn(m.argv[0], m.argv.slice(1), {
        cwd: '/work',
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { PATH: '/usr/local/bin:/usr/bin:/bin', HOME: '/work', LANG: 'C.UTF-8', TMPDIR: '/tmp' },
      });
    } catch (e) {
      return resolve(failed(e));
    }
    const out = { stdout: [], stderr: [] };
    let size = 0;
    let truncated = false;
    let timedOut = false;
    const take = (k) => (b) => {
      if (size >= m.max) {
        truncated = true;
        return;
      }
      out[k].push(b.subarray(0, m.max - size));
      truncated = truncated || b.length > m.max - size;
      size += Math.min(b.length, m.max - size);
    };
    child.stdout.on('data', take('stdout'));
    child.stderr.on('data', take('stderr'));
    const kill = () => {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {}
    };
    const timer = setTimeout(() => {
      timedOut = true;
      kill();
    }, m.timeoutMs);
    kills.set(m.id, kill);
    child.on('error', (e) => {
      clearTimeout(timer);
      kills.delete(m.id);
      resolve(failed(e));
    });
    child.on('close', (code, sig) => {
      clearTimeout(timer);
      kills.delete(m.id);
      kill();
      const text = (k) => Buffer.concat(out[k]).toString('utf8');
      resolve({ exitCode: code, signal: sig, stdout: text('stdout'), stderr: text('stderr'), truncated, timedOut });
    });
  });
}
async function handle(m) {
  if (m.op === 'exec') return exec(m);
  if (m.op === 'kill') {
    (kills.get(m.target) || (() => {}))();
    return {};
  }
  if (m.op === 'read') {
    try {
      return { content: fs.readFileSync(inside(m.path), 'utf8') };
    } catch (e) {
      if (e.code === 'ENOENT') return { content: null };
      throw e;
    }
  }
  if (m.op === 'write') {
    const p = inside(m.path);
    fs.mkdirSync(path.dirname(p), { recursive: true });
    fs.writeFileSync(p, m.content);
    return {};
  }
  if (m.op === 'remove') {
    fs.rmSync(inside(m.path));
    return {};
  }
  throw new Error('unknown op');
}
let buf = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (d) => {
  buf += d;
  for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
    const line = buf.slice(0, i);
    buf = buf.slice(i + 1);
    let m;
    try {
      m = JSON.parse(line);
    } catch {
      continue;
    }
    handle(m).then(
      (r) => send({ id: m.id, ...r }),
      (e) => send({ id: m.id, error: String(e?.message || e) }),
    );
  }
});
process.stdin.on('end', () => process.exit(0));
