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
  username: z
    .string()
    .min(1)
    .max(100)
    .optional()
    .describe('HTTP basic user; default x-access-token (a token only: an SSH URL names its user)'),
  token: z.string().min(1).max(4096).optional().describe('an HTTPS token (write-only: never shown again)'),
  ssh_key: z
    .string()
    .min(1)
    .max(16384)
    .optional()
    .describe('an unencrypted SSH private key, OpenSSH or PEM (write-only: never shown again); instead of token'),
  known_hosts: z
    .string()
    .min(1)
    .max(16384)
    .optional()
    .describe(
      "with ssh_key, required: the hosts' keys as known_hosts lines (what ssh-keyscan prints); no other is trusted",
    ),
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
  kind: z.enum(['token', 'ssh_key']),
  username: z.string().nullable().describe('HTTP basic user (null for an SSH key)'),
  label: z.string().describe("the token, masked; an SSH key's public key fingerprint (SHA256:…)"),
  branch_prefix: z.string(),
  created_at: z.string(),
});
export type GitCredential = z.infer<typeof GitCredential>;
