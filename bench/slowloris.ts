// A slowloris client for bench:inference (and by hand): COUNT sockets to a loopback gateway from
// one source address, each sending a request line and then one header every DRIP_MS, never
// finishing its head; a socket the gateway closes (refused at accept, or timed out) is opened
// again after DRIP_MS, as slowloris tools do. Prints `ready` once every socket was tried, and
// stops by itself after MAX_MS. Loopback only.
// Usage: node --import tsx bench/slowloris.ts PORT [COUNT=19000] [FROM=127.0.0.2] [DRIP_MS=10000] [MAX_MS=600000]
import { connect } from 'node:net';

const [port, count = 19_000, from = '127.0.0.2', dripMs = 10_000, maxMs = 600_000] = process.argv
  .slice(2)
  .map((a, i) => (i === 2 ? a : Number(a))) as [number, number, string, number, number];
if (!/^127\./.test(from)) throw new Error('the slowloris only runs from a loopback address');

let open = 0;
let stopping = false;

function slot(): void {
  if (stopping) return;
  const socket = connect({ port, host: '127.0.0.1', localAddress: from });
  let drip: NodeJS.Timeout | null = null;
  socket.on('connect', () => {
    open++;
    socket.write('POST /api/v1/chat/completions HTTP/1.1\r\nhost: gateway\r\n');
    drip = setInterval(() => socket.write('x-slow: 1\r\n'), dripMs);
  });
  socket.on('error', () => {});
  socket.on('close', (hadError) => {
    if (drip) open--;
    clearInterval(drip!);
    setTimeout(slot, hadError && !drip ? 1000 : dripMs).unref();
  });
}

// Opened in batches, so the gateway's listen backlog is not the only thing refusing them.
for (let i = 0; i < count; i += 500) {
  for (let j = i; j < Math.min(count, i + 500); j++) slot();
  await new Promise((r) => setTimeout(r, 10));
}
process.stdout.write(`ready ${count}\n`);
const stop = () => {
  stopping = true;
  process.exit(0);
};
setTimeout(stop, maxMs);
process.on('SIGTERM', stop);
setInterval(() => process.stderr.write(`slowloris: ${open} connected\n`), 30_000).unref();
