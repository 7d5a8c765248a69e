// npm run bench:files — an intern's files and repositories against the same work done by hand on
// this machine: upload and download of a folder of 5,000 files (50 MB) as a tar stream through
// the files API by curl (a client of its own, as tar is; each 3 times a round: uploads(),
// downloads()), beside GNU tar unpacking and packing the same folder; and giving an intern a
// 100 MB repository (the gateway's clone, then its placing in the intern's disk), beside a plain
// `git clone` of it from the same loopback git server. The work by hand is done on a disk made as
// an intern's is (an ext4 image of the same size, loop-mounted, fresh each round:
// ensureDiskImage), where the files API's work lands, in turns with it; and in a folder of this
// host's disk after the rounds (onTheHost). The two differ widely on some machines (creating a
// file on a fresh machine's root disk took 0.9 ms, 5× an image's); the ratio is taken to the
// faster. Beside them, the floor: the same tar streams through a bare Node HTTP server
// (tar-relay-floor.mjs, no sandbox, checks or staging), what any gateway in Node pays on this
// machine. After one round's warm-up, median of BENCH_ROUNDS (3) rounds. Prints a markdown table
// and the load average. Needs the sandbox (bubblewrap) and root, as interns do, and curl.
import { execFile, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { promisify } from 'node:util';
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { startInternFixture } from '../test/helpers/interns.ts';
import { startGitServer } from '../test/helpers/git-server.ts';
import { ensureDiskImage } from '../src/gateway/interns/provisioner/disk.ts';

const run = promisify(execFile);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
/** BENCH_STEPS: which of upload, download, clone to time (all by default; the clone takes half a
 * minute a round, the upload and download seconds). */
const STEPS = new Set((process.env.BENCH_STEPS ?? 'upload,download,clone').split(','));
/** Uploads and downloads a round, each beside tar by hand. */
const TRIES = 3;
const FILES = 5_000;
const FILE_BYTES = 10 * 1024;
const REPO_MB = 100;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const ms = async (f: () => unknown) => {
  const t = performance.now();
  await f();
  return performance.now() - t;
};

const scratch = mkdtempSync(join(tmpdir(), 'cohort-bench-files-'));
// A folder of 5,000 files of 10 KiB (compressible text, as source is), 50 per folder.
const folder = join(scratch, 'folder');
for (let i = 0; i < FILES; i++) {
  const dir = join(folder, `d${Math.floor(i / 50)}`);
  if (i % 50 === 0) mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `f${i}.txt`), `${i} `.repeat(FILE_BYTES).slice(0, FILE_BYTES));
}
const tarFile = join(scratch, 'folder.tar');
execFileSync('tar', ['-c', '-f', tarFile, '-C', folder, '.']);

const git = await startGitServer();
// A repository of 100 MB of incompressible files (as binary assets are: the worst case for a clone).
const repoFiles: Record<string, string> = { 'README.md': 'big\n' };
if (STEPS.has('clone'))
  for (let i = 0; i < REPO_MB; i++) repoFiles[`blob${i}.bin`] = randomBytes(1024 * 1024).toString('latin1');
const url = git.seed('big', repoFiles);

const DISK_MB = 2048;
const f = await startInternFixture({
  onDisk: true,
  env: { COHORT_GIT_HOSTS: git.host, COHORT_INTERN_DISK_MB: String(DISK_MB) },
});
// A disk made as an intern's is, for the work by hand: a fresh one each round, as each round's
// intern has (a fresh ext4 image initialises its tables in the background for a while after it is
// made, which slows what is written meanwhile).
const disk = join(scratch, 'disk');
mkdirSync(disk);
const freshDisk = (round: number) => {
  if (round > 0) execFileSync('umount', [disk]);
  const image = join(scratch, `disk-${round}.img`);
  ensureDiskImage(image, DISK_MB);
  execFileSync('mount', ['-o', 'loop,nosuid,nodev', image, disk]);
  if (round > 0) rmSync(join(scratch, `disk-${round - 1}.img`));
};
const auth = { authorization: `Bearer ${f.gw.keys.api_key}` };
const header = `authorization: ${auth.authorization}`;
const UPLOAD = 'upload a 50 MB folder of 5,000 files (tar; curl -T, beside tar -x)';
const DOWNLOAD = 'download it (tar; curl -o, beside tar -c -f)';

