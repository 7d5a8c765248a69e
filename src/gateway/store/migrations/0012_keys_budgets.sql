-- Keys managed over the API (docs/guides/keys-and-budgets.md): a key can be disabled, expire, and
-- carry a spending limit in USD that resets daily, weekly or monthly (UTC), counting BYOK spend
-- or not. Spend is the request log's cost, charged to the key that pays for the request: the
-- caller's own, or for an intern's key the key that created the intern (so deleting an intern
-- does not hand its spend back); read per key and period, hence the index.
alter table api_keys add column disabled boolean not null default false;
alter table api_keys add column expires_at timestamptz;
alter table api_keys add column updated_at timestamptz;
alter table api_keys add column limit_usd double precision;
alter table api_keys add column limit_reset text check (limit_reset in ('daily', 'weekly', 'monthly'));
alter table api_keys add column include_byok_in_limit boolean not null default false;
alter table inference_requests add column charged_key_id uuid;
update inference_requests r set charged_key_id = coalesce(
  (select i.creator_key_id from interns i where i.api_key_id = r.api_key_id), r.api_key_id);
create index inference_requests_charged on inference_requests (charged_key_id, created_at);

-- Guardrails (docs/guides/keys-and-budgets.md): a spending limit with its reset, allowed and
-- ignored models and providers, and ZDR enforcement, assigned to keys and to members; a
-- workspace's default applies to its keys that have none. One guardrail applies to a key: its
-- own assignment, else its creator's, else its workspace's default (so each assignment table
-- holds one row per key or member). The request log names the guardrail a request ran under,
-- whose spend is the sum of those rows' cost.
create table guardrails (
  id uuid primary key,
  org_id uuid not null references organizations(id),
  workspace_id uuid references workspaces(id) on delete cascade,
  name text not null,
  description text,
  limit_usd double precision,
  reset_interval text check (reset_interval in ('daily', 'weekly', 'monthly')),
  include_byok_in_budgets boolean not null default false,
  allowed_models jsonb,
  ignored_models jsonb,
  allowed_providers jsonb,
  ignored_providers jsonb,
  enforce_zdr boolean not null default false,
  created_at timestamptz not null default now(),
  updated_at timestamptz
);
create table guardrail_key_assignments (
  id uuid primary key,
  key_id uuid not null unique references api_keys(id) on delete cascade,
  guardrail_id uuid not null references guardrails(id) on delete cascade,
  assigned_by text,
  created_at timestamptz not null default now()
);
create table guardrail_member_assignments (
  id uuid primary key,
  org_id uuid not null references organizations(id),
  user_id text not null references users(id),
  guardrail_id uuid not null references guardrails(id) on delete cascade,
  assigned_by text,
  created_at timestamptz not null default now(),
  unique (org_id, user_id)
);
-- No foreign key: guardrails already point at workspaces, and a restore inserts parents first.
-- Deleting a guardrail clears the defaults naming it (management/guardrails.ts).
alter table workspaces add column default_guardrail_id uuid;
alter table inference_requests add column guardrail_id uuid;
create index inference_requests_guardrail on inference_requests (guardrail_id, created_at) where guardrail_id is not null;
