// One of the intern's tool calls in the transcript (the `cohort_tool` extension,
// docs/reference/tool-events.md): a collapsible block whose summary names the tool, its status and
// its command; inside, the input and the output in monospace, the output bounded in height with a
// control to show it whole. Live: the block changes as the call's events arrive.
import { useState } from 'preact/hooks';
import type { ToolEvent } from '../chat.ts';

const STATUS: Record<string, string> = {
  pending: 'waiting',
  in_progress: 'running…',
  completed: 'done',
  failed: 'failed',
};

export function ToolBlock({ tool }: { tool: ToolEvent }) {
  const [whole, setWhole] = useState(false);
  const status = tool.status ?? 'pending';
  const line = tool.input?.split('\n')[0] ?? '';
  const long = (tool.output?.split('\n').length ?? 0) > 16 || (tool.output?.length ?? 0) > 2000;
  return (
    <details class={`tool tool-${status}`} data-tool={tool.id}>
      <summary>
        <span class="tool-name">{tool.title ?? tool.kind ?? 'tool'}</span>
        <span class={`badge badge-tool-${status}`}>{STATUS[status]}</span>
        {line && <code class="tool-line">{line}</code>}
      </summary>
      {tool.input && (
        <>
          <p class="tool-label">Input</p>
          {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a block that scrolls must be reachable from the keyboard */}
          <pre class="tool-input" tabIndex={0}>
            {tool.input}
          </pre>
        </>
      )}
      {tool.output !== null && (
        <>
          <p class="tool-label">Output</p>
          {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a block that scrolls must be reachable from the keyboard */}
          <pre class={whole ? 'tool-output whole' : 'tool-output'} tabIndex={0}>
            {tool.output || '(nothing)'}
          </pre>
          {long && (
            <button type="button" class="quiet" onClick={() => setWhole(!whole)}>
              {whole ? 'Show less' : 'Show all of the output'}
            </button>
          )}
        </>
      )}
    </details>
  );
}