const CLONE = 'clone a 100 MB repository into an intern';
type Row = { ours: number[]; host: number[]; disk: number[]; floor: number[] };
const row = (): Row => ({ ours: [], host: [], disk: [], floor: [] });

// The floor's server, a process of its own with this one's environment (as the gateway's).
const floorServer = spawn(process.execPath, [join(import.meta.dirname, 'tar-relay-floor.mjs')], {
  stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
});
const [floorPort] = (await once(floorServer.stdout!, 'data')) as [Buffer];
const floor = `http://127.0.0.1:${floorPort.toString().trim()}/`;
const rows: Record<string, Row> = { [UPLOAD]: row(), [DOWNLOAD]: row(), [CLONE]: row() };

/** What the step before wrote (50–100 MB) written back to the disk, outside the time of the
 * next: each operation here or by hand then starts with no writeback of another's under way,
 * which would slow whichever came next (an unsettled run read tar -x at 0.2–5 s). */
const settled = () => run('sync');

/** The folder uploaded by `curl -T` to `url`, with `headers`. */
const curlUpload = (url: string, headers: string[] = []) =>
  ms(() =>
    run('curl', [
      '-sS',
      '-f',
      '-o',
      '/dev/null',
      '-H',
      'expect:',
      ...headers.flatMap((h) => ['-H', h]),
      '-T',
      tarFile,
      url,
    ]),
  );
/** The folder uploaded to a folder of its own (up-<i>). */
const upload = (base: string, i: number) => curlUpload(`${base}/files/up-${i}?format=tar`, [header]);
/** The folder unpacked by `tar -x` into a folder of `dir` (untar-<round>-<i>). */
const untar = (dir: string, round: number, i: number) => {
  const to = join(dir, `untar-${round}-${i}`);
  mkdirSync(to);
  return ms(() => run('tar', ['-x', '-f', tarFile, '-C', to]));
};

/** The folder uploaded through the floor into a folder of the disk like an intern's. */
const floorUpload = (round: number, i: number) => {
  const to = join(disk, `floor-${round}-${i}`);
  mkdirSync(to);
  return curlUpload(`${floor}?dir=${encodeURIComponent(to)}`);
};

/** Each step in turn, a step first in each of them (none always follows another's writes). */
const inTurn = <T>(steps: T[], i: number) => [...steps.slice(i % steps.length), ...steps.slice(0, i % steps.length)];

/** TRIES times: the folder uploaded, unpacked by hand on the disk like an intern's, and uploaded
 * through the floor, in turns. */
async function uploads(o: { base: string; round: number }) {
  for (let i = 0; i < TRIES; i++) {
    const steps = [
      async () => rows[UPLOAD]!.ours.push(await upload(o.base, i)),
      async () => rows[UPLOAD]!.disk.push(await untar(disk, o.round, i)),
      async () => rows[UPLOAD]!.floor.push(await floorUpload(o.round, i)),
    ];
    for (const step of inTurn(steps, i)) {
      await settled();
      await step();
    }
  }
}

/** The folder packed by `tar -c -f` from `dir`'s copy (untar-<round>-0). */
const pack = (dir: string, round: number) =>
  ms(() => run('tar', ['-c', '-f', join(scratch, 'hand.tar'), '-C', join(dir, `untar-${round}-0`), '.']));

/** TRIES times: the folder downloaded by `curl -o` (a client in a process of its own writing the
 * file, as `tar -c -f` does by hand: the gateway runs in this process, and a client in it would
 * compete with it), and packed by hand from the disk like an intern's, in turns as above. */
async function downloads(o: { url: string; round: number }) {
  const out = join(scratch, 'out.tar');
  for (let i = 0; i < TRIES; i++) {
    const steps = [
      async () => {
        rmSync(out, { force: true });
        rows[DOWNLOAD]!.ours.push(await ms(() => run('curl', ['-sS', '-f', '-o', out, '-H', header, o.url])));
        if (statSync(out).size < FILES * FILE_BYTES) throw new Error('the download is short');
      },
      async () => rows[DOWNLOAD]!.disk.push(await pack(disk, o.round)),
      async () => {
        const from = encodeURIComponent(join(disk, `untar-${o.round}-0`));
        rows[DOWNLOAD]!.floor.push(await ms(() => run('curl', ['-sS', '-f', '-o', out, `${floor}?dir=${from}`])));
      },
    ];
    for (const step of inTurn(steps, i)) {
      await settled();
      await step();
    }
  }
}

