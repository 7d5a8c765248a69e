// Each isolated intern's agent runs as a uid of its own, so the kernel keeps interns apart where
// namespaces do not (process limits count per uid; one uid cannot signal or trace another).
// - A uid is claimed by creating `<data dir>/run/uids/<uid>` exclusively (atomic across processes);
//   the claim names its intern.
// - No state outlives an intern's uid: a deleted intern's uid is quarantined
//   (`<uid>.released-<ms>`), and handed out again only once every other uid of the range was used,
//   the longest-quarantined first, after any process still running as it has been killed. The
//   seccomp filter refuses kernel keyrings, the one store the kernel keeps per uid across namespaces.
// - Each installation's range is its own: chosen at the first start (or configured), kept in
//   `<data dir>/run/uid-range`, and registered host-wide, so that two installations on one host
//   never give their interns the same uids (docs/isolation.md, "Users").
// May import: node built-ins.
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { randomInt } from 'node:crypto';
import { join } from 'node:path';

export type UidPool = {
  claim(internId: string): number;
  /** The uid an intern holds, if it holds one. */
  owned(internId: string): number | null;
  release(internId: string): void;
};

const RELEASED = /^(\d+)\.released-(\d+)$/;

/** Processes on this host running as `uid` (their pids), seen in /proc. */
function processesOf(uid: number): number[] {
  const pids: number[] = [];
  for (const p of readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    try {
      if (/^Uid:\s+\d+\s+(\d+)/m.exec(readFileSync(`/proc/${p}/status`, 'utf8'))?.[1] === String(uid))
        pids.push(Number(p));
    } catch {}
  }
  return pids;
}

export function createUidPool(opts: {
  dir: string;
  base: number;
  size: number;
  /** The time a quarantine starts; injectable for tests. */
  now?: () => number;
}): UidPool {
  mkdirSync(opts.dir, { recursive: true, mode: 0o700 });
  const now = opts.now ?? Date.now;
  const inRange = (uid: number) => uid >= opts.base && uid < opts.base + opts.size;
  const entries = () => {
    const claimed = new Map<number, string>();
    const released: { uid: number; since: number; file: string }[] = [];
    for (const f of readdirSync(opts.dir)) {
      const r = RELEASED.exec(f);
      if (r) released.push({ uid: Number(r[1]), since: Number(r[2]), file: f });
      else if (/^\d+$/.test(f)) {
        try {
          claimed.set(Number(f), readFileSync(join(opts.dir, f), 'utf8'));
        } catch {}
      }
    }
    return { claimed, released };
  };
  /** Takes `uid` for `internId` if nobody holds it; false if another claim came first. */
  const take = (uid: number, internId: string): boolean => {
    try {
      const fd = openSync(join(opts.dir, String(uid)), 'wx', 0o600);
      writeSync(fd, internId);
      closeSync(fd);
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      return false;
    }
  };
  const quarantine = (uid: number) => {
    try {
      renameSync(join(opts.dir, String(uid)), join(opts.dir, `${uid}.released-${now()}`));
    } catch {}
  };

  return {
    claim(internId) {
      const { claimed, released } = entries();
      for (const [uid, owner] of claimed) {
        if (owner !== internId) continue;
        if (inRange(uid)) return uid;
        // A uid of a range this installation no longer uses (COHORT_INTERN_UID_BASE changed): the
        // intern gets one of its own range; the launcher hands its files to it.
        quarantine(uid);
      }
      const quarantined = new Set(released.map((r) => r.uid));
      for (let uid = opts.base; uid < opts.base + opts.size; uid++) {
        if (claimed.has(uid) || quarantined.has(uid)) continue;
        if (take(uid, internId)) return uid;
      }
      // Every uid was used once: the longest-quarantined one, with nothing of it left running.
      for (const r of released.filter((x) => inRange(x.uid)).sort((a, b) => a.since - b.since)) {
        const claiming = join(opts.dir, `${r.uid}.claiming`);
        try {
          renameSync(join(opts.dir, r.file), claiming);
        } catch {
          continue; // another gateway took it
        }
        for (const pid of processesOf(r.uid)) {
          try {
            process.kill(pid, 'SIGKILL');
          } catch {}
        }
        const ok = take(r.uid, internId);
        rmSync(claiming, { force: true });
        if (ok) return r.uid;
      }
      throw new Error(
        `no free intern uid in ${opts.base}..${opts.base + opts.size - 1}; raise COHORT_INTERN_UID_COUNT`,
      );
    },
    owned(internId) {
      for (const [uid, owner] of entries().claimed) if (owner === internId && inRange(uid)) return uid;
      return null;
    },
    release(internId) {
      for (const [uid, owner] of entries().claimed) if (owner === internId) quarantine(uid);
    },
  };
}

