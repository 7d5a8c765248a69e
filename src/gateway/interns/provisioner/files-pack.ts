// A folder of an intern's work folder as a tar stream (docs/guides/files.md, "A folder's
// download"), made by a shell script run by files.ts inside the intern's own view as its uid, in
// the disk root, the way files-op.mjs's operations are (its header says the contract: the outcome
// as a JSON line last on stderr), but for its stdout: GNU tar writes the stream there while the
// walk runs, and it is the gateway's to send only once `ok` is said on descriptor 3 (a refusal
// stops the tar, and says nothing there). A script of C programs rather
// than a Node process: a Node start was most of a download's time before its first byte
// (docs/performance-log.md). It checks the path's components without following them (a link, a
// file or a special file on the way is refused by name), walks the folder once with `find`
// (nothing followed, not past its file system) beside GNU tar, and refuses when the tar stream
// would pass the bounds or an entry cannot be read by this uid. The accounting is GNU tar's own: 512-byte headers, a long-name entry for names (and
// link targets) of 100 bytes and more, files padded to whole blocks, the end's two zero blocks,
// the stream padded to whole records. Names are bytes, separated by NULs (a tenant's may hold
// newlines); awk's lengths are bytes under LC_ALL=C. A link swapped in after the check gets the
// tenant its own files with its own rights, in its own view; what the folder grows by after the
// walk is caught by the gateway while it sends (files.ts, tarOut).
// May import: nothing.

/** GNU tar's writes: records of 128 blocks (64 KiB, what the gateway reads from a socket at once)
 * rather than its default 20, six times fewer writes, reads and chunks sent. */
export const RECORD_BLOCKS = 128;

/** awk: the JSON string of `s` (its control characters as `?`, but newline and tab). */
export const AWK_JSON = `function json(s) { gsub(/\\\\/, "\\\\\\\\", s); gsub(/"/, "\\\\\\"", s); gsub(/\\n/, "\\\\n", s); gsub(/\\t/, "\\\\t", s); gsub(/[\\001-\\037]/, "?", s); return "\\"" s "\\"" }`;

/** awk over find's records (a type letter with its size or link target, then the path): the
 * first bound passed or entry unreadable, as the refusal's JSON line; nothing when all is well. */
const AWK_WALK = `${AWK_JSON}
function block(n) { return int((n + 511) / 512) * 512 }
function long(n) { return n >= 100 ? 512 + block(n + 1) : 0 }
function refuse(kind, name) {
  sub(/^\\.\\/?/, "", name)
  path = ENVIRON["REL"] == "" ? name : name == "" ? ENVIRON["REL"] : ENVIRON["REL"] "/" name
  printf "{\\"ok\\":false,\\"kind\\":\\"%s\\",\\"path\\":%s}\\n", kind, json(path)
  exit
}
BEGIN { RS = "\\0"; bytes = 1024; record = ${RECORD_BLOCKS} * 512 }
NR % 2 == 1 { type = substr($0, 1, 1); data = substr($0, 2); next }
{
  if (type == "D" || type == "F") refuse("denied", $0)
  if ($0 == ".") add = 512
  else if (type == "d") add = 512 + long(length($0) + 1)
  else if (type == "f") add = 512 + long(length($0)) + block(data)
  else if (type == "l") add = 512 + long(length($0)) + long(length(data))
  else add = 512 + long(length($0))
  bytes += add
  if (++entries > ENVIRON["MAX_ENTRIES"] + 0) refuse("too_many", ".")
  if (int((bytes + record - 1) / record) * record > ENVIRON["MAX_BYTES"] + 0) refuse("too_large", ".")
}`;

/** The script: $1 the folder (relative to work/, checked by the gateway), $2 the most bytes of
 * its tar stream, $3 the most entries. */
export const PACK_SCRIPT = `set -u
export LC_ALL=C
refuse() { REL=$2 awk -v kind="$1" '${AWK_JSON} BEGIN { printf "\\n{\\"ok\\":false,\\"kind\\":\\"%s\\",\\"path\\":%s}\\n", kind, json(ENVIRON["REL"]) }' >&2; exit 3; }
rel=$1
[ -d work ] && [ ! -L work ] || refuse missing ''
p=work; at=
set -f; IFS=/
for c in $rel; do
  at=\${at:+$at/}$c; p=$p/$c
  if [ -L "$p" ]; then refuse symlink "$at"
  elif [ ! -e "$p" ]; then refuse missing "$at"
  elif [ -f "$p" ]; then refuse not_folder "$at"
  elif [ ! -d "$p" ]; then refuse special "$at"; fi
done
unset IFS
cd -P -- "$p" || refuse changed "$rel"
# GNU tar starts beside the walk (which also warms what it reads): its stream is the gateway's to
# send only once the walk has passed, said on descriptor 3, and is dropped with the tar otherwise.
# 1: a file changed while it was read (it is in the stream as it was).
tar --create --file=- --blocking-factor=${RECORD_BLOCKS} --format=gnu --numeric-owner --no-acls --no-xattrs \\
  --no-selinux --one-file-system --hard-dereference --warning=no-file-ignored . &
tarpid=$!
verdict=$(find . -xdev \\( -type d \\( -readable -executable -printf 'd\\0%p\\0' -o -printf 'D\\0%p\\0' \\) \\) \\
  -o \\( -type f \\( -readable -printf 'f%s\\0%p\\0' -o -printf 'F\\0%p\\0' \\) \\) \\
  -o \\( -type l -printf 'l%l\\0%p\\0' \\) -o \\( ! -type s -printf 'o\\0%p\\0' \\) 2>/dev/null |
  REL=$rel MAX_BYTES=$2 MAX_ENTRIES=$3 awk '${AWK_WALK.replaceAll("'", "'\\''")}')
if [ -n "$verdict" ]; then
  kill "$tarpid" 2>/dev/null
  wait "$tarpid" 2>/dev/null
  printf '\\n%s\\n' "$verdict" >&2
  exit 3
fi
printf 'ok\\n' >&3
wait "$tarpid"
code=$?
if [ "$code" -le 1 ]; then printf '\\n{"ok":true,"type":"tar"}\\n' >&2; exit 0; fi
printf '\\n{"ok":false,"kind":"tar","path":"","detail":"tar exited %s"}\\n' "$code" >&2
exit 3`;

/** The argv that packs folder `rel` of the work folder, within the bounds. */
export const packArgv = (rel: string, o: { maxBytes: number; maxEntries: number }): string[] => [
  '/bin/sh',
  '-c',
  PACK_SCRIPT,
  'cohort-pack',
  rel,
  String(o.maxBytes),
  String(o.maxEntries),
];
