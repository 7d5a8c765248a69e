-- The server-tool loop (docs/guides/server-tools.md): a request that names server tools is one
-- row per model turn (and per model request a tool makes), each with its own id
-- (`<generation id>-<step>`), the generation id the client saw, and its step in it.
alter table inference_requests add column generation_id text;
alter table inference_requests add column step integer;
create index inference_requests_generation on inference_requests (generation_id) where generation_id is not null;
