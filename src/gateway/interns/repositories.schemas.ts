// The shape of a repository an intern is given (repositories.ts clones it).
import { z } from 'zod';

export const Repository = z.strictObject({
  url: z.string().min(1).max(2048).describe('https:// URL of a git repository on a host in COHORT_GIT_HOSTS'),
  ref: z.string().min(1).max(255).optional().describe("a branch or tag; default: the remote's default branch"),
  path: z
    .string()
    .min(1)
    .max(1024)
    .optional()
    .describe('the folder in the work folder it goes to (must not exist); default: the URL’s last name without .git'),
});
export type Repository = z.infer<typeof Repository>;
export const Repositories = z.array(Repository).max(8);
