// The admin commands: each names its positional arguments and options, checks them before the
// store is opened (a bad value is a UsageError, exit 2), and returns the action, which gives what
// to print as JSON and as human lines.
import { parseArgs, type ParseArgsConfig } from 'node:util';
import * as identity from '../gateway/access/identity.ts';
import { isUuid } from '../gateway/http/common.schemas.ts';
import { keyJson, keyLine, membershipJson, membershipLine, orgJson, orgLine, userJson, userLine } from './render.ts';

export class UsageError extends Error {}

type Values = Record<string, string | boolean | undefined>;
export type Output = { json: unknown; lines: string[] };
export type Command = {
  usage: string;
  args: string[];
  options: NonNullable<ParseArgsConfig['options']>;
  prepare(args: string[], v: Values): Action;
};
/** What a command acts through: the CLI's own session on the store, or a running gateway's. */
export type Action = (s: { admin: identity.Admin }) => Promise<Output>;

const ROLES = ['owner', 'admin', 'member'];
const str = { type: 'string' } as const;
const flag = { type: 'boolean' } as const;

function uuid(value: string, what: string): string {
  if (!isUuid(value)) throw new UsageError(`${what} must be a UUID, got "${value}"`);
  return value.toLowerCase();
}

function name(value: string, what = 'NAME'): string {
  const v = value.trim();
  if (!v || v.length > 200) throw new UsageError(`${what} must be 1 to 200 characters`);
  return v;
}

function role(value: string | boolean | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !ROLES.includes(value))
    throw new UsageError(`--role must be one of ${ROLES.join(', ')}`);
  return value;
}

/** Exactly one of --user / --org, for the programme commands. */
function subject(v: Values): { userId?: string; orgId?: string } {
  if ((v.user === undefined) === (v.org === undefined))
    throw new UsageError('give exactly one of --user ID or --org ID');
  return v.user !== undefined ? { userId: String(v.user) } : { orgId: uuid(String(v.org), '--org') };
}

const list = <T>(rows: T[], line: (r: T) => string): Output => ({
  json: { data: rows },
  lines: rows.length ? rows.map(line) : ['(none)'],
});
const optUuid = (v: string | boolean | undefined, what: string) =>
  v === undefined ? undefined : uuid(String(v), what);

const programme = (member: boolean): Command => ({
  usage: `programme ${member ? 'grant' : 'revoke'} (--user ID | --org ID)`,
  args: [],
  options: { user: str, org: str },
  prepare(_a, v) {
    const who = subject(v);
    return async (s) => {
      await identity.setProgramme(s.admin, { ...who, member });
      const json = { ...(who.userId ? { user_id: who.userId } : { org_id: who.orgId }), interns_programme: member };
      const whom = who.userId ? `user ${who.userId}` : `organization ${who.orgId}`;
      return { json, lines: [`${whom} ${member ? 'is now in' : 'is no longer in'} the interns programme`] };
    };
  },
});

const keyGrant = (granted: boolean): Command => ({
  usage: `key ${granted ? 'grant' : 'ungrant'} KEY_ID`,
  args: ['KEY_ID'],
  options: {},
  prepare([id]) {
    const keyId = uuid(id!, 'KEY_ID');
    return async (s) => {
      const k = keyJson(await identity.grantKey(s.admin, { id: keyId, granted }));
      return { json: k, lines: [`${granted ? 'granted' : 'ungranted'}: ${keyLine(k)}`] };
    };
  },
});

