// The guard of every path under /interns (SPEC §5): 401 without a valid key, then a plain 404
// for a caller outside the interns programme before anything else, then the departed-creator
// 403. None of the three carries `metadata`.
import { ApiError, departedCreator } from '../../errors.ts';
import { authHook } from '../app.ts';
import type { Ctx } from '../context.ts';

export const outsideProgramme = () => new ApiError({ status: 404, message: 'resource not found' });

export function internsGuard(ctx: Ctx) {
  return authHook(ctx, (p) => {
    if (!p.internsProgramme) return outsideProgramme();
    if (p.creatorDeparted && !p.granted) return departedCreator();
    return null;
  });
}
