// HTML to readable text for the model (web_fetch, web_search): the title, then the body's text
// with headings, list items and links kept as Markdown-like marks, and without scripts, styles
// and markup. Pure and linear (regular expressions without nested quantifiers).
// May import: nothing.

const NAMED: Record<string, string> = {
  amp: '&',
  lt: '<',
  gt: '>',
  quot: '"',
  apos: "'",
  nbsp: ' ',
  mdash: '—',
  ndash: '–',
  hellip: '…',
  copy: '©',
  reg: '®',
  laquo: '«',
  raquo: '»',
  rsquo: '’',
  lsquo: '‘',
  rdquo: '”',
  ldquo: '“',
};

export function decodeEntities(s: string): string {
  return s.replace(/&(#x[0-9a-f]{1,6}|#\d{1,7}|[a-z]{2,8});/gi, (m, e: string) => {
    if (e[0] === '#') {
      const code = e[1] === 'x' || e[1] === 'X' ? Number.parseInt(e.slice(2), 16) : Number(e.slice(1));
      return code > 0 && code <= 0x10ffff && !(code >= 0xd800 && code <= 0xdfff) ? String.fromCodePoint(code) : m;
    }
    return NAMED[e.toLowerCase()] ?? m;
  });
}

const DROP = /<(script|style|noscript|svg|template|iframe|head|select|canvas|object)\b[\s\S]*?<\/\1\s*>/gi;
const BLOCK =
  /<\/?(p|div|section|article|header|footer|main|nav|aside|ul|ol|table|thead|tbody|tr|blockquote|pre|hr|form|figure|figcaption|dl|dt|dd|address|details|summary)\b[^>]*>/gi;

export function htmlToText(html: string): { title: string | null; text: string } {
  const t = /<title\b[^>]*>([\s\S]*?)<\/title\s*>/i.exec(html);
  const title = t ? decodeEntities(t[1]!.replace(/\s+/g, ' ').trim()) || null : null;
  const text = html
    .replace(/<!--[\s\S]*?-->/g, '')
    .replace(DROP, ' ')
    .replace(/<h([1-6])\b[^>]*>/gi, (_, n: string) => `\n\n${'#'.repeat(Number(n))} `)
    .replace(/<\/h[1-6]\s*>/gi, '\n\n')
    .replace(/<li\b[^>]*>/gi, '\n- ')
    .replace(/<br\s*\/?>/gi, '\n')
    .replace(/<(td|th)\b[^>]*>/gi, ' | ')
    .replace(
      /<a\b[^>]*?\bhref\s*=\s*["']?([^"'\s>]+)["']?[^>]*>([\s\S]*?)<\/a\s*>/gi,
      (_, href: string, inner: string) => {
        const label = inner.replace(/<[^>]*>/g, '').trim();
        return label && !href.startsWith('#') && !href.startsWith('javascript:') ? `[${label}](${href})` : label;
      },
    )
    .replace(BLOCK, '\n\n')
    .replace(/<[^>]*>/g, '');
  const lines = decodeEntities(text)
    .split('\n')
    .map((l) => l.replace(/[ \t\f\v\u00a0]+/g, ' ').trim());
  return {
    title,
    text: lines
      .join('\n')
      .replace(/\n{3,}/g, '\n\n')
      .trim(),
  };
}
