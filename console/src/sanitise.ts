// The one way an answer's HTML reaches the page: DOMPurify with an allow-list of the elements
// and attributes markdown.ts writes. Anything else (a script, an event handler, a style, a form,
// an image, an iframe) is dropped, even though markdown.ts already shows raw HTML as text.
import DOMPurify from 'dompurify';
import { escapeHtml, markdownHtml } from './markdown.ts';

const ALLOWED_TAGS = [
  'a',
  'blockquote',
  'br',
  'button',
  'code',
  'del',
  'div',
  'em',
  'h3',
  'h4',
  'h5',
  'h6',
  'hr',
  'li',
  'ol',
  'p',
  'pre',
  'span',
  'strong',
  'table',
  'tbody',
  'td',
  'th',
  'thead',
  'tr',
  'ul',
];
const ALLOWED_ATTR = ['href', 'title', 'rel', 'target', 'class', 'type', 'start', 'align', 'aria-label', 'tabindex'];

/** Links from an answer open elsewhere, never in the console's own tab. */
DOMPurify.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName === 'A') {
    node.setAttribute('target', '_blank');
    node.setAttribute('rel', 'noopener noreferrer');
  }
});

export function answerHtml(text: string): string {
  // Without a DOM to sanitise in, DOMPurify would hand the input back unchanged: show plain text instead.
  if (!DOMPurify.isSupported) return `<p>${escapeHtml(text)}</p>`;
  return DOMPurify.sanitize(markdownHtml(text), {
    ALLOWED_TAGS,
    ALLOWED_ATTR,
    ALLOWED_URI_REGEXP: /^(?:https?:|mailto:)/i,
  });
}