export const COMMANDS: Record<string, Command> = {
  'org create': {
    usage: 'org create NAME [--interns]',
    args: ['NAME'],
    options: { interns: flag },
    prepare([n], v) {
      const input = { name: name(n!), internsProgramme: v.interns === true };
      return async (s) => {
        const o = orgJson(await identity.createOrganization(s.admin, input));
        return { json: o, lines: [`created ${orgLine(o)}`] };
      };
    },
  },
  'org list': {
    usage: 'org list',
    args: [],
    options: {},
    prepare: () => async (s) => list((await identity.listOrganizations(s.admin.db)).map(orgJson), orgLine),
  },
  'user create': {
    usage: 'user create NAME [--org ORG_ID] [--role owner|admin|member] [--interns]',
    args: ['NAME'],
    options: { org: str, role: str, interns: flag },
    prepare([n], v) {
      const orgId = optUuid(v.org, '--org');
      if (v.role !== undefined && !orgId) throw new UsageError('--role needs --org');
      const input = { name: name(n!), internsProgramme: v.interns === true, orgId, role: role(v.role) };
      return async (s) => {
        const row = await identity.createUser(s.admin, input);
        const u = userJson(await identity.userWithMemberships(s.admin.db, row.id));
        return { json: u, lines: [`created ${userLine(u)}`] };
      };
    },
  },
  'user list': {
    usage: 'user list',
    args: [],
    options: {},
    prepare: () => async (s) => list((await identity.listUsers(s.admin.db)).map(userJson), userLine),
  },
  'member add': {
    usage: 'member add ORG_ID USER_ID [--role owner|admin|member]',
    args: ['ORG_ID', 'USER_ID'],
    options: { role: str },
    prepare([org, userId], v) {
      const input = { orgId: uuid(org!, 'ORG_ID'), userId: userId!, role: role(v.role) };
      return async (s) => {
        const m = membershipJson(await identity.addMember(s.admin, input));
        return { json: m, lines: [`added ${membershipLine(m)}`] };
      };
    },
  },
  'member remove': {
    usage: 'member remove ORG_ID USER_ID',
    args: ['ORG_ID', 'USER_ID'],
    options: {},
    prepare([org, userId]) {
      const input = { orgId: uuid(org!, 'ORG_ID'), userId: userId! };
      return async (s) => {
        const m = membershipJson(await identity.removeMember(s.admin, input));
        return { json: m, lines: [`removed ${membershipLine(m)}; keys they created now work only where granted`] };
      };
    },
  },
  'programme grant': programme(true),
  'programme revoke': programme(false),
  'key create': {
    usage:
      'key create --org ORG_ID --user USER_ID [--management] [--acts-as user|organization] [--workspace ID_OR_SLUG] [--name NAME]',
    args: [],
    options: { org: str, user: str, management: flag, 'acts-as': str, workspace: str, name: str },
    prepare(_a, v) {
      if (v.org === undefined || v.user === undefined)
        throw new UsageError('key create needs --org ORG_ID and --user USER_ID');
      const actsAs = v['acts-as'] ?? 'user';
      if (actsAs !== 'user' && actsAs !== 'organization')
        throw new UsageError('--acts-as must be user or organization');
      const input = {
        orgId: uuid(String(v.org), '--org'),
        userId: String(v.user),
        management: v.management === true,
        actsAs,
        workspace: v.workspace === undefined ? undefined : String(v.workspace),
        name: v.name === undefined ? undefined : name(String(v.name), '--name'),
      } as const;
      return async (s) => {
        const { key, raw } = await identity.createKey(s.admin, input);
        const k = keyJson(key);
        return {
          json: { ...k, key: raw },
          lines: [`created ${keyLine(k)}`, '', raw, '', 'Store this key now: it is shown only once.'],
        };
      };
    },
  },
  'key revoke': {
    usage: 'key revoke KEY_ID',
    args: ['KEY_ID'],
    options: {},
    prepare([id]) {
      const keyId = uuid(id!, 'KEY_ID');
      return async (s) => {
        const k = keyJson(await identity.revokeKey(s.admin, keyId));
        return { json: k, lines: [`revoked ${keyLine(k)}`] };
      };
    },
  },
  'key grant': keyGrant(true),
  'key ungrant': keyGrant(false),
  'key list': {
    usage: 'key list [--org ORG_ID]',
    args: [],
    options: { org: str },
    prepare(_a, v) {
      const orgId = optUuid(v.org, '--org');
      return async (s) => list((await identity.listKeys(s.admin.db, orgId)).map(keyJson), keyLine);
    },
  },
};

const GLOBAL = {
  json: { type: 'boolean' },
  'data-dir': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

export type Parsed =
  | { help: string }
  | { help?: undefined; action: Action; json: boolean; dataDir: string | undefined };

/** Parses and checks an admin command line (a bad one is a UsageError) without opening anything. */
export function parseAdmin(argv: string[]): Parsed {
  const key = argv.slice(0, 2).join(' ');
  const cmd = COMMANDS[key];
  if (!cmd) throw new UsageError(`unknown command "${key}"`);
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({
      args: argv.slice(2),
      options: { ...GLOBAL, ...cmd.options },
      allowPositionals: true,
      strict: true,
    });
  } catch (err) {
    const e = err as { code?: string; message: string };
    const option = /'(-[^' ]+)/.exec(e.message)?.[1];
    throw new UsageError(
      e.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && option ? `unknown option ${option}` : e.message.split('\n')[0]!,
    );
  }
  const { values: v, positionals } = parsed;
  if (v.help) return { help: `usage: cohort ${cmd.usage}` };
  if (positionals.length !== cmd.args.length) {
    throw new UsageError(
      cmd.args.length ? `expected ${cmd.args.join(' ')}` : `unexpected argument "${positionals[0]}"`,
    );
  }
  return {
    action: cmd.prepare(positionals, v as Values),
    json: v.json === true,
    dataDir: typeof v['data-dir'] === 'string' ? v['data-dir'] : undefined,
  };
}
