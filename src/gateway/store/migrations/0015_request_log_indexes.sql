-- The request log's indexes are paid on every model request (docs/performance-log.md): each row
-- goes into every index of inference_requests. A query by workspace always names the org too (a
-- workspace belongs to one org: the activity summary, the generations list), so the org's index
-- on (org_id, created_at) serves it with the workspace as a filter; the workspace's own index
-- served nothing else.
drop index if exists inference_requests_workspace;
