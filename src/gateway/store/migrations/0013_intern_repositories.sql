-- Repositories an intern was given (docs/guides/repositories.md): where the gateway cloned each
-- from, which branch and commit the intern's work starts from (what its diff is against and its
-- push builds on), and the folder of its work folder it went to. The intern's own repository is
-- the tenant's; these rows are the gateway's record of it.
create table intern_repositories (
  id uuid primary key,
  intern_id uuid not null references interns(id) on delete cascade,
  url text not null,
  ref text not null,
  path text not null,
  base_commit text not null,
  created_at timestamptz not null default now(),
  unique (intern_id, path)
);

-- A workspace's credentials for git hosts: an HTTPS token, sealed under the master key (bound to
-- the row's id) and never shown again; `hosts` says where it may be sent, `branch_prefix` which
-- branches a push with it may create.
create table git_credentials (
  id uuid primary key,
  org_id uuid not null references organizations(id),
  workspace_id uuid not null references workspaces(id) on delete cascade,
  name text not null,
  hosts jsonb not null,
  username text not null,
  sealed_token text not null,
  label text not null,
  branch_prefix text not null,
  created_at timestamptz not null default now()
);
create index git_credentials_workspace_idx on git_credentials (workspace_id);
