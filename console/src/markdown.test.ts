// The answer renderer without a browser: Markdown to HTML, raw HTML shown as text, links limited
// to safe schemes, code highlighted with a copy button, and the segments a streamed answer is cut into.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HIGHLIGHT_LIMIT, markdownHtml, segments } from './markdown.ts';

test('emphasis, inline code and lists become markup; headings sit below the page’s', () => {
  assert.equal(
    markdownHtml('**Done** with `ls -l`\n\n- a\n- b\n\n# Title'),
    '<p><strong>Done</strong> with <code>ls -l</code></p>\n<ul>\n<li>a</li>\n<li>b</li>\n</ul>\n<h3>Title</h3>\n',
  );
});

test('raw HTML from the model is text, not markup', () => {
  assert.equal(
    markdownHtml('<script>alert(1)</script>\n\nhi <img src=x onerror=alert(2)>'),
    '&lt;script&gt;alert(1)&lt;/script&gt;<p>hi &lt;img src=x onerror=alert(2)&gt;</p>\n',
  );
});

test('links only for http, https and mailto; images are never loaded', () => {
  assert.equal(
    markdownHtml('[a](https://example.org "t") [b](javascript:alert(1)) ![c](https://e.org/x.png) ![d](data:x)'),
    '<p><a href="https://example.org" title="t" rel="noopener noreferrer" target="_blank">a</a> b ' +
      '<a href="https://e.org/x.png" rel="noopener noreferrer" target="_blank">c</a> d</p>\n',
  );
});

test('a fenced block is highlighted in its language, with its language and a copy button', () => {
  const html = markdownHtml('```ts\nconst x = "<b>";\n```');
  assert.equal(
    html,
    '<div class="code"><div class="code-bar"><span>ts</span><button type="button" class="copy" aria-label="Copy code">Copy</button></div>' +
      '<pre tabindex="0"><code class="hljs"><span class="hljs-keyword">const</span> x = <span class="hljs-string">&quot;&lt;b&gt;&quot;</span>;</code></pre></div>\n',
  );
  assert.match(markdownHtml('```\nls\n```'), /<span>text<\/span>.*<code class="hljs">ls<\/code>/s);
  assert.match(markdownHtml('```nosuch\n<x>\n```'), /<code class="hljs">&lt;x&gt;<\/code>/);
  const long = 'a'.repeat(HIGHLIGHT_LIMIT + 1);
  assert.ok(markdownHtml('```js\n' + long + '\n```').includes(`<code class="hljs">${long}</code>`));
  // An unclosed fence (an answer still streaming) is code to the end.
  assert.match(
    markdownHtml('```sh\necho hi'),
    /<code class="hljs"><span class="hljs-built_in">echo<\/span> hi<\/code>/,
  );
});

test('segments cut at blank lines outside code blocks once long, and join back to the text', () => {
  const para = 'word '.repeat(500).trim();
  const code = '```\n' + 'x\n\n'.repeat(1000) + '```';
  const text = [para, para, code, para, 'tail'].join('\n\n');
  const s = segments(text);
  assert.equal(s.join('\n'), text);
  assert.ok(s.length >= 3, String(s.length));
  assert.ok(
    s.some((x) => x.includes(code)),
    'the code block is never cut, blank lines and all',
  );
  // Appending changes the last segment only.
  const more = segments(text + ' and more');
  assert.deepEqual(more.slice(0, -1), s.slice(0, -1));
  assert.deepEqual(segments('short\n\ntext'), ['short\n\ntext']);
  assert.deepEqual(segments(''), ['']);
  assert.deepEqual(segments('y'.repeat(20_000)), ['y'.repeat(20_000)], 'a line is never cut');
});
