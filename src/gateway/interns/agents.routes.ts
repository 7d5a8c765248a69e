// GET /agents: the agents of the operator's catalogue an intern may run (`agent` on an intern),
// with what each supports, and the built-in agents this installation has not installed (with the
// operator's command that adds them). Any valid key may read it; commands and environments stay private.
import { z } from 'zod';
import type { RouteModule } from '../http/app.ts';
import { defineRoute } from '../http/route.ts';

const Agent = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string(),
  supports: z.object({ sessions: z.boolean(), questions: z.boolean(), steering: z.boolean() }),
});
const Missing = z.object({ id: z.string(), name: z.string(), install: z.string() });
const AgentList = z.object({ data: z.array(Agent), not_installed: z.array(Missing) });

export const agentRoutes: RouteModule = (app, ctx) => {
  const list = {
    data: ctx.agents.entries.map(({ id, name, description, supports }) => ({ id, name, description, supports })),
    not_installed: ctx.agents.missing,
  };
  defineRoute(app, ctx, {
    method: 'GET',
    path: '/agents',
    summary: 'List the agents interns may run',
    tags: ['interns'],
    guard: 'any',
    responses: { 200: { description: 'the catalogue', schema: AgentList }, 401: { description: 'no valid key' } },
    handler: async () => list,
  });
};
