-- The inference request log: one row per model request (who, which model and provider, whether
-- a BYOK credential served it, outcome, latency, usage), with bodies only where the workspace's
-- I/O logging settings select the request.
create table inference_requests (
  id text primary key,
  org_id uuid not null,
  workspace_id uuid,
  api_key_id uuid,
  user_id text,
  api_style text not null,
  requested_model text,
  model text,
  provider text,
  credential_id uuid,
  is_byok boolean not null default false,
  streamed boolean not null,
  attempts integer not null default 0,
  status integer not null,
  finish_reason text,
  error text,
  latency_ms integer not null,
  prompt_tokens integer,
  completion_tokens integer,
  total_tokens integer,
  cached_tokens integer,
  cost double precision,
  request_body jsonb,
  response_body jsonb,
  created_at timestamptz not null default now()
);
create index inference_requests_workspace on inference_requests (workspace_id, created_at);
