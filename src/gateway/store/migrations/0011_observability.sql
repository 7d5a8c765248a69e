-- Observability (docs/guides/observability.md): what a request said about itself for grouping and
-- tracing (its session, end user and metadata) is kept on its row of the request log, which is
-- read back by GET /generation and listed per account, key, model, session and time.
alter table inference_requests add column session_id text;
alter table inference_requests add column external_user text;
alter table inference_requests add column metadata jsonb;
create index inference_requests_org_time on inference_requests (org_id, created_at);
create index inference_requests_session on inference_requests (org_id, session_id) where session_id is not null;

-- Broadcast destinations of a workspace: an OTLP/HTTP collector that receives a span per model
-- request, server-tool step and intern turn. Headers (an API key of the collector) are sealed
-- under the master key, bound to the destination's id, and shown only masked.
create table broadcast_destinations (
  id uuid primary key,
  org_id uuid not null references organizations (id) on delete cascade,
  workspace_id uuid not null references workspaces (id) on delete cascade,
  name text,
  kind text not null,
  endpoint text not null,
  protocol text not null,
  headers_sealed text,
  header_labels jsonb not null default '{}',
  disabled boolean not null default false,
  created_at timestamptz not null default now()
);
create index broadcast_destinations_workspace on broadcast_destinations (workspace_id);
