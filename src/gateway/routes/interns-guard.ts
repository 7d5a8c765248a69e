// The guard of every path under /interns (SPEC §5): 401 without a valid key, then a plain 404
// for a caller outside the interns programme before anything else, then the departed-creator
// 403. None of the three carries `metadata`.
import type { FastifyRequest } from 'fastify';
import { ApiError, departedCreator } from '../../errors.ts';
import type { Ctx } from '../context.ts';

export const outsideProgramme = () => new ApiError({ status: 404, message: 'resource not found' });

export function internsGuard(ctx: Ctx) {
  return async (req: FastifyRequest) => {
    const p = await ctx.auth.authenticate(req.headers.authorization);
    if (!p.internsProgramme) throw outsideProgramme();
    if (p.creatorDeparted && !p.granted) throw departedCreator();
    req.principal = p;
  };
}
