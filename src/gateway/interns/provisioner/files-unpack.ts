// A folder's upload into an intern's work folder (docs/guides/files.md, "How it stays inside the
// intern"), as a shell script of C programs run by files.ts (stageUpload) inside the intern's own
// view as its uid, in the disk root, under the contract of files-op.mjs (its outcome a JSON line
// last on stderr). A script rather than a Node process for the same reason as the download's
// (files-pack.ts): a Node start is some 90 ms of CPU on these 2-core machines, taken from GNU tar
// and the gateway while the body streams. It looks at the target's components without following
// them (a link, a file or a special file on the way is refused by name, at once: the job's end
// before the body's stops the upload, as GNU tar's failure does); GNU tar unpacks its stdin into
// the staging folder .uploads/<name> (made by the gateway); then it reads the gateway's verdict,
// all it is sent on descriptor 3. On `commit` the staged entries are moved into the target: by one `mv` when the
// target is new (made here), or by files-op.mjs's merge when it exists; on anything else they are
// removed. A link swapped in after the look gets the tenant its own files with its own rights, in
// its own view.
// May import: files-pack.ts (its awk JSON helper).
import { AWK_JSON } from './files-pack.ts';

/** GNU tar's options for an upload: the intern's uid owns what it unpacks, with modes as `git
 * clone` or an editor would make them (the process's umask), and no metadata of the sender's
 * machine. */
const TAR_UNPACK =
  'tar --extract --file=- --numeric-owner --no-acls --no-xattrs --no-selinux --no-same-owner --no-same-permissions --delay-directory-restore';

/** The script: $1 the staging folder's name, $2 the target (relative to work/, checked by the
 * gateway), $3 files-op.mjs (for a merge into a folder that exists), $4 node. GNU tar's last
 * lines of complaint are its failure's detail. */
export const UNPACK_SCRIPT = `set -u
export LC_ALL=C
umask 022
say() { REL=$2 awk -v kind="$1" -v detail="$3" '${AWK_JSON} BEGIN { printf "\\n{\\"ok\\":false,\\"kind\\":\\"%s\\",\\"path\\":%s,\\"detail\\":%s}\\n", kind, json(ENVIRON["REL"]), json(detail) }' >&2; }
staged=.uploads/$1
rel=$2
clean() { find "$staged" -mindepth 1 -maxdepth 1 -exec rm -rf -- {} +; }
why= at= p=work missing=
[ -d work ] && [ ! -L work ] || why=missing
set -f; IFS=/
for c in $rel; do
  [ -z "$why" ] || break
  at=\${at:+$at/}$c; p=$p/$c
  if [ -L "$p" ]; then why=symlink
  elif [ ! -e "$p" ]; then missing=1; break
  elif [ -f "$p" ]; then why=not_folder
  elif [ ! -d "$p" ]; then why=special; fi
done
unset IFS
# A refusal ends the job before the body does: the gateway stops the upload.
if [ -n "$why" ]; then say "$why" "$at" ''; exit 3; fi
# A target not there yet is made whole, however many of its folders are missing.
if [ -n "$missing" ]; then p=work/$rel; fi
err=$(cd "$staged" && exec ${TAR_UNPACK} 2>&1)
code=$?
if [ "$code" -ne 0 ]; then
  clean
  say tar '' "$(printf '%s\\n' "$err" | tail -n 3 | tr '\\n' ';')"
  exit 3
fi
# GNU tar stops at the archive's end; what follows (zeros, when the sender's records are larger
# than tar's) is read and dropped, so that the gateway's writes end well.
cat >/dev/null
# The shell's own read and glob, not a cat and a find: each program started costs milliseconds.
verdict=
IFS= read -r verdict <&3 || :
if [ "$verdict" != commit ]; then clean; say aborted "$rel" ''; exit 3; fi
if [ -z "$missing" ]; then exec "$4" "$3" merge "$1" "$rel"; fi
moved() {
  set +f
  for pattern in '*' '.[!.]*' '..?*'; do
    # A pattern that matches nothing stays as it is, naming nothing.
    set -- "$staged"/$pattern
    if [ -e "$1" ] || [ -L "$1" ]; then mv -t "$p" -- "$@" || return 1; fi
  done
}
mkdir -p -- "$p" && moved || {
  clean
  say failed '' 'the staged entries could not be moved into place'
  exit 3
}
printf '\\n{"ok":true,"type":"directory"}\\n' >&2`;

/** The argv that unpacks an upload staged in .uploads/`name` into the folder `rel`. */
export const unpackArgv = (o: { name: string; rel: string; filesOp: string; node: string }): string[] => [
  '/bin/sh',
  '-c',
  UNPACK_SCRIPT,
  'cohort-unpack',
  o.name,
  o.rel,
  o.filesOp,
  o.node,
];
