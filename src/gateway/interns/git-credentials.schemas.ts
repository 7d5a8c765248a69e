// The shapes of a workspace's git credentials (git-credentials.ts).
import { z } from 'zod';
import { Uuid } from '../http/common.schemas.ts';

const Host = z
  .string()
  .regex(/^[A-Za-z0-9.-]+(:\d{1,5})?$/, 'a host name, or host:port')
  .max(255);

export const CreateGitCredential = z.strictObject({
  name: z.string().min(1).max(100),
  workspace_id: Uuid.optional(),
  hosts: z.array(Host).min(1).max(20).describe('the git hosts it is sent to (host or host:port)'),
  username: z.string().min(1).max(100).optional().describe('HTTP basic user; default x-access-token'),
  token: z.string().min(1).max(4096).optional().describe('an HTTPS token (write-only: never shown again)'),
  ssh_key: z.string().optional().describe('not built yet: refused'),
  branch_prefix: z
    .string()
    .regex(/^[A-Za-z0-9._/-]+\/$/, 'a branch prefix ending in /')
    .max(100)
    .optional()
    .describe('pushes with it create only branches under this prefix; default cohort/'),
});
export type CreateGitCredential = z.infer<typeof CreateGitCredential>;

export const GitCredential = z.object({
  id: z.string(),
  name: z.string(),
  workspace_id: z.string(),
  hosts: z.array(z.string()),
  username: z.string(),
  label: z.string().describe('the token, masked'),
  branch_prefix: z.string(),
  created_at: z.string(),
});
export type GitCredential = z.infer<typeof GitCredential>;
