// `cohort`: the admin CLI (organizations, users, memberships, programme, keys) and the entry to the
// other programs (gateway, intern daemon, agent, chat), which it only dispatches to.
// May import: cli/*, the gateway's services, store and config. Returns the exit code; undefined leaves the process
// to the program it started (a server keeps running).
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { loadConfig, type Config } from '../gateway/config.ts';
import { ApiError, notInThisBuild } from '../gateway/errors.ts';
import { DataDirBusy } from '../gateway/store/lock.ts';
import { COMMANDS, type Output, parseAdmin, UsageError } from './admin.ts';
import { openSession, unanswered } from './connect.ts';
import {
  BACKUP_USAGE,
  CliRefusal,
  adminThroughGateway,
  backupCommand,
  migrateCommand,
  restoreCommand,
} from './backup.ts';
import { BackupRefused } from '../backup/index.ts';

type Io = { out: (s: string) => void; err: (s: string) => void };
const stdio: Io = { out: (s) => process.stdout.write(s + '\n'), err: (s) => process.stderr.write(s + '\n') };

/** Programs of other modules: file relative to this one (with this module's extension: .ts from
 * source, .js built), and the function it exports. */
const DELEGATES: Record<string, { file: string; fn: string }> = {
  daemon: { file: '../runtime/daemon/main', fn: 'runDaemon' },
  agent: { file: '../runtime/agent/main', fn: 'runAgent' },
  chat: { file: './chat', fn: 'runChat' },
};
const EXT = extname(fileURLToPath(import.meta.url));

export const HELP = [
  'usage: cohort COMMAND [options]',
  '',
  'Programs:',
  '  start                 run the gateway (same as npm start)',
  '  daemon …              run an intern daemon',
  '  agent …               run the built-in agent over ACP on stdio',
  '  chat …                chat with an intern',
  '',
  'Data (each takes --data-dir DIR; DATABASE_URL chooses PostgreSQL):',
  ...BACKUP_USAGE,
  '',
  'Administration (each takes --json, and --data-dir DIR or DATABASE_URL to choose the store):',
  ...Object.values(COMMANDS).map((c) => `  cohort ${c.usage}`),
  '',
  'On the embedded store (PGlite) one process at a time may open a data dir: while a gateway holds',
  'it, these run in that gateway, through its admin socket. With DATABASE_URL they open the store.',
].join('\n');

async function delegate(name: string, args: string[]): Promise<number | undefined> {
  const { file, fn } = DELEGATES[name]!;
  const url = new URL(file + EXT, import.meta.url).href;
  const shown = file.replace(/^\.\.?\//, '');
  const unavailable = () => notInThisBuild(`${shown}${EXT}`, name);
  let mod: Record<string, unknown>;
  try {
    mod = await import(url);
  } catch (err) {
    const e = err as { code?: string; url?: string; message?: string };
    if (e.code === 'ERR_MODULE_NOT_FOUND' && (e.url === url || e.message?.includes(shown))) throw unavailable();
    throw err;
  }
  const run = mod[fn];
  if (typeof run !== 'function') throw unavailable();
  const code: unknown = await run(args);
  return typeof code === 'number' ? code : undefined;
}

function configFrom(env: NodeJS.ProcessEnv): Config {
  try {
    return loadConfig(env);
  } catch (err) {
    const issues = (err as { issues?: { path: PropertyKey[]; message: string }[] }).issues;
    throw new UsageError(
      `invalid environment: ${issues?.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ') ?? (err as Error).message}`,
    );
  }
}

async function admin(argv: string[], io: Io): Promise<number> {
  const parsed = parseAdmin(argv);
  if (parsed.help !== undefined) {
    io.out(parsed.help);
    return 0;
  }
  const config = configFrom({ ...process.env, ...(parsed.dataDir ? { COHORT_DATA_DIR: parsed.dataDir } : {}) });
  let result: Output;
  try {
    const session = await openSession(config);
    try {
      result = await parsed.action(session).catch((err: unknown) => {
        throw unanswered(config, err);
      });
    } finally {
      await session.close();
    }
  } catch (err) {
    // A gateway holds the embedded store: the command runs in it, through its admin socket.
    if (!(err instanceof DataDirBusy)) throw err;
    result = await adminThroughGateway(config.dataDir, argv);
  }
  io.out(parsed.json ? JSON.stringify(result.json, null, 2) : result.lines.join('\n'));
  return 0;
}

async function data(name: 'backup' | 'restore' | 'migrate', argv: string[], io: Io): Promise<number> {
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({
      args: argv,
      options: { 'data-dir': { type: 'string' }, to: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
      allowPositionals: true,
      strict: true,
    });
  } catch (err) {
    throw new UsageError((err as Error).message.split('\n')[0]!);
  }
  const { values: v, positionals } = parsed;
  const usage = BACKUP_USAGE.find((u) => u.trim().startsWith(`cohort ${name}`))!.trim();
  if (v.help) {
    io.out(`usage: ${usage}`);
    return 0;
  }
  const config = configFrom({
    ...process.env,
    ...(typeof v['data-dir'] === 'string' ? { COHORT_DATA_DIR: v['data-dir'] } : {}),
  });
  if (name === 'migrate') {
    if (positionals.length || typeof v.to !== 'string') throw new UsageError(`expected --to URL (${usage})`);
    await migrateCommand(config, v.to, io.out);
    return 0;
  }
  if (positionals.length !== 1 || v.to !== undefined) throw new UsageError(`expected FILE (${usage})`);
  await (name === 'backup' ? backupCommand : restoreCommand)(config, positionals[0]!, io.out);
  return 0;
}

export async function main(argv: string[], io: Io = stdio): Promise<number | undefined> {
  const [first] = argv;
  try {
    if (first === undefined) throw new UsageError('a command is required');
    if (first === 'help' || first === '--help' || first === '-h') {
      io.out(HELP);
      return 0;
    }
    if (first === 'start') {
      if (argv.length > 1)
        throw new UsageError('cohort start takes no arguments; configure it with environment variables');
      await import('../main.ts');
      return undefined;
    }
    if (Object.hasOwn(DELEGATES, first)) return await delegate(first, argv.slice(1));
    // What the commands below write (an archive, a restored or changed database, intern folders) is
    // the operator's alone from the first byte, as what the gateway writes (server.ts).
    process.umask(0o077);
    if (first === 'backup' || first === 'restore' || first === 'migrate') return await data(first, argv.slice(1), io);
    return await admin(argv, io);
  } catch (err) {
    if (err instanceof UsageError) {
      const cmd = COMMANDS[argv.slice(0, 2).join(' ')];
      io.err(`cohort: ${err.message}\n${cmd ? `usage: cohort ${cmd.usage}` : 'Run "cohort help" for the commands.'}`);
      return 2;
    }
    if (
      err instanceof ApiError ||
      err instanceof DataDirBusy ||
      err instanceof BackupRefused ||
      err instanceof CliRefusal
    )
      io.err(`cohort: ${err.message}`);
    else io.err(`cohort: failed: ${(err as Error).message ?? String(err)}`);
    return 1;
  }
}
