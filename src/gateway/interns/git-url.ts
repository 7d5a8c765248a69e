// A repository URL as the gateway's git will reach it (docs/guides/repositories.md): `https://`
// (or `http://`), `ssh://user@host[:port]/path`, or scp-like `user@host:path`. An SSH URL's user,
// host and path go to ssh and git-upload-pack as arguments, so each is held to a shape no option
// parser can take (`-oProxyCommand=…` as a host or user) and no shell word can break; git's own
// transports that run commands or read local files (`ext::`, `file://`, a local path) are not
// URLs here at all.
// May import: nothing.

/** Where a URL points: its transport and the host as credentials and COHORT_GIT_HOSTS name it
 * (`host`, or `host:port` when the port is not the transport's default). */
export type GitRemote =
  | { transport: 'http'; host: string }
  | { transport: 'ssh'; host: string; user: string | null; path: string };

const HOST = /^[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?$/;
const USER = /^[A-Za-z0-9_][A-Za-z0-9._-]*$/;
/** A repository path on the SSH host: printable, no quote, backslash or shell word breaker, not an option. */
const SSH_PATH = /^(?!-)[A-Za-z0-9._~/+@=-]+$/;
/** scp-like: `user@host:path`, the path not starting with `/` twice nor with a `-`. */
const SCP = /^([^@/:]+)@([^@/:]+):(.*)$/;

/** The remote `url` names, or why it is refused (the reason as a refusal of field `url`). */
export function gitRemoteOf(url: string): GitRemote | { refused: string } {
  if (/^[a-z][a-z0-9+.-]*::/i.test(url)) return { refused: 'git transport helpers (`…::`) are refused' };
  const scp = SCP.exec(url);
  if (scp && !url.includes('://')) return sshRemote({ user: scp[1]!, host: scp[2]!, port: '', path: scp[3]! });
  if (/^(git\+)?ssh:\/\//i.test(url)) {
    // Parsed from the raw text: the URL parser takes `-oProxyCommand=x` for a host name.
    const m = /^[a-z+]+:\/\/(?:([^@/]*)@)?([^:/]*)(?::([^/]*))?(\/.*)?$/i.exec(url);
    if (!m) return { refused: 'not an ssh://user@host[:port]/path URL' };
    if (m[1]?.includes(':'))
      return { refused: 'an SSH URL carrying a password is refused; give the key as a git credential' };
    return sshRemote({ user: m[1] ?? null, host: m[2]!, port: m[3] ?? '', path: m[4] ?? '' });
  }
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return { refused: 'not a URL (https://host/path, ssh://user@host/path or user@host:path)' };
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:')
    return { refused: 'must be an https:// (or http://) or SSH (ssh://user@host/path, user@host:path) URL' };
  return { transport: 'http', host: u.host.toLowerCase() };
}

function sshRemote(o: {
  user: string | null;
  host: string;
  port: string;
  path: string;
}): GitRemote | { refused: string } {
  if (o.user !== null && !USER.test(o.user)) return { refused: `SSH user "${o.user}" is not a user name` };
  if (!HOST.test(o.host)) return { refused: `SSH host "${o.host}" is not a host name` };
  if (o.port !== '' && !(/^\d{1,5}$/.test(o.port) && Number(o.port) > 0 && Number(o.port) < 65536))
    return { refused: `SSH port "${o.port}" is not a port` };
  if (!o.path || o.path === '/' || !SSH_PATH.test(o.path))
    return { refused: 'the SSH repository path must be letters, digits and . _ ~ / + @ = - (not starting with -)' };
  const host = o.host.toLowerCase();
  return {
    transport: 'ssh',
    host: o.port && o.port !== '22' ? `${host}:${Number(o.port)}` : host,
    user: o.user,
    path: o.path,
  };
}
