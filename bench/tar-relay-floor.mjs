// bench:files's floor: the least a Node HTTP server can do to move a folder's tar between GNU tar
// and a client — no sandbox, no checks, no walk, no staging — run as a process of its own, as the
// gateway runs (with the same environment). GET /?dir=D answers `tar -c` of D; PUT /?dir=D unpacks
// the body with `tar -x` into D and answers once it has. Prints its port.
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';

const server = createServer((req, res) => {
  const dir = new URL(req.url ?? '/', 'http://floor').searchParams.get('dir') ?? '.';
  if (req.method === 'GET') {
    const tar = spawn('tar', ['-c', '-f', '-', '--blocking-factor=128', '-C', dir, '.'], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    res.writeHead(200, { 'content-type': 'application/x-tar' });
    tar.stdout.pipe(res);
    return;
  }
  const tar = spawn('tar', ['-x', '-f', '-', '-C', dir], { stdio: ['pipe', 'ignore', 'inherit'] });
  req.pipe(tar.stdin);
  tar.on('close', (code) => res.writeHead(code === 0 ? 200 : 500).end());
});
server.listen(0, '127.0.0.1', () => console.log(server.address().port));
process.on('disconnect', () => process.exit(0));
