// Part of `npm install`: the host packages that isolate interns (docs/isolation.md), and the SSH
// client the gateway's git reaches SSH repositories with (docs/guides/repositories.md). On a Debian
// machine where we are root, missing ones are installed with apt-get; elsewhere we say what to
// install. Never fails the install: a gateway without them refuses to provision interns and says why.
// COHORT_SKIP_HOST_SETUP=1 skips it (an image that installs them itself).
import { existsSync } from 'node:fs';
import { spawnSync } from 'node:child_process';

const needs = [
  { file: '/usr/bin/bwrap', pkg: 'bubblewrap' },
  { file: '/usr/bin/unshare', pkg: 'util-linux' },
  { file: '/usr/bin/prlimit', pkg: 'util-linux' },
  { file: '/usr/sbin/mkfs.ext4', pkg: 'e2fsprogs' },
  { file: '/usr/bin/ssh', pkg: 'openssh-client' },
  { file: '/usr/bin/ssh-keygen', pkg: 'openssh-client' },
];

const missing = [...new Set(needs.filter((n) => !existsSync(n.file)).map((n) => n.pkg))];
if (process.env.COHORT_SKIP_HOST_SETUP === '1' || missing.length === 0) process.exit(0);
const say = (s) => process.stderr.write(`cohort: ${s}\n`);
if (process.getuid?.() === 0 && existsSync('/usr/bin/apt-get')) {
  say(`installing ${missing.join(', ')} (isolates each intern; SSH repositories) with apt-get …`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const update = spawnSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env });
  const install =
    update.status === 0
      ? spawnSync('apt-get', ['install', '-y', '-qq', ...missing], { stdio: 'inherit', env })
      : update;
  if (install.status === 0) process.exit(0);
  say(`apt-get could not install ${missing.join(', ')}`);
}
say(
  `interns need ${missing.join(', ')} (Debian packages) to run isolated; install them (as root: apt-get install ${missing.join(' ')}), or interns will not provision.`,
);
