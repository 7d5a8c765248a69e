-- Identity, keys and the management resources (workspaces, presets, provider credentials).
create table organizations (
  id uuid primary key,
  name text not null,
  interns_programme boolean not null default false,
  default_workspace_id uuid,
  created_at timestamptz not null default now()
);

create table users (
  id text primary key,
  name text not null,
  interns_programme boolean not null default false,
  created_at timestamptz not null default now()
);

create table memberships (
  org_id uuid not null references organizations(id),
  user_id text not null references users(id),
  role text not null default 'member',
  joined_at timestamptz not null default now(),
  left_at timestamptz,
  primary key (org_id, user_id)
);

create table workspaces (
  id uuid primary key,
  org_id uuid not null references organizations(id),
  name text not null,
  slug text not null,
  description text,
  created_by text not null,
  default_image_model text,
  default_text_model text,
  default_provider_sort text,
  disabled_server_tools jsonb,
  include_byok_in_budgets boolean not null default false,
  io_logging_api_key_ids jsonb,
  io_logging_sampling_rate double precision not null default 1,
  is_data_discount_logging_enabled boolean not null default false,
  is_observability_broadcast_enabled boolean not null default false,
  is_observability_io_logging_enabled boolean not null default false,
  created_at timestamptz not null default now(),
  updated_at timestamptz,
  unique (org_id, slug)
);

create table api_keys (
  id uuid primary key,
  org_id uuid not null references organizations(id),
  hash text not null unique,
  label text not null,
  name text not null,
  kind text not null check (kind in ('management', 'standard')),
  acts_as text not null check (acts_as in ('user', 'organization')),
  creator_user_id text not null references users(id),
  workspace_id uuid references workspaces(id) on delete set null,
  granted boolean not null default false,
  created_at timestamptz not null default now(),
  revoked_at timestamptz
);

create table presets (
  id uuid primary key,
  org_id uuid not null references organizations(id),
  workspace_id uuid not null references workspaces(id) on delete cascade,
  slug text not null,
  name text not null,
  description text,
  status text not null default 'active',
  status_updated_at timestamptz,
  creator_user_id text not null,
  designated_version_id uuid,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (workspace_id, slug)
);

create table preset_versions (
  id uuid primary key,
  preset_id uuid not null references presets(id) on delete cascade,
  version integer not null,
  system_prompt text not null default '',
  config jsonb not null,
  creator_id text not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (preset_id, version)
);

create table byok_credentials (
  id uuid primary key,
  org_id uuid not null references organizations(id),
  workspace_id uuid not null references workspaces(id) on delete cascade,
  name text,
  provider text not null,
  label text not null,
  sealed_key text not null,
  disabled boolean not null default false,
  is_byok_only boolean not null default false,
  is_fallback boolean not null default false,
  is_required boolean not null default false,
  declared_zdr boolean,
  sort_order integer not null default 0,
  allowed_api_key_hashes jsonb,
  allowed_models jsonb,
  allowed_user_ids jsonb,
  created_at timestamptz not null default now(),
  updated_at timestamptz
);
create index byok_credentials_workspace on byok_credentials (workspace_id, provider);