/** The same work by hand in a folder of this host's disk, after the rounds: on some machines its
 * writes take seconds to settle, which would slow whatever came next. */
async function onTheHost() {
  for (let round = 0; round < ROUNDS; round++) {
    for (let i = 0; i < TRIES; i++) {
      await settled();
      rows[UPLOAD]!.host.push(await untar(scratch, round, i));
    }
    for (let i = 0; i < TRIES && STEPS.has('download'); i++) {
      await settled();
      rows[DOWNLOAD]!.host.push(await pack(scratch, round));
    }
    if (STEPS.has('clone')) {
      await settled();
      rows[CLONE]!.host.push(await ms(() => run('git', ['clone', '-q', url, join(scratch, `clone-${round}`)])));
    }
    for (let i = 0; i < TRIES; i++) rmSync(join(scratch, `untar-${round}-${i}`), { recursive: true, force: true });
    rmSync(join(scratch, `clone-${round}`), { recursive: true, force: true });
  }
}

try {
  // Warm-up, not timed: the gateway's code compiled (JIT) and its process helper started, as in a
  // gateway that has served a while.
  {
    const id = await f.intern('bench-warm-up');
    const up = `${f.gw.url}/interns/${id}/files/warm?format=tar`;
    await run('curl', ['-sS', '-f', '-o', '/dev/null', '-H', 'expect:', '-H', header, '-T', tarFile, up]);
    await run('curl', ['-sS', '-f', '-o', '/dev/null', '-H', header, up]);
    await f.gw.call('DELETE', `/interns/${id}`);
    await f.gw.ctx.interns.idle();
  }
  for (let round = 0; round < ROUNDS; round++) {
    const id = await f.intern(`bench-${round}`);
    freshDisk(round);
    const base = `${f.gw.url}/interns/${id}`;

    await uploads({ base, round });
    if (STEPS.has('download')) await downloads({ url: `${base}/files/up-0?format=tar`, round });
    await settled();
    if (STEPS.has('clone'))
      rows[CLONE]!.ours.push(
        await ms(async () => {
          const res = await fetch(`${base}/repositories`, {
            method: 'POST',
            headers: { ...auth, 'content-type': 'application/json' },
            body: JSON.stringify({ url, path: 'big' }),
          });
          if (res.status !== 201) throw new Error(`clone: ${res.status} ${await res.text()}`);
        }),
      );
    // Asynchronously: the git server is this process's own.
    if (STEPS.has('clone')) {
      await settled();
      rows[CLONE]!.disk.push(await ms(() => run('git', ['clone', '-q', url, join(disk, `clone-${round}`)])));
    }
    await f.gw.call('DELETE', `/interns/${id}`);
    await f.gw.ctx.interns.idle();
  }
  await onTheHost();
  console.log(
    `load average ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
  );
  const line = (cells: (string | number)[]) => `| ${cells.join(' | ')} |`;
  console.log(
    line([
      'operation',
      'files API / gateway (ms)',
      "by hand, this host's disk (ms)",
      "by hand, a disk like an intern's (ms)",
      'ratio to the faster',
      'a bare Node relay, the floor (ms)',
      "the floor's ratio",
    ]),
  );
  console.log(line(['---', '---', '---', '---', '---', '---', '---']));
  for (const [name, r] of Object.entries(rows)) {
    if (!r.ours.length) continue;
    const [a, h, d] = [median(r.ours), median(r.host), median(r.disk)];
    const fastest = Math.min(h, d);
    const fl = r.floor.length ? median(r.floor) : null;
    console.log(
      line([
        name,
        a.toFixed(0),
        h.toFixed(0),
        d.toFixed(0),
        `${(a / fastest).toFixed(2)}×`,
        fl === null ? '–' : fl.toFixed(0),
        fl === null ? '–' : `${(fl / fastest).toFixed(2)}×`,
      ]),
    );
  }
  for (const [name, r] of Object.entries(rows)) {
    const all = (xs: number[]) => xs.map((x) => x.toFixed(0)).join(' ');
    if (r.ours.length)
      console.log(`${name}: ${all(r.ours)}; host ${all(r.host)}; disk ${all(r.disk)}; floor ${all(r.floor)}`);
  }
} finally {
  floorServer.disconnect();
  await f.close();
  await git.close();
  if (ROUNDS > 0) execFileSync('umount', [disk]);
  rmSync(scratch, { recursive: true, force: true });
}
