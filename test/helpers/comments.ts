// The comments of a TypeScript, TSX or JavaScript source, found by a small lexer rather than the
// TypeScript parser (loading it takes seconds; this reads the whole tree in well under one). It
// skips what only looks like a comment: strings, template literals (with nested `${}`), regular
// expression literals and, in TSX, element text and attributes. test/comment-paths.test.ts holds
// it to a table of such cases.

export interface Comment {
  /** 1-based line of the comment's first character. */
  line: number;
  text: string;
}

// After one of these (or at the start), `/` starts a regular expression and `<` may start JSX.
const EXPRESSION_START = new Set([
  '',
  '(',
  ',',
  '=',
  ':',
  '[',
  '!',
  '&',
  '|',
  '?',
  '{',
  '}',
  ';',
  '+',
  '-',
  '*',
  '%',
  '<',
  '>',
  '~',
  '^',
  '=>',
]);
const KEYWORDS_BEFORE_EXPRESSION = new Set([
  'return',
  'typeof',
  'case',
  'do',
  'else',
  'in',
  'of',
  'new',
  'delete',
  'void',
  'throw',
  'instanceof',
  'yield',
  'await',
]);

function isWord(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57) || c === 95 || c === 36;
}

export function comments(source: string, opts: { jsx: boolean }): Comment[] {
  const out: Comment[] = [];
  let i = 0;
  /** The last significant token (punctuation as itself, a word as itself, a literal as 'x'). */
  let prev = '';

  // Comments are found in order, so the line count only moves forward.
  let counted = 0;
  let line = 1;
  const lineAt = (pos: number): number => {
    for (; counted < pos; counted++) if (source.charCodeAt(counted) === 10) line++;
    return line;
  };
  const expressionMayStart = (): boolean => EXPRESSION_START.has(prev) || KEYWORDS_BEFORE_EXPRESSION.has(prev);

  /** Reads a comment at i if there is one; returns whether it did. */
  function comment(): boolean {
    if (source[i] !== '/') return false;
    if (source[i + 1] === '/') {
      const end = source.indexOf('\n', i);
      const stop = end === -1 ? source.length : end;
      out.push({ line: lineAt(i), text: source.slice(i + 2, stop) });
      i = stop;
      return true;
    }
    if (source[i + 1] === '*') {
      const end = source.indexOf('*/', i + 2);
      const stop = end === -1 ? source.length : end + 2;
      out.push({ line: lineAt(i), text: source.slice(i + 2, stop - 2) });
      i = stop;
      return true;
    }
    return false;
  }

  function quoted(q: string): void {
    i++;
    while (i < source.length && source[i] !== q && source[i] !== '\n') i += source[i] === '\\' ? 2 : 1;
    i++;
    prev = 'x';
  }

  function regex(): void {
    i++;
    let inClass = false;
    while (i < source.length && source[i] !== '\n') {
      const c = source[i];
      if (c === '\\') i++;
      else if (c === '[') inClass = true;
      else if (c === ']') inClass = false;
      else if (c === '/' && !inClass) break;
      i++;
    }
    i++;
    while (i < source.length && /[a-z]/i.test(source[i]!)) i++;
    prev = 'x';
  }

  /** A template literal from its backquote; `${…}` parts are code. */
  function template(): void {
    i++;
    while (i < source.length) {
      const c = source[i];
      if (c === '\\') i += 2;
      else if (c === '`') {
        i++;
        break;
      } else if (c === '$' && source[i + 1] === '{') {
        i += 2;
        code(true);
        i++;
      } else i++;
    }
    prev = 'x';
  }

  /** A JSX element from its `<`: tag, attributes, children, closing tag. */
  function element(): void {
    i++;
    let depth = 0;
    // The opening tag (or a fragment's `<>`).
    for (;;) {
      if (i >= source.length) return;
      const c = source[i];
      if (c === '"' || c === "'") quoted(c);
      else if (c === '{') {
        i++;
        code(true);
        i++;
      } else if (c === '/' && source[i + 1] === '>') {
        i += 2;
        prev = 'x';
        return;
      } else if (c === '>') {
        i++;
        break;
      } else if (!comment()) i++;
    }
    // Children: text, expressions, nested elements, until this element's closing tag.
    while (i < source.length) {
      const c = source[i];
      if (c === '{') {
        i++;
        code(true);
        i++;
      } else if (c === '<' && source[i + 1] === '/') {
        const end = source.indexOf('>', i);
        i = end === -1 ? source.length : end + 1;
        if (depth === 0) break;
        depth--;
      } else if (c === '<') element();
      else i++;
    }
    prev = 'x';
  }

  /** Code until the unmatched `close` brace (left at i), or the end. */
  function code(close: boolean): void {
    let braces = 0;
    while (i < source.length) {
      const c = source.charCodeAt(i);
      if (c === 32 || c === 10 || c === 9 || c === 13) i++;
      else if (isWord(c)) {
        const start = i;
        while (i < source.length && isWord(source.charCodeAt(i))) i++;
        prev = source.slice(start, i);
      } else if (c === 47 /* / */) {
        const next = source.charCodeAt(i + 1);
        if (next === 47 || next === 42) comment();
        else if (expressionMayStart()) regex();
        else {
          i++;
          prev = '/';
        }
      } else if (c === 34 || c === 39) quoted(source[i]!);
      else if (c === 96) template();
      else if (c === 60 /* < */ && opts.jsx && expressionMayStart() && /[A-Za-z>]/.test(source[i + 1] ?? '')) element();
      else if (c === 61 /* = */ && source.charCodeAt(i + 1) === 62) {
        i += 2;
        prev = '=>';
      } else if (c === 123 /* { */) {
        braces++;
        i++;
        prev = '{';
      } else if (c === 125 /* } */ && braces === 0 && close) return;
      else {
        if (c === 125) braces--;
        prev = source[i]!;
        i++;
      }
    }
  }

  code(false);
  return out;
}
