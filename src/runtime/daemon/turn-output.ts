// What a turn says to its caller beyond the agent's own updates (docs/reference/intern-chat.md#empty-turns):
// the text Claude Code marks as local-command output taken out of the agent's messages, and the
// message of a turn that ended with nothing to show. Pure.
import type { StopReason } from '../acp/index.ts';

/** Claude Code's marked blocks: the caveat it puts before a local command's record in the
 * conversation, and the command's output. A model that repeats them repeats Claude Code's
 * bookkeeping, not an answer. */
const BLOCKS = ['local-command-caveat', 'local-command-stdout', 'local-command-stderr'];
const OPENS = BLOCKS.map((b) => `<${b}>`);
/** The most of a command's output a turn's error message carries. */
const SAID_LIMIT = 2000;
/** A marked block still open after this much text was not one: it is given back as text. */
const MAX_BLOCK = 64 * 1024;

/** Streaming: text goes in as it arrives, what is not inside a marked block comes out. A possible
 * start of a tag is held until the next chunk shows whether it is one. */
export class LocalCommandFilter {
  /** Text held: a possible tag's start, or an open block (from its opening tag). */
  private held = '';
  /** The closing tag of the block open in `held`, or null outside one. */
  private close: string | null = null;
  /** The last command output taken out (a stdout or stderr block's text): the agent's own words
   * for a turn that has no others. */
  said: string | null = null;

  push(text: string): string {
    // Most chunks: nothing held, no tag in them.
    if (!this.held && !text.includes('<')) return text;
    let s = this.held + text;
    this.held = '';
    let out = '';
    for (;;) {
      if (this.close) {
        const end = s.indexOf(this.close);
        if (end >= 0) {
          const inner = s.slice(this.close.length - 1, end).trim();
          if (!this.close.includes('caveat') && inner) this.said = inner.slice(0, SAID_LIMIT);
          s = s.slice(end + this.close.length);
          this.close = null;
          continue;
        }
        if (s.length > MAX_BLOCK) {
          this.close = null;
          return out + s;
        }
        this.held = s;
        return out;
      }
      const at = firstOpen(s);
      if (at >= 0) {
        out += s.slice(0, at);
        s = s.slice(at);
        this.close = `</${s.slice(1, s.indexOf('>') + 1)}`;
        continue;
      }
      // No tag: hold a tail that could still become one.
      const from = heldTail(s);
      this.held = s.slice(from);
      return out + s.slice(0, from);
    }
  }

  /** What is held, as text: a block never closed was not one. */
  flush(): string {
    const s = this.held;
    this.held = '';
    this.close = null;
    return s;
  }
}

/** Where the first opening tag in `s` is, or -1. */
function firstOpen(s: string): number {
  let first = -1;
  for (const o of OPENS) {
    const i = s.indexOf(o);
    if (i >= 0 && (first < 0 || i < first)) first = i;
  }
  return first;
}

const LONGEST = Math.max(...OPENS.map((o) => o.length));

/** Where a tail of `s` that is the start of an opening tag begins (s.length when none is). */
function heldTail(s: string): number {
  for (let i = Math.max(0, s.length - LONGEST); i < s.length; i++)
    if (s[i] === '<' && OPENS.some((o) => o.startsWith(s.slice(i)))) return i;
  return s.length;
}

const TO_MODEL = 'to send the message to the model instead, begin it with a space';

/** Why a turn ended with no text, reasoning, tool call or question, in the words of the agent
 * where it gave some, else ours. */
export function emptyTurnMessage(o: {
  prompt: string;
  stopReason: StopReason;
  /** The commands the agent offers in this session (ACP `available_commands_update`), if it said. */
  commands: string[] | null;
  /** A local command's output the agent sent (taken out of its text), if any. */
  agentSaid: string | null;
}): string {
  // Claude Code takes a prompt starting with one "/" as its own command: it never reaches the model.
  const command = /^\/([^\s/]\S*)/.exec(o.prompt)?.[1];
  if (command) {
    const offered = o.commands?.length ? ` (it offers ${o.commands.map((c) => `/${c}`).join(', ')})` : '';
    if (o.agentSaid) return `the agent ran the message as its command /${command}: ${o.agentSaid}; ${TO_MODEL}`;
    if (o.commands && !o.commands.includes(command))
      return `the message began with "/", so the agent took it as a command of its own, /${command}, which it does not have${offered}; nothing reached the model: ${TO_MODEL}`;
    if (o.commands)
      return `the message began with "/", so the agent ran it as its command /${command}, which gave no answer; ${TO_MODEL}`;
    return `the agent ended the turn without an answer; the message began with "/", which some agents (Claude Code) take as a command of their own rather than sending it to the model: ${TO_MODEL}`;
  }
  if (o.agentSaid) return `the agent ended the turn without an answer: ${o.agentSaid}`;
  switch (o.stopReason) {
    case 'refusal':
      return 'the agent refused the message, with no answer';
    case 'max_tokens':
      return 'the agent reached its token limit before answering';
    case 'max_turn_requests':
      return 'the agent reached its limit of model requests for a turn before answering';
    default:
      return 'the agent ended the turn without an answer (no text, tool call or question)';
  }
}
