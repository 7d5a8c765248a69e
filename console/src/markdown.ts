// Answers as Markdown (docs/console.md, "Answers"): marked turns the model's text into HTML with
// code blocks highlighted by highlight.js (ten common languages: each costs bundle size, CSS and SQL the most, so they are left out) and
// a copy button; sanitise.ts then passes it through DOMPurify before it reaches the page. Raw
// HTML in the model's text is never markup here: it is shown as the text it is. Pure (no DOM), so
// the node tests check it.
import { Marked, type Tokens } from 'marked';
import hljs from 'highlight.js/lib/core';
import bash from 'highlight.js/lib/languages/bash';
import diff from 'highlight.js/lib/languages/diff';
import go from 'highlight.js/lib/languages/go';
import javascript from 'highlight.js/lib/languages/javascript';
import json from 'highlight.js/lib/languages/json';
import python from 'highlight.js/lib/languages/python';
import rust from 'highlight.js/lib/languages/rust';
import typescript from 'highlight.js/lib/languages/typescript';
import xml from 'highlight.js/lib/languages/xml';
import yaml from 'highlight.js/lib/languages/yaml';

for (const [name, lang] of Object.entries({
  bash,
  diff,
  go,
  javascript,
  json,
  python,
  rust,
  typescript,
  xml,
  yaml,
}))
  hljs.registerLanguage(name, lang);
hljs.registerAliases(['sh', 'shell', 'console', 'zsh'], { languageName: 'bash' });

/** Past this, a code block is shown unhighlighted: highlighting a long log at every streamed read costs frames. */
export const HIGHLIGHT_LIMIT = 20_000;

export const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/** Only these link targets become links; anything else (javascript:, data:, relative) stays text. */
const SAFE_HREF = /^(https?:|mailto:)/i;

const marked = new Marked({
  gfm: true,
  breaks: false,
  renderer: {
    html: ({ text }: Tokens.HTML | Tokens.Tag) => escapeHtml(text),
    heading({ tokens, depth }: Tokens.Heading) {
      // The page's h1 and the turn's structure sit above an answer's headings.
      const level = Math.min(6, depth + 2);
      return `<h${level}>${this.parser.parseInline(tokens)}</h${level}>\n`;
    },
    code({ text, lang }: Tokens.Code) {
      const name = (lang ?? '').trim().split(/\s+/)[0]!.toLowerCase();
      const known = name && text.length <= HIGHLIGHT_LIMIT && hljs.getLanguage(name);
      const body = known ? hljs.highlight(text, { language: name, ignoreIllegals: true }).value : escapeHtml(text);
      return (
        `<div class="code"><div class="code-bar"><span>${escapeHtml(name || 'text')}</span>` +
        `<button type="button" class="copy" aria-label="Copy code">Copy</button></div>` +
        // Reachable from the keyboard: a long line scrolls the block sideways.
        `<pre tabindex="0"><code class="hljs">${body}</code></pre></div>\n`
      );
    },
    link({ href, title, tokens }: Tokens.Link) {
      const text = this.parser.parseInline(tokens);
      if (!SAFE_HREF.test(href)) return text;
      const t = title ? ` title="${escapeHtml(title)}"` : '';
      return `<a href="${escapeHtml(href)}"${t} rel="noopener noreferrer" target="_blank">${text}</a>`;
    },
    // No image is loaded from an answer (the page's policy would refuse another origin anyway): its address is a link.
    image({ href, text }: Tokens.Image) {
      return SAFE_HREF.test(href)
        ? `<a href="${escapeHtml(href)}" rel="noopener noreferrer" target="_blank">${escapeHtml(text || href)}</a>`
        : escapeHtml(text);
    },
    checkbox: ({ checked }: Tokens.Checkbox) => (checked ? '☑ ' : '☐ '),
  },
});

/** The answer's HTML before sanitising. */
export const markdownHtml = (text: string): string => marked.parse(text, { async: false });

const FENCE = /^ {0,3}(`{3,}|~{3,})/;
/** A segment is cut at a blank line once it is this long (or at any line break past four times it). */
const SEGMENT = 2048;

/** A reply as segments cut at blank lines outside code blocks, so streamed text re-renders only
 * the last segment: a long answer costs a parse of its tail per read, not of the whole. Joined
 * with '\n', the segments are the text. */
export function segments(text: string): string[] {
  const out: string[] = [];
  const lines = text.split('\n');
  let fence = '';
  let start = 0;
  let size = 0;
  for (let i = 0; i < lines.length - 1; i++) {
    const line = lines[i]!;
    size += line.length + 1;
    const f = FENCE.exec(line)?.[1];
    if (f && !fence) fence = f;
    else if (f && f[0] === fence[0] && f.length >= fence.length && line.trim() === f) fence = '';
    if (fence) continue;
    if ((line.trim() === '' && size >= SEGMENT) || size >= 4 * SEGMENT) {
      out.push(lines.slice(start, i + 1).join('\n'));
      start = i + 1;
      size = 0;
    }
  }
  out.push(lines.slice(start).join('\n'));
  return out;
}
