// The patch format of apply_patch (the one OpenAI's models and Codex write), parsed and applied
// to file contents. Pure; the files are read and written inside the sandbox (shell-tools.ts).
//   *** Begin Patch
//   *** Add File: PATH      then its lines, each after `+`
//   *** Delete File: PATH
//   *** Update File: PATH   optionally `*** Move to: PATH`, then hunks: `@@` (optionally with a
//                           line to find first), lines after ` ` (kept), `-` (removed), `+` (added)
//   *** End Patch
// May import: ./types.ts.
import { ToolError } from './types.ts';

export type Hunk = { anchor: string | null; old: string[]; new: string[] };
export type PatchOp =
  | { kind: 'add'; path: string; content: string }
  | { kind: 'delete'; path: string }
  | { kind: 'update'; path: string; moveTo: string | null; hunks: Hunk[] };

const HEADER = /^\*\*\* (Add|Delete|Update) File: (.+)$/;

function checkPath(p: string, line: number): string {
  const path = p.trim();
  if (!path || path.startsWith('/') || path.split('/').includes('..'))
    throw new ToolError(
      `line ${line}: the path ${JSON.stringify(path)} must be relative to the work directory, without ..`,
    );
  return path;
}

export function parsePatch(text: string): PatchOp[] {
  const lines = text.replace(/\r\n/g, '\n').split('\n');
  while (lines.length && lines.at(-1)!.trim() === '') lines.pop();
  if (lines[0]?.trim() !== '*** Begin Patch') throw new ToolError('line 1: a patch starts with "*** Begin Patch"');
  if (lines.at(-1)?.trim() !== '*** End Patch') throw new ToolError('the patch must end with "*** End Patch"');
  const ops: PatchOp[] = [];
  let i = 1;
  while (i < lines.length - 1) {
    const m = HEADER.exec(lines[i]!);
    if (!m) throw new ToolError(`line ${i + 1}: expected "*** Add File:", "*** Update File:" or "*** Delete File:"`);
    const path = checkPath(m[2]!, i + 1);
    i++;
    if (m[1] === 'Delete') {
      ops.push({ kind: 'delete', path });
      continue;
    }
    if (m[1] === 'Add') {
      const body: string[] = [];
      for (; i < lines.length - 1 && !lines[i]!.startsWith('*** '); i++) {
        if (!lines[i]!.startsWith('+'))
          throw new ToolError(`line ${i + 1}: each line of an added file starts with "+"`);
        body.push(lines[i]!.slice(1));
      }
      ops.push({ kind: 'add', path, content: body.length ? `${body.join('\n')}\n` : '' });
      continue;
    }
    let moveTo: string | null = null;
    const move = /^\*\*\* Move to: (.+)$/.exec(lines[i] ?? '');
    if (move) {
      moveTo = checkPath(move[1]!, i + 1);
      i++;
    }
    const hunks: Hunk[] = [];
    let hunk: Hunk | null = null;
    for (; i < lines.length - 1 && (!lines[i]!.startsWith('*** ') || lines[i] === '*** End of File'); i++) {
      const l = lines[i]!;
      if (l === '*** End of File') continue;
      if (l.startsWith('@@')) {
        hunk = { anchor: l.slice(2).trim() || null, old: [], new: [] };
        hunks.push(hunk);
        continue;
      }
      if (!hunk) {
        hunk = { anchor: null, old: [], new: [] };
        hunks.push(hunk);
      }
      const kind = l[0] ?? ' ';
      const rest = l.slice(1);
      if (kind === ' ' || l === '') {
        hunk.old.push(rest);
        hunk.new.push(rest);
      } else if (kind === '-') hunk.old.push(rest);
      else if (kind === '+') hunk.new.push(rest);
      else throw new ToolError(`line ${i + 1}: a hunk's lines start with " ", "-" or "+"`);
    }
    if (!hunks.length && !moveTo) throw new ToolError(`${path}: an update with no change`);
    ops.push({ kind: 'update', path, moveTo, hunks });
  }
  if (!ops.length) throw new ToolError('the patch changes nothing');
  return ops;
}

/** Where `want` occurs in `lines` at or after `from`: exactly, else ignoring trailing, then all surrounding whitespace. */
function find(lines: string[], want: string[], from: number): number {
  const norms = [(s: string) => s, (s: string) => s.trimEnd(), (s: string) => s.trim()];
  for (const norm of norms) {
    for (let at = from; at + want.length <= lines.length; at++)
      if (want.every((w, k) => norm(lines[at + k]!) === norm(w))) return at;
  }
  return -1;
}

export function applyHunks(content: string, hunks: Hunk[], path: string): string {
  const endsWithNewline = content.endsWith('\n');
  const lines = (endsWithNewline ? content.slice(0, -1) : content).split('\n');
  let pos = 0;
  for (const h of hunks) {
    if (h.anchor) {
      const a = find(lines, [h.anchor], pos);
      if (a < 0) throw new ToolError(`${path}: could not find the line ${JSON.stringify(h.anchor)}`);
      pos = a + 1;
    }
    const at = h.old.length ? find(lines, h.old, pos) : lines.length;
    if (at < 0) throw new ToolError(`${path}: could not find the lines to change:\n${h.old.slice(0, 5).join('\n')}`);
    lines.splice(at, h.old.length, ...h.new);
    pos = at + h.new.length;
  }
  return `${lines.join('\n')}${endsWithNewline || content === '' ? '\n' : ''}`;
}
