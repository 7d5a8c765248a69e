// The one place a feature hands the broadcaster what happened: a model request's row, a server
// tool's run, each made a span (spans.ts) of its workspace. Only called for
// workspaces with is_observability_broadcast_enabled; never throws into the caller.
import type { Broadcaster } from './broadcast.ts';
import type { Observation } from './observation.ts';
import { modelSpan, toolSpan, type ModelRow } from './spans.ts';

type Request = { id: string; principal: { workspaceId: string | null }; observation?: Observation };

export function broadcastsOf(b: Broadcaster | undefined) {
  return {
    model(row: ModelRow, observation: Observation | undefined): void {
      if (b && row.workspaceId) b.emit(row.workspaceId, () => modelSpan(row, observation));
    },
    tool(
      p: Request,
      o: {
        step: { tool_name: string; tool_call_id: string; status: 'completed' | 'failed' };
        startMs: number;
        endMs: number;
      },
    ): void {
      const ws = p.principal.workspaceId;
      if (!b || !ws) return;
      b.emit(ws, () =>
        toolSpan({
          generationId: p.id,
          tool: o.step.tool_name,
          callId: o.step.tool_call_id,
          status: o.step.status,
          startMs: o.startMs,
          endMs: o.endMs,
          observation: p.observation,
          workspaceId: ws,
        }),
      );
    },
  };
}