/** The host-wide list of installations' uid ranges: one file per range, naming its data dir. */
export const UID_REGISTRY = '/var/lib/cohort/uid-ranges';
/** The range before ranges were per installation: an installation with interns from then keeps it. */
const LEGACY_BASE = 200_000;
/** Chosen ranges start here, in steps of their size: above any host's own users, below 2^31. */
const CHOSEN_FROM = 0x1000_0000;
const CHOSEN_SLOTS = 4096;

type Range = { base: number; count: number };
const overlaps = (a: Range, b: Range) => a.base < b.base + b.count && b.base < a.base + a.count;

/** The live registrations: those whose data dir still says it holds that range (the others, of
 * installations since removed, are removed here). */
function registered(registry: string): { range: Range; dataDir: string }[] {
  const live: { range: Range; dataDir: string }[] = [];
  for (const f of readdirSync(registry)) {
    const m = /^(\d+)-(\d+)$/.exec(f);
    if (!m) continue;
    const range = { base: Number(m[1]), count: Number(m[2]) };
    let dataDir = '';
    try {
      dataDir = readFileSync(join(registry, f), 'utf8');
    } catch {
      continue;
    }
    const theirs = readRange(dataDir);
    if (theirs && theirs.base === range.base && theirs.count === range.count) live.push({ range, dataDir });
    else rmSync(join(registry, f), { force: true });
  }
  return live;
}

/** Another installation whose range overlaps `range`, by its data dir. */
const holderOf = (live: { range: Range; dataDir: string }[], range: Range, dataDir: string): string | null =>
  live.find((r) => r.dataDir !== dataDir && overlaps(r.range, range))?.dataDir ?? null;

function readRange(dataDir: string): Range | null {
  try {
    const r = JSON.parse(readFileSync(join(dataDir, 'run', 'uid-range'), 'utf8')) as Range;
    return Number.isInteger(r.base) && Number.isInteger(r.count) ? r : null;
  } catch {
    return null;
  }
}

export class UidRangeTaken extends Error {
  override name = 'UidRangeTaken';
}

/** This installation's uid range: the configured one, else the one it chose at its first start,
 * registered host-wide so that no other installation on this host uses it. Throws UidRangeTaken
 * when another installation's range overlaps a configured one. */
export function installationUidRange(o: {
  dataDir: string;
  /** COHORT_INTERN_UID_BASE, when the operator set it. */
  base?: number;
  count: number;
  registry?: string;
}): Range {
  const registry = o.registry ?? UID_REGISTRY;
  mkdirSync(join(o.dataDir, 'run'), { recursive: true, mode: 0o700 });
  const dataDir = realpathSync(o.dataDir);
  mkdirSync(registry, { recursive: true, mode: 0o700 });
  const kept = readRange(dataDir);
  const live = registered(registry);
  let range: Range;
  if (o.base !== undefined) range = { base: o.base, count: o.count };
  else if (kept && kept.count === o.count) range = kept;
  else if (existsSync(join(dataDir, 'run', 'uids')) && readdirSync(join(dataDir, 'run', 'uids')).length)
    range = { base: LEGACY_BASE, count: o.count };
  else range = choose(live, dataDir, o.count);
  const holder = holderOf(live, range, dataDir);
  if (holder)
    throw new UidRangeTaken(
      `intern uids ${range.base}..${range.base + range.count - 1} overlap those of the cohort installation at ${holder} on this host: two installations would give their interns the same uids; set COHORT_INTERN_UID_BASE to a range of its own`,
    );
  if (!kept || kept.base !== range.base || kept.count !== range.count)
    writeFileSync(join(dataDir, 'run', 'uid-range'), JSON.stringify(range), { mode: 0o600 });
  writeFileSync(join(registry, `${range.base}-${range.count}`), dataDir, { mode: 0o600 });
  return range;
}

/** A free range of `count` uids, at random among the chosen slots. */
function choose(live: { range: Range; dataDir: string }[], dataDir: string, count: number): Range {
  const step = Math.max(count, 65_536);
  const slots = Math.min(CHOSEN_SLOTS, Math.floor((0x7fff_ffff - CHOSEN_FROM) / step));
  const first = randomInt(slots);
  for (let i = 0; i < slots; i++) {
    const range = { base: CHOSEN_FROM + ((first + i) % slots) * step, count };
    if (!holderOf(live, range, dataDir)) return range;
  }
  throw new UidRangeTaken('no free range of intern uids on this host: set COHORT_INTERN_UID_BASE');
}
