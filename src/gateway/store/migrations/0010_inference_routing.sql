-- Provider preferences (docs/guides/model-requests.md#provider-preferences): how the endpoint of a
-- request was chosen (the sort, the session's stickiness), beside the provider and credential it names.
alter table inference_requests add column routing text;
