// How deeply a JSON text nests, checked on the raw text before it is parsed: a body nested
// thousands deep parses, but anything recursive that later walks it (JSON.stringify for the
// request log, a schema, a provider's serializer) overflows the stack. Pure; used by the
// gateway's JSON body parser (./app.ts).

const QUOTE = 34;
const BACKSLASH = 92;
const OPEN_OBJECT = 123;
const OPEN_ARRAY = 91;
const CLOSE_OBJECT = 125;
const CLOSE_ARRAY = 93;

/** True when objects and arrays nest more than `max` deep (the outermost is depth 1). Brackets
 * inside strings do not count; malformed text is left to the parser. */
export function nestsDeeperThan(text: string, max: number): boolean {
  // A text shorter than the limit cannot open more containers than it has characters.
  if (text.length <= max) return false;
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      for (i++; i < text.length; i++) {
        const d = text.charCodeAt(i);
        if (d === BACKSLASH) i++;
        else if (d === QUOTE) break;
      }
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (++depth > max) return true;
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) depth--;
  }
  return false;
}
