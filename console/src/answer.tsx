// An answer on the page: its Markdown segments (markdown.ts), each rendered through the sanitiser
// (sanitise.ts) and re-rendered only when its own text changed, and the code blocks' copy buttons.
import { Component } from 'preact';
import { useEffect, useRef } from 'preact/hooks';
import { segments } from './markdown.ts';
import { answerHtml } from './sanitise.ts';

class Segment extends Component<{ text: string }> {
  override shouldComponentUpdate(next: { text: string }) {
    return next.text !== this.props.text;
  }
  override render({ text }: { text: string }) {
    return <div class="segment" dangerouslySetInnerHTML={{ __html: answerHtml(text) }} />;
  }
}

/** Copies a code block; where the clipboard is not offered (a page served over plain http from
 * another host), selects the code so the reader's own copy works. */
async function copy(e: MouseEvent) {
  const button = (e.target as Element).closest('button.copy');
  const code = button?.closest('.code')?.querySelector('code');
  if (!button || !code) return;
  try {
    await navigator.clipboard.writeText(code.textContent ?? '');
    button.textContent = 'Copied';
  } catch {
    getSelection()?.selectAllChildren(code);
    button.textContent = 'Selected: copy with Ctrl+C';
  }
  setTimeout(() => (button.textContent = 'Copy'), 2000);
}

export function Answer({ text }: { text: string }) {
  // One listener for the copy buttons inside (a button activated from the keyboard clicks too).
  const ref = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = ref.current;
    el?.addEventListener('click', copy);
    return () => el?.removeEventListener('click', copy);
  }, []);
  return (
    <div class="text md" ref={ref}>
      {segments(text).map((s, i) => (
        <Segment key={i} text={s} />
      ))}
    </div>
  );
}
