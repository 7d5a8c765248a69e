-- Interns: lifecycle record, the daemon's address and its sealed secret, the intern's own API key
-- (sealed, so the provisioner can hand it to the agent) and create idempotency.
create table interns (
  id uuid primary key,
  org_id uuid not null references organizations(id),
  workspace_id uuid not null references workspaces(id) on delete cascade,
  creator_user_id text not null,
  name text not null,
  description text,
  instructions text,
  model text,
  status text not null default 'queued',
  progress jsonb,
  hostname text,
  last_failure_message text,
  vault_id uuid,
  attached_vault_id uuid,
  sealed_secret text,
  api_key_id uuid,
  sealed_api_key text,
  daemon_pid integer,
  idempotency_key text,
  idempotency_hash text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (workspace_id, creator_user_id, name),
  unique (org_id, creator_user_id, idempotency_key)
);
create index interns_listing on interns (org_id, workspace_id, created_at desc, id desc);
